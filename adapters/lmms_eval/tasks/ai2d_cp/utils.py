"""AI2D (science diagrams) for lmms-eval: the lm-eval task folder's documents, with lmms-eval's prompt layout.

Documents from a local copy (``JUDGECP_AI2D_DIR``, or ``data_dir`` in
``JUDGECP_LMMS_EVAL_METADATA``) holding the hub's parquet files, else the hub's
``lmms-lab/ai2d`` test split (``judgecp.tasks.ai2d_cp``).
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lmms_eval.task import ChoiceTask, choice_text
from judgecp.tasks.ai2d_cp.utils import load_docs

__all__ = ["AI2DTask", "doc_to_text"]


class AI2DTask(ChoiceTask):
    """AI2D diagram questions (no categories in this release)."""

    LOADER = load_docs


def doc_to_text(doc: dict[str, Any]) -> str:
    return choice_text(doc, "scientific diagram")
