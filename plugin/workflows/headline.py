"""A report's headline: the plain numbers a harness logs and stores beside its own results.

A harness prints one flat table of numbers per benchmark (VLMEvalKit's
``status.json`` and run summary, nested one level as ``<name>|<key>``); the
full report is written beside it. These functions choose the numbers, from the
report of the repeated-split study (:func:`report_headline`) or from the
summary of a saved calibrator applied to a run (:func:`calibrated_headline`).
Both return plain Python numbers (a harness's JSON encoder may fail on NumPy
scalars); nothing here knows a harness.

A headline's *primary metrics* (:func:`primary_metrics`, each kind's
:meth:`judgecp.kinds.kind.Study.primary_metrics`) are the few numbers a harness's
summary table shows for the benchmark, the lead first. The rule for every
kind: none of them reads as its best value when the judge abstains on, or
fails, every item. A selective risk is undefined (``None``), not 0, when no
verdict was accepted in any split, and the share accepted leads; a conformal
coverage, which has a target and no best value, never stands alone (the set
width or size comes with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.jsonio import to_strict
from judgecp.kinds.kind import counts
from judgecp.kinds.metrics import PrimaryMetric, flatten
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.registry import get_kind
from judgecp.workflows.results import ApplyResult


def primary_metrics(headline: Mapping[str, Any], kind: str) -> list[PrimaryMetric]:
    """The primary metrics of a headline (:func:`report_headline`) of ``kind``, the lead first.

    Only those the headline has (a Likert run without label-set methods has none).
    ``kind`` ``"calibrated"``: the headline of a saved calibrator applied to a run
    (:func:`calibrated_headline`).
    """
    flat = flatten(headline)
    if kind == "calibrated":
        metrics = calibrated_primary_metrics(flat)
    else:
        metrics = get_kind(kind, flag="the report's kind").study.primary_metrics(flat)
    return [m for m in metrics if m.key in flat]


def calibrated_primary_metrics(flat: Mapping[str, Any]) -> list[PrimaryMetric]:
    """A saved calibrator applied to a run. Pairwise: the share of pairs it abstains on, then
    the error among the accepted labeled pairs (``None`` when none is accepted). Otherwise:
    the coverage on the labeled rows, then the mean set size (which leads without labels)."""
    if "abstention_rate" in flat:
        return [PrimaryMetric("abstention_rate", False, 0.0, "abstention_rate"),
                PrimaryMetric("risk_labeled", False, 0.0, "risk_labeled")]
    return [PrimaryMetric("coverage_labeled", None, None, "coverage_labeled"),
            PrimaryMetric("set_size", False, 1.0, "set_size")]




def report_headline(
    report: Mapping[str, Any], protocol: Protocol | None = None, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Plain-number summary of a report of :func:`judgecp.evaluate` (nested one level).

    Every kind: ``n``, ``n_read``, ``excluded`` (the count); then the kind's
    own numbers (:meth:`judgecp.kinds.kind.Study.headline`). Likert: point metrics
    and, per method, ``coverage``, ``set_width`` and (interval methods)
    ``interval_coverage``, ``interval_width``, ``full_range``. Pairwise:
    ``scope`` coverage and risk at the protocol's ``alpha`` (and every other
    controller's), the protocol's signal's ``accuracy``, ``auroc``, ``auprc``,
    ``ece``, and ``single_order`` (pairs seen in one order only). PARC:
    calibrated ``reliability`` and ``accuracy``, ``overall`` (the model's
    mean over its cells) and per family (``O``, ``LR``, ``LS``, ``VR``,
    ``VS``). ``extra`` (a harness's own counts) comes next, and the report's
    ``error`` last. NaN becomes ``None``. An error report without a kind (a harness run with no usable
    row) gives its counts and whatever point metrics it holds.
    """
    if "kind" in report:
        out = get_kind(str(report["kind"]), flag="the report's kind").study.headline(report, protocol or Protocol())
    elif report.get("error"):  # a run that read no usable row: its counts and the point metrics it has
        out = {**counts(report), **(report.get("point") or {})}
    else:
        raise InputError("the report names no kind (and is not an error report): not a judgecp evaluate report")
    out.update(extra or {})
    if report.get("error"):
        out["error"] = report["error"]
    strict = to_strict(out)
    assert isinstance(strict, dict)
    return strict


def calibrated_headline(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The plain numbers of a calibrator's summary (:func:`judgecp.workflows.calibrators.apply`); ``None`` where
    undefined.

    The scalars of the apply summary (:class:`judgecp.workflows.results.ApplyResult`, the metrics
    lm-eval's calibrated tasks report by the same names): ``n``, ``n_read``, ``excluded``; Likert and
    multiple choice: ``set_size`` (mean), ``singleton_share``, ``empty_sets``, ``coverage_labeled``;
    pairwise: ``abstention_rate``, ``risk_labeled`` (error among accepted); every kind:
    ``drift.p_value``, ``drift.alarm``, and the PPI++ ``estimate.ppi.mean`` / ``.lower`` / ``.upper`` /
    ``.se`` next to ``estimate.judge_only.*`` (the judge's own mean) and ``estimate.labeled_only.*``.
    ``None`` stands for no labels, no unlabeled rows, or an estimate that is degenerate or withheld.
    Counts are integers.
    """

    result = summary if isinstance(summary, ApplyResult) else ApplyResult(summary)
    untrusted = result.untrusted()
    out: dict[str, float | None] = {}
    for name, value in result.scalars().items():
        if name in untrusted:
            value = None
        out[name] = int(value) if value is not None and name in ("n", "n_read", "excluded") else value
    return out
