"""Task-level metrics from per-document records (split conformal over the whole task).

lm-eval calls one aggregation per metric with the task's list of records
(gathered on rank 0 under ``accelerate``). Every metric of a task receives
the same records, so the judgecp report is computed once per content
(records sorted by id, settings) and cached; each metric then reads one
number from it. Nothing here imports lm-eval.

Settings come from the task's ``metadata`` (``--metadata '{"alpha": 0.2}'``):

============== ===================== =============================================
key            default               meaning
============== ===================== =============================================
``alpha``      ``0.1``               miscoverage; target coverage 1 - alpha
``methods``    ``"naive,lac"``       comma-separated judgecp method specs
``seeds``      ``10``                number of random calibration/test splits, or a list
``cal_fraction`` ``0.5``             calibration share of each split
``mondrian``   none                  record field to calibrate by (e.g. ``group``)
============== ===================== =============================================
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judgecp.adapters.lm_eval.records import split_excluded
from judgecp.errors import InputError
from judgecp.exclusions import Exclusions
from judgecp.scale import LikertScale

logger = logging.getLogger("lm_eval.judgecp")

DEFAULT_METHODS = "naive,lac"
SETTING_KEYS = ("alpha", "methods", "seeds", "cal_fraction", "mondrian")

#: Point metrics of the judge's own score (no stderr: they use every valid row).
POINT_METRICS = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae")


# -- reading --metadata (shared by every judgecp task kind) ----------------------------


def metadata_number(meta: Mapping[str, Any], key: str, default: float) -> float:
    try:
        return float(meta.get(key, default))
    except (TypeError, ValueError) as exc:
        raise InputError(f"metadata {key} must be a number, got {meta.get(key)!r}") from exc


def metadata_alpha(meta: Mapping[str, Any], default: float = 0.1) -> float:
    from judgecp.conformal import check_alpha

    alpha = metadata_number(meta, "alpha", default)
    check_alpha(alpha)
    return alpha


def metadata_cal_fraction(meta: Mapping[str, Any]) -> float:
    cal_fraction = metadata_number(meta, "cal_fraction", 0.5)
    if not 0.0 < cal_fraction < 1.0:
        raise InputError(f"metadata cal_fraction must be in (0, 1), got {cal_fraction}")
    return cal_fraction


def metadata_seeds(meta: Mapping[str, Any], default: int = 10) -> tuple[int, ...]:
    """``seeds``: a count (10: seeds 0..9) or a list of seeds."""
    from judgecp.cli import parse_seeds

    raw = meta.get("seeds", default)
    if isinstance(raw, (list, tuple)):
        return parse_seeds(",".join(str(s) for s in raw) + ",")
    return parse_seeds(str(raw))


def metadata_list(meta: Mapping[str, Any], key: str, default: str | Sequence[Any]) -> list[str]:
    """A list setting given as a JSON list or a comma-separated string."""
    from judgecp.plugins import split_method_list

    raw = meta.get(key, default)
    if isinstance(raw, str):
        return split_method_list(raw)
    if isinstance(raw, (list, tuple)):
        return [str(item).strip() for item in raw if str(item).strip()]
    return [str(raw)]


def metadata_methods(meta: Mapping[str, Any], default: str | Sequence[str]) -> tuple[str, ...]:
    """``methods``: judgecp method specs, canonicalised; unknown or repeated ones are refused."""
    from judgecp.plugins import canonical_spec, method_classes, parse_method_spec

    classes = method_classes()
    methods = []
    for item in metadata_list(meta, "methods", default):
        name, kwargs = parse_method_spec(item)
        if name not in classes:
            raise InputError(f"metadata methods: unknown method {name!r}; available: {', '.join(classes)}")
        methods.append(canonical_spec(name, kwargs))
    if not methods:
        raise InputError("metadata methods is empty")
    if len(set(methods)) != len(methods):
        raise InputError(f"metadata methods lists a method twice: {methods}")
    return tuple(methods)


@dataclass(frozen=True)
class LikertSettings:
    """The conformal protocol one lm-eval task runs."""

    alpha: float = 0.1
    methods: tuple[str, ...] = ("naive", "lac")
    seeds: tuple[int, ...] = tuple(range(10))
    cal_fraction: float = 0.5
    mondrian: str | None = None
    scale: LikertScale = field(default_factory=LikertScale)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None, *, scale: LikertScale | None = None) -> LikertSettings:
        """Read the settings from a task's metadata; a bad value is an :class:`InputError` naming it."""
        meta = dict(metadata or {})
        alpha = metadata_alpha(meta)
        methods = metadata_methods(meta, DEFAULT_METHODS)
        seeds = metadata_seeds(meta)
        cal_fraction = metadata_cal_fraction(meta)
        mondrian = meta.get("mondrian") or None
        return cls(alpha, methods, seeds, cal_fraction, None if mondrian is None else str(mondrian), scale or LikertScale())

    def key(self) -> str:
        return json.dumps(
            [self.alpha, self.methods, self.seeds, self.cal_fraction, self.mondrian, str(self.scale)]
        )


