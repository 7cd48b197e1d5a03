"""Metrics of a judge dataset's prediction file: the core protocol, the metric file, the headline.

Used by the VLMEvalKit datasets' ``evaluate()`` (inside ``run.py``) and by
``judgecp evaluate --format vlmeval`` (post hoc); neither needs VLMEvalKit.

The metric file ``<model>_<dataset>_cp.json`` beside the prediction file is
the core's report (README, "JSON report") plus a ``vlmeval`` section: the
prediction file, the sidecars used, where the records came from, the rows
repaired, and the rows left out before the core saw them (at TSV build, at
dataset load, by the reader). Every row the TSV builder read is accounted
for somewhere in it.

The headline VLMEvalKit prints and stores in ``status.json`` is a flat dict
of plain Python numbers (VLMEvalKit's JSON encoder fails on NumPy 2 scalars):
``n``, ``n_read``, ``excluded``, point metrics, and per method ``coverage``,
``set_width`` (label sets) and, for interval methods, ``interval_width``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.predictions import (
    PredictionTable,
    likert_records,
    read_predictions,
    resolve_spec,
)
from judgecp.adapters.vlmeval.specs import JudgeSpec
from judgecp.data import LikertData, likert_from_records
from judgecp.errors import InputError
from judgecp.exclusions import Exclusions
from judgecp.protocol import Protocol, evaluate
from judgecp.report import dumps, to_strict

log = logging.getLogger("judgecp.vlmeval")

METRIC_SUFFIX = "_cp"
DEFAULT_METHODS = ("naive", "lac")
HEADLINE_POINT = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae", "bias")


@dataclass
class ProtocolOptions:
    """The evaluation settings a dataset (or the post-hoc command) passes to the core."""

    alpha: float = 0.1
    methods: tuple[str, ...] = DEFAULT_METHODS
    seeds: tuple[int, ...] = tuple(range(10))
    cal_fraction: float = 0.5
    mondrian: str | None = None
    group: str | None = None
    jobs: int = 1

    @classmethod
    def from_kwargs(
        cls,
        *,
        alpha: float = 0.1,
        methods: str | Sequence[str] = DEFAULT_METHODS,
        seeds: int | str | Sequence[int] = 10,
        cal_fraction: float = 0.5,
        mondrian: str | None = None,
        group: str | None = None,
        jobs: int = 1,
    ) -> ProtocolOptions:
        """Settings from config values: methods as ``"naive,lac"`` or a list, seeds as a count or a list."""
        from judgecp.cli import parse_seeds
        from judgecp.plugins import split_method_list

        method_list = tuple(split_method_list(methods)) if isinstance(methods, str) else tuple(methods)
        if isinstance(seeds, int):
            seed_list = parse_seeds(str(seeds))
        elif isinstance(seeds, str):
            seed_list = parse_seeds(seeds)
        else:
            seed_list = tuple(int(s) for s in seeds)
        return cls(alpha=float(alpha), methods=method_list, seeds=seed_list, cal_fraction=float(cal_fraction),
                   mondrian=mondrian, group=group, jobs=int(jobs))


@dataclass
class Outcome:
    report: dict[str, Any]
    headline: dict[str, Any]
    metric_file: Path | None
    table: PredictionTable
    data: LikertData | None = None
    errors: list[str] = field(default_factory=list)


def metric_path(prediction_file: str | Path) -> Path:
    p = Path(prediction_file)
    return p.with_name(p.stem + METRIC_SUFFIX + ".json")


def load_likert_table(
    table: PredictionTable,
    spec: JudgeSpec,
    *,
    group: str | None = None,
    excluded_at_load: Exclusions | None = None,
) -> LikertData:
    """The core's :class:`~judgecp.data.LikertData` from a read prediction table.

    Rows the reader (and the dataset loader) left out are counted in the
    data's ``excluded`` and ``n_read``, next to the core's own reasons.
    """
    excluded = Exclusions()
    excluded.merge(table.excluded)
    if excluded_at_load is not None:
        excluded.merge(excluded_at_load)
    records = likert_records(table, spec)
    if not records:
        reasons = ", ".join(f"{e['reason']}: {e['count']}" for e in excluded.to_json()) or "no rows"
        raise InputError(f"{table.path}: no usable rows ({reasons})")
    return likert_from_records(
        records,
        source=str(table.path),
        scale=spec.scale,
        logprobs_json="logprobs",
        parsed="parsed",
        label="label",
        id_column="id",
        group=group,
        excluded=excluded,
    )


def load_vlmeval_likert(
    prediction_file: str | Path,
    *,
    dataset: str | None = None,
    sidecars: Sequence[str | Path] | None = None,
    group: str | None = None,
) -> LikertData:
    """A prediction file of a judgecp Likert dataset as :class:`~judgecp.data.LikertData` (post hoc).

    ``group`` names a column of the prediction file (e.g. ``category``) for
    per-group tables or Mondrian calibration.
    """
    table = read_predictions(prediction_file, dataset=dataset, sidecars=sidecars)
    spec = resolve_spec(table)
    data = load_likert_table(table, spec, group=group)
    data.columns["vlmeval"] = table.summary()
    return data


def headline(report: Mapping[str, Any]) -> dict[str, Any]:
    """Flat plain-number summary of a report, for VLMEvalKit's log and ``status.json``."""
    out: dict[str, Any] = {
        "n": report.get("n", 0),
        "n_read": report.get("n_read", 0),
        "excluded": sum(int(e["count"]) for e in report.get("excluded", [])),
    }
    point = report.get("point") or {}
    for key in HEADLINE_POINT:
        if key in point:
            out[key] = point[key]
    for name, entry in (report.get("methods") or {}).items():
        summary: dict[str, Any] = {
            "coverage": entry["labels"]["coverage"],
            "set_width": entry["labels"]["width"],
        }
        if entry.get("interval"):
            summary["interval_coverage"] = entry["interval"]["coverage"]
            summary["interval_width"] = entry["interval"]["width"]
        summary["full_range"] = entry.get("full_range")
        out[name] = summary
    vl = report.get("vlmeval") or {}
    if vl.get("excluded_at_build") is not None:
        out["excluded_at_build"] = sum(int(e["count"]) for e in vl["excluded_at_build"])
    if report.get("error"):
        out["error"] = report["error"]
    strict = to_strict(out)
    assert isinstance(strict, dict)
    return strict


