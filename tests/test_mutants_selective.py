"""Selective risk controllers pinned where mutation testing found them unchecked (docs/testing.md)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.optimize import brentq
from scipy.stats import binom

from judgecp.stats.selective import ClopperPearson, Heuristic, RiskController, apply

# Uncertainty 1 - confidence: ClopperPearson(grid=8)'s thresholds are 1/16, 2/16, ..., 8/16, exact in binary.
SIGNAL = SimpleNamespace(confidence_floor=0.5, uncertainty_at_confidence=lambda c: 1.0 - c)


def _cp_upper(k: int, m: int, delta: float) -> float:
    """One-sided Clopper-Pearson upper bound by its definition: the p with P(Bin(m, p) <= k) = delta."""
    if m == 0 or k >= m:
        return 1.0
    return float(brentq(lambda p: binom.cdf(k, m, p) - delta, 0.0, 1.0, xtol=1e-15, rtol=1e-15))


def _fixed_sequence_by_loops(u: NDArray[np.float64], e: NDArray[np.bool_], grid: NDArray[np.float64],
                             alpha: float, delta: float) -> float:
    """The last grid threshold before the first whose bound exceeds alpha (-inf when the first does)."""
    chosen = -np.inf
    for g in grid:
        accepted = [i for i in range(u.size) if u[i] <= g]
        errors = sum(bool(e[i]) for i in accepted)
        if _cp_upper(errors, len(accepted), delta) > alpha:
            break
        chosen = float(g)
    return chosen


def test_clopper_pearson_thresholds_match_a_loop_over_the_grid() -> None:
    """Mutation testing's survivors (docs/testing.md): ClopperPearson.thresholds_at_levels's accepted
    counts (a calibration uncertainty equal to a grid threshold is accepted), the errors among the first
    one or two accepted, a split that passes every threshold next to one that does not, and a split
    where only the first threshold passes. Pinned against a loop over the grid with the Clopper-Pearson
    bound solved from the binomial CDF, on uncertainties that sit on the grid, at levels up to 0.95
    (where one or two accepted judgments decide)."""
    rng = np.random.default_rng(37)
    ctrl = ClopperPearson(delta=0.1, grid=8)
    grid = np.arange(1, 9) / 16.0
    alphas = [0.05, 0.2, 0.35, 0.5, 0.7, 0.9, 0.95]
    for n in (3, 6, 12, 40):
        u = np.sort(rng.integers(1, 10, size=(30, n)) / 16.0, axis=1)
        e = rng.random((30, n)) < rng.uniform(0.0, 0.6, size=(30, 1))
        got = ctrl.thresholds_at_levels(u, e, alphas, SIGNAL)
        want = [[_fixed_sequence_by_loops(u[s], e[s], grid, a, 0.1) for s in range(30)] for a in alphas]
        np.testing.assert_array_equal(got, want)


def test_clopper_pearson_named_cases() -> None:
    """Mutation testing's survivors (docs/testing.md): hand-worked cases of ClopperPearson. 30 correct
    judgments at exactly the first threshold 1/16: bound 1 - 0.1**(1/30) = 0.074 passes 0.1 (they are
    accepted there); then three errors at 2/16 fail, so 1/16 is chosen. One split that passes everywhere
    next to one that fails at once (each gets its own answer). A single error first: bound 1, which
    fails even 0.95. A level equal to the bound passes (``bound <= alpha``): one correct judgment has
    bound 0.9 at delta 0.1."""
    ctrl = ClopperPearson(delta=0.1, grid=8)
    u = np.array([[1 / 16] * 30 + [2 / 16] * 3])
    e = np.array([[False] * 30 + [True] * 3])
    assert ctrl.thresholds(u, e, 0.1, SIGNAL)[0] == 1 / 16
    u2 = np.array([[1 / 16] * 33, [1 / 16] * 33])
    e2 = np.array([[False] * 33, [True] * 33])
    np.testing.assert_array_equal(ctrl.thresholds(u2, e2, 0.1, SIGNAL), [0.5, -np.inf])
    assert ctrl.thresholds(np.array([[1 / 16, 3 / 16]]), np.array([[True, False]]), 0.95, SIGNAL)[0] == -np.inf
    # one correct judgment: bound 1 - 0.1 = 0.9 at every threshold (it is accepted at all of them)
    assert ctrl.thresholds(np.array([[1 / 16]]), np.array([[False]]), 0.9, SIGNAL)[0] == 0.5
    # only the first threshold passes: 1/16 (not -inf, not the second)
    u3 = np.array([[1 / 16] * 30 + [2 / 16] * 30])
    e3 = np.array([[False] * 30 + [True] * 30])
    assert ctrl.thresholds(u3, e3, 0.1, SIGNAL)[0] == 1 / 16


def test_clopper_pearson_upper_bound_closed_form() -> None:
    """Mutation testing's survivors (docs/testing.md): ClopperPearson.upper_bound with no errors is
    1 - delta**(1/m), at m = 1 too (0.9 at delta 0.1, not the 1.0 of nothing accepted)."""
    m = np.array([1, 2, 5, 50])
    got = ClopperPearson.upper_bound(np.zeros(4, dtype=int), m, 0.1)
    np.testing.assert_allclose(got, 1.0 - 0.1 ** (1.0 / m), rtol=1e-12)
    assert got[0] == pytest.approx(0.9, abs=1e-15)


def test_heuristic_accepts_at_confidence_one_minus_alpha() -> None:
    """Mutation testing's survivors (docs/testing.md): Heuristic's threshold is the uncertainty at
    confidence 1 - alpha (0.1 at alpha 0.1 with uncertainty 1 - confidence), one per split."""
    got = Heuristic().thresholds(np.zeros((3, 4)), np.zeros((3, 4), bool), 0.1, SIGNAL)
    np.testing.assert_allclose(got, [0.1, 0.1, 0.1], rtol=1e-12)


class _ErrorsSeen(RiskController):
    """A controller that overrides only ``thresholds``: its threshold is the number of errors it sees."""

    name = "errors_seen"

    def thresholds(self, u_sorted: Any, e_sorted: Any, alpha: float, signal: Any) -> Any:
        return np.asarray(e_sorted).sum(axis=1) + alpha


def test_levels_of_a_controller_that_overrides_only_thresholds_see_the_errors() -> None:
    """Mutation testing's survivors (docs/testing.md): RiskController.thresholds_at_levels (the default
    for a plugin controller that overrides only ``thresholds``) passes the errors on, one row per level."""
    e = np.array([[True, False, True], [False, False, False]])
    got = _ErrorsSeen().thresholds_at_levels(np.zeros((2, 3)), e, [0.1, 0.2], SIGNAL)
    np.testing.assert_allclose(got, [[2.1, 0.1], [2.2, 0.2]])


def test_apply_counts_per_split() -> None:
    """Mutation testing's survivors (docs/testing.md): apply's risk is each split's own errors over its
    own accepted count, a single accepted error is risk 1, and nothing accepted is risk 0. Worked by
    hand: split 0 accepts one judgment (an error), split 1 accepts two (one error), split 2 none."""
    u = np.array([[0.1, 0.5, 0.9], [0.1, 0.2, 0.9], [0.6, 0.7, 0.9]])
    e = np.array([[True, False, True], [False, True, True], [True, True, True]])
    risk, coverage, n_acc = apply(np.array([0.3, 0.3, 0.3]), u, e)
    np.testing.assert_array_equal(n_acc, [1, 2, 0])
    np.testing.assert_allclose(risk, [1.0, 0.5, 0.0])
    np.testing.assert_allclose(coverage, [1 / 3, 2 / 3, 0.0])
