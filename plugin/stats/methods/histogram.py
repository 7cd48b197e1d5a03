"""Conformal histogram regression (CHR) over the label bins."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from judgecp.stats.conformal import ConformalMethod, FloatArray, MethodOptions, Prediction
from judgecp.stats.features import RecalibratedJudge

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: Tolerance when asking whether a range's probability mass reaches a level.
MASS_TOLERANCE = 1e-12


def contiguous_ranges(k: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """All label ranges ``[a, b]`` (0-based, inclusive) of a K-label scale."""
    a, b = np.triu_indices(k)
    return a.astype(np.int64), b.astype(np.int64)


def nested_shortest_ranges(P: FloatArray, levels: FloatArray, start_level: float) -> NDArray[np.int64]:
    """CHR's nested sequence of shortest label ranges, one per level.

    For the start level (1 - alpha) each row takes the shortest contiguous
    range whose mass reaches it (ties: the larger mass). Going up, each level
    takes the shortest range that *contains* the previous one and reaches the
    level; going down, the shortest range *inside* the previous one. The
    ranges are therefore nested in the level. Returns ``(n, len(levels))``
    indices into :func:`contiguous_ranges`.
    """
    n, k = P.shape
    a, b = contiguous_ranges(k)
    cdf = np.hstack([np.zeros((n, 1)), np.cumsum(P, axis=1)])
    mass = cdf[:, b + 1] - cdf[:, a]
    mass[:, (a == 0) & (b == k - 1)] = 1.0  # the full range always reaches every level
    length = (b - a).astype(np.float64)
    # Lexicographic preference: shorter first, then larger mass.
    preference = length[None, :] * 4.0 - np.clip(mass, 0.0, 1.0)

    def pick(level: float, allowed: NDArray[np.bool_]) -> NDArray[np.int64]:
        ok = allowed & (mass >= level - MASS_TOLERANCE)
        picked: NDArray[np.int64] = np.argmin(np.where(ok, preference, np.inf), axis=1)
        return picked

    chain = np.empty((n, levels.size), dtype=np.int64)
    start = int(np.searchsorted(levels, start_level))
    start = min(start, levels.size - 1)
    everything = np.ones_like(mass, dtype=bool)
    chain[:, start] = pick(float(levels[start]), everything)
    for j in range(start + 1, levels.size):
        prev = chain[:, j - 1]
        contains = (a[None, :] <= a[prev][:, None]) & (b[None, :] >= b[prev][:, None])
        chain[:, j] = pick(float(levels[j]), contains)
    for j in range(start - 1, -1, -1):
        prev = chain[:, j + 1]
        inside = (a[None, :] >= a[prev][:, None]) & (b[None, :] <= b[prev][:, None])
        chain[:, j] = pick(float(levels[j]), inside)
    return chain


def _range_masses(P: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Every contiguous range's mass ``(n, R)`` and CHR's preference (shorter, then heavier), as in
    :func:`nested_shortest_ranges`."""
    n, k = P.shape
    a, b = contiguous_ranges(k)
    cdf = np.hstack([np.zeros((n, 1)), np.cumsum(P, axis=1)])
    mass = cdf[:, b + 1] - cdf[:, a]
    mass[:, (a == 0) & (b == k - 1)] = 1.0
    preference = (b - a).astype(np.float64)[None, :] * 4.0 - np.clip(mass, 0.0, 1.0)
    return mass, preference


