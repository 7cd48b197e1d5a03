"""Task-level metrics of pairwise judge tasks: BPE and selective risk control (SCOPE) over all pairs.

Every metric reads one :func:`judgecp.pairwise.evaluate_pairwise` report,
computed once per content (records and settings) by
:func:`judgecp.adapters.lm_eval.metrics.cached_report`. Nothing here imports
lm-eval.

Settings from the task's ``metadata`` (``--metadata '{"alphas": [0.1, 0.2]}'``):

================ ================================================ ======================================
key              default                                          meaning
================ ================================================ ======================================
``alphas``       ``[0.05, 0.1, 0.15, 0.2, 0.25]``                 target risk levels (list or "0.1,0.2")
``n_splits``     ``1000``                                         random calibration/test splits
``cal_fraction`` ``0.5``                                          calibration share of each split
``signal``       ``"bpe"``                                        uncertainty the controllers threshold
                                                                  (``bpe`` or single-order ``predictive``)
``controllers``  ``scope,clopper_pearson,naive,heuristic,vanilla`` risk controllers
``delta``        ``0.1``                                          Clopper-Pearson controller: 1 - confidence
================ ================================================ ======================================
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgecp.adapters.lm_eval.metrics import (
    Metric,
    cached_report,
    finish_report,
    metadata_cal_fraction,
    metadata_list,
    metadata_number,
    report_aggregation,
    undefined_report,
)
from judgecp.adapters.lm_eval.records import split_excluded
from judgecp.errors import InputError

#: Signals the pairwise records of these tasks support (verbalized/agreement need fields they lack).
SIGNALS = ("bpe", "predictive")
UNCERTAINTY_KEYS = ("accuracy", "ece", "auroc", "auprc")


@dataclass(frozen=True)
class PairwiseSettings:
    """The SCOPE protocol one lm-eval task runs (:class:`judgecp.pairwise.PairwiseProtocol`)."""

    alphas: tuple[float, ...] = (0.05, 0.10, 0.15, 0.20, 0.25)
    n_splits: int = 1000
    cal_fraction: float = 0.5
    signal: str = "bpe"
    controllers: tuple[str, ...] = ("scope", "clopper_pearson", "naive", "heuristic", "vanilla")
    delta: float = 0.1

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None) -> PairwiseSettings:
        """Read the settings from a task's metadata; a bad value is an :class:`InputError` naming it."""
        from judgecp.pairwise import DEFAULT_ALPHAS, DEFAULT_CONTROLLERS
        from judgecp.selective import controller_classes

        meta = dict(metadata or {})
        try:
            alphas = tuple(float(a) for a in metadata_list(meta, "alphas", [str(a) for a in DEFAULT_ALPHAS]))
        except ValueError as exc:
            raise InputError(f"metadata alphas must be numbers, got {meta.get('alphas')!r}") from exc
        if not alphas or len(set(alphas)) != len(alphas):
            raise InputError(f"metadata alphas must be distinct levels, got {meta.get('alphas')!r}")
        n_splits = metadata_number(meta, "n_splits", 1000)
        if n_splits != int(n_splits) or n_splits < 1:
            raise InputError(f"metadata n_splits must be a positive integer, got {meta.get('n_splits')!r}")
        signal = str(meta.get("signal", "bpe"))
        if signal not in SIGNALS:
            raise InputError(f"metadata signal must be one of {', '.join(SIGNALS)}, got {signal!r}")
        controllers = tuple(metadata_list(meta, "controllers", list(DEFAULT_CONTROLLERS)))
        known = controller_classes()
        unknown = [c for c in controllers if c not in known]
        if unknown or not controllers or len(set(controllers)) != len(controllers):
            raise InputError(f"metadata controllers must be distinct names from {', '.join(known)}, got {meta.get('controllers')!r}")
        delta = metadata_number(meta, "delta", 0.1)
        if not 0.0 < delta < 1.0:
            raise InputError(f"metadata delta must be in (0, 1), got {delta}")
        settings = cls(alphas, int(n_splits), metadata_cal_fraction(meta), signal, controllers, delta)
        settings.protocol()  # the core checks the levels
        return settings

    def protocol(self) -> Any:
        from judgecp.pairwise import PairwiseProtocol

        return PairwiseProtocol(
            alphas=self.alphas, n_splits=self.n_splits, cal_fraction=self.cal_fraction, signal=self.signal,
            controllers=self.controllers, delta=self.delta,
        )

    def key(self) -> str:
        return json.dumps(["pairwise", self.alphas, self.n_splits, self.cal_fraction, self.signal, self.controllers, self.delta])


