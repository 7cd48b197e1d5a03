"""AI2D (science diagrams, test split) for judgecp: conformal option sets over the letters.

Documents come from a local copy (``--metadata '{"data_dir": DIR}'`` or
``JUDGECP_AI2D_DIR``) holding the hub's parquet files
(``DIR/data/test-*.parquet``), or from the public dataset ``lmms-lab/ai2d``
(split ``test``). See README.md.
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lm_eval import data_sources
from judgecp.adapters.lm_eval.choice_task import (
    MultipleChoiceTask,
    doc_to_choice,
    doc_to_image,
    doc_to_target,
    documents_dataset,
    indexed_image_questions,
    seed_prompt,
)

__all__ = ["AI2DTask", "doc_to_choice", "doc_to_image", "doc_to_target", "doc_to_text", "load_docs"]

HUB_DATASET = "lmms-lab/ai2d"
SPLIT = "test"
ENV_VAR = "JUDGECP_AI2D_DIR"


class AI2DTask(MultipleChoiceTask):
    """AI2D diagram questions (no categories in this release)."""


def load_docs(data_dir: str | None = None, **_: Any) -> Any:
    """``custom_dataset`` hook: one document per diagram question; images stay in the table until judged."""
    root = data_sources.local_dir(data_dir, ENV_VAR)
    table = data_sources.load_table(root, hub_id=HUB_DATASET, split=SPLIT)
    docs = indexed_image_questions("ai2d", table, f"ai2d:{root or HUB_DATASET}", options="options")
    where = str(root) if root else f"{HUB_DATASET} ({SPLIT})"
    return documents_dataset(docs, what=f"AI2D in {where}")


def doc_to_text(doc: dict[str, Any]) -> str:
    return seed_prompt(doc, "scientific diagram")
