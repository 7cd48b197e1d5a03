"""Candidate-label conformity scores of every built-in method, for the conditional and CV+ variants.

:mod:`judgecp.stats.methods.variants` thresholds these per label cell or per
fold; for each method they reproduce its own split-conformal sets (tested).
"""

from __future__ import annotations

import numpy as np

from judgecp.base.errors import InputError
from judgecp.stats.conformal import ConformalMethod, FloatArray
from judgecp.stats.methods.boosted import _BoostedMethod
from judgecp.stats.methods.histogram import CHR
from judgecp.stats.methods.lvd import LVD
from judgecp.stats.methods.ordinal import OrdinalAPS, OrdinalCDFSet, greedy_contiguous_mass
from judgecp.stats.methods.quantile_regression import CQR, AsymmetricCQR
from judgecp.stats.methods.r2ccp import R2CCP
from judgecp.stats.methods.sets import _SetMethod
from judgecp.stats.methods.split import NaiveSplit

#: One score matrix ``(n, K)`` per one-sided condition, with its share of alpha.
LabelScores = list[tuple[FloatArray, float]]


def label_scores(method: ConformalMethod, X: FloatArray, u: FloatArray) -> LabelScores:
    """Conformity score of every candidate label at every row, for a fitted ``method``.

    ``u`` holds one uniform per row, used by the randomised scores (APS,
    RAPS, randomised ordinal APS) exactly as the method itself uses them. A
    third-party method can take part by defining
    ``candidate_label_scores(X, u) -> [(scores (n, K), alpha_share), ...]``.
    """

    custom = getattr(method, "candidate_label_scores", None)
    if custom is not None:
        return list(custom(X, u))
    k = method.scale.labels.astype(np.float64)[None, :]
    if isinstance(method, AsymmetricCQR):
        lo, hi = method.quantiles(X)
        return [(lo[:, None] - k, 0.5), (k - hi[:, None], 0.5)]
    if isinstance(method, CQR):
        lo, hi = method.quantiles(X)
        return [(np.maximum(lo[:, None] - k, k - hi[:, None]), 1.0)]
    if isinstance(method, NaiveSplit):
        return [(np.abs(k - method.point(X)[:, None]), 1.0)]
    if isinstance(method, LVD):
        mu, sigma = method.mean_and_scale(X)
        return [(np.abs(k - mu[:, None]) / sigma[:, None], 1.0)]
    if isinstance(method, _BoostedMethod):
        G = method.boosted(X)
        cols = [method._scores(G, np.full(X.shape[0], float(v))) for v in k[0]]
        return [(np.column_stack(cols), 1.0)]
    if isinstance(method, R2CCP):
        s = method.grid_scores(X)
        return [(s[:, method._nearest(k[0])], 1.0)]
    if isinstance(method, CHR):
        # The ranges grow with the level (nested): a range's start never rises and its end never
        # falls, so the first level whose range holds label j is the count of levels before
        # the start reaches j or the end reaches j, whichever comes later.
        # (Counted on the chain's few segments, not level by level: CHR.first_levels.)
        last = method.levels.size - 1
        return [(method.levels[np.minimum(method.first_levels(X), last)], 1.0)]
    if isinstance(method, _SetMethod):
        return [(method._label_scores(method._proba(X), u if method.randomized else None), 1.0)]
    if isinstance(method, OrdinalAPS):
        after, before = greedy_contiguous_mass(method._proba(X))
        scores = after - u[:, None] * (after - before) if method.randomized else after
        return [(scores, 1.0)]
    if isinstance(method, OrdinalCDFSet):
        return [(method.label_scores(method._proba(X)), 1.0)]
    raise InputError(
        f"{method.name}: conditional= and cv= need the method's candidate-label scores; "
        "define candidate_label_scores(X, u) on it"
    )
