"""Mutation testing's survivors of judgecp.stats.drift (issue 37, docs/testing.md): the martingale test's whole
result, the online p-values' path for long runs, the tilts' normalisers, the Polya tree, the alarm at evidence of
exactly ``1/level``, statistics near the largest float and the cell counts, against references computed another
way."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgecp.stats import drift
from judgecp.stats.drift import TILTS, _log_tilt_normalisers, cell_counts, martingale_test, pvalues_after
from tests.test_history_detector import _martingale_by_loops


def test_the_martingale_tests_whole_result_with_its_defaults() -> None:
    """Every field of the result of a call with the defaults (level 0.01, seed 0), against the loop reference."""
    rng = np.random.default_rng(12)
    cal, run = rng.normal(size=50).round(1), (rng.normal(size=30) + 1.2).round(1)
    want = _martingale_by_loops(cal, run, level=0.01, seed=0)
    got = martingale_test(cal.tolist(), run.tolist())
    assert got == {"test": "conformal test martingale", "order": "seeded random", "level": 0.01, "n_run": 30,
                   "max": pytest.approx(want["max"], rel=1e-9), "final": pytest.approx(want["final"], rel=1e-9),
                   "alarm": want["first_alarm"] is not None, "first_alarm": want["first_alarm"]}
    assert want["first_alarm"] is not None
    assert martingale_test(cal, np.zeros(0)) == {"test": "conformal test martingale", "order": "seeded random",
                                                 "level": 0.01, "n_run": 0, "max": None, "final": None,
                                                 "alarm": None, "first_alarm": None}


def test_long_runs_rank_their_items_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond _SQUARE_LIMIT new items are ranked by insertion into a sorted list instead of one square comparison:
    the same p-values, counted here by comparisons (the limit set to 0 so that a small run takes that path)."""
    monkeypatch.setattr(drift, "_SQUARE_LIMIT", 0)
    seen = [1.0, 2.0, 2.0, 3.5]
    seq = [2.0, 0.5, 2.0, 4.0, 3.5, 2.0, 0.5]
    u = [0.3, 0.9, 0.5, 0.1, 0.7, 0.2, 0.6]
    want = []
    for i, a in enumerate(seq):
        before = seen + seq[: i + 1]
        want.append((sum(b > a for b in before) + u[i] * sum(b == a for b in before)) / len(before))
    got = pvalues_after(np.array(seen), np.array(seq), np.array(u))
    assert got.tolist() == pytest.approx(want, rel=1e-12)


def test_the_tilts_normalisers_by_their_closed_form() -> None:
    """log Z(a) = log((e^a - 1) / a) for each tilt, 0 at a = 0 (its limit), from the function itself (the module
    constant is computed at import, before a mutant is switched on). The tilt 0 gets a placeholder before the
    division and its limit after: computed under ``np.errstate(all="raise")``, as without the placeholder 0/0 warns
    (an invalid-value warning at every import of judgecp) though the NaN is then masked."""
    with np.errstate(all="raise"):
        got = _log_tilt_normalisers()
    assert got.shape == TILTS.shape and (TILTS == 0).sum() == 1
    for a, z in zip(TILTS.tolist(), got.tolist(), strict=True):
        assert z == (0.0 if a == 0 else pytest.approx(math.log(math.expm1(a) / a), rel=1e-12, abs=0.0))


def test_overwhelming_evidence_is_reported_capped_at_exp_700() -> None:
    """A run far above its calibration piles up more than e^700 of evidence: the maximum and final value are
    reported as e^700 (finite in JSON), not e^701."""
    out = martingale_test(np.arange(20000.0), 1e5 + np.arange(2000.0))
    assert out["alarm"] is True
    assert out["max"] == math.exp(700.0) and out["final"] == math.exp(700.0)


