"""Polaris (caption quality) for judgecp: documents, the paper's prompt B.2, the task class.

Documents come from a local directory (``--metadata '{"data_dir": DIR}'`` or
``JUDGECP_POLARIS_DIR``) holding ``test.jsonl`` (``cand``, ``refs``,
``human_score`` on [0, 1], ``img`` = image path relative to DIR) or the hub
layout ``data/test-*.parquet``; without one, from the public dataset
``yuwd/Polaris`` (split ``test``). Each document keeps ``human_score``
(unbinned) beside ``label``. See README.md.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

from judgecp.data import datasources, images
from judgecp.adapters.lm_eval.task import LikertJudgeTask
from judgecp.data.prompts import POLARIS_PROMPT
from judgecp.data.tables import read_jsonl

HUB_DATASET = "yuwd/Polaris"
ENV_VAR = "JUDGECP_POLARIS_DIR"



class PolarisTask(LikertJudgeTask):
    """Polaris: the averaged human score c on [0, 1] becomes the label round(4c) + 1.

    With a ``label_scale`` setting (``polaris_cp_continuous``: ``"0:1"``) the
    label is c itself, mapped onto 1..5 by the core (1 + 4c), unbinned.
    """

    CONTINUOUS_LABEL = "human_score"


def likert_label(human_score: Any) -> str | None:
    """``round(4c) + 1`` (Python's round: half to even), the mapping of the paper's released features.

    A missing or non-numeric score stays as it is, for the core to count.
    """
    try:
        c = float(human_score)
    except (TypeError, ValueError):
        return datasources.text(human_score)
    if math.isnan(c):
        return None
    return str(round(4 * c) + 1)


@functools.lru_cache(maxsize=4)
def _local_docs(root: str) -> tuple[dict[str, Any], ...]:
    base = Path(root)
    source = base / "test.jsonl"
    if not source.exists():
        raise FileNotFoundError(f"{source} not found: the Polaris directory needs test.jsonl (or data/test-*.parquet)")
    docs = []
    for lineno, row in read_jsonl(source):
        if row is None:
            docs.append({"id": f"line{lineno}", "label": None, "human_score": None, "group": None, "caption": "", "image_path": "",
                         "image_error": "no image", "exclude": "malformed_json_line"})
            continue
        image_path = base / str(row.get("img", ""))
        docs.append({
            "id": datasources.text(row.get("id", lineno - 1)),
            "label": likert_label(row.get("human_score")),
            "human_score": row.get("human_score"),
            "group": None,
            "caption": datasources.text(row.get("cand")) or "",
            "image_path": str(image_path),
            "image_error": images.check_image_file(image_path),
            "exclude": None,
        })
    return tuple(docs)


def _normalise(cand: Any, human_score: Any, index: int) -> dict[str, Any]:
    return {"id": str(index), "label": likert_label(human_score), "group": None,
            "caption": cand or "", "image_path": "", "image_error": "", "exclude": None}


def load_docs(data_dir: str | None = None, **_: Any) -> Any:
    """``custom_dataset`` hook: the local directory's documents, or the hub's test split."""
    import datasets

    root = datasources.local_dir(data_dir, ENV_VAR)
    if root is not None and not list(root.glob("data/test-*.parquet")):
        return datasources.as_dataset_dict(list(_local_docs(str(root))))
    if root is not None:
        split = datasets.load_dataset("parquet", data_files={"test": sorted(str(p) for p in root.glob("data/test-*.parquet"))}, split="test")
    else:
        split = datasources.load_table(None, hub_id=HUB_DATASET, split="test", env_var=ENV_VAR)  # one line offline
    # input_columns: the images are not decoded (nor re-encoded) to normalise the text fields.
    split = split.map(_normalise, with_indices=True, input_columns=["cand", "human_score"]).rename_column("img", "image")
    return datasets.DatasetDict({"test": split})


def doc_to_text(doc: dict[str, Any]) -> str:
    return "<image>\n" + POLARIS_PROMPT.format(caption=doc["caption"])


def doc_to_image(doc: dict[str, Any]) -> list[Any]:
    return [images.load_image(doc)]


def doc_to_target(doc: dict[str, Any]) -> str:
    return doc["label"] or ""
