"""Per-row coverage and width of Likert predictions, and their summaries over splits and strata.

Conventions (docs/methods.md, "Statistical conventions"): a label set's width is
``max - min`` of its labels (an empty set: 0, counted in ``empty``), an
interval's ``u - l``; means and sample standard deviations (ddof=1) are over
splits; stratified tables pool the test rows of every split.

Continuous labels (:attr:`judgecp.data.ScoreData.continuous_labels`) have
no label set: an interval method's rows keep only the interval's coverage
and width (``labels`` and ``expanded`` are ``None``), and the tables by label
or error take the labels binned to their nearest scale point.

A split keeps its rows' metrics, not its predictions: label-set widths and
sizes are small integers (stored as such, so their means are exact), which
holds ten splits of half a million test rows and five methods in about 400 MB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.stats.conformal import Prediction
from judgecp.stats.diagnostics import correlation


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


class _SetShapes:
    """Bounds, width and size of every possible label set of K <= 8 labels, looked up by the set's bits.

    A row's set is one byte (label j -> bit j, ``np.packbits``), so each
    per-row quantity is one table lookup instead of a pass over the (n, K)
    set matrix per quantity; the tables are :func:`label_bounds` and the
    same arithmetic applied to all 2**K sets, so every value is identical.
    """

    def __init__(self, k: int, minimum: int, count: np.dtype[Any]) -> None:
        every = (np.arange(1 << k)[:, None] >> np.arange(k)) & 1 == 1
        self.lower, self.upper = label_bounds(every, minimum)
        self.width = np.nan_to_num(self.upper - self.lower, nan=0.0).astype(count)
        self.size = every.sum(axis=1, dtype=count)

    @staticmethod
    def codes(sets: NDArray[np.bool_]) -> NDArray[np.uint8] | None:
        """Each row's set as one byte, or ``None`` beyond 8 labels."""
        return np.packbits(sets, axis=1, bitorder="little").ravel() if sets.shape[1] <= 8 else None


def _bounds_width_size(
    sets: NDArray[np.bool_], minimum: int, count: np.dtype[Any]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.integer[Any]], NDArray[np.integer[Any]]]:
    """Each set's smallest and largest label (NaN when empty), width (0 when empty) and size."""
    codes = _SetShapes.codes(sets)
    if codes is None:
        lo, hi = label_bounds(sets, minimum)
        return lo, hi, np.nan_to_num(hi - lo, nan=0.0).astype(count), sets.sum(axis=1, dtype=count)
    shapes = _SetShapes(sets.shape[1], minimum, count)
    return shapes.lower[codes], shapes.upper[codes], shapes.width[codes], shapes.size[codes]


