"""Task-level metrics: one judgecp report over a task's records, read into the scalars lm-eval prints.

lm-eval calls one aggregation per metric with the task's list of records
(gathered on rank 0 under ``accelerate``). Every metric of a task receives
the same records, so the report is computed once per content (records sorted
by id, and the protocol) and cached; each metric reads one number from it.
The report is the core's (:func:`judgecp.evaluate`): the records go through
the same reader as ``judgecp evaluate``, so a task's numbers and the post-hoc
command's are the same. When no report can be computed (no usable record,
fewer than four), it has ``error``: the counts ``n`` and ``excluded`` still
hold and every other metric is NaN. Nothing here imports lm-eval.

Settings come from the task's ``--metadata`` through the core's one parser
(:func:`judgecp.protocol.parse_settings`, README "Protocol settings"): e.g.
``{"alpha": 0.2, "methods": "naive,lac", "splits": 20}``; a bad value is an
error naming ``metadata <key>``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgecp.data import Fields, from_records
from judgecp.errors import InputError, NoUsableRecords
from judgecp.evaluation import evaluate
from judgecp.protocol import Protocol, parse_settings
from judgecp.scale import LikertScale

logger = logging.getLogger("lm_eval.judgecp")

#: Point metrics of the judge's own score (no stderr: they use every valid row).
POINT_METRICS = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae")
UNCERTAINTY_KEYS = ("accuracy", "ece", "auroc", "auprc")
PAIRWISE_SIGNALS = ("bpe", "predictive")
PARC_SCORES = ("reliability", "accuracy", "certainty", "consistency")

Record = Mapping[str, Any]


def task_protocol(metadata: Mapping[str, Any] | None, kind: str) -> Protocol:
    """The protocol a task's ``--metadata`` asks for (a bad value names ``metadata <key>``).

    lm-eval merges the model's arguments and the task's own keys
    (``data_dir``, ``version``, ...) into the same metadata, and gives it to
    every task of the run, of every kind: other keys, and settings of other
    kinds (``methods`` for a PARC task), are not errors; a key that looks
    like a misspelled setting is warned about.
    """
    from judgecp.errors import did_you_mean
    from judgecp.protocol import SETTINGS

    meta = dict(metadata or {})
    names = [alias for aliases in SETTINGS.values() for alias in aliases]
    for key in meta:
        hint = did_you_mean(key, names) if key not in names and key not in ("calibrator", "calibrator_force") else ""
        if hint:
            logger.warning("judgecp: metadata %r is not a judgecp setting%s", key, hint)
    return parse_settings(meta, kind=kind, spell=lambda name: f"metadata {name}", other_kinds="ignore")


def metric_suffix(spec: str) -> str:
    """A metric-name-safe form of a method spec: ``lac(probabilities=recalibrated)`` -> ``lac_probabilities_recalibrated``."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]+", "_", spec)).strip("_")


@dataclass(frozen=True)
class Metric:
    """One scalar lm-eval metric read from the report.

    ``always``: a count that is defined even when the report is not (``n``,
    ``excluded``); every other metric is NaN when the report has an ``error``.
    """

    name: str
    read: Callable[[dict[str, Any]], float | None]
    higher_is_better: bool | None
    always: bool = False


def _counts(n_key: str = "n") -> list[Metric]:
    return [Metric(n_key, lambda r: r["n"], None, always=True),
            Metric("excluded", lambda r: r["n_excluded"], False, always=True)]


def _with_stderr(name: str, read: Callable[[dict[str, Any]], Any], key: str, higher: bool | None) -> list[Metric]:
    """``<name>`` then ``<name>_stderr`` (the std over splits fills lm-eval's stderr column)."""
    return [Metric(name, lambda r: read(r)[key], higher), Metric(f"{name}_stderr", lambda r: read(r)[f"{key}_std"], None)]


