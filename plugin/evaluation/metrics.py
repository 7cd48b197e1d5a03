"""Per-row coverage and width of Likert predictions, and their summaries over splits and strata.

Conventions (README, "Statistical conventions"): a label set's width is
``max - min`` of its labels (an empty set: 0, counted in ``empty``), an
interval's ``u - l``; means and sample standard deviations (ddof=1) are over
splits; stratified tables pool the test rows of every split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.conformal import Prediction
from judgecp.diagnostics import point_metrics


def informativeness(widths: NDArray[np.float64]) -> dict[str, float]:
    """Fractions of label sets that are decisive (width <= 1), moderate (1-3] or uninformative (> 3).

    The bins of the seed paper's appendix F.6, in the scale's units.
    """
    return {
        "decisive": float(np.mean(widths <= 1)),
        "moderate": float(np.mean((widths > 1) & (widths <= 3))),
        "uninformative": float(np.mean(widths > 3)),
    }


def label_bounds(sets: NDArray[np.bool_], minimum: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Smallest and largest label of each set (NaN for an empty set)."""
    any_ = sets.any(axis=1)
    first = np.argmax(sets, axis=1).astype(np.float64) + minimum
    last = (sets.shape[1] - 1 - np.argmax(sets[:, ::-1], axis=1)).astype(np.float64) + minimum
    return np.where(any_, first, np.nan), np.where(any_, last, np.nan)


@dataclass
class RowMetrics:
    """Per-test-row coverage and width of one method's predictions."""

    interval_covered: NDArray[np.bool_] | None
    interval_width: NDArray[np.float64] | None
    labels_covered: NDArray[np.bool_]
    labels_width: NDArray[np.float64]
    labels_size: NDArray[np.int64]
    expanded_covered: NDArray[np.bool_] | None
    expanded_width: NDArray[np.float64] | None
    full_range: NDArray[np.bool_]
    midpoint: NDArray[np.float64]

    @classmethod
    def of(cls, pred: Prediction, y: NDArray[np.float64]) -> RowMetrics:
        scale = pred.scale
        idx = scale.index(np.round(y))
        rows = np.arange(y.size)
        covered = pred.sets[rows, idx]
        lo, hi = label_bounds(pred.sets, scale.minimum)
        width = np.nan_to_num(hi - lo, nan=0.0)
        if pred.has_interval:
            exp = pred.expanded_sets()
            assert exp is not None
            elo, ehi = label_bounds(exp, scale.minimum)
            return cls(
                (y >= pred.lower) & (y <= pred.upper),
                np.maximum(pred.upper - pred.lower, 0.0),
                covered,
                width,
                pred.sets.sum(axis=1),
                exp[rows, idx],
                np.nan_to_num(ehi - elo, nan=0.0),
                pred.full_range,
                (pred.lower + pred.upper) / 2,
            )
        mid = np.where(np.isnan(lo), np.nan, (lo + hi) / 2)
        return cls(None, None, covered, width, pred.sets.sum(axis=1), None, None, pred.full_range, mid)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def summary(per_seed: list[RowMetrics], *, with_size: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if per_seed[0].interval_covered is not None:
        c = mean_std([m.interval_covered.mean() for m in per_seed])  # type: ignore[union-attr]
        w = mean_std([m.interval_width.mean() for m in per_seed])  # type: ignore[union-attr]
        out["interval"] = {"coverage": c[0], "coverage_std": c[1], "width": w[0], "width_std": w[1]}
        c = mean_std([m.expanded_covered.mean() for m in per_seed])  # type: ignore[union-attr]
        w = mean_std([m.expanded_width.mean() for m in per_seed])  # type: ignore[union-attr]
        expanded = {"coverage": c[0], "coverage_std": c[1], "width": w[0], "width_std": w[1]}
    else:
        out["interval"] = None
        expanded = None
    c = mean_std([m.labels_covered.mean() for m in per_seed])
    w = mean_std([m.labels_width.mean() for m in per_seed])
    labels: dict[str, Any] = {"coverage": c[0], "coverage_std": c[1], "width": w[0], "width_std": w[1]}
    if with_size:
        s = mean_std([m.labels_size.mean() for m in per_seed])
        labels.update(size=s[0], size_std=s[1], empty=float(np.mean([(m.labels_size == 0).mean() for m in per_seed])))
    out["labels"] = labels
    out["expanded"] = expanded
    return out


def pooled(rows: list[RowMetrics], attr: str) -> NDArray[Any]:
    return np.concatenate([getattr(r, attr) for r in rows])


def stratified(rows: list[RowMetrics], strata: NDArray[Any], values: Sequence[Any]) -> dict[str, Any]:
    """Coverage and width within each stratum, pooled over seeds."""
    out: dict[str, Any] = {}
    has_interval = rows[0].interval_covered is not None
    lab_cov, lab_w = pooled(rows, "labels_covered"), pooled(rows, "labels_width")
    if has_interval:
        int_cov, int_w = pooled(rows, "interval_covered"), pooled(rows, "interval_width")
        exp_cov, exp_w = pooled(rows, "expanded_covered"), pooled(rows, "expanded_width")
    for v in values:
        m = strata == v
        if not m.any():
            continue
        entry: dict[str, Any] = {
            "n": float(m.sum() / len(rows)),
            "labels": {"coverage": float(lab_cov[m].mean()), "width": float(lab_w[m].mean())},
        }
        if has_interval:
            entry["interval"] = {"coverage": float(int_cov[m].mean()), "width": float(int_w[m].mean())}
            entry["expanded"] = {"coverage": float(exp_cov[m].mean()), "width": float(exp_w[m].mean())}
        out[str(v)] = entry
    return out


def midpoint_table(rows: list[RowMetrics], y: NDArray[np.float64], raw: NDArray[np.float64], scale: Any) -> dict[str, Any]:
    mid = pooled(rows, "midpoint")
    ok = ~np.isnan(mid)
    def stats(est: NDArray[np.float64]) -> dict[str, Any]:
        pm = point_metrics(est[ok], y[ok], scale)
        return {k: pm[k] for k in ("pearson", "spearman", "mae")} | {
            "exact_accuracy": float(np.mean(np.round(est[ok]) == y[ok])) if ok.any() else None
        }
    return {"raw": stats(raw), "midpoint": stats(mid)}
