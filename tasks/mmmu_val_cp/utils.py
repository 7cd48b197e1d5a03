"""MMMU (validation split) for judgecp: conformal option sets over the letters, per discipline.

Documents come from a local copy (``--metadata '{"data_dir": DIR}'`` or
``JUDGECP_MMMU_DIR``) holding parquet files of the validation split in
either hub layout (``DIR/data/validation-*.parquet`` as in
``lmms-lab/MMMU``, or ``DIR/<Subject>/validation-*.parquet`` as in
``MMMU/MMMU``), or from the public dataset ``lmms-lab/MMMU`` (the 30
``MMMU/MMMU`` subjects concatenated; split ``validation``). As in the seed
benchmark, open questions and questions with several images are not judged:
each stays as a placeholder document, counted in ``excluded``. See README.md.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from judgecp.data import datasources, images
from judgecp.adapters.lm_eval.choice_task import (
    MultipleChoiceTask,
    choice_document,
    documents_dataset,
    left_out_document,
    seed_prompt,
)

__all__ = ["MMMUTask", "doc_to_text", "load_docs"]

HUB_DATASET = "lmms-lab/MMMU"
SPLIT = "validation"
ENV_VAR = "JUDGECP_MMMU_DIR"
IMAGE_COLUMNS = [f"image_{k}" for k in range(1, 8)]

#: MMMU's six disciplines and their 30 subjects (Yue et al. 2024, Figure 1).
DISCIPLINES = {
    "Art and Design": ("Art", "Art_Theory", "Design", "Music"),
    "Business": ("Accounting", "Economics", "Finance", "Manage", "Marketing"),
    "Science": ("Biology", "Chemistry", "Geography", "Math", "Physics"),
    "Health and Medicine": ("Basic_Medical_Science", "Clinical_Medicine", "Diagnostics_and_Laboratory_Medicine",
                            "Pharmacy", "Public_Health"),
    "Humanities and Social Science": ("History", "Literature", "Sociology", "Psychology"),
    "Tech and Engineering": ("Agriculture", "Architecture_and_Engineering", "Computer_Science", "Electronics",
                             "Energy_and_Power", "Materials", "Mechanical_Engineering"),
}
DISCIPLINE_OF = {subject: discipline for discipline, subjects in DISCIPLINES.items() for subject in subjects}
_IMAGE_TAG = re.compile(r"<image (\d)>")


class MMMUTask(MultipleChoiceTask):
    """MMMU multiple-choice questions with one image; ``category`` is the discipline, records keep the subject."""

    RECORD_FIELDS = ("subject",)


def subject_of(item_id: str) -> str:
    """``validation_Art_Theory_12`` -> ``Art_Theory``."""
    return re.sub(r"_\d+$", "", re.sub(r"^(dev|validation|test)_", "", item_id))


def parse_options(raw: Any) -> list[str]:
    """MMMU's options field (a Python list written as a string); unreadable -> no options (counted)."""
    if isinstance(raw, (list, tuple)):
        return [str(o) for o in raw]
    try:
        value = ast.literal_eval(str(raw))
    except (ValueError, SyntaxError):
        return []
    return [str(o) for o in value] if isinstance(value, (list, tuple)) else []


def load_docs(data_dir: str | None = None, **_: Any) -> Any:
    """``custom_dataset`` hook: one document per single-image multiple-choice question."""
    root = datasources.local_dir(data_dir, ENV_VAR)
    table = datasources.load_table(root, hub_id=HUB_DATASET, split=SPLIT, env_var=ENV_VAR)
    key = f"mmmu_val:{root or HUB_DATASET}"
    image_columns = [c for c in IMAGE_COLUMNS if c in table.column_names]
    images.register_table(key, table, image_columns)
    docs = []
    for i, row in enumerate(table.select_columns([c for c in table.column_names if c not in IMAGE_COLUMNS])):
        item_id = str(row.get("id") or f"{SPLIT}_{i}")
        if str(row.get("question_type") or "multiple-choice") != "multiple-choice":
            docs.append(left_out_document(f"mmmu_val/{item_id}", "open_question", dataset="mmmu_val", subject=subject_of(item_id)))
            continue
        options = parse_options(row.get("options"))
        tags = sorted(set(_IMAGE_TAG.findall(" ".join([str(row.get("question") or ""), *options]))))
        if len(tags) > 1:
            docs.append(left_out_document(f"mmmu_val/{item_id}", "multiple_images", dataset="mmmu_val", subject=subject_of(item_id)))
            continue
        column = f"image_{tags[0]}" if tags else "image_1"
        subject = subject_of(item_id)
        answer = str(row.get("answer") or "").strip()
        docs.append(choice_document(
            f"mmmu_val/{item_id}", question=row.get("question") or "", options=options,
            correct=[answer] if answer else [], image_refs=[images.table_ref(key, i, column)], dataset="mmmu_val",
            category=DISCIPLINE_OF.get(subject, "unknown"), subject=subject,
        ))
    where = str(root) if root else f"{HUB_DATASET} ({SPLIT})"
    return documents_dataset(docs, what=f"MMMU in {where}")


def doc_to_text(doc: dict[str, Any]) -> str:
    return seed_prompt(doc, "multi-disciplinary")