def nested_range_segments(
    P: FloatArray, levels: FloatArray, start_level: float
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The chain of :func:`nested_shortest_ranges` as its few segments, without a pass per level.

    Going up, the range picked at a level is kept while its mass reaches the
    level (every other range containing it is longer, so less preferred);
    going down it is kept until a range strictly inside it reaches the level
    (every such range is shorter, so more preferred). So each row's chain
    changes at most ``K`` times each way, and only where a range's mass
    crosses a level: those crossings are found by binary search on the
    levels, and the new range is picked there exactly as the per-level pass
    picks it (same comparisons, same ties). Returns ``(lo, ranges)``, both
    ``(n, S)``: row ``i`` holds range ``ranges[i, s]`` from level index
    ``lo[i, s]`` up to the next segment's start; ``lo`` ascends along each row,
    starts at 0 and is padded with ``len(levels)``. The chain at level ``j`` is
    :func:`chain_at`; ``tests/test_fast_paths.py`` checks it equals the
    per-level chain.
    """
    n, k = P.shape
    L = levels.size
    a, b = contiguous_ranges(k)
    mass, preference = _range_masses(P)
    # The level each comparison uses, as nested_shortest_ranges computes it: mass >= level - tol.
    thr = np.asarray([float(v) - MASS_TOLERANCE for v in levels])
    contains = (a[None, :] <= a[:, None]) & (b[None, :] >= b[:, None])  # [prev, r]: r contains prev
    inside = (a[None, :] >= a[:, None]) & (b[None, :] <= b[:, None])  # [prev, r]: r inside prev
    strictly_inside = inside & ~np.eye(a.size, dtype=bool)
    rows = np.arange(n)

    def pick(idx: NDArray[np.int64], j: NDArray[np.int64], allowed: NDArray[np.bool_]) -> NDArray[np.int64]:
        ok = allowed & (mass[idx] >= thr[j][:, None])
        picked: NDArray[np.int64] = np.argmin(np.where(ok, preference[idx], np.inf), axis=1)
        return picked

    start = min(int(np.searchsorted(levels, start_level)), L - 1)
    first = pick(rows, np.full(n, start), np.ones((n, a.size), bool))
    # Up: (level index where a new range starts, the range), per step; L where a row has no more.
    ups: list[tuple[NDArray[np.int64], NDArray[np.int64]]] = []
    cur, idx = first.copy(), rows
    while idx.size:
        nxt = np.searchsorted(thr, mass[idx, cur], side="right")
        go = nxt < L
        idx, cur, nxt = idx[go], cur[go], nxt[go]
        if not idx.size:
            break
        cur = pick(idx, nxt, contains[cur])
        lo, rng = np.full(n, L, np.int64), np.zeros(n, np.int64)
        lo[idx], rng[idx] = nxt, cur
        ups.append((lo, rng))
    # Down: the level index where a range strictly inside becomes reachable (the new range holds there
    # and below, down to the next such index); -1 where a row has no more.
    downs: list[tuple[NDArray[np.int64], NDArray[np.int64]]] = []
    cur, idx = first.copy(), rows
    while idx.size:
        sub = strictly_inside[cur]
        best = np.where(sub, mass[idx], -np.inf).max(axis=1)
        at = np.searchsorted(thr, best, side="right") - 1
        go = at >= 0
        idx, cur, at = idx[go], cur[go], at[go]
        if not idx.size:
            break
        cur = pick(idx, at, inside[cur])
        hi, rng = np.full(n, -1, np.int64), np.zeros(n, np.int64)
        hi[idx], rng[idx] = at, cur
        downs.append((hi, rng))
    # Segments, ascending: the deepest down step first (from 0), ..., the start range, the up steps.
    seg_lo: list[NDArray[np.int64]] = []
    seg_rng: list[NDArray[np.int64]] = []
    below = np.full(n, -1, np.int64)  # the top index of the next segment down: this one starts above it
    for hi, rng in reversed(downs):
        has = hi >= 0
        seg_lo.append(np.where(has, below + 1, L))
        seg_rng.append(rng)
        below = np.where(has, hi, below)
    seg_lo.append(below + 1)
    seg_rng.append(first)
    for lo, rng in ups:
        seg_lo.append(lo)
        seg_rng.append(rng)
    lo_all, rng_all = np.column_stack(seg_lo), np.column_stack(seg_rng)
    order = np.argsort(lo_all, axis=1, kind="stable")
    return np.take_along_axis(lo_all, order, axis=1), np.take_along_axis(rng_all, order, axis=1)


def chain_at(lo: NDArray[np.int64], ranges: NDArray[np.int64], j: int) -> NDArray[np.int64]:
    """The range of every row's chain at level index ``j`` (from :func:`nested_range_segments`)."""
    last = (lo <= j).sum(axis=1) - 1
    picked: NDArray[np.int64] = ranges[np.arange(lo.shape[0]), last]
    return picked


def first_covering(lo: NDArray[np.int64], ranges: NDArray[np.int64], k: int, n_levels: int) -> NDArray[np.int64]:
    """``(n, k)``: the first level index whose range holds each label (``n_levels`` if none does)."""
    a, b = contiguous_ranges(k)
    real = lo < n_levels
    out = np.full((lo.shape[0], k), n_levels, np.int64)
    for t in range(k):
        holds = real & (a[ranges] <= t) & (b[ranges] >= t)
        any_ = holds.any(axis=1)
        out[:, t] = np.where(any_, lo[np.arange(lo.shape[0]), np.argmax(holds, axis=1)], n_levels)
    return out


class CHR(ConformalMethod):
    """Conformal histogram regression, conformalized on held-out data.

    A conditional histogram P(y in bin | x) over the label bins is fitted on a
    ``fit_fraction`` part of the calibration split (multinomial logistic
    regression on the judge features). For every level tau on a grid, CHR
    takes the shortest range of bins holding mass tau, nested across levels
    (:func:`nested_shortest_ranges`); a point's score is the smallest level
    whose range contains its label, and the threshold is the conformal
    quantile of the held-out scores. Bin ``k`` spans ``[k - 0.5, k + 0.5]``,
    so the continuous interval of a label range ``[a, b]`` is
    ``[a - 0.5, b + 0.5]`` clipped to the scale.
    """

    name = "chr"
    output = "interval"
    fits_model = True
    reference = "Sesia & Romano (2021), NeurIPS"

    def __init__(
        self,
        alpha: float = 0.1,
        *,
        n_levels: int = 1000,
        **options: Unpack[MethodOptions],
    ) -> None:
        super().__init__(alpha, **options)
        self.n_levels = n_levels

    @property
    def levels(self) -> FloatArray:
        return np.linspace(0.0, 1.0, self.n_levels + 1)[1:]

    def _fit(self, X: FloatArray, y: FloatArray) -> None:
        self.histogram_ = RecalibratedJudge(self.scale).fit(X, y)

    def _chain(self, X: FloatArray) -> NDArray[np.int64]:
        """The nested ranges at every level ``(n, n_levels)`` (the reference pass; see :meth:`segments`)."""
        P = self.histogram_.predict_proba(X)
        return nested_shortest_ranges(P, self.levels, 1.0 - float(self.alpha))

    def segments(self, X: FloatArray) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The same chain as :meth:`_chain`, as segments (:func:`nested_range_segments`)."""
        P = self.histogram_.predict_proba(X)
        return nested_range_segments(P, self.levels, 1.0 - float(self.alpha))

    def first_levels(self, X: FloatArray) -> NDArray[np.int64]:
        """``(n, K)``: the index of the first level whose range holds each label (``n_levels``: none)."""
        return first_covering(*self.segments(X), self.scale.k, self.levels.size)

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        label = self.scale.index(np.round(y))
        first = self.first_levels(X)[np.arange(label.size), label]
        # A label no level's range holds scores as the per-level pass did (argmax of all-False: 0).
        first = np.where(first >= self.levels.size, 0, first)
        self.threshold_ = self._quantile(self.levels[first])

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        n = X.shape[0]
        if not np.isfinite(self.threshold_):
            return Prediction.from_interval(np.full(n, -np.inf), np.full(n, np.inf), self.scale)
        a, b = contiguous_ranges(self.scale.k)
        j = int(np.searchsorted(self.levels, self.threshold_ - MASS_TOLERANCE))
        ranges = chain_at(*self.segments(X), j)
        lower = a[ranges] + self.scale.minimum - 0.5
        upper = b[ranges] + self.scale.minimum + 0.5
        return Prediction.from_interval(lower, upper, self.scale)

    complexity = ("a multinomial fit on the fit part, O(n K^2) ranges", "O(n K^2)")
