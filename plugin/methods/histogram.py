"""Conformal histogram regression (CHR) over the label bins."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from judgecp.conformal import ConformalMethod, FloatArray, Prediction
from judgecp.features import RecalibratedJudge
from judgecp.scale import LikertScale

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
        scale: LikertScale | None = None,
        fit_fraction: float = 0.5,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(alpha, scale=scale, fit_fraction=fit_fraction, random_state=random_state)
        self.n_levels = n_levels

    @property
    def levels(self) -> FloatArray:
        return np.linspace(0.0, 1.0, self.n_levels + 1)[1:]

    def _fit(self, X: FloatArray, y: FloatArray) -> None:
        self.histogram_ = RecalibratedJudge(self.scale).fit(X, y)

    def _chain(self, X: FloatArray) -> NDArray[np.int64]:
        P = self.histogram_.predict_proba(X)
        return nested_shortest_ranges(P, self.levels, 1.0 - float(self.alpha))

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        a, b = contiguous_ranges(self.scale.k)
        chain = self._chain(X)
        label = self.scale.index(np.round(y))[:, None]
        inside = (a[chain] <= label) & (b[chain] >= label)
        first = np.argmax(inside, axis=1)  # nested: the first level that covers
        self.threshold_ = self._quantile(self.levels[first])

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        n = X.shape[0]
        if not np.isfinite(self.threshold_):
            return Prediction.from_interval(np.full(n, -np.inf), np.full(n, np.inf), self.scale)
        a, b = contiguous_ranges(self.scale.k)
        j = int(np.searchsorted(self.levels, self.threshold_ - MASS_TOLERANCE))
        ranges = self._chain(X)[:, j]
        lower = a[ranges] + self.scale.minimum - 0.5
        upper = b[ranges] + self.scale.minimum + 0.5
        return Prediction.from_interval(lower, upper, self.scale)
