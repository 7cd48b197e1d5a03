"""A report read as flat scalar metrics: the names and numbers a harness's results table shows.

A harness prints scalars, one per metric name, while the core's reports are
nested dicts. A :class:`Metric` names one scalar and says how to read it from
a report; the functions below list every kind's metrics in the order a
harness shows them (lm-eval's ``results_*.json``; :meth:`judgecp.workflows.results.Result.scalars`,
which ``judgecp gate`` reads, by the same names). Reading is the same for
every kind (:func:`metric_value`): a count (``always``) is defined even when
the report is not; every other metric is undefined (``None``; NaN in a
harness's table, :func:`read_metric`) when the report has an ``error`` or
holds ``null`` there, or when an entry of a data-dependent table is absent
(a category, model or variation with no rows). A key the report should have
and lacks (a renamed metric, a truncated file) is a
:class:`judgecp.kinds.metrics.MetricError` naming the key, never a NaN.
``<m>_stderr`` right after ``<m>`` is the standard deviation over splits
(lm-eval's stderr column).

Nothing here computes a statistic: the reports come from
:func:`judgecp.evaluate`, :func:`judgecp.workflows.calibrators.apply` and
:func:`judgecp.kinds.ensemble.study.study_report`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgecp.base.errors import InputError, short_repr

#: Point metrics of the judge's own score (no stderr: they use every valid row).
POINT_METRICS = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae")
UNCERTAINTY_KEYS = ("accuracy", "ece", "auroc", "auprc")
PAIRWISE_SIGNALS = ("bpe", "predictive")
PARC_SCORES = ("reliability", "accuracy", "certainty", "consistency")
ENSEMBLE_METHODS = ("uniform", "bpe", "mixture")
ENSEMBLE_SCORES = ("ece", "mce", "auprc", "nll", "accuracy")


class MetricError(InputError):
    """A metric a result should have is not in its body (a renamed or missing key)."""


# -- frozen JSON values ------------------------------------------------------------------------


def scalar(value: Any, name: str) -> float | None:
    """A metric's value as a float (``None`` for null, NaN or an infinite value the body could not hold)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, (int, float)):
        raise MetricError(f"metric {name!r} is not a number ({short_repr(value)})")
    number = float(value)
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class Metric:
    """One scalar metric read from a report.

    ``always``: a count that is defined even when the report is not (``n``,
    ``excluded``); every other metric is NaN when the report has an ``error``.
    """

    name: str
    read: Callable[[Mapping[str, Any]], Any]
    higher_is_better: bool | None
    always: bool = False


def metric_value(report: Mapping[str, Any], metric: Metric) -> float | None:
    """The metric's value: a float, ``None`` where undefined, a :class:`MetricError` where the key is missing."""
    if metric.always:
        try:
            count = metric.read(report)
        except MetricError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a count over a malformed list
            raise MetricError(f"metric {metric.name!r} cannot be read ({type(exc).__name__}: {exc})") from None
        return scalar(count, metric.name) or 0.0
    if "error" in report:
        return None
    try:
        value = metric.read(report)
    except MetricError as exc:
        raise MetricError(f"metric {metric.name!r}: {exc}") from None
    return scalar(value, metric.name)


def read_metric(report: Mapping[str, Any], metric: Metric) -> float:
    """The metric's value as a float for a harness's table: NaN where undefined (lm-eval writes it as NaN)."""
    value = metric_value(report, metric)
    return math.nan if value is None else value


def metric_values(report: Mapping[str, Any], metrics: Sequence[Metric]) -> dict[str, float]:
    """Every metric's value in ``report``, by name (as a harness's aggregations read them)."""
    return {m.name: read_metric(report, m) for m in metrics}


