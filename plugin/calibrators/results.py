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

from judgecp.results import Result, register_schema
from judgecp.scalars import Entry, Metric, _pick, excluded_count, metric_value

#: An effective sample size below this is too few labels for a normal-approximation interval.
MIN_EFFECTIVE_LABELS = 10.0
INTERVALS = ("ppi", "labeled_only", "judge_only")


def estimate_metrics(at: tuple[str, ...]) -> list[Metric]:
    """The scalars of a PPI++ estimate block found at ``at`` (its keys ``estimate``, ``effective_sample_size``...)."""
    metrics: list[Metric] = []
    for name in INTERVALS:
        for key in ("mean", "lower", "upper", "se"):
            metrics.append(Metric(f"estimate.{name}.{key}", _pick(*at, "estimate", name, key), None))
    metrics += [Metric("estimate.effective_sample_size", _pick(*at, "effective_sample_size"), True),
                Metric("estimate.judge_bias", _pick(*at, "judge_bias"), None),
                Metric("estimate.n_labeled", _pick(*at, "n_labeled"), None),
                Metric("estimate.n_unlabeled", _pick(*at, "n_unlabeled"), None)]
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


@register_schema
class EstimateResult(Result):
    """``judgecp estimate``: PPI++ next to the labeled-only and judge-only intervals (``judgecp.estimate/1``)."""

    schema = "judgecp.estimate/1"
    description = "an estimate (judgecp estimate --json)"
    command = "judgecp estimate --json"

    def metric_list(self) -> list[Metric]:
        return [Metric("n", _pick("n"), None, always=True), Metric("excluded", excluded_count, False, always=True),
                *estimate_metrics(())]

    def scalars(self) -> dict[str, float | None]:
        return {m.name: metric_value(self, m) for m in self.metric_list()}

    def untrusted(self) -> dict[str, str]:
        return _untrusted(self.metric_list(), self, self)


@register_schema
class ApplyResult(Result):
    """``judgecp apply``: a saved calibrator applied to a run (``judgecp.apply/1``)."""

    schema = "judgecp.apply/1"
    description = "an apply summary (judgecp apply --json)"
    command = "judgecp apply --json"

    def metric_list(self) -> list[Metric]:
        from judgecp.scalars import calibrated_metrics

        return calibrated_metrics(self.kind) + (history_metrics() if self.get("history") else [])

    def scalars(self) -> dict[str, float | None]:
        return {m.name: metric_value(self, m) for m in self.metric_list()}

    def untrusted(self) -> dict[str, str]:
        return _untrusted(self.metric_list(), self.get("estimate"), self)


def apply_metrics(per_item: list[Metric]) -> list[Metric]:
    """An apply summary's scalars: counts, the kind's per-item summaries, drift, the PPI++ estimate."""
    return [Metric("n", _pick("n_applied"), None, always=True),
            Metric("n_read", _pick("n"), None, always=True),
            Metric("excluded", excluded_count, False, always=True),
            *per_item,
            Metric("drift.p_value", _pick("drift", "p_value"), True),
            Metric("drift.alarm", _pick("drift", "drift"), False),
            *estimate_metrics(("estimate",))]


def history_metrics() -> list[Metric]:
    """An apply summary with ``--history``: the change detector across nights (:mod:`judgecp.monitor`).

    ``history.alarm`` (1 from the first night the evidence reached the threshold on; ``gate --no-drift``
    fails on it), ``history.evidence`` and ``history.threshold`` (the Shiryaev-Roberts statistic tonight and
    the alarm threshold horizon / level), ``history.nights``, ``history.false_alarm_bound`` (without drift,
    the chance of an alarm by tonight is at most this).
    """
    return [Metric("history.alarm", _pick("history", "alarm"), False),
            Metric("history.evidence", _pick("history", "evidence"), False),
            Metric("history.threshold", _pick("history", "threshold"), None),
            Metric("history.nights", _pick("history", "nights"), None),
            Metric("history.false_alarm_bound", _pick("history", "false_alarm_bound"), False)]


def set_summary_metrics() -> list[Metric]:
    """Likert and multiple choice: mean set size, singletons, empty sets, coverage on the run's labeled items."""
    return [Metric("set_size", _pick("mean_set_size"), False),
            Metric("singleton_share", _pick("singleton_share"), True),
            Metric("empty_sets", _pick("empty_sets"), False),
            Metric("coverage_labeled", _pick(Entry("labeled"), "coverage"), None)]


def accept_summary_metrics() -> list[Metric]:
    """Pairwise: the share abstained on, and the error among accepted labeled pairs."""
    return [Metric("abstention_rate", _pick("abstention_rate"), False),
            Metric("risk_labeled", _pick(Entry("labeled"), "error_among_accepted"), False)]


