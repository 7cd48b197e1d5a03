"""Likert judges: repeated calibration/test splits of every conformal method, and the report.

For each split (:mod:`judgecp.kinds.protocol`) every method calibrates on the
calibration rows (fitting its model, if any, on a part of them) and predicts
the test rows; Mondrian calibration fits one copy per group. The report has
the judge's point metrics and confusion matrix, each method's coverage and
width (interval, label set, expanded) as mean and std over splits, coverage
by human label and by judge error, informativeness, midpoints, and, with a
group or Mondrian field, the same per group with the ranking-scoring gap.

Continuous labels (:attr:`judgecp.data.ScoreData.continuous_labels`, e.g.
``--label-scale 0:1``): only interval methods run (the others are listed in
``skipped`` with the reason), their entries have the interval's coverage and
width and no ``labels``/``expanded`` (label sets are for integer labels), and
the tables that treat a label as a category bin it to its nearest scale
point (the report's ``label_scale.binned`` names them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.base.memory import release_freed_memory
from judgecp.data.score import ScoreData
from judgecp.kinds.kind import Study, counts
from judgecp.kinds.likert.continuous import interval_specs, label_scale_section, with_label_units
from judgecp.kinds.likert.metrics import likert_metrics
from judgecp.kinds.likert.splits import SplitResult, run_splits
from judgecp.kinds.metrics import (
    Metric,
    PrimaryMetric,
    metric_suffix,
)
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.registry import build_method
from judgecp.kinds.sweep import SWEEP_KEY, level_key, sweep_levels
from judgecp.stats.conditional import conditional_coverage, judge_error
from judgecp.stats.conformal import min_calibration_size
from judgecp.stats.coverage import (
    agreement,
    headline_entry,
    informativeness,
    midpoint_table,
    pooled,
    stratified,
    summary,
)
from judgecp.stats.diagnostics import confusion_matrix, point_metrics, ranking_scoring_gap
from judgecp.stats.diagrams import likert_reliability
from judgecp.stats.features import judge_probabilities
from judgecp.stats.methods.spec import canonical_spec, parse_method_spec
from judgecp.stats.methods.variants import is_group_conditional


def method_specs(protocol: Protocol) -> list[str]:
    specs = [canonical_spec(*parse_method_spec(s)) for s in protocol.method_specs("likert")]
    if len(set(specs)) != len(specs):
        raise InputError(f"a method is listed twice: {specs}")
    return specs


def evaluate_scores(data: ScoreData, protocol: Protocol) -> dict[str, Any]:
    """Run the protocol on a Likert judge and return the report (docs/cli.md, "The JSON report")."""
    specs = method_specs(protocol)
    skipped = list(protocol.skipped)
    continuous = data.continuous_labels
    if continuous:
        specs, not_intervals = interval_specs(specs, protocol.level, data)
        skipped += not_intervals
    for name, setting in ((protocol.mondrian, "mondrian field"), (protocol.group, "group field")):
        if name is not None:
            data.field(name, setting)
    if data.n < 4:
        raise InputError(f"need at least 4 valid rows for a calibration/test split, got {data.n}")
    for spec in specs:  # a bad spec fails before any work
        build_method(spec, alpha=protocol.level, scale=data.scale)
        if is_group_conditional(spec) and not (protocol.mondrian or protocol.group):
            raise InputError(f"method {spec!r}: conditional=group needs --mondrian FIELD or --group FIELD")
    splits = run_splits(data, protocol, specs)
    release_freed_memory()  # the splits' temporaries: the report's tables start from what is kept

    scale = data.scale
    P = judge_probabilities(data.logprobs, scale)
    # Where a label is a category (exact accuracy, per-label tables): continuous labels' nearest scale point.
    bins = np.round(data.labels) if continuous else None
    categories = data.labels if bins is None else bins
    report: dict[str, Any] = {
        "kind": "likert",
        "input": {"source": data.source, "columns": data.columns},
        "n": data.n,
        "n_read": data.n_read,
        "excluded": data.excluded.to_json(),
        "flags": data.flags.to_json(key="flag"),
        "alpha": protocol.level,
        "scale": [scale.minimum, scale.maximum],
        "protocol": {
            "seeds": list(protocol.split_seeds("likert")),
            "cal_fraction": protocol.cal_fraction,
            "n_calibration": int(data.n - splits[0].test.size),
            "n_test": int(splits[0].test.size),
            "mondrian": protocol.mondrian,
            "group": protocol.group,
            "min_calibration_for_alpha": min_calibration_size(protocol.level),
        },
        "point": point_metrics(data.parsed, data.labels, scale, P, bins=bins),
        "confusion": confusion_matrix(data.parsed, categories, scale),
        "reliability_diagram": likert_reliability(P, categories, scale.labels.tolist()),
        "methods": {},
    }
    labels_section = label_scale_section(data)
    if labels_section is not None:
        report["label_scale"] = labels_section
    del P  # 8 bytes a row and label, not needed again (group_report takes its own)
    group_field = protocol.mondrian or protocol.group
    groups = data.field(group_field) if group_field else None
    y_all = data.labels
    report["conditional_coverage"] = {}
    # What does not depend on the method, once, and in small integer types where the values are
    # labels or errors: the pooled rows repeat every row about ten times (5 million at 1M records).
    test_idx = np.concatenate([s.test for s in splits])
    small = np.result_type(*(np.min_scalar_type(v) for v in (-scale.span - 1, scale.minimum, scale.maximum)))
    y_pool = y_all[test_idx]
    bins_pool = None if bins is None else bins[test_idx]
    cat_pool = y_pool if bins_pool is None else bins_pool
    raw_pool = data.parsed[test_idx].astype(np.float64)
    raw_row = agreement(raw_pool, y_pool, bins_pool)
    label_pool = cat_pool.astype(np.int64).astype(small)
    parsed_error = np.abs(raw_pool - cat_pool).astype(small)
    del raw_pool
    judge_error_pool = judge_error(data.logprobs, categories, scale).astype(small)[test_idx]
    group_pool = None if groups is None else groups[test_idx]
    # Without groups or a sweep nothing reads a method's rows after its tables, so each method's rows are
    # dropped once written, and the interval methods (float rows, the costliest ranks) come last, when
    # the others' are gone. The report keeps the order of ``specs``.
    keep_rows = groups is not None or sweep_levels(protocol) is not None
    entries: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for spec in sorted(specs, key=lambda spec: splits[0].metrics[spec].interval_covered is not None):
        per_seed = [s.metrics[spec] for s in splits]
        entry = summary(per_seed)
        entry["full_range"] = float(np.mean([m.full_range.mean() for m in per_seed]))
        entry["coverage_by_label"] = stratified(per_seed, label_pool, list(scale.labels))
        entry["coverage_by_error"] = stratified(per_seed, parsed_error, list(range(scale.k)))
        # Continuous labels: the interval's widths (there are no label sets).
        entry["informativeness"] = informativeness(pooled(per_seed, "interval_width" if continuous else "labels_width"))
        conditional = conditional_coverage(per_seed, cat_pool, judge_error_pool, group_pool)
        # The midpoints' correlations come last: their temporaries of the pooled length set the study's
        # memory peak, so the method's rows, split midpoints included, are dropped first.
        midpoints = pooled(per_seed, "midpoint")
        if not keep_rows:
            del per_seed
            for s in splits:
                del s.metrics[spec]
            release_freed_memory()  # the rows are small arrays: freed, they stay resident until trimmed
        entry["midpoint"] = midpoint_table(midpoints, y_pool, lambda: data.parsed[test_idx], raw_row, bins_pool)
        entries[spec] = with_label_units(entry, data), conditional
    for spec in specs:
        report["methods"][spec], report["conditional_coverage"][spec] = entries[spec]

    if groups is not None:
        report["groups"] = group_report(data, specs, splits, groups)
        report["worst_group"] = {
            spec: min(
                (
                    {"group": g, "coverage": headline_entry(v["methods"][spec])["coverage"]}
                    for g, v in report["groups"].items()
                    if spec in v["methods"]
                ),
                key=lambda d: d["coverage"],
                default=None,
            )
            for spec in specs
        }
    sweep = likert_sweep(data, protocol, specs, splits)
    if sweep is not None:
        report[SWEEP_KEY] = sweep
    if skipped:
        report["skipped"] = [{"method": name, "reason": reason} for name, reason in skipped]
    return report


def group_report(
    data: ScoreData, specs: Sequence[str], splits: list[SplitResult], groups: NDArray[np.str_]
) -> dict[str, Any]:
    """Point metrics and every method's coverage, width and RSG within each group (pooled over splits)."""
    scale = data.scale
    P = judge_probabilities(data.logprobs, scale)
    out: dict[str, Any] = {}
    bins = np.round(data.labels) if data.continuous_labels else None
    for g in sorted(set(groups.tolist())):
        rows = groups == g
        point = point_metrics(
            data.parsed[rows], data.labels[rows], scale, P[rows], bins=None if bins is None else bins[rows]
        )
        entry: dict[str, Any] = {"n": int(rows.sum()), "point": point, "methods": {}}
        for spec in specs:
            per_seed = []
            for s in splits:
                in_group = groups[s.test] == g
                if not in_group.any():
                    continue
                per_seed.append(s.metrics[spec].take(in_group))
            if not per_seed:
                continue
            summary_ = summary(per_seed)
            summary_["full_range"] = float(np.mean([m.full_range.mean() for m in per_seed]))
            summary_["insufficient_calibration_seeds"] = int(
                sum(g in s.insufficient_groups.get(spec, []) for s in splits)
            )
            width = (summary_["interval"] or summary_["labels"])["width"]
            summary_["rsg"] = ranking_scoring_gap(point["pearson"], width, scale)
            entry["methods"][spec] = summary_
        out[g] = entry
    return out


