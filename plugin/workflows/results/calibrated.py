"""The results of ``judgecp apply`` and ``judgecp estimate``: typed, with one flat scalar naming.

Both hold a PPI++ estimate (``estimate``: ``ppi``, ``labeled_only`` and
``judge_only`` intervals) whose scalars have the same names in both files:
``estimate.ppi.mean``, ``estimate.ppi.lower``, ``estimate.ppi.upper``,
``estimate.ppi.se``, ``estimate.labeled_only.*``, ``estimate.judge_only.*``,
``estimate.effective_sample_size``, ``estimate.judge_bias``. An estimate is
*degenerate* (:func:`degenerate_reasons`) when its interval has zero width,
its labeled sample has no variance, or its effective sample size is
unbounded or below :data:`MIN_EFFECTIVE_LABELS`: the JSON says so
(``degenerate``) and ``judgecp gate`` fails any of its metrics unless
``--allow-degenerate``. A comparison, a plan and a selection say so too
(``degenerate``: a run's, a pilot's labels or proxies without spread), and
gate fails their metrics the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from judgecp.base.schemas import describe_schema
from judgecp.kinds.metrics import Metric, excluded_count, metric_value, pick
from judgecp.kinds.registry import calibration_kind
from judgecp.workflows.results.base import Result

#: An effective sample size below this is too few labels for a normal-approximation interval.
MIN_EFFECTIVE_LABELS = 10.0
INTERVALS = ("ppi", "labeled_only", "judge_only")


def estimate_metrics(at: tuple[str, ...]) -> list[Metric]:
    """The scalars of a PPI++ estimate block found at ``at`` (its keys ``estimate``, ``effective_sample_size``...)."""
    metrics: list[Metric] = []
    for name in INTERVALS:
        for key in ("mean", "lower", "upper", "se"):
            metrics.append(Metric(f"estimate.{name}.{key}", pick(*at, "estimate", name, key), None))
    metrics += [Metric("estimate.effective_sample_size", pick(*at, "effective_sample_size"), True),
                Metric("estimate.judge_bias", pick(*at, "judge_bias"), None),
                Metric("estimate.n_labeled", pick(*at, "n_labeled"), None),
                Metric("estimate.n_unlabeled", pick(*at, "n_unlabeled"), None)]
    return metrics


def degenerate_reasons(block: Mapping[str, Any] | None) -> list[str]:
    """Why a PPI++ estimate block cannot be trusted as an interval (empty when it can)."""
    if not block:
        return []
    reasons: list[str] = []
    est = block.get("estimate") or {}
    ppi, labeled = est.get("ppi") or {}, est.get("labeled_only") or {}
    lower, upper = ppi.get("lower"), ppi.get("upper")
    if lower is None or upper is None or not (math.isfinite(lower) and math.isfinite(upper)):
        reasons.append("the interval is undefined")
    elif upper < lower:
        reasons.append(f"reversed interval [{lower:g}, {upper:g}] (its lower bound above its upper)")
    elif upper == lower:
        reasons.append(f"zero-width interval [{lower:g}, {upper:g}]")
    elif isinstance(mean := ppi.get("mean"), (int, float)) and not lower <= mean <= upper:
        reasons.append(f"the estimate {mean:g} is outside its interval [{lower:g}, {upper:g}]")
    if labeled.get("se") is not None and labeled["se"] == 0:
        reasons.append("the labeled sample has no variance (every label equal)")
    ess = block.get("effective_sample_size")
    if ess is None or (isinstance(ess, float) and math.isinf(ess)):
        reasons.append("effective sample size unbounded")
    elif ess < MIN_EFFECTIVE_LABELS:
        reasons.append(f"effective sample size {ess:.1f} below {MIN_EFFECTIVE_LABELS:g} labeled items")
    noted = [str(why) for why in block.get("degenerate") or ()]  # what the estimate itself noted (or earlier calls)
    return noted + [why for why in reasons if why not in noted]


def with_degenerate(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` with its ``degenerate`` reasons (an empty list when none)."""
    return {**block, "degenerate": degenerate_reasons(block)}


