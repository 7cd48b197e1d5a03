"""MLLM-as-a-Judge (score split) for lmms-eval: the lm-eval task folder's documents, with lmms-eval's prompt layout.

The documents, their loader (a local copy by ``data_dir`` in
``JUDGECP_LMMS_EVAL_METADATA`` or ``JUDGECP_MLLM_JUDGE_DIR``, else the hub's
``ONE-Lab/MLLM-as-a-Judge``) and the image loading are the lm-eval task
folder's (``judgecp.tasks.mllm_judge_cp``). lmms-eval's models place the
images themselves, so the text has no ``<image>`` placeholder.
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lmms_eval.task import LikertTask
from judgecp.data.prompts import MLLM_JUDGE_PROMPT
from judgecp.tasks.mllm_judge_cp.utils import doc_to_image, doc_to_target, load_docs

__all__ = ["MLLMJudgeTask", "doc_to_target", "doc_to_text", "doc_to_visual"]


class MLLMJudgeTask(LikertTask):
    """MLLM-as-a-Judge score split: 1-5 human scores; records carry the answering model as ``actor``."""

    RECORD_FIELDS = ("actor",)
    LOADER = load_docs


def doc_to_text(doc: dict[str, Any]) -> str:
    return MLLM_JUDGE_PROMPT.format(question=doc["question"], actor_answer=doc["answer"])


doc_to_visual = doc_to_image