def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def test_the_polya_tree_against_its_closed_form() -> None:
    """log LR of cell counts under the Polya tree whose level-j nodes split with Beta(j^2, j^2), against the
    uniform: sum over levels and nodes of log B(left + j^2, right + j^2) - log B(j^2, j^2), plus n D log 2, worked
    with math.lgamma node by node (each level's own prior: a table of another level is caught)."""
    counts = [3, 0, 1, 5, 2, 2, 0, 7]
    depth, want = 3, sum(counts) * 3 * math.log(2.0)
    level_counts = counts
    for j in range(depth, 0, -1):
        a = float(j * j)
        pairs = list(zip(level_counts[::2], level_counts[1::2], strict=True))
        want += math.fsum(_lbeta(left + a, right + a) - _lbeta(a, a) for left, right in pairs)
        level_counts = [left + right for left, right in pairs]
    assert float(drift.polya_log_lr(np.array(counts))) == pytest.approx(want, rel=1e-12)


def test_evidence_of_exactly_one_over_level_is_an_alarm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation testing's survivors (docs/testing.md): Ville's inequality bounds P(sup M_n >= 1/level), so evidence
    of exactly 1/level is an alarm (``>=``; ``>`` waits for more). No real data puts the mixture on the threshold to
    the last bit, so the mixture's path is given here (``log_mean_exp`` replaced for this call): one ulp below
    ``log 4`` (no alarm), ``log 4`` itself (the alarm at level 1/4), then ``log 3``."""
    path = np.array([np.nextafter(np.log(4.0), -np.inf), np.log(4.0), np.log(3.0)])

    def given_path(a: np.ndarray, axis: int = -1) -> np.ndarray:
        assert np.shape(a)[0] == path.size
        return path

    monkeypatch.setattr(drift, "log_mean_exp", given_path)
    got = martingale_test([0.1, 0.5, 0.9], [0.2, 0.4, 0.6], level=0.25)
    assert got["alarm"] is True and got["first_alarm"] == 2
    assert got["max"] == pytest.approx(4.0, rel=1e-12) and got["final"] == pytest.approx(3.0, rel=1e-12)
    below = martingale_test([0.1, 0.5, 0.9], [0.2, 0.4, 0.6], level=0.25 + 1e-9)
    assert below["alarm"] is True and below["first_alarm"] == 1  # a threshold a hair lower: the first item
    path[1] = np.nextafter(np.log(4.0), -np.inf)
    assert martingale_test([0.1, 0.5, 0.9], [0.2, 0.4, 0.6], level=0.25)["alarm"] is False


def test_statistics_near_the_largest_float_are_ranked_not_scaled() -> None:
    """Mutation testing's survivors (docs/testing.md): the two bets negate the statistic (large, then small values
    conform least); any scaling beyond the sign (``2 x`` for ``x``) would overflow finite values above
    ``1.8e308 / 2`` to infinity and tie them. A calibration and a shifted run, all between ``0.5e308`` and
    ``1.79e308``, against the item-by-item loop reference (:func:`_martingale_by_loops`, which only compares)."""
    rng = np.random.default_rng(5)
    cal = rng.uniform(0.5, 1.5, size=40) * 1e308
    run = rng.uniform(1.0, 1.79, size=30) * 1e308
    want = _martingale_by_loops(cal, run, level=0.05, seed=2)
    got = martingale_test(cal, run, level=0.05, seed=2)
    assert got["first_alarm"] == want["first_alarm"] and got["alarm"] is (want["first_alarm"] is not None)
    assert got["max"] == pytest.approx(want["max"], rel=1e-9) and got["final"] == pytest.approx(want["final"], rel=1e-9)
    low = martingale_test(-cal, -run, level=0.05, seed=2)  # the same ranks seen from the other sign
    want_low = _martingale_by_loops(-cal, -run, level=0.05, seed=2)
    assert low["max"] == pytest.approx(want_low["max"], rel=1e-9)
    assert low["final"] == pytest.approx(want_low["final"], rel=1e-9)


def test_cell_counts_are_integers_counted_by_hand() -> None:
    """Mutation testing's survivors (docs/testing.md): the counts of p-values in the 2**depth equal cells of [0, 1]
    are int64 (as typed), a p-value of 1 in the last cell and one on a cell's edge in the cell above it."""
    got = cell_counts([0.0, 0.1, 0.25, 0.26, 0.5, 0.74, 0.75, 0.99, 1.0], depth=2)
    assert got.dtype == np.int64
    assert got.tolist() == [2, 2, 2, 3]
