"""A report's headline: the plain numbers a harness logs and stores beside its own results.

A harness prints one flat table of numbers per benchmark (VLMEvalKit's
``status.json`` and run summary, nested one level as ``<name>|<key>``); the
full report is written beside it. These functions choose the numbers, from the
report of the repeated-split study (:func:`report_headline`) or from the
summary of a saved calibrator applied to a run (:func:`calibrated_headline`).
Both return plain Python numbers (a harness's JSON encoder may fail on NumPy
scalars); nothing here knows a harness.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgecp.protocol import Protocol
from judgecp.report import to_strict
from judgecp.scalars import calibrated_metrics, read_metric

#: The Likert judge's point metrics a headline shows (those the report has).
HEADLINE_POINT = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae", "bias")


def _total(entries: Any) -> int:
    return sum(int(e["count"]) for e in entries or [])


def report_headline(
    report: Mapping[str, Any], protocol: Protocol | None = None, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Plain-number summary of a report of :func:`judgecp.evaluate` (nested one level).

    Every kind: ``n``, ``n_read``, ``excluded`` (the count). Likert: point
    metrics and, per method, ``coverage``, ``set_width`` and (interval
    methods) ``interval_coverage``, ``interval_width``, ``full_range``.
    Pairwise: ``scope`` coverage and risk at the protocol's ``alpha`` (and
    every other controller's), the protocol's signal's ``accuracy``,
    ``auroc``, ``auprc``, ``ece``, and ``single_order`` (pairs seen in one
    order only). PARC: calibrated ``reliability`` and ``accuracy``,
    ``overall`` (the model's mean over its cells) and per family (``O``,
    ``LR``, ``LS``, ``VR``, ``VS``). ``extra`` (a harness's own counts) comes
    next, and the report's ``error`` last. NaN becomes ``None``.
    """
    protocol = protocol or Protocol()
    kind = report.get("kind", "likert")
    out: dict[str, Any] = {
        "n": report.get("n", 0),
        "n_read": report.get("n_read", 0),
        "excluded": _total(report.get("excluded")),
    }
    if kind == "pairwise":
        level = f"{protocol.level:g}"
        if report.get("controllers"):
            out["alpha"] = protocol.level
            for name, levels in report["controllers"].items():
                entry = levels.get(level)
                if entry is not None:
                    out[name] = {"coverage": entry["coverage"], "risk": entry["risk"],
                                 "abstain_all": entry["abstain_all"]}
        signal = (report.get("uncertainty") or {}).get(protocol.signal)
        if signal:
            out[protocol.signal] = {k: signal.get(k) for k in ("accuracy", "auroc", "auprc", "ece")}
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
    out.update(extra or {})
    if report.get("error"):
        out["error"] = report["error"]
    strict = to_strict(out)
    assert isinstance(strict, dict)
    return strict


def calibrated_headline(summary: Mapping[str, Any]) -> dict[str, float]:
    """The plain numbers of a calibrator's summary (:func:`judgecp.calibrators.apply`); NaN where undefined.

    The metrics lm-eval's calibrated tasks report (:func:`judgecp.scalars.calibrated_metrics`),
    read the same way, without their ``_stderr`` columns (lm-eval's layout): ``n``,
    ``excluded``; Likert and multiple choice: ``set_size`` (mean), ``singleton_share``,
    ``coverage_labeled``; pairwise: ``abstention_rate``, ``risk_labeled`` (error among
    accepted); every kind: ``drift_p_value``, ``corrected_score`` with
    ``corrected_score_lower`` / ``_upper`` (PPI++) and ``judge_score`` (the judge's own
    mean). NaN stands for no labels, no unlabeled rows.
    """
    view = {**summary, "n": summary["n_applied"], "n_excluded": _total(summary["excluded"])}
    return {m.name: read_metric(view, m) for m in calibrated_metrics(summary["kind"]) if not m.name.endswith("_stderr")}