def level(alpha: float) -> str:
    """The report's key of a level (``0.1``), also the metric-name suffix."""
    return f"{alpha:g}"


def pairwise_metrics(settings: PairwiseSettings) -> list[Metric]:
    """The task's metrics in table order; each ``<m>_stderr`` follows ``<m>``.

    ``n_pairs`` (pairs used, both orders or one), ``excluded`` (pairs and
    documents left out, every reason, the loader's tie votes included),
    ``single_order`` (pairs kept with one order only), ``bpe`` (mean
    bidirectional preference entropy over the pairs, nats, 0 to ln 2); per signal
    (``bpe``, single-order ``predictive``): ``accuracy``, ``ece``, ``auroc``,
    ``auprc`` of its confidence; per controller and level:
    ``risk_<c>_<alpha>`` (error rate among accepted test judgments) and
    ``coverage_<c>_<alpha>`` (share accepted), with ``_stderr`` = standard
    deviation over the splits.
    """
    metrics = [
        Metric("n_pairs", lambda r: r["n"], None, always=True),
        Metric("excluded", lambda r: r["n_excluded"], False, always=True),
        Metric("single_order", lambda r: _flag_count(r, "single_order"), False, always=True),
        Metric("bpe", lambda r: r["bpe_mean"], False),
    ]
    for signal in SIGNALS:
        for key in UNCERTAINTY_KEYS:
            metrics.append(Metric(
                f"{key}_{signal}", lambda r, s=signal, k=key: r["uncertainty"][s][k], key != "ece",
            ))
    for controller in settings.controllers:
        for alpha in settings.alphas:
            a = level(alpha)

            def entry(key: str, c: str = controller, a: str = a) -> Callable[[dict[str, Any]], float | None]:
                return lambda r: r["controllers"][c][a][key]

            metrics += [
                Metric(f"risk_{controller}_{a}", entry("risk"), False),
                Metric(f"risk_{controller}_{a}_stderr", entry("risk_std"), None),
                Metric(f"coverage_{controller}_{a}", entry("coverage"), True),
                Metric(f"coverage_{controller}_{a}_stderr", entry("coverage_std"), None),
            ]
    return metrics


def _flag_count(report: Mapping[str, Any], flag: str) -> int:
    return sum(int(f["count"]) for f in report.get("flags", []) if f.get("flag") == flag)


def pairwise_report(
    records: Sequence[Mapping[str, Any]],
    settings: PairwiseSettings,
    *,
    task: str = "",
) -> dict[str, Any]:
    """The SCOPE report of a task's records, the adapter's exclusions counted with the core's.

    When no report can be computed (fewer than 4 usable pairs), the report has
    ``error``; the counts still hold and every other metric is NaN.
    """
    return cached_report(records, settings.key(), lambda ordered: _compute(ordered, settings, task))


def _compute(records: list[dict[str, Any]], settings: PairwiseSettings, task: str) -> dict[str, Any]:
    from judgecp.pairwise import evaluate_pairwise, pairwise_from_records

    usable, excluded = split_excluded(records)
    source = f"lm-eval task {task}".strip()
    report: dict[str, Any]
    try:
        if not usable:
            raise InputError(f"{source}: no usable records")
        # The core adds its own reasons to `excluded` (also when it finds no usable pair).
        data = pairwise_from_records(usable, source=source, excluded=excluded)
    except InputError as exc:
        report = undefined_report(str(exc), len(records), 0, excluded.to_json())
        report["flags"] = []
    else:
        try:
            report = evaluate_pairwise(data, settings.protocol())
        except InputError as exc:  # fewer than 4 pairs
            report = undefined_report(str(exc), data.n_read, data.n, data.excluded.to_json())
            report["flags"] = data.flags.to_json(key="flag")
    return finish_report(report, task)


def pairwise_aggregations(
    settings: PairwiseSettings, task: str
) -> list[tuple[Metric, Callable[[Sequence[Mapping[str, Any]]], float]]]:
    """Every metric with its lm-eval aggregation function."""
    return [
        (m, report_aggregation(m, lambda records: pairwise_report(records, settings, task=task)))
        for m in pairwise_metrics(settings)
    ]
