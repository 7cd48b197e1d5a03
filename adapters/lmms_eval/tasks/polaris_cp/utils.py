"""Polaris (caption quality) for lmms-eval: the lm-eval task folder's documents, with lmms-eval's prompt layout.

The documents and their loader (a local directory by ``data_dir`` in
``JUDGECP_LMMS_EVAL_METADATA`` or ``JUDGECP_POLARIS_DIR``, else the hub's
``yuwd/Polaris`` test split) are the lm-eval task folder's
(``judgecp.tasks.polaris_cp``); the text has no ``<image>`` placeholder.
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lmms_eval.task import LikertTask
from judgecp.data.prompts import POLARIS_PROMPT
from judgecp.tasks.polaris_cp.utils import doc_to_image, doc_to_target, load_docs

__all__ = ["PolarisTask", "doc_to_target", "doc_to_text", "doc_to_visual"]


class PolarisTask(LikertTask):
    """Polaris: the label is round(4c) + 1 of the averaged human score c; with ``label_scale`` 0:1, c itself."""

    CONTINUOUS_LABEL = "human_score"
    LOADER = load_docs


def doc_to_text(doc: dict[str, Any]) -> str:
    return POLARIS_PROMPT.format(caption=doc["caption"])


doc_to_visual = doc_to_image
