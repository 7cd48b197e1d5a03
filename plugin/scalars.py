"""A report read as flat scalar metrics: the names and numbers a harness's results table shows.

A harness prints scalars, one per metric name, while the core's reports are
nested dicts. A :class:`Metric` names one scalar and says how to read it from
a report; the functions below list every kind's metrics in the order a
harness shows them (lm-eval's ``results_*.json``; :meth:`judgecp.results.Result.scalars`,
which ``judgecp gate`` reads, by the same names). Reading is the same for
every kind (:func:`metric_value`): a count (``always``) is defined even when
the report is not; every other metric is undefined (``None``; NaN in a
harness's table, :func:`read_metric`) when the report has an ``error`` or
holds ``null`` there, or when an entry of a data-dependent table is absent
(a category, model or variation with no rows). A key the report should have
and lacks (a renamed metric, a truncated file) is a
:class:`judgecp.results.MetricError` naming the key, never a NaN.
``<m>_stderr`` right after ``<m>`` is the standard deviation over splits
(lm-eval's stderr column).

Nothing here computes a statistic: the reports come from
:func:`judgecp.evaluate`, :func:`judgecp.calibrators.apply` and
:func:`judgecp.ensemble.study.study_report`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgecp.protocol import Protocol
from judgecp.results import MetricError

#: Point metrics of the judge's own score (no stderr: they use every valid row).
POINT_METRICS = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae")
UNCERTAINTY_KEYS = ("accuracy", "ece", "auroc", "auprc")
PAIRWISE_SIGNALS = ("bpe", "predictive")
PARC_SCORES = ("reliability", "accuracy", "certainty", "consistency")
ENSEMBLE_METHODS = ("uniform", "bpe", "mixture")
ENSEMBLE_SCORES = ("ece", "mce", "auprc", "nll", "accuracy")


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
    from judgecp.results import scalar

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
    """A metric-name-safe form of a method spec: ``lac(probabilities=recalibrated)`` -> ``lac_probabilities_recalibrated``."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]+", "_", spec)).strip("_")


def excluded_count(report: Mapping[str, Any]) -> int:
    """Rows left out, all reasons together."""
    return sum(int(e["count"]) for e in report.get("excluded") or ())


