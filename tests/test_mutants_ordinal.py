"""Ordinal set methods pinned where mutation testing found them unchecked (docs/testing.md)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from judgecp.base.scale import LikertScale
from judgecp.stats.methods.ordinal import OrdinalAPS, OrdinalCDFSet

SCALE = LikertScale()


def _grown_masses_by_loops(p: NDArray[np.float64]) -> tuple[list[float], list[float]]:
    """Grow a range from the mode, the larger neighbour first (ties left): each label's mass before/after."""
    k = p.size
    lo = hi = int(np.argmax(p))
    mass = float(p[lo])
    before, after = [0.0] * k, [0.0] * k
    after[lo] = mass
    while hi - lo + 1 < k:
        left = p[lo - 1] if lo > 0 else None
        right = p[hi + 1] if hi < k - 1 else None
        if right is None or (left is not None and left >= right):
            lo -= 1
            joined = lo
        else:
            hi += 1
            joined = hi
        before[joined] = mass
        mass += float(p[joined])
        after[joined] = mass
    return before, after


def _probabilities(rng: np.random.Generator, n: int) -> NDArray[np.float64]:
    return rng.dirichlet(np.full(SCALE.k, 0.7), size=n)


def test_randomized_ordinal_aps_scores_and_sets_by_loops() -> None:
    """Mutation testing's survivors (docs/testing.md): OrdinalAPS(randomized=True) draws one uniform per
    judgment (from the method's seeded generator, calibration then prediction) and scores a label
    ``before + (1 - u) p_k`` (``after - u (after - before)``), in both calibration and prediction. Pinned by a
    loop that grows each range by hand and replays the same seeded draws; the threshold is the conformal
    rank ceil((n + 1)(1 - alpha)) of the loop's scores."""
    rng = np.random.default_rng(5)
    n_cal, n_test, alpha, seed = 40, 30, 0.2, 11
    P_cal, P_test = _probabilities(rng, n_cal), _probabilities(rng, n_test)
    y = rng.integers(1, SCALE.k + 1, size=n_cal)
    method = OrdinalAPS(alpha, randomized=True, scale=SCALE, random_state=seed)
    method.conformalize(np.log(P_cal), y)

    draws = np.random.default_rng(seed)
    u_cal = draws.uniform(size=n_cal)
    predict_seed = int(draws.integers(2**63 - 1))
    want_scores = []
    for i in range(n_cal):
        before, after = _grown_masses_by_loops(P_cal[i])
        label = int(y[i]) - 1
        want_scores.append(before[label] + (1.0 - u_cal[i]) * P_cal[i, label])
    np.testing.assert_allclose(method.scores_, want_scores, rtol=1e-12, atol=1e-12)
    rank = math.ceil((n_cal + 1) * (1 - alpha))
    threshold = sorted(want_scores)[rank - 1]
    assert abs(method.threshold_ - threshold) < 1e-12

    u_test = np.random.default_rng(predict_seed).uniform(size=n_test)
    sets = method.predict(np.log(P_test)).sets
    randomized_any = False
    for i in range(n_test):
        before, after = _grown_masses_by_loops(P_test[i])
        scores = [before[j] + (1.0 - u_test[i]) * P_test[i, j] for j in range(SCALE.k)]
        want = [s <= threshold + 1e-10 for s in scores]
        assert list(sets[i]) == want, i
        randomized_any |= want != [a <= threshold + 1e-10 for a in after]
    assert randomized_any  # the draws changed some set: the test reaches the randomized scores


def test_ordinal_aps_hand_worked_randomized_score() -> None:
    """Mutation testing's survivors (docs/testing.md): the randomized score by hand. For
    p = (0.1, 0.6, 0.3) the range grows 2nd, then 3rd (0.3 > 0.1), then 1st label: before = (0.9, 0, 0.6),
    after = (1.0, 0.6, 0.9); with u = 0.25 the scores are after - u (after - before) = (0.975, 0.45, 0.825)."""
    P = np.array([[0.1, 0.6, 0.3]])
    got = OrdinalAPS(randomized=True)._label_scores(P, np.array([[0.25]]))
    np.testing.assert_allclose(got, [[0.975, 0.45, 0.825]], rtol=1e-12)


def test_ordinal_cdf_set_scores_by_hand() -> None:
    """Mutation testing's survivors (docs/testing.md): OrdinalCDFSet.label_scores is
    max(P(Y < k), P(Y > k)). For p = (0.2, 0.5, 0.3): below = (0, 0.2, 0.7), above = (0.8, 0.3, 0),
    scores (0.8, 0.3, 0.7); all mass on the last label: (1, 1, 0)."""
    P = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(OrdinalCDFSet.label_scores(P), [[0.8, 0.3, 0.7], [1.0, 1.0, 0.0]], atol=1e-15)
