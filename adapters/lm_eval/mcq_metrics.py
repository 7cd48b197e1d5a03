"""Task-level metrics of multiple-choice tasks: conformal option sets (MCQ) and PARC reliability.

Every metric of a task reads one core report over all its records, computed
once per content by :func:`judgecp.adapters.lm_eval.metrics.cached_report`:
:func:`judgecp.mcq.evaluate_mcq` for the conformal-set tasks,
:func:`judgecp.parc.evaluate_parc` for the PARC tasks. Nothing here imports
lm-eval.

Settings from the task's ``metadata``:

================ =========================================== =============================================
key              default                                     meaning
================ =========================================== =============================================
``alpha``        ``0.1``                                     miscoverage (MCQ); LAC level of PARC's certainty
``methods``      ``lac,aps,aps(randomized=False),raps,margin`` set methods (MCQ only; ordinal ones refused)
``seeds``        ``10``                                      random calibration/test splits, or a list
``cal_fraction`` ``0.5``                                     calibration share of each split
``reference``    ``"variation"``                             PARC: prompts whose calibration half sets the
                                                             LAC threshold (``variation`` or ``original``)
``model``        the judgecp model's name                    PARC: the records' ``model`` field
================ =========================================== =============================================
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgecp.adapters.lm_eval.metrics import (
    Metric,
    cached_report,
    finish_report,
    metadata_alpha,
    metadata_cal_fraction,
    metadata_methods,
    metadata_seeds,
    metric_suffix,
    report_aggregation,
    undefined_report,
)
from judgecp.adapters.lm_eval.records import split_excluded
from judgecp.errors import InputError

#: Fewer usable items leave nothing to calibrate on and test.
MIN_ITEMS = 4

Aggregations = list[tuple[Metric, Callable[[Sequence[Mapping[str, Any]]], float]]]


# -- conformal option sets ------------------------------------------------------------


@dataclass(frozen=True)
class MCQSettings:
    """The split-conformal protocol of a multiple-choice task (:class:`judgecp.mcq.MCQProtocol`)."""

    alpha: float = 0.1
    methods: tuple[str, ...] = ("lac", "aps", "aps(randomized=False)", "raps", "margin")
    seeds: tuple[int, ...] = tuple(range(10))
    cal_fraction: float = 0.5

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None) -> MCQSettings:
        """Read the settings from a task's metadata; a bad value is an :class:`InputError` naming it."""
        from judgecp.mcq import DEFAULT_MCQ_METHODS, check_mcq_method

        meta = dict(metadata or {})
        methods = metadata_methods(meta, list(DEFAULT_MCQ_METHODS))
        for spec in methods:
            try:
                check_mcq_method(spec)
            except InputError as exc:
                raise InputError(f"metadata methods: {exc}") from exc
        return cls(metadata_alpha(meta), methods, metadata_seeds(meta), metadata_cal_fraction(meta))

    def protocol(self) -> Any:
        from judgecp.mcq import MCQProtocol

        return MCQProtocol(self.alpha, self.methods, self.seeds, self.cal_fraction, ("dataset", "category"))

    def key(self) -> str:
        return json.dumps(["mcq", self.alpha, self.methods, self.seeds, self.cal_fraction])


