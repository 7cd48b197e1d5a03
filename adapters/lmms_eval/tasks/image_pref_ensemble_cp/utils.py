"""Pairwise image preference under every prompt of a prompt set (prompt ensembles) for lmms-eval.

The documents and their loaders are the lm-eval task folder's
(``judgecp.tasks.image_pref_ensemble_cp``: HPSv2's HPD v2 and MJ-Bench, local
copies by ``JUDGECP_HPDV2_DIR`` / ``JUDGECP_MJBENCH_DIR`` or ``data_dir``, else
the hub). Each document's text places its two images with ``<image>``
placeholders, which ``judgecp-hf`` keeps where they are (interleaved).
"""

from __future__ import annotations

from judgecp.adapters.lmms_eval.task import EnsembleTask
from judgecp.tasks.image_pref_ensemble_cp.utils import load_hpdv2, load_mjbench

__all__ = ["HPDv2Task", "MJBenchTask"]


class HPDv2Task(EnsembleTask):
    LOADER = load_hpdv2


class MJBenchTask(EnsembleTask):
    LOADER = load_mjbench