# -- the nightly questions: compare, plan, select ------------------------------------------------


def _difference_metrics(at: tuple[str, ...], prefix: str) -> list[Metric]:
    metrics = [Metric(f"{prefix}difference.{name}.{key}", _pick(*at, "difference", name, key), None)
               for name in INTERVALS for key in ("mean", "lower", "upper", "se")]
    metrics += [Metric(f"{prefix}difference.effective_labels", _pick(*at, "difference", "effective_labels"), True),
                Metric(f"{prefix}difference.n_labels", _pick(*at, "difference", "n_labels"), None)]
    return metrics


@register_schema
class CompareResult(Result):
    """``judgecp compare``: the judge-corrected difference B - A of two runs (``judgecp.compare/1``).

    Scalars: ``difference.{ppi,labeled_only,judge_only}.{mean,lower,upper,se}``,
    ``difference.effective_labels``, ``difference.n_labels``, and the same per group as
    ``by_group.<group>.difference...``. A pooled difference whose PPI interval is degenerate (zero width,
    labels without variance, effective labels unbounded or below 10) is untrusted.
    """

    schema = "judgecp.compare/1"
    description = "a comparison (judgecp compare --json)"
    command = "judgecp compare --json"

    def metric_list(self) -> list[Metric]:
        metrics = _difference_metrics((), "")
        for group in (self.get("by_group") or {}):
            metrics += [m for m in _difference_metrics(("by_group", Entry(group)), f"by_group.{group}.")
                        if not m.name.endswith(("effective_labels", "n_labels"))]
        return metrics

    def scalars(self) -> dict[str, float | None]:
        return {m.name: metric_value(self, m) for m in self.metric_list()}

    def untrusted(self) -> dict[str, str]:
        reasons = compare_degenerate(self)
        if not reasons:
            return {}
        why = "degenerate difference: " + "; ".join(reasons)
        return {m.name: why for m in self.metric_list() if m.name.startswith("difference.")}


def compare_degenerate(out: Mapping[str, Any]) -> list[str]:
    """Why a comparison's pooled difference cannot be trusted: :func:`degenerate_reasons` of its difference, and
    what the comparison noted (a run's labels or proxies without spread)."""
    difference = out.get("difference") or {}
    block = {"estimate": difference, "effective_sample_size": difference.get("effective_labels"),
             "degenerate": out.get("degenerate") or []}
    return degenerate_reasons(block)


def _flagged(result: Mapping[str, Any], names: list[str], what: str) -> dict[str, str]:
    """Every metric of ``names`` untrusted when the result says it is degenerate (a plan, a selection)."""
    reasons = [str(why) for why in result.get("degenerate") or ()]
    return {name: f"degenerate {what}: " + "; ".join(reasons) for name in names} if reasons else {}


@register_schema
class PlanResult(Result):
    """``judgecp plan``: how many labels give a half-width (``judgecp.plan/1``): ``labels.ppi``,
    ``labels.labeled_only`` (undefined when out of reach), the same at the point estimates, ``half_width``."""

    schema = "judgecp.plan/1"
    description = "a label plan (judgecp plan --json)"
    command = "judgecp plan --json"

    def scalars(self) -> dict[str, float | None]:
        metrics = [Metric("half_width", _pick("half_width"), None)]
        metrics += [Metric(f"{section}.{key}", _pick(section, key), False)
                    for section in ("labels", "labels_at_estimates") for key in ("ppi", "labeled_only")]
        return {m.name: metric_value(self, m) for m in metrics}

    def untrusted(self) -> dict[str, str]:
        return _flagged(self, [name for name in self.scalars() if name != "half_width"], "plan")


@register_schema
class SelectResult(Result):
    """``judgecp select``: the items drawn to label and the width expected (``judgecp.select/1``)."""

    schema = "judgecp.select/1"
    description = "a selection summary (judgecp select --json)"
    command = "judgecp select --json"

    def scalars(self) -> dict[str, float | None]:
        metrics = [Metric("n_items", _pick("n_items"), None), Metric("n_selected", _pick("n_selected"), None),
                   Metric("budget", _pick("budget"), None)]
        metrics += [Metric(f"expected_width.{key}", _pick("expected_width", key), None)
                    for key in ("active", "uniform", "ratio")]
        return {m.name: metric_value(self, m) for m in metrics}

    def untrusted(self) -> dict[str, str]:
        return _flagged(self, [name for name in self.scalars() if name.startswith("expected_width.")], "selection")
