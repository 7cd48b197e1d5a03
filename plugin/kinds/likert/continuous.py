"""Continuous labels in the Likert study: which methods run, what is binned, widths in the labels' units.

Labels read on their own scale (``--label-scale LO:HI``,
:class:`judgecp.base.scale.LabelScale`) are mapped onto the judge's; when some
are not integers (:attr:`judgecp.data.ScoreData.continuous_labels`) no label
set can hold them, so :func:`judgecp.kinds.likert.study.evaluate_scores` runs
the interval methods only (:func:`interval_specs`: the others are listed in
the report's ``skipped`` with the reason), reports each interval's coverage
and width (no ``labels``/``expanded`` entries), and bins a label to its
nearest scale point wherever a table treats it as a category
(:data:`BINNED_TABLES`; the report's ``label_scale`` section says so). With
a label scale, interval widths are also given in the labels' own units.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from judgecp.base.errors import InputError
from judgecp.data.score import ScoreData
from judgecp.kinds.registry import build_method

#: What continuous labels bin to their nearest scale point (round half to even): the report's tables
#: that treat a label as a category.
BINNED_TABLES = ("point.exact_accuracy", "point.bias_by_label", "point.n_by_label", "confusion",
                 "reliability_diagram", "methods.*.coverage_by_label", "methods.*.coverage_by_error",
                 "methods.*.midpoint.*.exact_accuracy", "conditional_coverage.*.by_label",
                 "conditional_coverage.*.by_judge_error", "groups.*.point")


def interval_specs(specs: Sequence[str], alpha: float, data: ScoreData) -> tuple[list[str], list[tuple[str, str]]]:
    """The specs that predict intervals, and the others with the reason they cannot run on continuous labels."""
    keep: list[str] = []
    skipped: list[tuple[str, str]] = []
    for spec in specs:
        method = build_method(spec, alpha=alpha, scale=data.scale)
        if method.output == "interval":
            keep.append(spec)
            continue
        what = "predicts label sets only" if getattr(method, "scores_only", False) else "a set method"
        skipped.append((spec, f"{what}: label sets are for integer labels, these are continuous"))
    if not keep:
        raise InputError(f"the labels are continuous (non-integer after --label-scale), and none of the methods "
                         f"{', '.join(specs)} predicts an interval: choose interval methods "
                         "(naive, cqr, cqr_asym, chr, lvd, boosted_cqr, boosted_lcp, r2ccp) or --methods all")
    return keep, skipped


def label_scale_section(data: ScoreData) -> dict[str, Any] | None:
    """The report's ``label_scale``: the labels' own scale, the map, and what was binned (``None``: neither)."""
    continuous = data.continuous_labels
    if data.label_scale is None and not continuous:
        return None
    own = data.label_scale
    return {
        "scale": own.to_json() if own else [data.scale.minimum, data.scale.maximum],
        "map": own.describe(data.scale) if own else "none (labels on the judge's scale)",
        "continuous": continuous,
        "binned": list(BINNED_TABLES) if continuous else [],
        "bins": "nearest scale point, round half to even: bin k holds [k - 0.5, k + 0.5]" if continuous else None,
    }


def with_label_units(entry: dict[str, Any], data: ScoreData) -> dict[str, Any]:
    """A method entry with its interval widths also in the labels' own units (with a label scale)."""
    own, interval = data.label_scale, entry.get("interval")
    if own is not None and interval:
        interval["width_label_units"] = own.width_in_label_units(interval["width"], data.scale)
        interval["width_std_label_units"] = own.width_in_label_units(interval["width_std"], data.scale)
    return entry
