"""MMMU validation (single-image multiple choice) for lmms-eval: the lm-eval task folder's documents
(``judgecp.tasks.mmmu_val_cp``: ``JUDGECP_MMMU_DIR`` or the hub's ``lmms-lab/MMMU``), with lmms-eval's prompt layout."""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lmms_eval.task import ChoiceTask, choice_text
from judgecp.tasks.mmmu_val_cp.utils import load_docs

__all__ = ["MMMUTask", "doc_to_text"]


class MMMUTask(ChoiceTask):
    """MMMU multiple-choice questions with one image; ``category`` is the discipline, records keep the subject."""

    RECORD_FIELDS = ("subject",)
    LOADER = load_docs


def doc_to_text(doc: dict[str, Any]) -> str:
    return choice_text(doc, "multi-disciplinary")
