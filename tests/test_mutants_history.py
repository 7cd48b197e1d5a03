"""Tests from mutation testing of workflows/nightly/history.py (issue 37, docs/testing.md)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from judgecp.stats.drift import bet_statistics, mixture_log_lr
from judgecp.workflows.nightly.history import TEST, Detector, monitor, night_order, night_statistics, shiryaev_roberts


def test_summary_fields_worked_by_hand() -> None:
    """Mutation testing's survivors (docs/testing.md): Detector.summary's keys, its evidence cap at
    exp(700), its false-alarm bound nights / A capped at 1, and its None fields on an empty stream.

    level 0.1, horizon 10 give A = 100; evidence e^0, 200, and e^700 (log 701 capped) by hand.
    """
    det = Detector(0.1, 10, np.array([0.0, math.log(200.0), 701.0]), np.array([1, 1, 2], dtype=np.intp))
    out = det.summary()
    assert out["test"] == TEST
    assert "T / 100 " in out["guarantee"] and "within 10 nights" in out["guarantee"]
    assert out["level"] == 0.1 and out["horizon"] == 10 and out["threshold"] == 100.0 and out["nights"] == 3
    assert out["false_alarm_bound"] == 3 / 100
    capped = math.exp(700.0)
    assert np.allclose(out["evidence_by_night"], [1.0, 200.0, capped], rtol=1e-12)
    assert math.isclose(out["evidence"], capped, rel_tol=1e-12)
    assert math.isclose(out["max_evidence"], capped, rel_tol=1e-12)
    assert out["alarm"] is True and out["first_alarm"] == 2 and out["since_night"] == 2
    # more nights than the threshold: the bound is capped at 1
    small = Detector(0.5, 1, np.array([0.0, 0.0, 0.0]), np.array([1, 2, 3], dtype=np.intp)).summary()
    assert small["threshold"] == 2.0 and small["false_alarm_bound"] == 1.0 and small["alarm"] is False
    assert small["first_alarm"] is None and small["since_night"] == 3 and small["max_evidence"] == 1.0
    empty = Detector(0.1, 10, np.array([], dtype=np.float64), np.array([], dtype=np.intp)).summary()
    assert empty["nights"] == 0 and empty["false_alarm_bound"] == 0.0 and empty["evidence_by_night"] == []
    assert empty["evidence"] is None and empty["max_evidence"] is None and empty["since_night"] is None


def _night_statistics_by_loops(calibration: list[float], nights: list[list[float]], seed: int) -> np.ndarray:
    """Each item's smoothed p-value counted among every item before it and itself, with the tie-breaking uniforms
    seeded by (seed, night, 1), nights numbered from 1."""
    seen = list(calibration)
    rows = []
    for t, night in enumerate(nights, start=1):
        u = np.random.default_rng([seed, t, 1]).uniform(size=len(night))
        p = []
        for i, a in enumerate(night):
            before = seen + night[: i + 1]
            p.append((sum(b > a for b in before) + u[i] * sum(b == a for b in before)) / len(before))
        rows.append(bet_statistics(np.array(p)))
        seen += night
    return np.array(rows)


def _log_evidence_by_loops(statistics: np.ndarray) -> tuple[list[float], list[int]]:
    """log R_T = log sum_{s <= T} M^(s)_T, each start's statistics summed night by night; the start with most."""
    log_r, since = [], []
    for t in range(1, len(statistics) + 1):
        logs = [float(mixture_log_lr(statistics[s - 1 : t].sum(axis=0))) for s in range(1, t + 1)]
        log_r.append(math.log(math.fsum(math.exp(v) for v in logs)))
        since.append(1 + max(range(t), key=lambda k: logs[k]))
    return log_r, since


def test_the_detector_of_tied_nights_against_loops() -> None:
    """Mutation testing's survivors: the nights' statistics (nights counted from 1, each night's own uniforms, the
    default seed 0), log R_T and the start night with most evidence, recomputed by loops; the seed reaches the
    tie-breaking (integer scores, all tied: the uniforms decide); `since` is an integer array."""
    rng = np.random.default_rng(2)
    calibration = rng.integers(0, 5, 40).astype(float).tolist()
    nights = [rng.integers(0, 5, 25).astype(float).tolist(), rng.integers(1, 6, 25).astype(float).tolist(),
              rng.integers(2, 6, 25).astype(float).tolist()]
    want = _night_statistics_by_loops(calibration, nights, seed=0)
    got = night_statistics(calibration, [np.array(n) for n in nights])
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    log_r, since = shiryaev_roberts(got)
    want_r, want_since = _log_evidence_by_loops(want)
    assert np.allclose(log_r, want_r, rtol=1e-9) and since.tolist() == want_since and since.dtype == np.intp
    det = monitor(calibration, [np.array(n) for n in nights], level=0.05)
    assert np.allclose(det.log_evidence, want_r, rtol=1e-9)
    other = monitor(calibration, [np.array(n) for n in nights], level=0.05, seed=3)
    assert np.allclose(other.log_evidence, _log_evidence_by_loops(
        _night_statistics_by_loops(calibration, nights, seed=3))[0], rtol=1e-9)
    assert not np.allclose(other.log_evidence, det.log_evidence)


def test_night_order_is_the_seeded_permutation_as_floats() -> None:
    """Mutation testing's survivors: a night's order is the permutation seeded by (seed, night), as floats."""
    values = np.arange(10)
    got = night_order(values, 4, 7)
    assert got.dtype == np.float64
    assert got.tolist() == [float(i) for i in np.random.default_rng([7, 4]).permutation(10)]


def test_streams_are_summed_each_on_its_own_scale() -> None:
    """Mutation testing's survivor: with leading axes (independent streams, as in a simulation) each stream's
    log-sum-exp is shifted by its own maximum; a stream of overwhelming evidence (log R near 1.9e4) beside a healthy
    one leaves the healthy one's log R as it is alone (a shift by the overall maximum underflows it to -inf)."""
    rng = np.random.default_rng(0)
    alarm = np.stack([bet_statistics(np.full(2000, 1e-6)) for _ in range(2)])
    healthy = np.stack([bet_statistics(rng.uniform(size=2000)) for _ in range(2)])
    together, _ = shiryaev_roberts(np.stack([alarm, healthy]))
    alone, _ = shiryaev_roberts(healthy)
    assert np.isfinite(together).all() and together[1] == pytest.approx(alone, rel=1e-12)