def _untrusted(metrics: list[Metric], block: Mapping[str, Any] | None, extra: Mapping[str, Any]) -> dict[str, str]:
    reasons = degenerate_reasons(block) if block else []
    for why in (block or {}).get("degenerate") or ():
        if why not in reasons:
            reasons.append(str(why))
    withheld = extra.get("estimate_withheld")
    if isinstance(withheld, Mapping) and withheld.get("reason"):
        reasons = [f"no estimate ({withheld['reason']}: {withheld.get('message', '')})"]
    if not reasons:
        return {}
    why = "degenerate estimate: " + "; ".join(reasons) if not withheld else "; ".join(reasons)
    return {m.name: why for m in metrics if m.name.startswith("estimate.")}


class EstimateResult(Result):
    """``judgecp estimate``: PPI++ next to the labeled-only and judge-only intervals (``judgecp.estimate/1``)."""

    schema = "judgecp.estimate/1"
    description = describe_schema(schema) or ""
    command = "judgecp estimate --json"

    def metric_list(self) -> list[Metric]:
        return [Metric("n", pick("n"), None, always=True), Metric("excluded", excluded_count, False, always=True),
                *estimate_metrics(())]

    def scalars(self) -> dict[str, float | None]:
        return {m.name: metric_value(self, m) for m in self.metric_list()}

    def untrusted(self) -> dict[str, str]:
        return _untrusted(self.metric_list(), self, self)


class ApplyResult(Result):
    """``judgecp apply``: a saved calibrator applied to a run (``judgecp.apply/1``)."""

    schema = "judgecp.apply/1"
    description = describe_schema(schema) or ""
    command = "judgecp apply --json"

    def metric_list(self) -> list[Metric]:
        return calibrated_metrics(self.kind) + (history_metrics() if self.get("history") else [])

    def scalars(self) -> dict[str, float | None]:
        return {m.name: metric_value(self, m) for m in self.metric_list()}

    def untrusted(self) -> dict[str, str]:
        return _untrusted(self.metric_list(), self.get("estimate"), self)


def apply_metrics(per_item: list[Metric]) -> list[Metric]:
    """An apply summary's scalars: counts, the kind's per-item summaries, drift, the PPI++ estimate."""
    return [Metric("n", pick("n_applied"), None, always=True),
            Metric("n_read", pick("n"), None, always=True),
            Metric("excluded", excluded_count, False, always=True),
            *per_item,
            Metric("drift.p_value", pick("drift", "p_value"), True),
            Metric("drift.alarm", pick("drift", "drift"), False),
            *estimate_metrics(("estimate",))]


def history_metrics() -> list[Metric]:
    """An apply summary with ``--history``: the change detector across nights
    (:mod:`judgecp.workflows.nightly.history`).

    ``history.alarm`` (1 from the first night the evidence reached the threshold on; ``gate --no-drift``
    fails on it), ``history.evidence`` and ``history.threshold`` (the Shiryaev-Roberts statistic tonight and
    the alarm threshold horizon / level), ``history.nights``, ``history.false_alarm_bound`` (without drift,
    the chance of an alarm by tonight is at most this).
    """
    return [Metric("history.alarm", pick("history", "alarm"), False),
            Metric("history.evidence", pick("history", "evidence"), False),
            Metric("history.threshold", pick("history", "threshold"), None),
            Metric("history.nights", pick("history", "nights"), None),
            Metric("history.false_alarm_bound", pick("history", "false_alarm_bound"), False)]


def calibrated_metrics(kind: str) -> list[Metric]:
    """The metrics of a saved calibrator applied to a run (:func:`judgecp.workflows.calibrators.apply`'s summary).

    ``n`` (records applied), ``n_read``, ``excluded``; the kind's per-item summaries
    (:meth:`judgecp.kinds.kind.Calibration.applied_metrics`: Likert and multiple choice ``set_size``,
    ``singleton_share``, ``empty_sets``, ``coverage_labeled``; pairwise ``abstention_rate`` and
    ``risk_labeled``); ``drift.p_value`` and ``drift.alarm``; the PPI++ estimate
    ``estimate.ppi.mean`` / ``.lower`` / ``.upper`` / ``.se``, the same for ``estimate.labeled_only``
    and ``estimate.judge_only`` (the judge's own mean), ``estimate.effective_sample_size``,
    ``estimate.judge_bias``, ``estimate.n_labeled``, ``estimate.n_unlabeled``.
    """
    return apply_metrics(calibration_kind(kind).calibration.applied_metrics())
