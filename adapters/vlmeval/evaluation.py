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

A metric file is the core's report (README, "JSON report") plus a
``vlmeval`` section: the prediction file, the sidecars used, where the
records came from, the rows repaired, the rows' flags, and the rows left out
before the core saw them (at TSV build, at dataset load, by the reader).
Every row the TSV builder read is accounted for somewhere in it.

The headline VLMEvalKit prints and stores in ``status.json`` is a dict of
plain Python numbers (VLMEvalKit's JSON encoder fails on NumPy 2 scalars):
``n``, ``n_read``, ``excluded`` and the kind's numbers (:func:`headline`).
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
    option_records,
    pairwise_records,
    read_predictions,
    resolve_kind,
    resolve_spec,
)
from judgecp.adapters.vlmeval.specs import MCQ_KIND, METRIC_SUFFIXES, JudgeSpec
from judgecp.data import LikertData, likert_from_records
from judgecp.errors import InputError
from judgecp.exclusions import Exclusions
from judgecp.protocol import Protocol, evaluate
from judgecp.report import dumps, to_strict

log = logging.getLogger("judgecp.vlmeval")

METRIC_SUFFIX = METRIC_SUFFIXES["likert"]
DEFAULT_METHODS = ("naive", "lac")
HEADLINE_POINT = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae", "bias")
PAIRWISE_ALPHAS = (0.05, 0.10, 0.15, 0.20, 0.25)
PAIRWISE_CONTROLLERS = ("scope", "clopper_pearson", "naive", "heuristic", "vanilla")


def _floats(value: float | str | Sequence[float], what: str) -> tuple[float, ...]:
    if isinstance(value, (int, float)):
        return (float(value),)
    items = value.split(",") if isinstance(value, str) else list(value)
    try:
        return tuple(float(x) for x in items if str(x).strip())
    except ValueError as exc:
        raise InputError(f"{what}: numbers separated by commas, got {value!r}") from exc


def _names(value: str | Sequence[str]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(str(x).strip() for x in items if str(x).strip())


@dataclass
class ProtocolOptions:
    """The evaluation settings a dataset (or the post-hoc command) passes to the core.

    Likert: ``alpha, methods, seeds, cal_fraction, mondrian, group``.
    Pairwise (SCOPE): ``alphas, n_splits, cal_fraction, signal, controllers,
    delta, seed``; the headline reads level ``headline_alpha`` (must be one of
    ``alphas``). PARC: ``alpha, seeds, cal_fraction, reference``.
    Multiple choice: ``alpha, methods, seeds, cal_fraction, group``.
    """

    alpha: float = 0.1
    methods: tuple[str, ...] = DEFAULT_METHODS
    seeds: tuple[int, ...] = tuple(range(10))
    cal_fraction: float = 0.5
    mondrian: str | None = None
    group: str | None = None
    jobs: int = 1
    alphas: tuple[float, ...] = PAIRWISE_ALPHAS
    n_splits: int = 1000
    signal: str = "bpe"
    controllers: tuple[str, ...] = PAIRWISE_CONTROLLERS
    delta: float = 0.1
    seed: int = 0
    headline_alpha: float = 0.1
    reference: str = "variation"

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
        alphas: float | str | Sequence[float] = PAIRWISE_ALPHAS,
        n_splits: int = 1000,
        signal: str = "bpe",
        controllers: str | Sequence[str] = PAIRWISE_CONTROLLERS,
        delta: float = 0.1,
        seed: int = 0,
        headline_alpha: float = 0.1,
        reference: str = "variation",
    ) -> ProtocolOptions:
        """Settings from config values: lists as ``"a,b"`` or JSON lists, seeds as a count or a list."""
        from judgecp.cli import parse_seeds
        from judgecp.plugins import split_method_list

        method_list = tuple(split_method_list(methods)) if isinstance(methods, str) else tuple(methods)
        if isinstance(seeds, int):
            seed_list = parse_seeds(str(seeds))
        elif isinstance(seeds, str):
            seed_list = parse_seeds(seeds)
        else:
            seed_list = tuple(int(s) for s in seeds)
        alpha_list = _floats(alphas, "alphas")
        if float(headline_alpha) not in alpha_list:
            raise InputError(f"headline_alpha {headline_alpha} is not one of the alphas {list(alpha_list)}")
        return cls(alpha=float(alpha), methods=method_list, seeds=seed_list, cal_fraction=float(cal_fraction),
                   mondrian=mondrian, group=group, jobs=int(jobs), alphas=alpha_list, n_splits=int(n_splits),
                   signal=str(signal), controllers=_names(controllers), delta=float(delta), seed=int(seed),
                   headline_alpha=float(headline_alpha), reference=str(reference))