def likert_metrics(protocol: Protocol) -> list[Metric]:
    """Per method: ``coverage_<m>`` (label set), ``width_<m>`` (max - min), interval methods
    ``interval_width_<m>`` (u - l), each with ``_stderr``; ``full_range_<m>``; then the judge's
    point metrics, ``n`` and ``excluded``."""
    from judgecp.plugins import method_classes, parse_method_spec

    classes = method_classes()
    metrics = _counts()
    for spec in protocol.method_specs("likert"):
        s = metric_suffix(spec)

        def labels(r: dict[str, Any], spec: str = spec) -> Any:
            return r["methods"][spec]["labels"]

        def interval(r: dict[str, Any], spec: str = spec) -> Any:
            return r["methods"][spec]["interval"]

        metrics += _with_stderr(f"coverage_{s}", labels, "coverage", None)
        metrics += _with_stderr(f"width_{s}", labels, "width", False)
        if classes[parse_method_spec(spec)[0]].output == "interval":
            metrics += _with_stderr(f"interval_width_{s}", interval, "width", False)
        metrics.append(Metric(f"full_range_{s}", lambda r, spec=spec: r["methods"][spec]["full_range"], False))
    metrics += [Metric(key, lambda r, key=key: r["point"][key], key != "mae") for key in POINT_METRICS]
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
        Metric("bpe", lambda r: r["bpe_mean"], False),
    ]
    for signal in PAIRWISE_SIGNALS:
        metrics += [Metric(f"{key}_{signal}", lambda r, s=signal, k=key: r["uncertainty"][s][k], key != "ece")
                    for key in UNCERTAINTY_KEYS]
    for controller in protocol.controller_names():
        for alpha in protocol.levels("pairwise"):
            a = f"{alpha:g}"

            def entry(r: dict[str, Any], c: str = controller, a: str = a) -> Any:
                return r["controllers"][c][a]

            metrics += _with_stderr(f"risk_{controller}_{a}", entry, "risk", False)
            metrics += _with_stderr(f"coverage_{controller}_{a}", entry, "coverage", True)
    return metrics


def mcq_metrics(protocol: Protocol, categories: Sequence[str] = ()) -> list[Metric]:
    """``n``, ``excluded``, ``accuracy``; per method ``coverage_<m>``, ``set_size_<m>`` (with ``_stderr``),
    ``set_size_correct_<m>``, ``set_size_incorrect_<m>``, ``empty_<m>``; per category ``accuracy_<c>`` and,
    for the first method, ``coverage_<m>_<c>`` and ``set_size_<m>_<c>``."""
    metrics = [*_counts(), Metric("accuracy", lambda r: r["accuracy"], True)]
    specs = protocol.method_specs("mcq")
    for spec in specs:
        s = metric_suffix(spec)

        def entry(r: dict[str, Any], spec: str = spec) -> Any:
            return r["methods"][spec]

        metrics += _with_stderr(f"coverage_{s}", entry, "coverage", None)
        metrics += _with_stderr(f"set_size_{s}", entry, "set_size", False)
        metrics += [Metric(f"set_size_correct_{s}", lambda r, e=entry: e(r)["set_size_correct"], False),
                    Metric(f"set_size_incorrect_{s}", lambda r, e=entry: e(r)["set_size_incorrect"], None),
                    Metric(f"empty_{s}", lambda r, e=entry: e(r)["empty"], False)]
    for category in categories:
        c = metric_suffix(category)
        metrics.append(Metric(f"accuracy_{c}", lambda r, g=category: r["by_category"][g]["accuracy"], True))
        for spec in specs[:1]:
            s = metric_suffix(spec)
            metrics += [Metric(f"{key}_{s}_{c}", lambda r, g=category, spec=spec, key=key: r["by_category"][g]["methods"][spec][key],
                               None if key == "coverage" else False) for key in ("coverage", "set_size")]
    return metrics


def parc_metrics(variations: Sequence[str], families: Sequence[str], datasets: Sequence[str] = ()) -> list[Metric]:
    """Calibrated scores: per score (reliability, accuracy, certainty, consistency) the model's mean
    over cells, per variation (no consistency for ``O``), per family, and per dataset when several."""
    metrics = _counts()
    for score in PARC_SCORES:
        metrics.append(Metric(score, lambda r, s=score: _only_model(r[s]["model"])["calibrated"], True))
        metrics += [Metric(f"{score}_{v}", lambda r, s=score, v=v: r[s]["variation"][v]["calibrated"], True)
                    for v in variations if not (score == "consistency" and v == "O")]
        metrics += [Metric(f"{score}_{f}", lambda r, s=score, f=f: r[s]["family"][f]["calibrated"], True) for f in families]
        if len(datasets) > 1:
            metrics += [Metric(f"{score}_dataset_{metric_suffix(d)}",
                               lambda r, s=score, d=d: r[s]["dataset"][d]["calibrated"], True) for d in datasets]
    return metrics