def _counts(n_key: str = "n") -> list[Metric]:
    return [Metric(n_key, _pick("n"), None, always=True),
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


def _pick(*keys: str) -> Callable[[Mapping[str, Any]], Any]:
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


def _with_stderr(name: str, keys: Sequence[str], higher: bool | None) -> list[Metric]:
    """``<name>`` at ``keys``, then ``<name>_stderr`` at ``keys`` + ``_std`` (lm-eval's stderr column)."""
    *path, last = keys
    return [Metric(name, _pick(*path, last), higher), Metric(f"{name}_stderr", _pick(*path, f"{last}_std"), None)]


def likert_metrics(protocol: Protocol, interval: Mapping[str, bool] | None = None) -> list[Metric]:
    """Per method: ``coverage_<m>`` (label set), ``width_<m>`` (max - min), interval methods
    ``interval_width_<m>`` (u - l), each with ``_stderr``; ``full_range_<m>``; then the judge's
    point metrics, ``n`` and ``excluded``. ``interval`` says which methods are interval methods (a report
    read back says it itself); by default the registered method classes do. Continuous labels have no
    label set: ``coverage_<m>`` and ``width_<m>`` are the interval's."""
    from judgecp.plugins import method_classes, parse_method_spec

    if interval is None:
        classes = method_classes()
        interval = {spec: classes[parse_method_spec(spec)[0]].output == "interval"
                    for spec in protocol.method_specs("likert")}
    metrics = _counts()
    for spec in protocol.method_specs("likert"):
        s = metric_suffix(spec)
        method = Skippable(spec)
        metrics += _with_stderr(f"coverage_{s}", ("methods", method, LabelsOrInterval(), "coverage"), None)
        metrics += _with_stderr(f"width_{s}", ("methods", method, LabelsOrInterval(), "width"), False)
        if interval[spec]:
            metrics += _with_stderr(f"interval_width_{s}", ("methods", method, "interval", "width"), False)
        metrics.append(Metric(f"full_range_{s}", _pick("methods", method, "full_range"), False))
    metrics += [Metric(key, _pick("point", key), key != "mae") for key in POINT_METRICS]
    return metrics


def pairwise_metrics(protocol: Protocol) -> list[Metric]:
    """``n_pairs``, ``excluded``, ``single_order`` (pairs judged in one order), ``bpe`` (mean bidirectional
    preference entropy, nats); per signal ``accuracy``/``ece``/``auroc``/``auprc``; per controller and
    level ``risk_<c>_<alpha>`` (error among accepted) and ``coverage_<c>_<alpha>`` (share accepted),
    with ``_stderr``."""
    metrics = [
        *_counts("n_pairs"),
        Metric("single_order", lambda r: sum(int(f["count"]) for f in r.get("flags", []) if f.get("flag") == "single_order"),
               False, always=True),
        Metric("bpe", _pick("bpe_mean"), False),
    ]
    for signal in PAIRWISE_SIGNALS:
        metrics += [Metric(f"{key}_{signal}", _pick("uncertainty", Entry(signal), key), key != "ece")
                    for key in UNCERTAINTY_KEYS]
    for controller in protocol.controller_names():
        for alpha in protocol.levels("pairwise"):
            a = f"{alpha:g}"
            risk = f"risk_{controller}_{a}"
            metrics += [Metric(risk, _accepted_risk(controller, a, "risk"), False),
                        Metric(f"{risk}_stderr", _accepted_risk(controller, a, "risk_std"), None)]
            metrics += _with_stderr(f"coverage_{controller}_{a}", ("controllers", controller, a, "coverage"), True)
    return metrics


def _accepted_risk(controller: str, level: str, key: str) -> Callable[[Mapping[str, Any]], Any]:
    """A controller's risk (error among accepted verdicts) at a level: undefined (None) when it
    accepted no verdict in any split, as in the headline
    (:meth:`judgecp.kinds.pairwise.PairwiseKind.headline`); the study counts such a split's risk
    as 0, which would read as a perfect judge."""
    read_risk = _pick("controllers", controller, level, key)
    read_abstain = _pick("controllers", controller, level, "abstain_all")

    def read(report: Mapping[str, Any]) -> Any:
        value = read_risk(report)
        return None if value is not None and read_abstain(report) == 1.0 else value

    return read


def mcq_metrics(protocol: Protocol, categories: Sequence[str] = ()) -> list[Metric]:
    """``n``, ``excluded``, ``accuracy``; per method ``coverage_<m>``, ``set_size_<m>`` (with ``_stderr``),
    ``set_size_correct_<m>``, ``set_size_incorrect_<m>``, ``empty_<m>``; per category ``accuracy_<c>`` and,
    for the first method, ``coverage_<m>_<c>`` and ``set_size_<m>_<c>``."""
    metrics = [*_counts(), Metric("accuracy", _pick("accuracy"), True)]
    specs = protocol.method_specs("mcq")
    for spec in specs:
        s = metric_suffix(spec)
        metrics += _with_stderr(f"coverage_{s}", ("methods", spec, "coverage"), None)
        metrics += _with_stderr(f"set_size_{s}", ("methods", spec, "set_size"), False)
        metrics += [Metric(f"set_size_correct_{s}", _pick("methods", spec, "set_size_correct"), False),
                    Metric(f"set_size_incorrect_{s}", _pick("methods", spec, "set_size_incorrect"), None),
                    Metric(f"empty_{s}", _pick("methods", spec, "empty"), False)]
    for category in categories:
        c = metric_suffix(category)
        metrics.append(Metric(f"accuracy_{c}", _pick("by_category", Entry(category), "accuracy"), True))
        for spec in specs[:1]:
            s = metric_suffix(spec)
            metrics += [Metric(f"{key}_{s}_{c}", _pick("by_category", Entry(category), "methods", spec, key),
                               None if key == "coverage" else False) for key in ("coverage", "set_size")]
    return metrics


def parc_metrics(variations: Sequence[str], families: Sequence[str], datasets: Sequence[str] = ()) -> list[Metric]:
    """Calibrated scores: per score (reliability, accuracy, certainty, consistency) the model's mean
    over cells, per variation (no consistency for ``O``), per family, and per dataset when several."""
    metrics = _counts()
    for score in PARC_SCORES:
        metrics.append(Metric(score, _model_score(score), True))
        metrics += [Metric(f"{score}_{v}", _pick(score, "variation", Entry(v), "calibrated"), True)
                    for v in variations if not (score == "consistency" and v == "O")]
        metrics += [Metric(f"{score}_{f}", _pick(score, "family", Entry(f), "calibrated"), True) for f in families]
        if len(datasets) > 1:
            metrics += [Metric(f"{score}_dataset_{metric_suffix(d)}", _pick(score, "dataset", Entry(d), "calibrated"),
                               True) for d in datasets]
    return metrics


def _model_score(score: str) -> Callable[[Mapping[str, Any]], Any]:
    """The one model's calibrated ``score`` (a harness run has one model); undefined (None) otherwise."""

    def read(report: Mapping[str, Any]) -> Any:
        by_model: Mapping[str, Any] = _pick(score, "model")(report)
        if len(by_model) != 1:
            return None
        return _pick("calibrated")(next(iter(by_model.values())))

    return read


def ensemble_metrics(with_mixture: bool) -> list[Metric]:
    """``n_items``, ``n_prompts``, ``excluded``; per method ``<score>_<method>`` (+ ``_stderr``: the std
    over seeds), ``fdp_<method>`` and ``selected_<method>`` (the BY selection)."""
    metrics = [
        Metric("n_items", _pick("n_items"), None, always=True),
        Metric("n_prompts", _pick("n_prompts"), None, always=True),
        Metric("excluded", excluded_count, False, always=True),
    ]
    for method in ENSEMBLE_METHODS if with_mixture else ENSEMBLE_METHODS[:2]:
        for score in ENSEMBLE_SCORES:
            metrics.append(Metric(f"{score}_{method}", _pick("methods", method, score), score in ("auprc", "accuracy")))
            metrics.append(Metric(f"{score}_{method}_stderr", _pick("methods", method, f"{score}_std"), None))
        metrics.append(Metric(f"fdp_{method}", _pick("selection", method, "fdp"), False))
        metrics.append(Metric(f"selected_{method}", _pick("selection", method, "selected_share"), True))
    return metrics


def calibrated_metrics(kind: str) -> list[Metric]:
    """The metrics of a saved calibrator applied to a run (:func:`judgecp.calibrators.apply`'s summary).

    ``n`` (records applied), ``n_read``, ``excluded``; the kind's per-item summaries
    (:meth:`judgecp.kinds.Kind.applied_metrics`: Likert and multiple choice ``set_size``,
    ``singleton_share``, ``empty_sets``, ``coverage_labeled``; pairwise ``abstention_rate`` and
    ``risk_labeled``); ``drift.p_value`` and ``drift.alarm``; the PPI++ estimate
    ``estimate.ppi.mean`` / ``.lower`` / ``.upper`` / ``.se``, the same for ``estimate.labeled_only``
    and ``estimate.judge_only`` (the judge's own mean), ``estimate.effective_sample_size``,
    ``estimate.judge_bias``, ``estimate.n_labeled``, ``estimate.n_unlabeled``.
    """
    from judgecp.calibrators.results import apply_metrics
    from judgecp.kinds import get_kind

    return apply_metrics(get_kind(kind).applied_metrics())
