"""Two of sets.py's mutation survivors first filed as equivalent / not killed (issue 37, docs/testing.md), killed
here: the margin score on a two-label (pass/fail) scale, and RAPS keeping a k_reg the user gave while it tunes
lambda."""

from __future__ import annotations

import math

import numpy as np

from judgecp.base.scale import LikertScale
from judgecp.stats.methods.sets import RAPS, SCORE_TOLERANCE, Margin, margin_scores

PASS_FAIL = LikertScale(0, 1)


def test_margin_scores_and_sets_on_a_pass_fail_scale() -> None:
    """Mutation testing's survivors (docs/testing.md): on two labels the margin score of each label is the other's
    probability less its own (worked by hand), and Margin calibrates and predicts on a 0..1 scale: the threshold is
    the ceil((n + 1)(1 - alpha))-th smallest true-label score and a set holds the labels scoring at most it.
    Kills ``np.partition(-P, 2)`` for ``np.partition(-P, 1)`` (out of bounds with two labels)."""
    P = np.array([[0.7, 0.3], [0.5, 0.5], [0.0, 1.0], [0.25, 0.75]])
    np.testing.assert_allclose(margin_scores(P), [[-0.4, 0.4], [0.0, 0.0], [1.0, -1.0], [0.5, -0.5]],
                               rtol=0, atol=1e-15)

    rng = np.random.default_rng(3)
    n_cal, n_test, alpha = 30, 12, 0.2
    p1 = rng.beta(2.0, 2.0, size=n_cal + n_test)
    P = np.column_stack([1.0 - p1, p1])
    y = (rng.random(n_cal) < p1[:n_cal]).astype(np.int64)
    method = Margin(alpha, scale=PASS_FAIL, random_state=0).conformalize(np.log(P[:n_cal]), y)
    true_scores = [float(P[i, 1 - y[i]] - P[i, y[i]]) for i in range(n_cal)]
    np.testing.assert_allclose(method.scores_, true_scores, rtol=0, atol=1e-12)
    threshold = sorted(true_scores)[math.ceil((n_cal + 1) * (1 - alpha)) - 1]
    want = [[float(P[i, 1 - k] - P[i, k]) <= threshold + SCORE_TOLERANCE for k in range(2)]
            for i in range(n_cal, n_cal + n_test)]
    assert method.predict(np.log(P[n_cal:])).sets.tolist() == want


def _true_label_rank_quantile(P: np.ndarray, index: np.ndarray, alpha: float) -> int:
    """The ceil((n + 1)(1 - alpha))-th smallest rank of the true label (ties in label order), K beyond n."""
    ranks = sorted(sorted(range(P.shape[1]), key=lambda k: (-P[i, k], k)).index(int(index[i])) + 1
                   for i in range(P.shape[0]))
    r = math.ceil((len(ranks) + 1) * (1 - alpha) - 1e-9)
    return ranks[r - 1] if r <= len(ranks) else P.shape[1]


def test_raps_keeps_a_given_k_reg_while_it_tunes_lambda() -> None:
    """Mutation testing's survivors (docs/testing.md): ``RAPS(k_reg=3)`` with lambda left to tune fits k_reg 3, not
    the data's (1 - alpha) rank quantile (here 5, checked by a loop), and its label scores carry
    ``lam * max(0, rank - 3)``. Kills ``k = None`` for ``k = self.k_reg`` in ``_tune``."""
    rng = np.random.default_rng(9)
    n, alpha = 40, 0.1
    P = rng.dirichlet(np.ones(5), size=n)
    y = rng.integers(1, 6, size=n)
    assert _true_label_rank_quantile(P, y - 1, alpha) == 5
    method = RAPS(alpha, k_reg=3, randomized=False, random_state=2).fit(np.log(P), y)
    assert method.k_reg_ == 3
    assert method.lam_ in RAPS.LAMBDA_GRID
    rows = P[:3]
    plain, penalised = method._label_scores(rows, None), RAPS(alpha, lam=0.0, k_reg=3)._label_scores(rows, None)
    ranks = [[sorted(range(5), key=lambda k: (-row[k], k)).index(k) + 1 for k in range(5)] for row in rows.tolist()]
    np.testing.assert_allclose(plain - penalised, method.lam_ * np.maximum(0, np.array(ranks) - 3), rtol=0, atol=1e-12)