@dataclass
class Outcome:
    report: dict[str, Any]
    headline: dict[str, Any]
    metric_file: Path | None
    table: PredictionTable
    data: Any = None
    errors: list[str] = field(default_factory=list)


def metric_path(prediction_file: str | Path, kind: str = "likert") -> Path:
    """``<stem><suffix>.json`` beside the prediction file: ``_cp`` (Likert), ``_selective``, ``_reliability``."""
    p = Path(prediction_file)
    return p.with_name(p.stem + METRIC_SUFFIXES[kind] + ".json")


def _excluded_before_core(
    table: PredictionTable, excluded_at_load: Exclusions | None, sink: Exclusions | None = None,
) -> Exclusions:
    """The rows left out before the core (reader, dataset load), in ``sink`` when given.

    The core's loaders add their own reasons to the object they are given and
    then may raise (nothing usable); an evaluator that passes a ``sink`` still
    has every count for its error report.
    """
    excluded = sink if sink is not None else Exclusions()
    excluded.merge(table.excluded)
    if excluded_at_load is not None:
        excluded.merge(excluded_at_load)
    return excluded


def load_likert_table(
    table: PredictionTable,
    spec: JudgeSpec,
    *,
    group: str | None = None,
    excluded_at_load: Exclusions | None = None,
    sink: Exclusions | None = None,
) -> LikertData:
    """The core's :class:`~judgecp.data.LikertData` from a read prediction table.

    Rows the reader (and the dataset loader) left out are counted in the
    data's ``excluded`` and ``n_read``, next to the core's own reasons (all
    of them in ``sink`` when given, also when the core raises).
    """
    excluded = _excluded_before_core(table, excluded_at_load, sink)
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


def _total(entries: Any) -> int:
    return sum(int(e["count"]) for e in entries or [])


def headline(report: Mapping[str, Any], options: ProtocolOptions | None = None) -> dict[str, Any]:
    """Plain-number summary of a report, for VLMEvalKit's log and ``status.json`` (nested one level).

    Likert: point metrics and, per method, ``coverage``, ``set_width`` and
    (interval methods) ``interval_coverage``, ``interval_width``,
    ``full_range``. Pairwise: ``scope`` coverage and risk at
    ``headline_alpha`` (and every other controller's), and the BPE signal's
    ``accuracy``, ``auroc``, ``auprc``, ``ece``. PARC: calibrated
    ``reliability`` and ``accuracy``, ``overall`` (the model's mean over its
    cells) and per family (``O``, ``LR``, ``LS``, ``VR``, ``VS``).
    """
    options = options or ProtocolOptions()
    kind = report.get("kind", "likert")
    out: dict[str, Any] = {
        "n": report.get("n", 0),
        "n_read": report.get("n_read", 0),
        "excluded": _total(report.get("excluded")),
    }
    if kind == "pairwise":
        level = f"{options.headline_alpha:g}"
        if report.get("controllers"):
            out["alpha"] = options.headline_alpha
            for name, levels in report["controllers"].items():
                entry = levels.get(level)
                if entry is not None:
                    out[name] = {"coverage": entry["coverage"], "risk": entry["risk"],
                                 "abstain_all": entry["abstain_all"]}
        signal = (report.get("uncertainty") or {}).get(options.signal)
        if signal:
            out[options.signal] = {k: signal.get(k) for k in ("accuracy", "auroc", "auprc", "ece")}
        out["single_order"] = sum(int(f["count"]) for f in report.get("flags", []) if f.get("flag") == "single_order")
    elif kind == "parc":
        for score in ("reliability", "accuracy"):
            table = report.get(score) or {}
            scores: dict[str, Any] = {}
            models = table.get("model") or {}
            if len(models) == 1:
                scores["overall"] = next(iter(models.values())).get("calibrated")
            for family, value in (table.get("family") or {}).items():
                scores[family] = value.get("calibrated")
            if scores:
                out[score] = scores
    else:
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
        out["excluded_at_build"] = _total(vl["excluded_at_build"])
    if report.get("error"):
        out["error"] = report["error"]
    strict = to_strict(out)
    assert isinstance(strict, dict)
    return strict


