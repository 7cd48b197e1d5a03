"""PARC (prompt variations) for judgecp: a local variation directory in docs/parc_format.md's format.

There is no hub dataset of PARC's variations: the directory is named by
``--metadata '{"data_dir": DIR}'`` or ``JUDGECP_PARC_DIR`` and holds
``DIR/variations.jsonl`` and the images it names (paths relative to DIR).
``parc_cp`` reads every dataset in it; ``parc_cp_<dataset>`` one. See README.md.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from judgecp.data import datasources
from judgecp.adapters.lm_eval.choice_task import (
    PARCTask,
    choice_document,
    documents_dataset,
    left_out_document,
    placeholder_prompt,
)
from judgecp.base.errors import InputError
from judgecp.data.tables import read_jsonl

__all__ = ["PARCVariationTask", "doc_to_text", "load_docs"]

ENV_VAR = "JUDGECP_PARC_DIR"
FILE = "variations.jsonl"

#: The seven PARC datasets (PARC section 3), as the variation builder names them.
DATASETS = ("mmbench", "mit_states", "mit_attributes", "vaw_states", "vaw_attributes", "nyu_depth", "fashionpedia")


class PARCVariationTask(PARCTask):
    """PARC's scores per variation, family and dataset for the model being evaluated."""


def _options(raw: Any) -> tuple[list[str], list[str]]:
    """``{"A": "Left", ...}`` (display order) -> (letters, texts); a list is lettered A, B, ..."""
    if isinstance(raw, dict):
        return [str(k).strip() for k in raw], ["" if v is None else str(v) for v in raw.values()]
    if isinstance(raw, (list, tuple)):
        texts = [str(v) for v in raw]
        return [chr(ord("A") + i) for i in range(len(texts))], texts
    return [], []


@functools.lru_cache(maxsize=4)
def _read(root: str) -> tuple[dict[str, Any], ...]:
    """Every line as a document; a line that cannot be judged is a placeholder with its reason."""
    base = Path(root)
    path = base / FILE
    if not path.is_file():
        raise InputError(f"{path} not found: a PARC directory holds {FILE} and its images (docs/parc_format.md)")
    docs: list[dict[str, Any]] = []
    seen: set[str] = set()
    for lineno, row in read_jsonl(path):
        if row is None:
            docs.append(left_out_document(f"parc/line{lineno}", "malformed_json_line", dataset=None))
            continue
        dataset = str(row.get("dataset") or "data")
        missing = [k for k in ("id", "source_id", "variation") if not str(row.get(k) or "").strip()]
        if missing:
            docs.append(left_out_document(f"parc/line{lineno}", "field_missing", dataset=dataset))
            continue
        item_id = str(row["id"])
        if item_id in seen:
            docs.append(left_out_document(f"parc/{item_id}#line{lineno}", "duplicate_id", dataset=dataset))
            continue
        seen.add(item_id)
        letters, texts = _options(row.get("options"))
        raw_images = row.get("image")
        paths = [raw_images] if isinstance(raw_images, str) else list(raw_images or [])
        correct = row.get("correct")
        correct = [correct] if isinstance(correct, str) else [str(c) for c in correct or []]
        doc = choice_document(
            f"parc/{item_id}", question=str(row.get("question") or ""), options=texts, correct=correct,
            image_refs=[str(base / p) for p in paths], dataset=dataset,
            source_id=row["source_id"], variation=row["variation"], family=row.get("family"),
        )
        doc["letters"] = letters  # the file's own letters, in display order
        docs.append(doc)
    return tuple(docs)


def load_docs(data_dir: str | None = None, parc_dataset: str | None = None, **_: Any) -> Any:
    """``custom_dataset`` hook: every (source item, variation) of the directory, or one dataset's.

    A line that is not JSON belongs to no dataset: only ``parc_cp`` (every
    dataset) counts it.
    """
    root = datasources.local_dir(data_dir, ENV_VAR)
    if root is None:
        raise InputError(
            f"PARC has no hub dataset of variations: name a variation directory with --metadata "
            f"'{{\"data_dir\": DIR}}' or {ENV_VAR} (format: docs/parc_format.md)"
        )
    docs = _read(str(root))
    if parc_dataset is not None:
        present = sorted({d["dataset"] for d in docs if d["dataset"]})
        docs = tuple(d for d in docs if d["dataset"] == parc_dataset)
        if not docs:
            raise InputError(f"no {parc_dataset!r} items in {root / FILE}; it holds {', '.join(present) or 'none'}")
    what = f"PARC variations in {root}" + (f" ({parc_dataset})" if parc_dataset else "")
    return documents_dataset(list(docs), what=what)


def doc_to_text(doc: dict[str, Any]) -> str:
    """The images, the question, the lettered options and LLaVA's multiple-choice answer instruction."""
    placeholder = placeholder_prompt(doc)
    if placeholder is not None:
        return placeholder
    placeholders = "<image>\n" * max(len(doc.get("image_refs") or ()), 1)
    # The file's own letters, in its display order.
    options = "\n".join(f"{letter}. {text}" for letter, text in zip(doc["letters"], doc["options"], strict=False))
    return f"{placeholders}{doc['question']}\n{options}\nAnswer with the option's letter from the given choices directly."
