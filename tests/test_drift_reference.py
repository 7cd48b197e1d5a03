"""Mutation testing's survivors of judgecp.stats.drift (issue 37, docs/testing.md): the martingale test's whole
result, the online p-values' path for long runs, and the tilts' normalisers, against references computed another
way."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgecp.stats import drift
from judgecp.stats.drift import TILTS, _log_tilt_normalisers, martingale_test, pvalues_after
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
    constant is computed at import, before a mutant is switched on)."""
    got = _log_tilt_normalisers()
    assert got.shape == TILTS.shape and (TILTS == 0).any()
    for a, z in zip(TILTS.tolist(), got.tolist(), strict=True):
        assert z == (0.0 if a == 0 else pytest.approx(math.log(math.expm1(a) / a), rel=1e-12))


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
