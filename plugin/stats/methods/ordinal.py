"""Contiguous label sets for ordinal labels: ordinal APS and the equal-tailed CDF set."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from judgecp.stats.conformal import FloatArray, Prediction
from judgecp.stats.methods._probability import ProbabilityMethod, ProbabilityOptions
from judgecp.stats.methods.sets import sets_at, true_label_scores

if TYPE_CHECKING:
    from typing_extensions import Unpack


def greedy_contiguous_mass(P: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Grow a contiguous label range from the mode, one neighbour at a time.

    At each step the neighbour (left or right of the current range) with the
    larger probability joins (ties go left). Returns, for every label, the
    probability mass of the range just after it joined (``after``) and just
    before (``before``). ``after`` increases along the joining order, so
    ``{k : after_k <= t}`` is contiguous for every ``t``.
    """
    n, k = P.shape
    # Rows are read and written through flat indices (row * K + label): the same numbers as
    # P[rows, label], without two-dimensional fancy indexing's cost.
    flat = P.ravel()
    base = np.arange(n) * k
    after = np.zeros((n, k))
    before = np.zeros((n, k))
    after_flat, before_flat = after.ravel(), before.ravel()  # views: C order
    lo = np.argmax(P, axis=1)
    hi = lo.copy()
    mass = flat[base + lo]
    after_flat[base + lo] = mass
    for _ in range(k - 1):
        left = np.where(lo > 0, flat[base + np.maximum(lo - 1, 0)], -1.0)
        right = np.where(hi < k - 1, flat[base + np.minimum(hi + 1, k - 1)], -1.0)
        go_left = left >= right
        lo = np.where(go_left, lo - 1, lo)
        hi = np.where(go_left, hi, hi + 1)
        joined = base + np.where(go_left, lo, hi)
        before_flat[joined] = mass
        mass = mass + flat[joined]
        after_flat[joined] = mass
    return after, before


class OrdinalAPS(ProbabilityMethod):
    """Ordinal APS: contiguous sets grown from the mode until the mass reaches the threshold.

    The score of a label is the mass of the smallest grown range that
    contains it (:func:`greedy_contiguous_mass`); ``randomized=True`` gives
    ``before + (1 - u) p_k`` for exact coverage. The deterministic version
    (default, as in Lu et al.) is conservative when the softmax is peaked.
    """

    name = "ordinal_aps"
    output = "set"
    reference = "Lu, Angelopoulos & Pomerantz (2022), AAAI"

    def __init__(self, alpha: float = 0.1, *, randomized: bool = False, **options: Unpack[ProbabilityOptions]) -> None:
        super().__init__(alpha, **options)
        self.randomized = randomized

    def _uniforms(self, n: int, rng: np.random.Generator) -> FloatArray | None:
        return rng.uniform(size=(n, 1)) if self.randomized else None

    def _label_scores(self, P: FloatArray, u: FloatArray | None) -> FloatArray:
        after, before = greedy_contiguous_mass(P)
        if u is None:
            return after
        randomized: FloatArray = after - u * (after - before)
        return randomized

    def _conformalize_draws(self, rng: np.random.Generator, n: int) -> FloatArray | None:
        return self._uniforms(n, rng)

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        scores = self._label_scores(self._proba(X), self._conformalize_draws(self._rng_, X.shape[0]))
        self.scores_ = true_label_scores(scores, self.scale.index(y))
        self.threshold_ = self._quantile(self.scores_)

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        scores = self._label_scores(self._proba(X), self._uniforms(X.shape[0], rng))
        return Prediction.from_sets(sets_at(scores, self.threshold_), self.scale)

    complexity = ("O(n K^2)", "O(n K)")


class OrdinalCDFSet(ProbabilityMethod):
    """Equal-tailed ordinal set from the label CDF (distributional conformal prediction).

    Score of label k: ``max(P(Y < k), P(Y > k))`` under the probabilities.
    ``P(Y < k)`` rises and ``P(Y > k)`` falls with k, so every set
    ``{k : score <= t}`` is a contiguous range: the labels that are neither
    in the lower nor in the upper tail at level t.
    """

    name = "ordinal_set"
    output = "set"
    reference = "Chernozhukov, Wüthrich & Zhu (2021), PNAS (distributional CP)"

    @staticmethod
    def label_scores(P: FloatArray) -> FloatArray:
        cdf = np.cumsum(P, axis=1)
        below = np.hstack([np.zeros((P.shape[0], 1)), cdf[:, :-1]])
        above = np.clip(1.0 - cdf, 0.0, None)
        return np.maximum(below, above)

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        self.scores_ = true_label_scores(self.label_scores(self._proba(X)), self.scale.index(y))
        self.threshold_ = self._quantile(self.scores_)

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        return Prediction.from_sets(sets_at(self.label_scores(self._proba(X)), self.threshold_), self.scale)

    complexity = ("O(n K)", "O(n K)")