def mcq_metrics(settings: MCQSettings, categories: Sequence[str] = ()) -> list[Metric]:
    """The task's metrics; each ``<m>_stderr`` follows ``<m>``.

    ``n`` (items used), ``excluded`` (documents left out, every reason),
    ``accuracy`` (the model's answer, the highest option logprob, is a
    correct one); per method ``coverage_<m>``, ``set_size_<m>`` (with
    ``_stderr`` = standard deviation over the splits),
    ``set_size_correct_<m>`` / ``set_size_incorrect_<m>`` (mean set size when
    the model's answer is right / wrong) and ``empty_<m>`` (share of empty
    sets); per category ``c`` of the dataset: ``accuracy_<c>``, and for the
    first method ``m`` only (the table stays readable; every method's are in
    the offline report) ``coverage_<m>_<c>`` and ``set_size_<m>_<c>`` (test
    rows of that category, every split pooled).
    """
    metrics = [
        Metric("n", lambda r: r["n"], None, always=True),
        Metric("excluded", lambda r: r["n_excluded"], False, always=True),
        Metric("accuracy", lambda r: r["accuracy"], True),
    ]
    for spec in settings.methods:
        s = metric_suffix(spec)

        def entry(key: str, spec: str = spec) -> Callable[[dict[str, Any]], float | None]:
            return lambda r: r["methods"][spec][key]

        metrics += [
            Metric(f"coverage_{s}", entry("coverage"), None),
            Metric(f"coverage_{s}_stderr", entry("coverage_std"), None),
            Metric(f"set_size_{s}", entry("set_size"), False),
            Metric(f"set_size_{s}_stderr", entry("set_size_std"), None),
            Metric(f"set_size_correct_{s}", entry("set_size_correct"), False),
            Metric(f"set_size_incorrect_{s}", entry("set_size_incorrect"), None),
            Metric(f"empty_{s}", entry("empty"), False),
        ]
    for category in categories:
        c = metric_suffix(category)
        metrics.append(Metric(f"accuracy_{c}", lambda r, g=category: r["by_category"][g]["accuracy"], True))
        for spec in settings.methods[:1]:
            s = metric_suffix(spec)

            def by_category(key: str, spec: str = spec, g: str = category) -> Callable[[dict[str, Any]], float | None]:
                return lambda r: r["by_category"][g]["methods"][spec][key]

            metrics += [
                Metric(f"coverage_{s}_{c}", by_category("coverage"), None),
                Metric(f"set_size_{s}_{c}", by_category("set_size"), False),
            ]
    return metrics


def mcq_report(
    records: Sequence[Mapping[str, Any]], settings: MCQSettings, *, task: str = ""
) -> dict[str, Any]:
    """The conformal-set report of a task's records, exclusions counted (``error`` when too few items)."""
    return cached_report(records, settings.key(), lambda ordered: _mcq_compute(ordered, settings, task))


def _read_items(records: list[dict[str, Any]], task: str) -> tuple[Any, dict[str, Any] | None]:
    """The core's items, or ``(None, undefined report)`` when none is usable."""
    from judgecp.mcq import mcq_from_records

    usable, excluded = split_excluded(records)
    source = f"lm-eval task {task}".strip()
    try:
        if not usable:
            raise InputError(f"{source}: no usable items")
        # The core adds its own reasons to `excluded` (also when it finds no usable item).
        return mcq_from_records(usable, source=source, excluded=excluded), None
    except InputError as exc:
        return None, undefined_report(str(exc), len(records), 0, excluded.to_json())


def _mcq_compute(records: list[dict[str, Any]], settings: MCQSettings, task: str) -> dict[str, Any]:
    from judgecp.mcq import evaluate_mcq

    data, report = _read_items(records, task)
    if data is not None:
        if data.n < MIN_ITEMS:
            report = undefined_report(f"need at least {MIN_ITEMS} usable items, got {data.n}", data.n_read, data.n, data.excluded.to_json())
        else:
            report = evaluate_mcq(data, settings.protocol())
    assert report is not None
    return finish_report(report, task)


def mcq_aggregations(settings: MCQSettings, task: str, categories: Sequence[str] = ()) -> Aggregations:
    """Every metric with its lm-eval aggregation function."""
    return [
        (m, report_aggregation(m, lambda records: mcq_report(records, settings, task=task)))
        for m in mcq_metrics(settings, categories)
    ]


# -- PARC -------------------------------------------------------------------------------

PARC_SCORES = ("reliability", "accuracy", "certainty", "consistency")