def _error_report(
    kind: str, exc: InputError, table: PredictionTable, excluded_at_load: Exclusions | None, data: Any,
    sink: Exclusions | None = None, **extra: Any,
) -> dict[str, Any]:
    """The report of a file the core could not evaluate: the error and every count, no metrics."""
    log.warning("judgecp: %s", exc)
    if data is not None:
        excluded = data.excluded
    elif sink is not None and sink.total:
        excluded = sink  # what the reader and the core counted before the core gave up
    else:
        excluded = _excluded_before_core(table, excluded_at_load)
    return {
        "kind": kind,
        "error": str(exc),
        "n": 0 if data is None else data.n,
        "n_read": table.n_read + (excluded_at_load.total if excluded_at_load else 0),
        "excluded": excluded.to_json(),
        **extra,
    }


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
    sink = Exclusions()
    try:
        data = load_likert_table(table, spec, group=group or options.mondrian, excluded_at_load=excluded_at_load,
                                 sink=sink)
        protocol = Protocol(alpha=options.alpha, methods=options.methods, seeds=options.seeds,
                            cal_fraction=options.cal_fraction, mondrian=options.mondrian, group=group,
                            jobs=options.jobs)
        return evaluate(data, protocol), data
    except InputError as exc:
        return _error_report(spec.kind, exc, table, excluded_at_load, data, sink, alpha=options.alpha,
                             scale=[spec.scale.minimum, spec.scale.maximum]), data


def load_pairwise_table(
    table: PredictionTable, spec: JudgeSpec, *, group: str | None = None, excluded_at_load: Exclusions | None = None,
    sink: Exclusions | None = None,
) -> Any:
    """The core's :class:`~judgecp.pairwise.PairwiseData` from a read prediction table (rows joined by pair)."""
    from judgecp.pairwise import pairwise_from_records

    excluded = _excluded_before_core(table, excluded_at_load, sink)
    if group is not None and group not in table.columns:
        group = None
    records = pairwise_records(table, spec, group)
    if not records:
        raise InputError(f"{table.path}: no usable rows ({_reasons(excluded)})")
    data = pairwise_from_records(records, source=str(table.path), excluded=excluded, group=group)
    used = set(data.pair_ids.tolist())
    table.rows_used = sum(1 for r in records if str(r.get("pair_id", "")).strip() in used)
    return data


def evaluate_pairwise_table(
    table: PredictionTable, spec: JudgeSpec, options: ProtocolOptions, excluded_at_load: Exclusions | None,
) -> tuple[dict[str, Any], Any]:
    """SCOPE on a table of pairwise verdicts in both orders; no usable pair gives a report with ``error``."""
    from judgecp.pairwise import PairwiseProtocol, evaluate_pairwise

    data = None
    sink = Exclusions()
    try:
        group = options.group if options.group is not None else spec.group
        data = load_pairwise_table(table, spec, group=group, excluded_at_load=excluded_at_load, sink=sink)
        protocol = PairwiseProtocol(alphas=options.alphas, n_splits=options.n_splits,
                                    cal_fraction=options.cal_fraction, signal=options.signal,
                                    controllers=options.controllers, delta=options.delta, seed=options.seed)
        return evaluate_pairwise(data, protocol), data
    except InputError as exc:
        return _error_report("pairwise", exc, table, excluded_at_load, data, sink, alphas=list(options.alphas)), data


def _reasons(excluded: Exclusions) -> str:
    return ", ".join(f"{e['reason']}: {e['count']}" for e in excluded.to_json()) or "no rows"


def load_option_data(
    table: PredictionTable, kind: str, *, excluded_at_load: Exclusions | None = None,
    dataset: str | None = None, model: str | None = None, lmu_root: str | Path | None = None,
    sink: Exclusions | None = None,
) -> Any:
    """The core's :class:`~judgecp.mcq.MCQData` from a table (PARC or VLMEvalKit multiple choice)."""
    from judgecp.mcq import mcq_from_records

    records = option_records(table, kind, dataset=dataset, model=model, lmu_root=lmu_root)
    excluded = _excluded_before_core(table, excluded_at_load, sink)  # after option_records: it may count rows
    if not records:
        raise InputError(f"{table.path}: no usable rows ({_reasons(excluded)})")
    return mcq_from_records(records, source=str(table.path), excluded=excluded)