@dataclass
class RowMetrics:
    """Per-test-row coverage and width of one method's predictions.

    Label-set widths and sizes are integers in ``0..K`` (a label set's width
    is a difference of labels), kept in the smallest integer type that holds
    them; means of them are computed in float64 as before.
    """

    interval_covered: NDArray[np.bool_] | None
    interval_width: NDArray[np.float64] | None
    labels_covered: NDArray[np.bool_] | None  # None: continuous labels (no label set holds them)
    labels_width: NDArray[np.integer[Any]] | None
    labels_size: NDArray[np.integer[Any]] | None
    expanded_covered: NDArray[np.bool_] | None
    expanded_width: NDArray[np.integer[Any]] | None
    full_range: NDArray[np.bool_]
    midpoint: NDArray[np.floating[Any]]  # float32 for label sets (exact), float64 for intervals

    @classmethod
    def of(cls, pred: Prediction, y: NDArray[np.float64], *, continuous: bool = False) -> RowMetrics:
        """The rows' metrics; ``continuous`` labels keep the interval's only (an interval method's)."""
        if continuous:
            if not pred.has_interval:
                raise ValueError("continuous labels need an interval prediction")
            return cls((y >= pred.lower) & (y <= pred.upper), np.maximum(pred.upper - pred.lower, 0.0),
                       None, None, None, None, None, pred.full_range, (pred.lower + pred.upper) / 2)
        scale = pred.scale
        count = np.min_scalar_type(scale.k)
        idx = scale.index(np.round(y))
        rows = np.arange(y.size)
        covered = pred.sets[rows, idx]
        lo, hi, width, size = _bounds_width_size(pred.sets, scale.minimum, count)
        if pred.has_interval:
            exp = pred.expanded_sets()
            assert exp is not None
            return cls(
                (y >= pred.lower) & (y <= pred.upper),
                np.maximum(pred.upper - pred.lower, 0.0),
                covered,
                width,
                size,
                exp[rows, idx],
                _bounds_width_size(exp, scale.minimum, count)[2],
                pred.full_range,
                (pred.lower + pred.upper) / 2,
            )
        # A label set's midpoint is a multiple of 1/2 (or NaN): float32 holds it exactly.
        mid = np.where(np.isnan(lo), np.nan, (lo + hi) / 2).astype(np.float32)
        return cls(None, None, covered, width, size, None, None, pred.full_range, mid)

    def take(self, rows: NDArray[Any]) -> RowMetrics:
        """The metrics of some rows (a boolean mask or indices)."""
        parts: dict[str, Any] = {k: None if v is None else v[rows] for k, v in vars(self).items()}
        return RowMetrics(**parts)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def summary(per_seed: list[RowMetrics], *, with_size: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if per_seed[0].interval_covered is not None:
        c = mean_std([m.interval_covered.mean() for m in per_seed])  # type: ignore[union-attr]
        w = mean_std([m.interval_width.mean() for m in per_seed])  # type: ignore[union-attr]
        out["interval"] = {"coverage": c[0], "coverage_std": c[1], "width": w[0], "width_std": w[1]}
        if per_seed[0].labels_covered is None:  # continuous labels: the interval is the prediction
            out.update(labels=None, expanded=None)
            return out
        c = mean_std([m.expanded_covered.mean() for m in per_seed])  # type: ignore[union-attr]
        w = mean_std([m.expanded_width.mean() for m in per_seed])  # type: ignore[union-attr]
        expanded = {"coverage": c[0], "coverage_std": c[1], "width": w[0], "width_std": w[1]}
    else:
        out["interval"] = None
        expanded = None
    c = mean_std([m.labels_covered.mean() for m in per_seed])  # type: ignore[union-attr]
    w = mean_std([m.labels_width.mean() for m in per_seed])  # type: ignore[union-attr]
    labels: dict[str, Any] = {"coverage": c[0], "coverage_std": c[1], "width": w[0], "width_std": w[1]}
    if with_size:
        s = mean_std([m.labels_size.mean() for m in per_seed])  # type: ignore[union-attr]
        labels.update(size=s[0], size_std=s[1],
                      empty=float(np.mean([(m.labels_size == 0).mean() for m in per_seed])))  # type: ignore[union-attr]
    out["labels"] = labels
    out["expanded"] = expanded
    return out


def headline_entry(method: Mapping[str, Any]) -> dict[str, Any]:
    """A Likert method entry's headline summary (coverage, width): its label set's, or, for continuous
    labels (which no label set holds), its interval's."""
    entry: dict[str, Any] = method.get("labels") or method["interval"]
    return entry


def pooled(rows: list[RowMetrics], attr: str) -> NDArray[Any]:
    return np.concatenate([getattr(r, attr) for r in rows])


def stratum_means(
    strata: NDArray[Any], values: Sequence[Any] | None, columns: dict[str, NDArray[Any]]
) -> dict[Any, dict[str, float]]:
    """Row count and the mean of each column within each value of ``strata`` (absent values left out).

    ``values=None``: every value present, sorted. Boolean and integer columns
    are summed exactly: for integer strata every stratum at once with
    ``bincount`` (float64 sums of integers are exact), for other strata under
    each stratum's mask. Float columns are averaged over the stratum's rows as
    ``mean`` does, so every number is what a per-stratum ``col[mask].mean()`` gives.
    """
    counted = _CountedStrata.of(strata, values)
    if values is None:
        values = counted.present() if counted is not None else np.unique(strata).tolist()
    out: dict[Any, dict[str, float]] = {}
    for v in values:
        entry = counted.means(v, columns, strata) if counted is not None else _masked_means(strata == v, columns)
        if entry is not None:
            out[v] = entry
    return out


def _masked_means(mask: NDArray[np.bool_], columns: dict[str, NDArray[Any]]) -> dict[str, float] | None:
    """One stratum's row count and column means, its rows given by ``mask``; ``None`` when it has no rows."""
    n = int(np.count_nonzero(mask))
    if not n:
        return None
    entry = {"n": float(n)}
    for name, col in columns.items():
        if col.dtype == bool:
            entry[name] = np.count_nonzero(col & mask) / n
        elif col.dtype.kind in "iu":
            entry[name] = float(np.sum(col, where=mask, dtype=np.int64)) / n
        else:
            entry[name] = float(col[mask].mean())
    return entry


class _CountedStrata:
    """Integer strata over a short range (labels, errors): codes from 0, each code's count, column sums."""

    def __init__(self, strata: NDArray[Any], lo: int) -> None:
        self.lo = lo
        self.codes = strata.astype(np.intp)
        self.codes -= lo
        self.counts = np.bincount(self.codes)
        self.sums: dict[str, NDArray[Any]] = {}  # float64 sums per code (bincount with weights)

    @classmethod
    def of(cls, strata: NDArray[Any], values: Sequence[Any] | None) -> _CountedStrata | None:
        if strata.dtype.kind not in "iu" or not strata.size:
            return None
        if values is not None and not all(isinstance(v, (int, np.integer)) for v in values):
            return None
        lo, hi = int(strata.min()), int(strata.max())
        return cls(strata, lo) if hi - lo <= min(4 * strata.size, 1 << 20) else None

    def present(self) -> list[Any]:
        """The values that occur, ascending."""
        return [int(c) + self.lo for c in np.flatnonzero(self.counts)]

    def means(self, v: Any, columns: dict[str, NDArray[Any]], strata: NDArray[Any]) -> dict[str, float] | None:
        """Stratum ``v``'s row count and column means: boolean and integer columns from one ``bincount`` each."""
        n = int(self.counts[v - self.lo]) if self.lo <= v < self.lo + self.counts.size else 0
        if not n:
            return None
        entry = {"n": float(n)}
        for name, col in columns.items():
            if col.dtype.kind in "biu":
                if name not in self.sums:
                    self.sums[name] = np.bincount(self.codes, weights=col, minlength=self.counts.size)
                entry[name] = float(self.sums[name][v - self.lo]) / n
            else:
                entry[name] = float(col[strata == v].mean())
        return entry


def stratified(rows: list[RowMetrics], strata: NDArray[Any], values: Sequence[Any]) -> dict[str, Any]:
    """Coverage and width within each stratum, pooled over seeds (continuous labels: the interval's only)."""
    kinds = ("labels", "interval", "expanded") if rows[0].interval_covered is not None else ("labels",)
    if rows[0].labels_covered is None:
        kinds = ("interval",)
    columns = {f"{k}_{m}": pooled(rows, f"{k}_{m}") for k in kinds for m in ("covered", "width")}
    out: dict[str, Any] = {}
    for v, means in stratum_means(strata, values, columns).items():
        entry: dict[str, Any] = {"n": means["n"] / len(rows)}
        for k in kinds:
            entry[k] = {"coverage": means[f"{k}_covered"], "width": means[f"{k}_width"]}
        out[str(v)] = entry
    return out


def agreement(est: NDArray[np.float64], y: NDArray[np.float64], bins: NDArray[Any] | None = None) -> dict[str, Any]:
    """Pearson, Spearman, MAE and exact accuracy of an estimate of the human label.

    Exact accuracy compares ``round(est)`` with the label, or with ``bins``
    (continuous labels: each label's nearest scale point) when given.
    """
    return {
        "pearson": correlation("pearson", est, y),
        "spearman": correlation("spearman", est, y),
        "mae": float(np.mean(np.abs(est - y))) if y.size else None,
        "exact_accuracy": float(np.mean(np.round(est) == (y if bins is None else bins))) if y.size else None,
    }


def midpoint_table(
    midpoints: NDArray[np.floating[Any]],
    y: NDArray[np.float64],
    raw: Callable[[], NDArray[Any]],
    raw_row: dict[str, Any] | None = None,
    bins: NDArray[Any] | None = None,
) -> dict[str, Any]:
    """The judge's raw score and a method's set or interval midpoints (pooled test rows) as estimates of the label.

    Rows without a midpoint (empty sets) are left out of both rows of the
    table. ``raw_row``, the raw score's row over every pooled row, saves
    recomputing it for each method when no row is left out; ``raw`` gives the
    raw scores of the pooled rows when they are needed. With no row left
    out, no pooled column is copied. ``bins``: continuous labels' nearest
    scale points, for exact accuracy (:func:`agreement`).
    """
    mid = midpoints.astype(np.float64, copy=False)
    ok = ~np.isnan(mid)
    if ok.all():
        if raw_row is None:
            raw_row = agreement(raw().astype(np.float64), y, bins)
        return {"raw": raw_row, "midpoint": agreement(mid, y, bins)}
    kept_bins = None if bins is None else bins[ok]
    raw_row = agreement(raw()[ok].astype(np.float64), y[ok], kept_bins)
    return {"raw": raw_row, "midpoint": agreement(mid[ok], y[ok], kept_bins)}
