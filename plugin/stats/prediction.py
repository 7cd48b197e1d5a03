"""What a conformal method predicts for a batch of items: :class:`Prediction` (intervals, label sets, flags).

Conventions: :mod:`judgecp.stats.conformal` (a continuous interval is clipped to the
scale; its label set is ``[ceil(l), floor(u)]``; the full range is flagged).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.base.scale import LikertScale

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


def _as_bool(a: ArrayLike) -> BoolArray:
    return np.asarray(a, dtype=bool)


@dataclass(frozen=True)
class Prediction:
    """Predictions of a conformal method for ``n`` test points.

    Attributes
    ----------
    lower, upper:
        Continuous interval, clipped to the scale; NaN for set-valued methods
        (where no continuous interval is defined).
    sets:
        ``(n, K)`` boolean label sets; column ``j`` is label ``scale.minimum + j``.
    full_range:
        Rows whose prediction is the full range because the calibration set
        was too small for the level (or the row's Mondrian group was unseen).
    """

    lower: FloatArray
    upper: FloatArray
    sets: BoolArray
    full_range: BoolArray
    scale: LikertScale

    @classmethod
    def from_interval(
        cls,
        lower: ArrayLike,
        upper: ArrayLike,
        scale: LikertScale,
        full_range: ArrayLike | None = None,
    ) -> Prediction:
        lo = np.asarray(lower, dtype=np.float64)
        hi = np.asarray(upper, dtype=np.float64)
        full = np.zeros(lo.shape, bool) if full_range is None else _as_bool(full_range)
        full = full | ~np.isfinite(lo) | ~np.isfinite(hi)
        lo = np.where(full, scale.minimum, np.clip(lo, scale.minimum, scale.maximum))
        hi = np.where(full, scale.maximum, np.clip(hi, scale.minimum, scale.maximum))
        labels = scale.labels.astype(np.float64)[None, :]
        sets = (labels >= lo[:, None]) & (labels <= hi[:, None])
        return cls(lo, hi, sets, full, scale)

    @classmethod
    def from_sets(
        cls, sets: ArrayLike, scale: LikertScale, full_range: ArrayLike | None = None
    ) -> Prediction:
        s = _as_bool(sets)
        if s.ndim != 2 or s.shape[1] != scale.k:
            raise ValueError(f"label sets must have shape (n, {scale.k}), got {s.shape}")
        full = np.zeros(s.shape[0], bool) if full_range is None else _as_bool(full_range)
        s = s | full[:, None]
        nan = np.full(s.shape[0], np.nan)
        return cls(nan, nan.copy(), s, full, scale)

    @property
    def n(self) -> int:
        return int(self.sets.shape[0])

    @property
    def has_interval(self) -> bool:
        return bool(np.isfinite(self.lower).all()) if self.n else True

    def expanded_sets(self) -> BoolArray | None:
        """Label sets of the expanded variant ``[floor(l), ceil(u)]`` (comparison only)."""
        if not self.has_interval:
            return None
        labels = self.scale.labels.astype(np.float64)[None, :]
        return (labels >= np.floor(self.lower)[:, None]) & (labels <= np.ceil(self.upper)[:, None])

    def covers(self, labels: ArrayLike) -> BoolArray:
        """Whether each row's prediction holds its label.

        An interval prediction: ``l <= y <= u`` (for integer labels exactly
        the label set's coverage; for continuous labels the only one); a set
        prediction: the label set holds the label (integer labels).
        """
        y = np.asarray(labels, dtype=np.float64)
        if self.has_interval:
            with np.errstate(invalid="ignore"):
                inside_interval: BoolArray = (self.lower <= y) & (y <= self.upper)
            return inside_interval
        idx = self.scale.index(np.round(y))
        inside = (idx >= 0) & (idx < self.scale.k)
        out: BoolArray = np.zeros(y.shape, bool)
        out[inside] = self.sets[np.flatnonzero(inside), idx[inside]]
        return out

    def label_sets(self) -> list[list[int]]:
        """Each row's label set as a list of labels."""
        labels = self.scale.labels.tolist()
        return [[labels[j] for j in np.flatnonzero(row)] for row in self.sets]

    def take(self, index: ArrayLike) -> Prediction:
        idx = np.asarray(index)
        return Prediction(
            self.lower[idx], self.upper[idx], self.sets[idx], self.full_range[idx], self.scale
        )

    @staticmethod
    def concatenate(parts: list[Prediction], order: NDArray[np.int64]) -> Prediction:
        """Stack predictions of disjoint row subsets back into row order ``order``."""
        scale = parts[0].scale
        lower = np.concatenate([p.lower for p in parts])
        upper = np.concatenate([p.upper for p in parts])
        sets = np.concatenate([p.sets for p in parts])
        full = np.concatenate([p.full_range for p in parts])
        inv = np.empty_like(order)
        inv[order] = np.arange(order.size)
        return Prediction(lower[inv], upper[inv], sets[inv], full[inv], scale)