def metric_suffix(spec: str) -> str:
    """A metric-name-safe form of a method spec: ``lac(probabilities=recalibrated)`` ->
    ``lac_probabilities_recalibrated``."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]+", "_", spec)).strip("_")


def excluded_count(report: Mapping[str, Any]) -> int:
    """Rows left out, all reasons together."""
    return sum(int(e["count"]) for e in report.get("excluded") or ())


def count_metrics(n_key: str = "n") -> list[Metric]:
    return [Metric(n_key, pick("n"), None, always=True),
            Metric("excluded", excluded_count, False, always=True)]


class Entry(str):
    """A key of a data-dependent table (a category, model, variation): absent means undefined, not an error."""

    __slots__ = ()


class Skippable(str):
    """A method of the protocol: absent from the report means undefined only when the report lists it in
    ``skipped`` (a method the data cannot serve, e.g. a set method on continuous labels)."""

    __slots__ = ()


class LabelsOrInterval(str):
    """A Likert method entry's label set, or its interval where labels are continuous (no label set)."""

    __slots__ = ()

    def __new__(cls) -> LabelsOrInterval:
        return super().__new__(cls, "labels")


def pick(*keys: str) -> Callable[[Mapping[str, Any]], Any]:
    """A reader of the value at ``keys``: ``None`` once a value on the way is null or an :class:`Entry` is
    absent; a :class:`MetricError` naming the path when any other key is missing."""

    def read(report: Mapping[str, Any]) -> Any:
        node: Any = report
        for depth, key in enumerate(keys):
            if node is None:
                return None
            if isinstance(key, LabelsOrInterval) and isinstance(node, Mapping) and node.get("labels") is None:
                key = "interval"
            if not isinstance(node, Mapping) or key not in node:
                if isinstance(key, Entry) and isinstance(node, Mapping):
                    return None
                if isinstance(key, Skippable) and key in {e.get("method") for e in report.get("skipped") or ()}:
                    return None
                raise MetricError(f"the report has no {'.'.join(keys[: depth + 1])!r}")
            node = node[key]
        return node

    return read


def with_stderr(name: str, keys: Sequence[str], higher: bool | None) -> list[Metric]:
    """``<name>`` at ``keys``, then ``<name>_stderr`` at ``keys`` + ``_std`` (lm-eval's stderr column)."""
    *path, last = keys
    return [Metric(name, pick(*path, last), higher), Metric(f"{name}_stderr", pick(*path, f"{last}_std"), None)]


def set_summary_metrics() -> list[Metric]:
    """Likert and multiple choice: mean set size, singletons, empty sets, coverage on the run's labeled items."""
    return [Metric("set_size", pick("mean_set_size"), False),
            Metric("singleton_share", pick("singleton_share"), True),
            Metric("empty_sets", pick("empty_sets"), False),
            Metric("coverage_labeled", pick(Entry("labeled"), "coverage"), None)]


def accept_summary_metrics() -> list[Metric]:
    """Pairwise: the share abstained on, and the error among accepted labeled pairs."""
    return [Metric("abstention_rate", pick("abstention_rate"), False),
            Metric("risk_labeled", pick(Entry("labeled"), "error_among_accepted"), False)]


# -- a headline's primary metrics ------------------------------------------------------------


@dataclass(frozen=True)
class PrimaryMetric:
    """One primary metric of a headline.

    ``key``: its flattened name in the headline (``scope|coverage``: nested keys joined
    by ``|``, as VLMEvalKit's ``status.json`` stores them); ``higher_is_better``: its
    direction, ``None`` for a number with a target and no best value (a conformal
    coverage: ``1 - alpha`` is the promise, more is not better); ``best``: the value
    that reads as a perfect judge (``None`` where there is none); ``scalar``: the same
    number's name among the kind's scalar metrics (:mod:`judgecp.kinds.metrics`: lm-eval's
    results table, ``judgecp gate``), so every harness shows what the headline says.
    """

    key: str
    higher_is_better: bool | None
    best: float | None
    scalar: str

    def reads_best(self, value: Any) -> bool:
        """Whether ``value`` is this metric's best value (``None``, undefined, never is)."""
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return self.best is not None and number and float(value) == self.best


def flatten(headline: Mapping[str, Any]) -> dict[str, Any]:
    """The headline one level flat: nested keys joined by ``|`` (VLMEvalKit's ``status.json``)."""
    out: dict[str, Any] = {}
    for key, value in headline.items():
        if isinstance(value, Mapping):
            for inner, v in value.items():
                out[f"{key}|{inner}"] = v
        else:
            out[str(key)] = value
    return out
