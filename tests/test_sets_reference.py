"""Mutation testing's survivors of judgecp.stats.methods.sets (issue 37, docs/testing.md): the set scores, the
sets at a threshold and RAPS's tuning, against references written as loops over labels and items."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgecp.base.scale import LikertScale
from judgecp.stats.methods.sets import APS, RAPS, SCORE_TOLERANCE, Margin, aps_scores, margin_scores, sets_at


def _rows() -> np.ndarray:
    """Rows with a unique maximum, a maximum tied by two and by three labels, ties below the maximum."""
    return np.array([
        [0.5, 0.2, 0.2, 0.1],
        [0.4, 0.4, 0.1, 0.1],
        [0.3, 0.3, 0.3, 0.1],
        [0.1, 0.6, 0.1, 0.2],
        [0.25, 0.25, 0.25, 0.25],
    ])


def test_margin_scores_by_loops() -> None:
    """max_{j != k} p_j - p_k for every label, one row at a time and all rows at once."""
    P = _rows()
    want = [[max(p for j, p in enumerate(row) if j != k) - row[k] for k in range(len(row))] for row in P.tolist()]
    np.testing.assert_allclose(margin_scores(P), want, rtol=0, atol=1e-15)
    for i in range(P.shape[0]):
        np.testing.assert_allclose(margin_scores(P[i : i + 1]), [want[i]], rtol=0, atol=1e-15)


def test_margin_scores_and_sets_on_a_pass_fail_scale() -> None:
    """On two labels the margin score of each label is the other's probability less its own (worked by hand), and
    Margin calibrates and predicts on a 0..1 scale: the threshold is the ceil((n + 1)(1 - alpha))-th smallest
    true-label score and a set holds the labels scoring at most it. Kills ``np.partition(-P, 2)`` for
    ``np.partition(-P, 1)`` (out of bounds with two labels)."""
    P = np.array([[0.7, 0.3], [0.5, 0.5], [0.0, 1.0], [0.25, 0.75]])
    np.testing.assert_allclose(margin_scores(P), [[-0.4, 0.4], [0.0, 0.0], [1.0, -1.0], [0.5, -0.5]],
                               rtol=0, atol=1e-15)

    rng = np.random.default_rng(3)
    n_cal, n_test, alpha = 30, 12, 0.2
    p1 = rng.beta(2.0, 2.0, size=n_cal + n_test)
    P = np.column_stack([1.0 - p1, p1])
    y = (rng.random(n_cal) < p1[:n_cal]).astype(np.int64)
    method = Margin(alpha, scale=LikertScale(0, 1), random_state=0).conformalize(np.log(P[:n_cal]), y)
    true_scores = [float(P[i, 1 - y[i]] - P[i, y[i]]) for i in range(n_cal)]
    np.testing.assert_allclose(method.scores_, true_scores, rtol=0, atol=1e-12)
    threshold = sorted(true_scores)[math.ceil((n_cal + 1) * (1 - alpha)) - 1]
    want = [[float(P[i, 1 - k] - P[i, k]) <= threshold + SCORE_TOLERANCE for k in range(2)]
            for i in range(n_cal, n_cal + n_test)]
    assert method.predict(np.log(P[n_cal:])).sets.tolist() == want


def _aps_by_hand(row: list[float], u: float | None, lam: float, k_reg: int) -> list[float]:
    order = sorted(range(len(row)), key=lambda k: (-row[k], k))  # decreasing, ties in label order
    out = [0.0] * len(row)
    mass = 0.0
    for rank, k in enumerate(order, start=1):
        mass += row[k]
        out[k] = mass - (u * row[k] if u is not None else 0.0) + lam * max(0, rank - k_reg)
    return out


def test_aps_and_raps_scores_by_hand() -> None:
    """The cumulative mass down to each label (ties in label order), less u p_k, plus lam max(0, rank - k_reg);
    k_reg defaults to 0."""
    P, u = _rows(), np.array([0.3, 0.9, 0.5, 0.1, 0.7])
    rows = P.tolist()
    np.testing.assert_allclose(aps_scores(P), [_aps_by_hand(r, None, 0.0, 0) for r in rows], rtol=0, atol=1e-12)
    want = [_aps_by_hand(r, ui, 0.2, 0) for r, ui in zip(rows, u.tolist(), strict=True)]
    np.testing.assert_allclose(aps_scores(P, u, lam=0.2), want, rtol=0, atol=1e-12)
    want = [_aps_by_hand(r, ui, 0.2, 2) for r, ui in zip(rows, u.tolist(), strict=True)]
    np.testing.assert_allclose(aps_scores(P, u, lam=0.2, k_reg=2), want, rtol=0, atol=1e-12)


def test_sets_at_the_threshold_and_its_tolerance_and_valid_options() -> None:
    """A score equal to the threshold, or above it by the tolerance, is in the set; above by more is not; options
    marked invalid are left out."""
    thr = 0.5
    scores = np.array([[thr, thr + SCORE_TOLERANCE, thr + 3 * SCORE_TOLERANCE, 0.1]])
    assert sets_at(scores, thr).tolist() == [[True, True, False, True]]
    valid = np.array([[True, False, True, True]])
    assert sets_at(scores, thr, valid).tolist() == [[True, False, False, True]]


def test_uniforms_only_for_randomized_methods() -> None:
    rng = np.random.default_rng(0)
    assert APS(randomized=False)._uniforms(3, rng) is None
    assert APS(randomized=True)._uniforms(3, np.random.default_rng(0)).tolist() == \
        np.random.default_rng(0).uniform(size=3).tolist()


def _rank_quantile_by_loops(P: np.ndarray, index: np.ndarray, alpha: float) -> int:
    """The ceil((n + 1)(1 - alpha))-th smallest rank of the true label (ties in label order); K if it exceeds n."""
    ranks = []
    for row, y in zip(P.tolist(), index.tolist(), strict=True):
        order = sorted(range(len(row)), key=lambda k: (-row[k], k))
        ranks.append(order.index(y) + 1)
    r = math.ceil((len(ranks) + 1) * (1 - alpha) - 1e-9)
    return sorted(ranks)[r - 1] if r <= len(ranks) else P.shape[1]


def _tune_by_loops(P: np.ndarray, index: np.ndarray, alpha: float, seed: int, randomized: bool) -> tuple[float, int]:
    """RAPS's tuning replayed: k_reg from :func:`_rank_quantile_by_loops`; then, for each lam of the grid in order, a
    threshold from half of the items (a seeded permutation) and the mean set size on the other half; the first lam
    with the smallest size."""
    rows, n = P.tolist(), P.shape[0]
    k_reg = _rank_quantile_by_loops(P, index, alpha)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n).tolist()
    a, b = perm[: n // 2], perm[n // 2 :]
    best_size, best_lam = math.inf, RAPS.LAMBDA_GRID[0]
    for lam in RAPS.LAMBDA_GRID:
        u_a = rng.uniform(size=len(a)).tolist() if randomized else [None] * len(a)
        true_scores = sorted(_aps_by_hand(rows[i], ui, lam, k_reg)[index[i]] for i, ui in zip(a, u_a, strict=True))
        ra = math.ceil((len(a) + 1) * (1 - alpha) - 1e-9)
        thr = true_scores[ra - 1] if ra <= len(a) else math.inf
        u_b = rng.uniform(size=len(b)).tolist() if randomized else [None] * len(b)
        sizes = [sum(s <= thr + SCORE_TOLERANCE for s in _aps_by_hand(rows[i], ui, lam, k_reg))
                 for i, ui in zip(b, u_b, strict=True)]
        size = sum(sizes) / len(sizes)
        if size < best_size:
            best_size, best_lam = size, lam
    return best_lam, k_reg


def _tuning_case(seed: int, temperature: float) -> tuple[np.ndarray, np.ndarray]:
    """41 items of 6 labels: softmax probabilities at ``temperature`` and true labels drawn from them."""
    rng = np.random.default_rng(seed + 100)
    logits = rng.normal(size=(41, 6)) / temperature
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return P, np.array([rng.choice(6, p=row) for row in P])


@pytest.mark.parametrize(("seed", "randomized", "alpha", "temperature"),
                         [(0, True, 0.1, 1.0), (1, False, 0.2, 1.0), (5, True, 0.3, 0.3), (7, False, 0.1, 3.0),
                          (2, False, 0.05, 0.5), (3, True, 0.2, 2.0), (4, False, 0.3, 1.0), (6, True, 0.05, 0.7)])
def test_raps_tuning_against_a_replay_by_loops(seed: int, randomized: bool, alpha: float, temperature: float) -> None:
    """RAPS's tuned (lam, k_reg) on 41 items of 6 labels against :func:`_tune_by_loops` (same seeded draws); and
    on 5 items at alpha 0.1, whose rank ceil(6 x 0.9) = 6 exceeds them: k_reg is then the number of labels."""
    P, index = _tuning_case(seed, temperature)
    method = RAPS(alpha, randomized=randomized)
    assert method._tune(P, index, seed) == _tune_by_loops(P, index, alpha, seed, randomized)
    assert RAPS(0.1, randomized=randomized)._tune(P[:5], index[:5], seed) == \
        _tune_by_loops(P[:5], index[:5], 0.1, seed, randomized)
    assert _tune_by_loops(P[:5], index[:5], 0.1, seed, randomized)[1] == 6


def test_raps_keeps_a_given_lambda_and_tunes_only_k_reg() -> None:
    rng = np.random.default_rng(9)
    P = rng.dirichlet(np.ones(4), size=30)
    index = rng.integers(0, 4, 30)
    lam, k_reg = RAPS(0.1, lam=0.3)._tune(P, index, 0)
    assert lam == 0.3 and k_reg == _rank_quantile_by_loops(P, index, 0.1)


def test_raps_keeps_a_given_k_reg_while_it_tunes_lambda() -> None:
    """``RAPS(k_reg=3)`` with lambda left to tune fits k_reg 3, not the data's (1 - alpha) rank quantile (here 5),
    and its label scores carry ``lam * max(0, rank - 3)``. Kills ``k = None`` for ``k = self.k_reg`` in ``_tune``
    (it had been argued equivalent)."""
    rng = np.random.default_rng(9)
    n, alpha = 40, 0.1
    P = rng.dirichlet(np.ones(5), size=n)
    y = rng.integers(1, 6, size=n)
    assert _rank_quantile_by_loops(P, y - 1, alpha) == 5
    method = RAPS(alpha, k_reg=3, randomized=False, random_state=2).fit(np.log(P), y)
    assert method.k_reg_ == 3
    assert method.lam_ in RAPS.LAMBDA_GRID
    want = [_aps_by_hand(row, None, method.lam_, 3) for row in P[:3].tolist()]
    np.testing.assert_allclose(method._label_scores(P[:3], None), want, rtol=0, atol=1e-12)


def test_raps_tuning_picks_a_lambda_other_than_the_first() -> None:
    """At least one of the cases above tunes lam away from the grid's first value, so the search is exercised."""
    picked = set()
    for seed, randomized, alpha, temperature in [(0, True, 0.1, 1.0), (1, False, 0.2, 1.0), (5, True, 0.3, 0.3),
                                                 (7, False, 0.1, 3.0)]:
        P, index = _tuning_case(seed, temperature)
        picked.add(_tune_by_loops(P, index, alpha, seed, randomized)[0])
    assert picked - {RAPS.LAMBDA_GRID[0]}


def test_raps_penalty_before_and_after_fitting() -> None:
    """Unfitted, the penalty is the given (lam, k_reg), 0 where not given; the label scores carry it."""
    assert RAPS()._penalty() == (0.0, 0)
    assert RAPS(lam=0.3, k_reg=2)._penalty() == (0.3, 2)
    method = RAPS(lam=0.3, k_reg=2)
    method.lam_, method.k_reg_ = 0.05, 1
    assert method._penalty() == (0.05, 1)
    P, u = _rows(), np.array([0.3, 0.9, 0.5, 0.1, 0.7])
    want = [_aps_by_hand(r, ui, 0.05, 1) for r, ui in zip(P.tolist(), u.tolist(), strict=True)]
    np.testing.assert_allclose(method._label_scores(P, u), want, rtol=0, atol=1e-12)
