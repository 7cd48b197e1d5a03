"""Metrics of a prediction file: the core protocol, the metric file, the headline.

Used by the VLMEvalKit datasets' ``evaluate()`` (inside ``run.py``) and by
``judgecp evaluate --format vlmeval`` (post hoc); neither needs VLMEvalKit.
The statistics are the core's; this module only routes each kind's records
to it:

=========  ================================  ===============================
kind       core                              metric file beside the file
=========  ================================  ===============================
likert     ``protocol.evaluate``             ``<model>_<dataset>_cp.json``
pairwise   ``pairwise.evaluate_pairwise``    ``<model>_<dataset>_selective.json``
parc       ``parc.evaluate_parc``            ``<model>_<dataset>_reliability.json``
mcq        ``mcq.evaluate_mcq`` (post hoc)   ``--json`` of ``judgecp evaluate``
=========  ================================  ===============================

A metric file is the core's report (docs/cli.md, "The JSON report") plus a
``vlmeval`` section: the prediction file, the sidecars used, where the
records came from, the rows repaired, the rows' flags, and the rows left out
before the core saw them (at TSV build, at dataset load, by the reader).
Every row the TSV builder read is accounted for somewhere in it.

The headline VLMEvalKit prints and stores in ``status.json`` is a dict of
plain Python numbers (VLMEvalKit's JSON encoder fails on NumPy 2 scalars):
the core's (:func:`judgecp.workflows.headline.report_headline`: ``n``, ``n_read``,
``excluded`` and the kind's numbers), ``excluded_at_build``, and the primary
metrics again as ``...|overall`` keys, so VLMEvalKit's own summary picks them
without judgecp (:mod:`~judgecp.adapters.vlmeval.summary`); it is also
written as ``<model>_<dataset>_score.csv``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.kinds import resolve_kind, resolve_spec, vlmeval_kind
from judgecp.adapters.vlmeval.models import LP_SUFFIX
from judgecp.adapters.vlmeval.predictions import PredictionTable, read_predictions
from judgecp.adapters.vlmeval.runtime import SIDECAR_TAG
from judgecp.adapters.vlmeval.specs import JudgeSpec
from judgecp.adapters.vlmeval.summary import with_overall, write_score_file
from judgecp.base.errors import InputError, NoUsableRecords
from judgecp.base.exclusions import Exclusions
from judgecp.base.jsonio import dumps
from judgecp.base.outputs import atomic_write_text
from judgecp.base.scale import LabelScale
from judgecp.data import Fields
from judgecp.data.formats import RecordBatch
from judgecp.data.tables import Table, table_from_rows
from judgecp.kinds import get_kind
from judgecp.kinds.protocol import Protocol, parse_settings
from judgecp.kinds.reading import from_table
from judgecp.workflows.headline import report_headline
from judgecp.workflows.results import StudyResult
from judgecp.workflows.study import evaluate

log = logging.getLogger("judgecp.vlmeval")


def dataset_protocol(kind: str, settings: Mapping[str, Any] | None = None) -> Protocol:
    """The core's :class:`~judgecp.kinds.protocol.Protocol` for a prediction file of ``kind``.

    ``settings`` are the dataset's arguments as the user gave them (names of
    :data:`judgecp.kinds.protocol.SETTINGS`, ``None`` for the kind's default); the
    ones another kind uses are ignored, so one set of arguments serves every
    dataset of a run. As in VLMEvalKit's dataset arguments, ``seeds`` are
    the splits of Likert, multiple-choice and PARC files and ``n_splits``
    those of pairwise files (SCOPE's many splits); ``headline_alpha`` is the
    pairwise headline level (``alpha``).
    """
    values = dict(settings or {})
    values.pop("n_splits" if vlmeval_kind(kind).splits_setting == "seeds" else "seeds", None)
    headline_alpha = values.pop("headline_alpha", None)
    if headline_alpha is not None and values.get("alpha") is None:
        values["alpha"] = headline_alpha
    return parse_settings(values, kind=kind, spell=lambda name: f"dataset argument {name}", other_kinds="ignore")


@dataclass
class Outcome:
    report: dict[str, Any]
    headline: dict[str, Any]
    metric_file: Path | None
    table: PredictionTable
    data: Any = None
    errors: list[str] = field(default_factory=list)


def metric_path(prediction_file: str | Path, kind: str) -> Path:
    """``<stem><suffix>.json`` beside the prediction file: ``_cp`` (Likert), ``_selective``, ``_reliability``."""
    p = Path(prediction_file)
    return p.with_name(p.stem + vlmeval_kind(kind).metric_suffix + ".json")


def headline(report: Mapping[str, Any], protocol: Protocol | None = None) -> dict[str, Any]:
    """Plain-number summary of a report, for VLMEvalKit's log and ``status.json`` (nested one level):
    :func:`judgecp.workflows.headline.report_headline`, ``excluded_at_build`` (the rows the TSV builder left out)
    and the primary metrics as ``...|overall`` keys (:func:`~judgecp.adapters.vlmeval.summary.with_overall`)."""
    built = (report.get("vlmeval") or {}).get("excluded_at_build")
    extra = None if built is None else {"excluded_at_build": sum(int(e["count"]) for e in built)}
    kind = report.get("kind")
    head = report_headline(report, protocol, extra)
    return (
        with_overall(head, str(kind)) if kind is not None else head
    )  # an error report names no kind: no primary metric


def _reasons(excluded: Exclusions) -> str:
    return ", ".join(f"{e['reason']}: {e['count']}" for e in excluded.to_json()) or "no rows"


def table_records(
    table: PredictionTable, kind: str, spec: JudgeSpec | None, *, group: str | None = None,
    dataset: str | None = None, model: str | None = None, lmu_root: str | Path | None = None,
    label_scale: LabelScale | None = None,
) -> list[dict[str, Any]]:
    """The rows of a read prediction table as ``judgecp.record/1`` records of ``kind``'s shape
    (Likert: on ``label_scale``, the spec's continuous label, when given)."""
    return vlmeval_kind(kind).records(table, spec, group=group, dataset=dataset, model=model, lmu_root=lmu_root,
                                      label_scale=label_scale)


def core_data(
    table: PredictionTable,
    kind: str,
    spec: JudgeSpec | None,
    *,
    group: str | None = None,
    excluded_at_load: Exclusions | None = None,
    sink: Exclusions | None = None,
    **where: Any,
) -> Any:
    """The core's data of ``kind`` from a read prediction table.

    Rows the reader (and the dataset loader) left out are counted in the
    data's ``excluded`` and ``n_read``, next to the core's own reasons (all
    of them in ``sink`` when given, also when the core raises).
    """
    records = table_records(table, kind, spec, group=group, **where)
    excluded = sink if sink is not None else Exclusions()
    excluded.merge(table.excluded)  # after the records: building them may count rows
    if excluded_at_load is not None:
        excluded.merge(excluded_at_load)
    rows = record_table(table, records, excluded)
    # the records' own fields; a group column the reader kept under its name (meta) for the kinds that group
    part = vlmeval_kind(kind)
    data = from_table(rows, kind, Fields(group=part.group_field(rows, group)))
    part.count_used(table, records, data)
    return data


def _no_records_hint(table: PredictionTable) -> str:
    """What to do about a prediction file without logprob records: a model run without capture runs
    its ``-lp`` twin; an ``-lp`` run's records are in its sidecar."""
    suffix = f"_{table.dataset}" if table.dataset else ""
    model = table.stem[: -len(suffix)] if suffix and table.stem.endswith(suffix) else "<model>"
    if model.endswith(LP_SUFFIX):
        return (f"; no row has its logprob record: give the run's sidecar "
                f"({table.stem}{SIDECAR_TAG}.jsonl) to "
                "`judgecp evaluate --format vlmeval --sidecar FILE`")
    return (f"; the model wrote no logprob records: run its -lp twin "
            f"(`--model {model}{LP_SUFFIX}`, docs/vlmeval.md, section 2)")


def record_table(table: PredictionTable, records: list[dict[str, Any]], excluded: Exclusions) -> Table:
    """The records as the core's table (checked and flattened as any record file); none usable is the
    core's :class:`~judgecp.base.errors.NoUsableRecords` (the reader's counts and the records' own)."""
    if not records:
        hint = _no_records_hint(table) if excluded.counts.get("no_logprob_record") else ""
        raise InputError(f"{table.path}: no usable rows ({_reasons(excluded)}){hint}")
    rows = table_from_rows(records, source=str(table.path), excluded=excluded, n_read=len(records) + excluded.total)
    if rows.n_rows == 0:
        raise NoUsableRecords(rows.source, rows.excluded, rows.n_read)
    return rows


def _error_report(
    kind: str, exc: InputError, table: PredictionTable, excluded_at_load: Exclusions | None, data: Any,
    sink: Exclusions, protocol: Protocol,
) -> dict[str, Any]:
    """The report of a file the core could not evaluate: the error and every count, no metrics."""
    log.warning("judgecp: %s", exc)
    if data is not None:
        excluded = data.excluded
    elif sink.total:
        excluded = sink  # what the reader and the core counted before the core gave up
    else:
        excluded = Exclusions()
        excluded.merge(table.excluded)
        if excluded_at_load is not None:
            excluded.merge(excluded_at_load)

    levels = ({"alphas": list(protocol.levels(kind))} if get_kind(kind).study.levels_are_controller_levels
              else {"alpha": protocol.level})
    return {
        "kind": kind,
        "error": str(exc),
        "n": 0 if data is None else data.n,
        "n_read": table.n_read + (excluded_at_load.total if excluded_at_load else 0),
        "excluded": excluded.to_json(),
        **levels,
    }


def evaluate_table(
    table: PredictionTable,
    kind: str,
    spec: JudgeSpec | None,
    protocol: Protocol,
    excluded_at_load: Exclusions | None = None,
) -> tuple[dict[str, Any], Any]:
    """The core's evaluation of a read table; a table with no usable row gives a report with ``error``.

    Likert files are grouped (and Mondrian-calibrated) by the protocol's
    ``group``/``mondrian`` or the dataset's own group column; multiple-choice
    tables by dataset and category.
    """
    group = protocol.mondrian or protocol.group or (spec.group if spec is not None else None)
    if vlmeval_kind(kind).tabulates_spec_group and protocol.group is None and protocol.mondrian is None \
            and group is not None:
        protocol = protocol.with_(group=group)
    data = None
    sink = Exclusions()
    try:
        where = {"label_scale": protocol.label_scale} if protocol.label_scale is not None else {}
        data = core_data(table, kind, spec, group=group, excluded_at_load=excluded_at_load, sink=sink, **where)
        report = evaluate(data, protocol)
    except InputError as exc:
        report = _error_report(kind, exc, table, excluded_at_load, data, sink, protocol)
        report.update(vlmeval_kind(kind).error_fields(spec))
    return report, data


def evaluate_prediction_file(
    prediction_file: str | Path,
    *,
    spec: JudgeSpec | None = None,
    settings: Mapping[str, Any] | None = None,
    dataset: str | None = None,
    sidecars: Sequence[str | Path] | None = None,
    excluded_at_load: Exclusions | None = None,
    build_manifest: Mapping[str, Any] | None = None,
    write: bool = True,
) -> Outcome:
    """Read, evaluate, write the kind's metric file; a file with no usable row gives a report with ``error``.

    ``settings``: the protocol's settings by name (:func:`dataset_protocol`).
    """
    table = read_predictions(prediction_file, dataset=dataset, sidecars=sidecars)
    spec = resolve_spec(table, spec)
    vlmeval_kind(spec.kind)  # a kind with no VLMEvalKit reader yet: one line
    protocol = dataset_protocol(spec.kind, settings)
    section: dict[str, Any] = {}
    section["judge_dataset"] = spec.key
    section["excluded_at_load"] = (excluded_at_load or Exclusions()).to_json()
    if build_manifest is not None:
        section["excluded_at_build"] = build_manifest.get("excluded", [])
        section["build"] = {k: build_manifest.get(k) for k in ("dataset", "tsv_md5", "built_at", "rows_read",
                                                                 "rows_written", "source")}
    report, data = evaluate_table(table, spec.kind, spec, protocol, excluded_at_load)
    report = StudyResult({**report, "vlmeval": {**table.summary(), **section}})  # the summary after the records: flags
    out_file = metric_path(prediction_file, spec.kind) if write else None
    if out_file is not None:
        atomic_write_text(out_file, dumps(report))
    parsed_report = json.loads(dumps(report))
    head = headline(parsed_report, protocol)
    errors = [report["error"]] if "error" in report else []
    if write:
        write_score_file(prediction_file, None if errors else head)
    return Outcome(report=parsed_report, headline=head, metric_file=out_file, table=table, data=data, errors=errors)


def prediction_batch(
    prediction_file: str | Path,
    *,
    kind: str | None = None,
    sidecars: Sequence[str | Path] | None = None,
    dataset: str | None = None,
) -> RecordBatch:
    """A prediction file as ``judgecp.record/1`` records (``judgecp evaluate --format vlmeval``, post hoc).

    The kind comes from the file (:func:`~judgecp.adapters.vlmeval.kinds.resolve_kind`)
    unless given; the batch says it, and its ``info["vlmeval"]`` is the
    reader's account (files, record sources, repairs, row flags).
    """
    table = read_predictions(prediction_file, dataset=dataset, sidecars=sidecars)
    kind, spec = resolve_kind(table, kind)
    records = table_records(table, kind, spec, group=spec.group if spec is not None else None)
    probe = Exclusions()  # the core counts the records' problems again when it reads the batch
    probe.merge(table.excluded)
    record_table(table, records, probe)
    return RecordBatch(records, str(table.path), table.excluded, table.n_read, {"vlmeval": table.summary()}, kind=kind)
