"""The results of the nightly questions: ``judgecp compare``, ``judgecp plan`` and ``judgecp select``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgecp.base.schemas import describe_schema
from judgecp.kinds.metrics import Entry, Metric, metric_value, pick
from judgecp.workflows.results.base import Result
from judgecp.workflows.results.calibrated import INTERVALS, degenerate_reasons


def _difference_metrics(at: tuple[str, ...], prefix: str) -> list[Metric]:
    metrics = [Metric(f"{prefix}difference.{name}.{key}", pick(*at, "difference", name, key), None)
               for name in INTERVALS for key in ("mean", "lower", "upper", "se")]
    metrics += [Metric(f"{prefix}difference.effective_labels", pick(*at, "difference", "effective_labels"), True),
                Metric(f"{prefix}difference.n_labels", pick(*at, "difference", "n_labels"), None)]
    return metrics


class CompareResult(Result):
    """``judgecp compare``: the judge-corrected difference B - A of two runs (``judgecp.compare/1``).

    Scalars: ``difference.{ppi,labeled_only,judge_only}.{mean,lower,upper,se}``,
    ``difference.effective_labels``, ``difference.n_labels``, and the same per group as
    ``by_group.<group>.difference...``. A pooled difference whose PPI interval is degenerate (zero width,
    labels without variance, effective labels unbounded or below 10) is untrusted.
    """

    schema = "judgecp.compare/1"
    description = describe_schema(schema) or ""
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


class PlanResult(Result):
    """``judgecp plan``: how many labels give a half-width (``judgecp.plan/1``): ``labels.ppi``,
    ``labels.labeled_only`` (undefined when out of reach), the same at the point estimates, ``half_width``."""

    schema = "judgecp.plan/1"
    description = describe_schema(schema) or ""
    command = "judgecp plan --json"

    def scalars(self) -> dict[str, float | None]:
        metrics = [Metric("half_width", pick("half_width"), None)]
        metrics += [Metric(f"{section}.{key}", pick(section, key), False)
                    for section in ("labels", "labels_at_estimates") for key in ("ppi", "labeled_only")]
        return {m.name: metric_value(self, m) for m in metrics}

    def untrusted(self) -> dict[str, str]:
        return _flagged(self, [name for name in self.scalars() if name != "half_width"], "plan")


class SelectResult(Result):
    """``judgecp select``: the items drawn to label and the width expected (``judgecp.select/1``)."""

    schema = "judgecp.select/1"
    description = describe_schema(schema) or ""
    command = "judgecp select --json"

    def scalars(self) -> dict[str, float | None]:
        metrics = [Metric("n_items", pick("n_items"), None), Metric("n_selected", pick("n_selected"), None),
                   Metric("budget", pick("budget"), None)]
        metrics += [Metric(f"expected_width.{key}", pick("expected_width", key), None)
                    for key in ("active", "uniform", "ratio")]
        return {m.name: metric_value(self, m) for m in metrics}

    def untrusted(self) -> dict[str, str]:
        return _flagged(self, [name for name in self.scalars() if name.startswith("expected_width.")], "selection")
