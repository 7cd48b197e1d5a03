"""Mutation testing's survivors of judgecp.stats.drift (issue 37, docs/testing.md) that
tests/test_drift_reference.py leaves: the alarm at evidence of exactly ``1/level``, statistics near the largest
float (ranked, never scaled), the tilts' normalisers computed without a 0/0, and the cell counts' integer type."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgecp.stats import drift
from judgecp.stats.drift import TILTS, _log_tilt_normalisers, cell_counts, martingale_test
from tests.test_history_detector import _martingale_by_loops


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


def test_the_tilts_normalisers_without_a_zero_division() -> None:
    """Mutation testing's survivors (docs/testing.md): the tilt ``a = 0`` gets a placeholder before
    ``log(expm1(a) / a)`` and its limit 0 after: without the placeholder, 0/0 warns (an invalid-value warning at
    every import of judgecp) though the NaN is then masked. Computed under ``np.errstate(all="raise")``, against
    the closed form (math.expm1)."""
    with np.errstate(all="raise"):
        got = _log_tilt_normalisers()
    assert (TILTS == 0.0).sum() == 1
    want = [0.0 if a == 0.0 else math.log(math.expm1(a) / a) for a in TILTS.tolist()]
    assert got.tolist() == pytest.approx(want, rel=1e-12, abs=0.0)


def test_cell_counts_are_integers_counted_by_hand() -> None:
    """Mutation testing's survivors (docs/testing.md): the counts of p-values in the 2**depth equal cells of [0, 1]
    are int64 (as typed), a p-value of 1 in the last cell and one on a cell's edge in the cell above it."""
    got = cell_counts([0.0, 0.1, 0.25, 0.26, 0.5, 0.74, 0.75, 0.99, 1.0], depth=2)
    assert got.dtype == np.int64
    assert got.tolist() == [2, 2, 2, 3]
