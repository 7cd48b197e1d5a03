"""Task-level metrics: one judgecp report over a task's records, read into the scalars lm-eval prints.

lm-eval calls one aggregation per metric with the task's list of records
(gathered on rank 0 under ``accelerate``). Every metric of a task receives
the same records, so the report is computed once per content (records sorted
by id, and the protocol) and cached; each metric reads one number from it.
The report is the core's (:func:`judgecp.evaluate`): the records go through
the same reader as ``judgecp evaluate``, so a task's numbers and the post-hoc
command's are the same; the metrics' names and how each is read from the
report are the core's (:mod:`judgecp.scalars`). When no report can be computed (no usable record,
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
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from judgecp.data import Fields, from_records
from judgecp.errors import InputError, NoUsableRecords
from judgecp.evaluation import evaluate
from judgecp.evaluation.warnings import summary_lines
from judgecp.protocol import Protocol, misspelled_settings, parse_settings
from judgecp.results import Result
from judgecp.scalars import Metric, excluded_count, read_metric
from judgecp.scale import LikertScale

logger = logging.getLogger("lm_eval.judgecp")

Record = Mapping[str, Any]


def task_protocol(metadata: Mapping[str, Any] | None, kind: str) -> Protocol:
    """The protocol a task's ``--metadata`` asks for (a bad value names ``metadata <key>``).

    lm-eval merges the model's arguments and the task's own keys
    (``data_dir``, ``version``, ...) into the same metadata, and gives it to
    every task of the run, of every kind: other keys, and settings of other
    kinds (``methods`` for a PARC task), are not errors; a key that looks
    like a misspelled setting is warned about.
    """
    meta = dict(metadata or {})
    for key, hint in misspelled_settings(meta, also=("calibrator", "calibrator_force")):
        logger.warning("judgecp: metadata %r is not a judgecp setting%s", key, hint)
    return parse_settings(meta, kind=kind, spell=lambda name: f"metadata {name}", other_kinds="ignore")


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
    data = None
    try:
        data = from_records(records, kind, Fields(group=protocol.mondrian), source=source, scale=scale)
        report = evaluate(data, protocol)
    except NoUsableRecords as exc:
        report = undefined_report(str(exc), exc.n_read, 0, exc.excluded.to_json())
    except InputError as exc:  # too few usable records, a Mondrian field the records lack, ...
        if data is None:
            raise
        report = undefined_report(str(exc), data.n_read, data.n, data.excluded.to_json(), data.flags.to_json(key="flag"))
    return counted(report, task)


def counted(report: Mapping[str, Any], task: str, *, log_excluded: bool = True) -> Mapping[str, Any]:
    """``report``, logged: why it is undefined, what it excluded, its warnings."""
    name = task or "task"
    n_excluded = excluded_count(report)
    if "error" in report:
        logger.warning("judgecp: %s: metrics undefined: %s", name, report["error"])
    if log_excluded and n_excluded:
        reasons = ", ".join(f"{e['reason']} {e['count']}" for e in report["excluded"])
        logger.warning("judgecp: %s: %d excluded: %s", name, n_excluded, reasons)
    for line in summary_lines(report.get("warnings", []), "`judgecp evaluate --format lm-eval SAMPLES --json OUT`"):
        logger.warning("judgecp: %s: %s", name, line)
    return report


def undefined_report(message: str, n_read: int, n: int, excluded: list[dict[str, Any]],
                     flags: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A report without metrics: only its counts are defined."""
    return {"error": message, "n": n, "n_read": n_read, "excluded": excluded, "flags": flags or [], "methods": {}}


def aggregations(
    metrics: Sequence[Metric], report_of: Callable[[Sequence[Record]], dict[str, Any]]
) -> dict[str, Callable[[Sequence[Record]], float]]:
    """lm-eval aggregation functions, metric name -> (records -> the metric's value in ``report_of(records)``)."""
    out: dict[str, Callable[[Sequence[Record]], float]] = {}
    for metric in metrics:

        def aggregate(records: Sequence[Record], metric: Metric = metric) -> float:
            report = report_of(records)
            if isinstance(report, Result) and metric.name in report.untrusted():
                return math.nan  # a degenerate or withheld estimate: undefined, and logged with the summary
            return read_metric(report, metric)

        aggregate.__name__ = f"judgecp_{metric.name}"
        out[metric.name] = aggregate
    return out
