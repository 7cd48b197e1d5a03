"""A report read as flat scalar metrics: the names and numbers a harness's results table shows.

A harness prints scalars, one per metric name, while the core's reports are
nested dicts. A :class:`Metric` names one scalar and says how to read it from
a report; the functions below list every kind's metrics in the order a
harness shows them (lm-eval's ``results_*.json``, which ``judgecp gate``
reads by these names). Reading is the same for every kind
(:func:`read_metric`): a count (``always``) is defined even when the report
is not; every other metric is NaN when the report has an ``error`` or lacks
the value. ``<m>_stderr`` right after ``<m>`` is the standard deviation over
splits (lm-eval's stderr column).

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
    read: Callable[[dict[str, Any]], float | None]
    higher_is_better: bool | None
    always: bool = False


def read_metric(report: dict[str, Any], metric: Metric) -> float:
    """The metric's value as a float; NaN when undefined (lm-eval writes it as NaN)."""
    if metric.always:
        return float(metric.read(report) or 0)
    if "error" in report:
        return math.nan
    try:
        value = metric.read(report)
    except (KeyError, TypeError):
        return math.nan
    return math.nan if value is None else float(value)


def metric_values(report: dict[str, Any], metrics: Sequence[Metric]) -> dict[str, float]:
    """Every metric's value in ``report``, by name (as a harness's aggregations read them)."""
    return {m.name: read_metric(report, m) for m in metrics}