def evaluate_parc_table(
    table: PredictionTable, spec: JudgeSpec, options: ProtocolOptions, excluded_at_load: Exclusions | None,
) -> tuple[dict[str, Any], Any]:
    """PARC's scores on a table of answers to prompt variations; nothing usable gives a report with ``error``."""
    from judgecp.parc import PARCProtocol, evaluate_parc

    data = None
    sink = Exclusions()
    try:
        data = load_option_data(table, "parc", excluded_at_load=excluded_at_load, sink=sink)
        protocol = PARCProtocol(alpha=options.alpha, seeds=options.seeds, cal_fraction=options.cal_fraction,
                                reference=options.reference)
        return evaluate_parc(data, protocol), data
    except InputError as exc:
        return _error_report("parc", exc, table, excluded_at_load, data, sink, alpha=options.alpha), data


def evaluate_mcq_table(
    table: PredictionTable, spec: JudgeSpec | None, options: ProtocolOptions, excluded_at_load: Exclusions | None,
) -> tuple[dict[str, Any], Any]:
    """Conformal sets over the options of a VLMEvalKit multiple-choice benchmark."""
    from judgecp.mcq import MCQProtocol, evaluate_mcq

    data = None
    sink = Exclusions()
    try:
        data = load_option_data(table, MCQ_KIND, excluded_at_load=excluded_at_load, sink=sink)
        group_by = (options.group,) if options.group else ("dataset", "category")
        protocol = MCQProtocol(options.alpha, options.methods, options.seeds, options.cal_fraction, group_by)
        return evaluate_mcq(data, protocol), data
    except InputError as exc:
        return _error_report(MCQ_KIND, exc, table, excluded_at_load, data, sink, alpha=options.alpha), data


#: Metrics per kind: (table, spec, options, rows left out at load) -> (report, data).
Evaluator = Callable[[PredictionTable, Any, ProtocolOptions, "Exclusions | None"], tuple[dict[str, Any], Any]]
KIND_EVALUATORS: dict[str, Evaluator] = {
    "likert": evaluate_likert,
    "pairwise": evaluate_pairwise_table,
    "parc": evaluate_parc_table,
    MCQ_KIND: evaluate_mcq_table,
}


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
    """Read, evaluate, write the kind's metric file; a file with no usable row gives a report with ``error``."""
    options = options or ProtocolOptions()
    table = read_predictions(prediction_file, dataset=dataset, sidecars=sidecars)
    spec = resolve_spec(table, spec)
    section: dict[str, Any] = {}
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
    report["vlmeval"] = {**table.summary(), **section}  # the summary after the records were built: flags
    out_file = metric_path(prediction_file, spec.kind) if write else None
    if out_file is not None:
        out_file.write_text(dumps(report), encoding="utf-8")
    parsed_report = json.loads(dumps(report))
    return Outcome(report=parsed_report, headline=headline(parsed_report, options), metric_file=out_file,
                   table=table, data=data, errors=[report["error"]] if "error" in report else [])


def load_vlmeval(
    prediction_file: str | Path,
    *,
    kind: str | None = None,
    sidecars: Sequence[str | Path] | None = None,
    group: str | None = None,
    dataset: str | None = None,
) -> tuple[str, Any]:
    """``(kind, data)`` of a prediction file for ``judgecp evaluate --format vlmeval`` (post hoc).

    The kind comes from the file (:func:`~judgecp.adapters.vlmeval.predictions.resolve_kind`)
    unless given; ``data`` is the core's data object of that kind (Likert,
    pairwise, multiple choice; PARC is multiple choice with variations), with
    the reader's summary in ``data.columns["vlmeval"]`` (Likert) or
    ``data.vlmeval`` (the others) and every row it left out in
    ``data.excluded``.
    """
    table = read_predictions(prediction_file, dataset=dataset, sidecars=sidecars)
    kind, spec = resolve_kind(table, kind)
    data: Any
    if kind == "likert":
        assert spec is not None
        data = load_likert_table(table, spec, group=group)
        data.columns["vlmeval"] = table.summary()
        return kind, data
    if kind == "pairwise":
        assert spec is not None
        data = load_pairwise_table(table, spec, group=group)
    else:
        data = load_option_data(table, kind)
    data.vlmeval = table.summary()
    return kind, data