def evaluate_likert(
    table: PredictionTable,
    spec: JudgeSpec,
    options: ProtocolOptions,
    excluded_at_load: Exclusions | None,
) -> tuple[dict[str, Any], LikertData | None]:
    """The core's Likert protocol on a table; a table with no usable row gives a report with ``error``."""
    group = options.group if options.group is not None else spec.group
    if options.mondrian:
        group = None
    data: LikertData | None = None
    try:
        data = load_likert_table(table, spec, group=group or options.mondrian, excluded_at_load=excluded_at_load)
        protocol = Protocol(alpha=options.alpha, methods=options.methods, seeds=options.seeds,
                            cal_fraction=options.cal_fraction, mondrian=options.mondrian, group=group,
                            jobs=options.jobs)
        return evaluate(data, protocol), data
    except InputError as exc:
        excluded = Exclusions()
        excluded.merge(table.excluded)
        if excluded_at_load is not None:
            excluded.merge(excluded_at_load)
        log.warning("judgecp: %s", exc)
        report = {
            "kind": spec.kind,
            "error": str(exc),
            "n": 0 if data is None else data.n,
            "n_read": table.n_read + (excluded_at_load.total if excluded_at_load else 0),
            "excluded": (data.excluded if data is not None else excluded).to_json(),
            "alpha": options.alpha,
            "scale": [spec.scale.minimum, spec.scale.maximum],
        }
        return report, data


#: Metrics per judge kind: (table, spec, options, rows left out at load) -> (report, data).
#: Pairwise (SCOPE selective risk, both orders) and PARC add their entries with the core's metrics.
Evaluator = Callable[[PredictionTable, JudgeSpec, ProtocolOptions, "Exclusions | None"],
                     tuple[dict[str, Any], Any]]
KIND_EVALUATORS: dict[str, Evaluator] = {"likert": evaluate_likert}


def evaluate_prediction_file(
    prediction_file: str | Path,
    *,
    spec: JudgeSpec | None = None,
    options: ProtocolOptions | None = None,
    dataset: str | None = None,
    sidecars: Sequence[str | Path] | None = None,
    excluded_at_load: Exclusions | None = None,
    build_manifest: Mapping[str, Any] | None = None,
    write: bool = True,
) -> Outcome:
    """Read, evaluate, write ``<stem>_cp.json``; a file with no usable row gives a report with ``error``."""
    options = options or ProtocolOptions()
    table = read_predictions(prediction_file, dataset=dataset, sidecars=sidecars)
    spec = resolve_spec(table, spec)
    section: dict[str, Any] = table.summary()
    section["judge_dataset"] = spec.key
    section["excluded_at_load"] = (excluded_at_load or Exclusions()).to_json()
    if build_manifest is not None:
        section["excluded_at_build"] = build_manifest.get("excluded", [])
        section["build"] = {k: build_manifest.get(k) for k in ("dataset", "tsv_md5", "built_at", "rows_read",
                                                                 "rows_written", "source")}
    evaluator = KIND_EVALUATORS.get(spec.kind)
    if evaluator is None:
        raise InputError(f"{spec.key}: judge kind {spec.kind!r} has no evaluator yet")
    report, data = evaluator(table, spec, options, excluded_at_load)
    report["vlmeval"] = section
    out_file = metric_path(prediction_file) if write else None
    if out_file is not None:
        out_file.write_text(dumps(report), encoding="utf-8")
    parsed_report = json.loads(dumps(report))
    return Outcome(report=parsed_report, headline=headline(parsed_report), metric_file=out_file, table=table,
                   data=data, errors=[report["error"]] if "error" in report else [])
