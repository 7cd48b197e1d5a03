"""The embedded demo for lmms-eval: the lm-eval demo's synthetic items, loader and prompt (not real data)."""

from __future__ import annotations

from judgecp.adapters.lmms_eval.task import LikertTask
from judgecp.tasks.judgecp_demo.utils import doc_to_target, doc_to_text, load_docs

__all__ = ["DemoTask", "doc_to_target", "doc_to_text"]


class DemoTask(LikertTask):
    """Synthetic 1-5 judging items in three groups (text only: no image)."""

    LOADER = load_docs