@dataclass(frozen=True)
class PARCSettings:
    """PARC's protocol (:class:`judgecp.parc.PARCProtocol`) and the model name the records carry."""

    alpha: float = 0.1
    seeds: tuple[int, ...] = tuple(range(10))
    cal_fraction: float = 0.5
    reference: str = "variation"
    model: str | None = None

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any] | None) -> PARCSettings:
        meta = dict(metadata or {})
        reference = str(meta.get("reference", "variation"))
        if reference not in ("variation", "original"):
            raise InputError(f"metadata reference must be 'variation' or 'original', got {reference!r}")
        model = meta.get("model")
        return cls(metadata_alpha(meta), metadata_seeds(meta), metadata_cal_fraction(meta), reference,
                   None if model in (None, "") else str(model))

    def protocol(self) -> Any:
        from judgecp.parc import PARCProtocol

        return PARCProtocol(self.alpha, self.seeds, self.cal_fraction, self.reference)

    def key(self) -> str:
        return json.dumps(["parc", self.alpha, self.seeds, self.cal_fraction, self.reference])


def parc_metrics(variations: Sequence[str], families: Sequence[str], datasets: Sequence[str] = ()) -> list[Metric]:
    """PARC's calibrated scores as scalars.

    ``n``, ``excluded``; for each score (``reliability``, ``accuracy``,
    ``certainty``, ``consistency``): the mean over every (dataset,
    variation) cell (``<score>``), per variation (``<score>_<variation>``,
    e.g. ``reliability_LR-I``; no consistency for ``O``, the original
    prompt), per family (``<score>_<family>``: LR, LS, VR, VS) and, when the
    task spans several datasets, per dataset (``<score>_dataset_<name>``).
    All calibrated (improvement over random performance); the raw values
    are in the offline report.
    """
    metrics = [
        Metric("n", lambda r: r["n"], None, always=True),
        Metric("excluded", lambda r: r["n_excluded"], False, always=True),
    ]
    for score in PARC_SCORES:
        metrics.append(Metric(score, lambda r, s=score: _only_model(r[s]["model"])["calibrated"], True))
        for v in variations:
            if score == "consistency" and v == "O":
                continue
            metrics.append(Metric(f"{score}_{v}", lambda r, s=score, v=v: r[s]["variation"][v]["calibrated"], True))
        for f in families:
            metrics.append(Metric(f"{score}_{f}", lambda r, s=score, f=f: r[s]["family"][f]["calibrated"], True))
        if len(datasets) > 1:
            for d in datasets:
                metrics.append(Metric(
                    f"{score}_dataset_{metric_suffix(d)}", lambda r, s=score, d=d: r[s]["dataset"][d]["calibrated"], True,
                ))
    return metrics


def _only_model(by_model: Mapping[str, Any]) -> Any:
    """The one model's entry (an lm-eval run has one model); undefined (KeyError) otherwise."""
    if len(by_model) != 1:
        raise KeyError("not exactly one model")
    return next(iter(by_model.values()))


def parc_report(
    records: Sequence[Mapping[str, Any]], settings: PARCSettings, *, task: str = ""
) -> dict[str, Any]:
    """The PARC report of a task's records, exclusions counted."""
    return cached_report(records, settings.key(), lambda ordered: _parc_compute(ordered, settings, task))


def _parc_compute(records: list[dict[str, Any]], settings: PARCSettings, task: str) -> dict[str, Any]:
    from judgecp.parc import evaluate_parc

    data, report = _read_items(records, task)
    if data is not None:
        try:
            report = evaluate_parc(data, settings.protocol())
        except InputError as exc:  # e.g. records without source_id
            report = undefined_report(str(exc), data.n_read, data.n, data.excluded.to_json())
    assert report is not None
    return finish_report(report, task)


def parc_aggregations(
    settings: PARCSettings, task: str, variations: Sequence[str], families: Sequence[str], datasets: Sequence[str] = (),
) -> Aggregations:
    """Every metric with its lm-eval aggregation function."""
    return [
        (m, report_aggregation(m, lambda records: parc_report(records, settings, task=task)))
        for m in parc_metrics(variations, families, datasets)
    ]
