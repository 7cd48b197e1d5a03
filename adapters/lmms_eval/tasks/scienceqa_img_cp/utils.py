"""ScienceQA-IMG for lmms-eval: the lm-eval task folder's documents (``judgecp.tasks.scienceqa_img_cp``:
``JUDGECP_SCIENCEQA_DIR`` or the hub's ``lmms-lab/ScienceQA``), with lmms-eval's prompt layout."""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lmms_eval.task import ChoiceTask, choice_text
from judgecp.tasks.scienceqa_img_cp.utils import load_docs

__all__ = ["ScienceQATask", "doc_to_text"]


class ScienceQATask(ChoiceTask):
    """ScienceQA image questions; ``category`` is the item's subject (natural, social, language science)."""

    LOADER = load_docs


def doc_to_text(doc: dict[str, Any]) -> str:
    return choice_text(doc, "science")