def metric_suffix(spec: str) -> str:
    """A metric-name-safe form of a method spec: ``lac(probabilities=recalibrated)`` -> ``lac_probabilities_recalibrated``."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]+", "_", spec)).strip("_")


@dataclass(frozen=True)
class Metric:
    """One scalar lm-eval metric read from the judgecp report.

    ``always``: a count that is defined even when the report is not (``n``,
    ``excluded``); every other metric is NaN when the report has an ``error``.
    """

    name: str
    read: Callable[[dict[str, Any]], float | None]
    higher_is_better: bool | None
    always: bool = False


def _method_entry(report: dict[str, Any], spec: str) -> dict[str, Any]:
    return report["methods"][spec]  # type: ignore[no-any-return]


def likert_metrics(settings: LikertSettings) -> list[Metric]:
    """The task's metrics in table order; each ``<m>_stderr`` follows ``<m>``.

    Per method: ``coverage_<m>`` (label-set coverage, which equals the
    interval's for integer labels), ``width_<m>`` (label-set width
    max - min), for interval methods ``interval_width_<m>`` (u - l), each
    with ``_stderr`` = standard deviation over the splits; ``full_range_<m>``
    is the share of test rows predicted as the whole scale (too few
    calibration points). Then the judge's point metrics, ``n`` (records
    used) and ``excluded`` (records left out, all reasons).
    """
    from judgecp.plugins import method_classes, parse_method_spec

    classes = method_classes()
    metrics: list[Metric] = [
        Metric("n", lambda r: r["n"], None, always=True),
        Metric("excluded", lambda r: r["n_excluded"], False, always=True),
    ]
    for spec in settings.methods:
        s = metric_suffix(spec)
        name, _ = parse_method_spec(spec)

        def labels(key: str, spec: str = spec) -> Callable[[dict[str, Any]], float | None]:
            return lambda r: _method_entry(r, spec)["labels"][key]

        def interval(key: str, spec: str = spec) -> Callable[[dict[str, Any]], float | None]:
            return lambda r: _method_entry(r, spec)["interval"][key]

        metrics += [
            Metric(f"coverage_{s}", labels("coverage"), None),
            Metric(f"coverage_{s}_stderr", labels("coverage_std"), None),
            Metric(f"width_{s}", labels("width"), False),
            Metric(f"width_{s}_stderr", labels("width_std"), None),
        ]
        if classes[name].output == "interval":
            metrics += [
                Metric(f"interval_width_{s}", interval("width"), False),
                Metric(f"interval_width_{s}_stderr", interval("width_std"), None),
            ]
        metrics.append(Metric(f"full_range_{s}", lambda r, spec=spec: _method_entry(r, spec)["full_range"], False))
    for key in POINT_METRICS:
        metrics.append(Metric(key, lambda r, key=key: r["point"][key], key != "mae"))
    return metrics


# -- the report, computed once per content -----------------------------------

_CACHE: OrderedDict[str, dict[str, Any]] = OrderedDict()
_CACHE_SIZE = 8


def _content_key(records: Sequence[Mapping[str, Any]], settings_key: str) -> str:
    digest = hashlib.sha256(settings_key.encode())
    for r in records:
        digest.update(json.dumps(r, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def cached_report(
    records: Sequence[Mapping[str, Any]],
    settings_key: str,
    compute: Callable[[list[dict[str, Any]]], dict[str, Any]],
) -> dict[str, Any]:
    """``compute(records sorted by id)``, once per content (records and settings).

    lm-eval calls one aggregation per metric, each with the same records; the
    sorting makes the report independent of the order in which ranks
    returned them under ``accelerate``.
    """
    ordered = sorted(records, key=lambda r: str(r.get("id")))
    key = _content_key(ordered, settings_key)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    report = compute(ordered)  # type: ignore[arg-type]
    _CACHE[key] = report
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return report


def likert_report(records: Sequence[Mapping[str, Any]], settings: LikertSettings, *, task: str = "") -> dict[str, Any]:
    """The judgecp report of a task's records, with adapter-level exclusions counted.

    Records are sorted by id first, so the report does not depend on the
    order in which ranks returned them. When no report can be computed (too
    few usable records), the report has ``error`` and no methods; every
    conformal metric is then NaN, and the counts still hold.
    """
    return cached_report(records, "likert" + settings.key(), lambda ordered: _compute(ordered, settings, task))


def _compute(records: list[dict[str, Any]], settings: LikertSettings, task: str) -> dict[str, Any]:
    from judgecp.data import likert_from_records
    from judgecp.protocol import Protocol, evaluate

    usable, excluded = split_excluded(records)
    source = f"lm-eval task {task}".strip()
    report: dict[str, Any]
    try:
        if not usable:
            raise InputError(f"{source}: no usable rows")
        data = likert_from_records(
            usable, source=source, logprobs_json="logprobs", group=settings.mondrian, scale=settings.scale
        )
    except InputError as exc:
        # Not one record the core can use: count them by the reasons it gave.
        count_reasons(str(exc), excluded)
        report = undefined_report(str(exc), len(records), 0, excluded.to_json())
    else:
        data.excluded.merge(excluded)
        data.n_read += excluded.total
        protocol = Protocol(
            alpha=settings.alpha,
            methods=settings.methods,
            seeds=settings.seeds,
            cal_fraction=settings.cal_fraction,
            mondrian=settings.mondrian,
        )
        try:
            report = evaluate(data, protocol)
        except InputError as exc:  # e.g. fewer than 4 usable records, or no such Mondrian field
            report = undefined_report(str(exc), data.n_read, data.n, data.excluded.to_json())
    return finish_report(report, task)


def finish_report(report: dict[str, Any], task: str) -> dict[str, Any]:
    """Count the exclusions (``n_excluded``) and say in the log what was left out and why."""
    report["n_excluded"] = sum(e["count"] for e in report["excluded"])
    if "error" in report:
        logger.warning("judgecp: %s: conformal metrics undefined: %s", task or "task", report["error"])
    if report["n_excluded"]:
        reasons = ", ".join(f"{e['reason']} {e['count']}" for e in report["excluded"])
        logger.warning("judgecp: %s: %d excluded: %s", task or "task", report["n_excluded"], reasons)
    return report


#: "label_off_scale: 3" in the core's "no usable rows (...)" message.
_REASON_COUNT = re.compile(r"([a-z_]+): (\d+)")


def count_reasons(message: str, excluded: Exclusions) -> None:
    """Add the "reason: count" pairs of a core error message (no usable rows) to ``excluded``."""
    for reason, count in _REASON_COUNT.findall(message):
        excluded.add(reason, count=int(count))


def undefined_report(message: str, n_read: int, n: int, excluded: list[dict[str, Any]]) -> dict[str, Any]:
    """A report without metrics (too few usable records): only its counts are defined."""
    return {"error": message, "n": n, "n_read": n_read, "excluded": excluded, "methods": {}}


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


def report_aggregation(
    metric: Metric, report_of: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]
) -> Callable[[Sequence[Mapping[str, Any]]], float]:
    """The lm-eval aggregation function for ``metric``: records -> its value in ``report_of(records)``."""

    def aggregate(records: Sequence[Mapping[str, Any]]) -> float:
        return read_metric(report_of(records), metric)

    aggregate.__name__ = f"judgecp_{metric.name}"
    return aggregate


def aggregation(metric: Metric, settings: LikertSettings, task: str = "") -> Callable[[Sequence[Mapping[str, Any]]], float]:
    """The lm-eval aggregation function for a Likert ``metric``: records -> scalar."""
    return report_aggregation(metric, lambda records: likert_report(records, settings, task=task))
