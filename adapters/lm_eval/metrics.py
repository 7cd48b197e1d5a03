"""Task-level metrics: one judgecp report over a task's records, read into the scalars lm-eval prints.

lm-eval calls one aggregation per metric with the list of values that
``process_results`` returned for it, one per document (gathered on rank 0
under ``accelerate``), and writes every returned value into the document's
line of the samples file. So a task returns its document's record **once**,
under its first metric, and ``None`` under the others
(:func:`document_values`): a samples line holds the record once, whatever the
number of metrics. lm-eval aggregates the metrics in the order
``process_results`` returned them, so the first aggregation receives the
records and computes the task's report (records sorted by id, so the ranks'
order does not matter); every later metric reads that same report
(:class:`TaskReport`): one computation per task, no re-sorting or hashing per
metric. A metric whose values are placeholders and that finds no report of
as many documents is NaN, with a warning: never a guess. Samples files written
before (the record under every metric) still read, offline and here.

The report is the core's (:func:`judgecp.evaluate`): the records go through
the same reader as ``judgecp evaluate``, so a task's numbers and the post-hoc
command's are the same; the metrics' names and how each is read from the
report are the core's (:mod:`judgecp.kinds.metrics`). When no report can be computed (no usable record,
fewer than four), it has ``error``: the counts ``n`` and ``excluded`` still
hold and every other metric is NaN. Nothing here imports lm-eval.

Settings come from the task's ``--metadata`` through the core's one parser
(:func:`judgecp.kinds.protocol.parse_settings`, docs/cli.md): e.g.
``{"alpha": 0.2, "methods": "naive,lac", "splits": 20}``; a bad value is an
error naming ``metadata <key>``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from judgecp.base.errors import InputError, NoUsableRecords
from judgecp.base.scale import LikertScale
from judgecp.data import Fields
from judgecp.kinds.metrics import Metric, excluded_count, read_metric
from judgecp.kinds.protocol import Protocol, misspelled_settings, parse_settings
from judgecp.kinds.reading import from_records
from judgecp.workflows.results import Result
from judgecp.workflows.study import evaluate
from judgecp.workflows.study.warnings import summary_lines

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


# -- the report, computed once per task -------------------------------------


def by_id(records: Sequence[Record]) -> list[Record]:
    """The records sorted by id: the order of lm-eval's ranks does not change a report."""
    return sorted(records, key=lambda r: str(r.get("id")))


class TaskReport:
    """A task's report, computed from the values of its record-carrying metric and read by every metric.

    ``compute`` turns the task's records into its report. :meth:`of` is
    given each metric's values in lm-eval's order: records (the first
    metric's) compute the report; placeholders (``None``, every other metric)
    read the last report computed, which must cover as many documents.
    ``computations`` counts the reports computed. A metric that finds no such
    report is NaN, warned about once per task.
    """

    def __init__(self, compute: Callable[[Sequence[Record]], dict[str, Any]], task: str = "") -> None:
        self.compute = compute
        self.task = task or "task"
        self.computations = 0
        self._last: tuple[int, dict[str, Any]] | None = None
        self._warned = False

    def of(self, values: Sequence[Any]) -> dict[str, Any] | None:
        """The report for one metric's values; ``None`` (every value NaN) when there is none to read."""
        if any(isinstance(v, Mapping) for v in values):
            self._last = None
            if not all(isinstance(v, Mapping) for v in values):
                self._warn(f"{sum(not isinstance(v, Mapping) for v in values)} document(s) without a record")
                return None
            self.computations += 1
            self._last = (len(values), self.compute(values))
            return self._last[1]
        if self._last is None or self._last[0] != len(values):
            self._warn(f"a metric of {len(values)} documents was aggregated before the task's records")
            return None
        return self._last[1]

    def _warn(self, what: str) -> None:
        if not self._warned:
            logger.warning("judgecp: %s: %s; those metrics are NaN (judgecp evaluate --format lm-eval on the "
                           "samples file recomputes them)", self.task, what)
        self._warned = True


def document_values(metrics: Sequence[Metric], record: Mapping[str, Any]) -> dict[str, Any]:
    """``process_results``'s value: the record under the first metric, ``None`` under the others."""
    first, *rest = (m.name for m in metrics)
    return {first: record, **dict.fromkeys(rest)}


def task_report(
    records: Sequence[Record], kind: str, protocol: Protocol, *, task: str = "", scale: LikertScale | None = None
) -> dict[str, Any]:
    """The core's report of a task's records (in id order)."""
    return _compute(by_id(records), kind, protocol, task, scale)


def _compute(
    records: list[Record], kind: str, protocol: Protocol, task: str, scale: LikertScale | None
) -> dict[str, Any]:
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
        report = undefined_report(
            str(exc), data.n_read, data.n, data.excluded.to_json(), data.flags.to_json(key="flag")
        )
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
    metrics: Sequence[Metric], report_of: Callable[[Sequence[Any]], dict[str, Any] | None]
) -> dict[str, Callable[[Sequence[Any]], float]]:
    """lm-eval aggregation functions, metric name -> (values -> the metric's value in ``report_of(values)``;
    NaN when that is ``None``)."""
    out: dict[str, Callable[[Sequence[Any]], float]] = {}
    for metric in metrics:

        def aggregate(values: Sequence[Any], metric: Metric = metric) -> float:
            report = report_of(values)
            if report is None:
                return math.nan
            if isinstance(report, Result) and metric.name in report.untrusted():
                return math.nan  # a degenerate or withheld estimate: undefined, and logged with the summary
            return read_metric(report, metric)

        aggregate.__name__ = f"judgecp_{metric.name}"
        out[metric.name] = aggregate
    return out