def metric_suffix(spec: str) -> str:
    """A metric-name-safe form of a method spec: ``lac(probabilities=recalibrated)`` -> ``lac_probabilities_recalibrated``."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]+", "_", spec)).strip("_")


def _counts(n_key: str = "n") -> list[Metric]:
    return [Metric(n_key, lambda r: r["n"], None, always=True),
            Metric("excluded", lambda r: r["n_excluded"], False, always=True)]


def _with_stderr(name: str, read: Callable[[dict[str, Any]], Any], key: str, higher: bool | None) -> list[Metric]:
    """``<name>`` then ``<name>_stderr`` (the std over splits fills lm-eval's stderr column)."""
    return [Metric(name, lambda r: read(r)[key], higher), Metric(f"{name}_stderr", lambda r: read(r)[f"{key}_std"], None)]


def _pick(*keys: str) -> Callable[[dict[str, Any]], Any]:
    def read(report: dict[str, Any]) -> Any:
        node: Any = report
        for key in keys:
            node = node[key]
        return node

    return read


def likert_metrics(protocol: Protocol) -> list[Metric]:
    """Per method: ``coverage_<m>`` (label set), ``width_<m>`` (max - min), interval methods
    ``interval_width_<m>`` (u - l), each with ``_stderr``; ``full_range_<m>``; then the judge's
    point metrics, ``n`` and ``excluded``. Continuous labels have no label set: ``coverage_<m>`` and
    ``width_<m>`` are the interval's, and a set method (skipped) is NaN."""
    from judgecp.evaluation.metrics import headline_entry
    from judgecp.plugins import method_classes, parse_method_spec

    classes = method_classes()
    metrics = _counts()
    for spec in protocol.method_specs("likert"):
        s = metric_suffix(spec)
        interval = _pick("methods", spec, "interval")

        def labels(report: dict[str, Any], spec: str = spec) -> Any:
            return headline_entry(report["methods"][spec])

        metrics += _with_stderr(f"coverage_{s}", labels, "coverage", None)
        metrics += _with_stderr(f"width_{s}", labels, "width", False)
        if classes[parse_method_spec(spec)[0]].output == "interval":
            metrics += _with_stderr(f"interval_width_{s}", interval, "width", False)
        metrics.append(Metric(f"full_range_{s}", _pick("methods", spec, "full_range"), False))
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
        metrics += [Metric(f"{key}_{signal}", _pick("uncertainty", signal, key), key != "ece") for key in UNCERTAINTY_KEYS]
    for controller in protocol.controller_names():
        for alpha in protocol.levels("pairwise"):
            a = f"{alpha:g}"
            entry = _pick("controllers", controller, a)
            metrics += _with_stderr(f"risk_{controller}_{a}", entry, "risk", False)
            metrics += _with_stderr(f"coverage_{controller}_{a}", entry, "coverage", True)
    return metrics


def mcq_metrics(protocol: Protocol, categories: Sequence[str] = ()) -> list[Metric]:
    """``n``, ``excluded``, ``accuracy``; per method ``coverage_<m>``, ``set_size_<m>`` (with ``_stderr``),
    ``set_size_correct_<m>``, ``set_size_incorrect_<m>``, ``empty_<m>``; per category ``accuracy_<c>`` and,
    for the first method, ``coverage_<m>_<c>`` and ``set_size_<m>_<c>``."""
    metrics = [*_counts(), Metric("accuracy", _pick("accuracy"), True)]
    specs = protocol.method_specs("mcq")
    for spec in specs:
        s = metric_suffix(spec)
        entry = _pick("methods", spec)
        metrics += _with_stderr(f"coverage_{s}", entry, "coverage", None)
        metrics += _with_stderr(f"set_size_{s}", entry, "set_size", False)
        metrics += [Metric(f"set_size_correct_{s}", _pick("methods", spec, "set_size_correct"), False),
                    Metric(f"set_size_incorrect_{s}", _pick("methods", spec, "set_size_incorrect"), None),
                    Metric(f"empty_{s}", _pick("methods", spec, "empty"), False)]
    for category in categories:
        c = metric_suffix(category)
        metrics.append(Metric(f"accuracy_{c}", _pick("by_category", category, "accuracy"), True))
        for spec in specs[:1]:
            s = metric_suffix(spec)
            metrics += [Metric(f"{key}_{s}_{c}", _pick("by_category", category, "methods", spec, key),
                               None if key == "coverage" else False) for key in ("coverage", "set_size")]
    return metrics


def parc_metrics(variations: Sequence[str], families: Sequence[str], datasets: Sequence[str] = ()) -> list[Metric]:
    """Calibrated scores: per score (reliability, accuracy, certainty, consistency) the model's mean
    over cells, per variation (no consistency for ``O``), per family, and per dataset when several."""
    metrics = _counts()
    for score in PARC_SCORES:
        metrics.append(Metric(score, _model_score(score), True))
        metrics += [Metric(f"{score}_{v}", _pick(score, "variation", v, "calibrated"), True)
                    for v in variations if not (score == "consistency" and v == "O")]
        metrics += [Metric(f"{score}_{f}", _pick(score, "family", f, "calibrated"), True) for f in families]
        if len(datasets) > 1:
            metrics += [Metric(f"{score}_dataset_{metric_suffix(d)}", _pick(score, "dataset", d, "calibrated"), True)
                        for d in datasets]
    return metrics


def _model_score(score: str) -> Callable[[dict[str, Any]], Any]:
    """The one model's calibrated ``score`` (a harness run has one model); undefined (KeyError) otherwise."""

    def read(report: dict[str, Any]) -> Any:
        by_model: Mapping[str, Any] = report[score]["model"]
        if len(by_model) != 1:
            raise KeyError("not exactly one model")
        return next(iter(by_model.values()))["calibrated"]

    return read


def ensemble_metrics(with_mixture: bool) -> list[Metric]:
    """``n_items``, ``n_prompts``, ``excluded``; per method ``<score>_<method>`` (+ ``_stderr``: the std
    over seeds), ``fdp_<method>`` and ``selected_<method>`` (the BY selection)."""
    metrics = [
        Metric("n_items", _pick("n_items"), None, always=True),
        Metric("n_prompts", _pick("n_prompts"), None, always=True),
        Metric("excluded", _pick("n_excluded"), False, always=True),
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

    ``n``, ``excluded``; pairwise ``abstention_rate`` and ``risk_labeled`` (error among accepted),
    other kinds ``set_size``, ``singleton_share`` and ``coverage_labeled`` (on the labeled records);
    ``drift_p_value``; the PPI++ ``corrected_score`` with ``_stderr``, ``_lower``, ``_upper``; and
    ``judge_score``, the judge's own mean.
    """
    metrics = _counts()
    if kind == "pairwise":
        metrics += [Metric("abstention_rate", _pick("abstention_rate"), False),
                    Metric("risk_labeled", _pick("labeled", "error_among_accepted"), False)]
    else:
        metrics += [Metric("set_size", _pick("mean_set_size"), False),
                    Metric("singleton_share", _pick("singleton_share"), True),
                    Metric("coverage_labeled", _pick("labeled", "coverage"), None)]
    ppi = ("estimate", "estimate", "ppi")
    metrics += [Metric("drift_p_value", _pick("drift", "p_value"), True),
                Metric("corrected_score", _pick(*ppi, "mean"), None),
                Metric("corrected_score_stderr", _pick(*ppi, "se"), None),
                Metric("corrected_score_lower", _pick(*ppi, "lower"), None),
                Metric("corrected_score_upper", _pick(*ppi, "upper"), None),
                Metric("judge_score", _pick("estimate", "estimate", "judge_only", "mean"), None)]
    return metrics
