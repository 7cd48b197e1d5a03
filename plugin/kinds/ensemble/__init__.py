"""The prompt-ensemble kind: one judge's answers to every item under many prompts, pooled (docs/ensembles.md).

Records of any shape tied by ``meta.item`` are read and evaluated by the kind's own command
(:mod:`~judgecp.kinds.ensemble.command`, :mod:`~judgecp.kinds.ensemble.evaluate`): uniform averaging,
the Bayesian prompt ensemble and the multimodal mixture. The study both harnesses run is
:mod:`~judgecp.kinds.ensemble.study`; Table 5's sweep :mod:`~judgecp.kinds.ensemble.sweep`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgecp.kinds.ensemble.command import EnsembleCommand
from judgecp.kinds.kind import Kind, Presenter, Study
from judgecp.kinds.metrics import ENSEMBLE_METHODS, ENSEMBLE_SCORES, Metric, excluded_count, pick
from judgecp.kinds.protocol import Protocol


def ensemble_metrics(with_mixture: bool) -> list[Metric]:
    """``n_items``, ``n_prompts``, ``excluded``; per method ``<score>_<method>`` (+ ``_stderr``: the std
    over seeds), ``fdp_<method>`` and ``selected_<method>`` (the BY selection)."""
    metrics = [
        Metric("n_items", pick("n_items"), None, always=True),
        Metric("n_prompts", pick("n_prompts"), None, always=True),
        Metric("excluded", excluded_count, False, always=True),
    ]
    for method in ENSEMBLE_METHODS if with_mixture else ENSEMBLE_METHODS[:2]:
        for score in ENSEMBLE_SCORES:
            metrics.append(Metric(f"{score}_{method}", pick("methods", method, score), score in ("auprc", "accuracy")))
            metrics.append(Metric(f"{score}_{method}_stderr", pick("methods", method, f"{score}_std"), None))
        metrics.append(Metric(f"fdp_{method}", pick("selection", method, "fdp"), False))
        metrics.append(Metric(f"selected_{method}", pick("selection", method, "selected_share"), True))
    return metrics


class EnsembleStudy(Study):
    """The ensemble study's metric names (the study itself runs under the kind's command)."""

    settings = frozenset()

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None) -> list[Metric]:
        with_mixture = "mixture" in ((body or {}).get("methods") or {})
        return ensemble_metrics(with_mixture)


class EnsemblePresenter(Presenter):
    title = "Prompt ensembles"
    report_focus = "methods"


ENSEMBLE = Kind("ensemble", study=EnsembleStudy(), presenter=EnsemblePresenter(), command=EnsembleCommand())

__all__ = ["ENSEMBLE", "ensemble_metrics"]