def _only_model(by_model: Mapping[str, Any]) -> Any:
    """The one model's entry (an lm-eval run has one model); undefined (KeyError) otherwise."""
    if len(by_model) != 1:
        raise KeyError("not exactly one model")
    return next(iter(by_model.values()))


# -- the report, computed once per content -----------------------------------

_CACHE: OrderedDict[str, dict[str, Any]] = OrderedDict()
_CACHE_SIZE = 8


def cached_report(
    records: Sequence[Mapping[str, Any]], settings: Sequence[Any],
    compute: Callable[[list[Mapping[str, Any]]], dict[str, Any]],
) -> dict[str, Any]:
    """``compute(records sorted by id)``, once per content: every metric of a task reads the same report.

    ``settings`` (JSON-able) is what else the report depends on. Sorted by id,
    so the order of lm-eval's ranks does not matter.
    """
    ordered = sorted(records, key=lambda r: str(r.get("id")))
    digest = hashlib.sha256(json.dumps(list(settings), default=str).encode())
    for r in ordered:
        digest.update(json.dumps(r, sort_keys=True, default=str).encode())
    key = digest.hexdigest()
    if key not in _CACHE:
        _CACHE[key] = compute(ordered)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    _CACHE.move_to_end(key)
    return _CACHE[key]


def task_report(
    records: Sequence[Record], kind: str, protocol: Protocol, *, task: str = "", scale: LikertScale | None = None
) -> dict[str, Any]:
    """The core's report of a task's records, cached (:func:`cached_report`)."""
    return cached_report(records, [kind, repr(protocol), str(scale)],
                         lambda ordered: _compute(ordered, kind, protocol, task, scale))


def _compute(records: list[Record], kind: str, protocol: Protocol, task: str, scale: LikertScale | None) -> dict[str, Any]:
    source = f"lm-eval task {task}".strip()
    options = {"scale": scale} if kind == "likert" and scale is not None else {}
    data = None
    try:
        data = from_records(records, kind, Fields(group=protocol.mondrian), source=source, **options)
        report = evaluate(data, protocol)
    except NoUsableRecords as exc:
        report = undefined_report(str(exc), exc.n_read, 0, exc.excluded.to_json())
    except InputError as exc:  # too few usable records, a Mondrian field the records lack, ...
        if data is None:
            raise
        report = undefined_report(str(exc), data.n_read, data.n, data.excluded.to_json(), data.flags.to_json(key="flag"))
    report["n_excluded"] = sum(e["count"] for e in report["excluded"])
    if "error" in report:
        logger.warning("judgecp: %s: metrics undefined: %s", task or "task", report["error"])
    if report["n_excluded"]:
        reasons = ", ".join(f"{e['reason']} {e['count']}" for e in report["excluded"])
        logger.warning("judgecp: %s: %d excluded: %s", task or "task", report["n_excluded"], reasons)
    for warning in report.get("warnings", []):
        logger.warning("judgecp: %s: %s", task or "task", warning["message"])
    return report


def undefined_report(message: str, n_read: int, n: int, excluded: list[dict[str, Any]],
                     flags: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A report without metrics: only its counts are defined."""
    return {"error": message, "n": n, "n_read": n_read, "excluded": excluded, "flags": flags or [], "methods": {}}


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


def aggregations(
    metrics: Sequence[Metric], report_of: Callable[[Sequence[Record]], dict[str, Any]]
) -> dict[str, Callable[[Sequence[Record]], float]]:
    """lm-eval aggregation functions, metric name -> (records -> the metric's value in ``report_of(records)``)."""
    out: dict[str, Callable[[Sequence[Record]], float]] = {}
    for metric in metrics:

        def aggregate(records: Sequence[Record], metric: Metric = metric) -> float:
            return read_metric(report_of(records), metric)

        aggregate.__name__ = f"judgecp_{metric.name}"
        out[metric.name] = aggregate
    return out