def likert_sweep(data: Any, protocol: Protocol, specs: Sequence[str], headline: list[Any]) -> dict[str, Any] | None:
    """Every method's summary at every level; ``headline`` are the splits already run at ``protocol.level``."""
    levels = sweep_levels(protocol)
    if levels is None:
        return None
    out: dict[str, Any] = {"alphas": list(levels), "methods": {spec: {} for spec in specs}}
    for alpha in levels:
        splits = headline if alpha == protocol.level else run_splits(data, protocol.with_(alpha=alpha), specs)
        for spec in specs:
            per_seed = [s.metrics[spec] for s in splits]
            entry = summary(per_seed)
            entry["full_range"] = float(np.mean([m.full_range.mean() for m in per_seed]))
            out["methods"][spec][level_key(alpha)] = entry
    return out


# -- the study part of the Likert kind ------------------------------------------------------------

#: The Likert judge's point metrics a headline shows (those the report has).
HEADLINE_POINT = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae", "bias")


class LikertStudy(Study):
    """Conformal intervals and label sets over repeated calibration/test splits (:func:`evaluate_scores`)."""

    default_methods = ("naive", "lac")
    settings = frozenset({"alpha", "alphas", "methods", "splits", "seeds", "random_state", "cal_fraction",
                          "mondrian", "group", "jobs", "label_scale"})
    example_group = "group"

    def run(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        return evaluate_scores(data, protocol)

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None) -> list[Metric]:
        if body is not None:
            protocol = protocol.with_(methods=tuple(body["methods"]) or None)
        return likert_metrics(protocol, interval={m: e.get("interval") is not None
                                                  for m, e in body["methods"].items()} if body is not None else None)

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        out = counts(body)
        point = body.get("point") or {}
        for key in HEADLINE_POINT:
            if key in point:
                out[key] = point[key]
        for name, entry in (body.get("methods") or {}).items():
            head = headline_entry(entry)  # continuous labels: no label set, the interval
            summary: dict[str, Any] = {"coverage": head["coverage"], "set_width": head["width"]}
            if entry.get("interval"):
                summary["interval_coverage"] = entry["interval"]["coverage"]
                summary["interval_width"] = entry["interval"]["width"]
            summary["full_range"] = entry.get("full_range")
            out[name] = summary
        return out

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """The first method's label-set coverage and width (an interval's, for continuous labels).
        The coverage has a target, not a best value; the width reads worst (the whole scale) when
        the judge says nothing."""
        for key in flat:  # the methods keep the protocol's order
            if key.endswith("|coverage"):  # not |interval_coverage
                method = key[: -len("|coverage")]
                suffix = metric_suffix(method)
                return [PrimaryMetric(f"{method}|coverage", None, None, f"coverage_{suffix}"),
                        PrimaryMetric(f"{method}|set_width", False, 0.0, f"width_{suffix}")]
        return []

    def group_coverages(self, body: Mapping[str, Any]) -> list[tuple[str, str, Any, int, bool]]:
        mondrian = bool((body.get("protocol") or {}).get("mondrian"))
        return [(g, method, headline_entry(m)["coverage"], entry["n"], mondrian)
                for g, entry in (body.get("groups") or {}).items() for method, m in entry["methods"].items()]

    def sweep_entry(self, entry: Mapping[str, Any]) -> tuple[float, float]:
        head = headline_entry(entry)  # label sets; the interval for continuous labels
        return float(head["coverage"]), float(head["width"])
