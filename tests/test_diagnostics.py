"""Judge diagnostics on hand-computed cases."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from judgecp.base.scale import LikertScale
from judgecp.stats.coverage import informativeness
from judgecp.stats.diagnostics import confusion_matrix, point_metrics, ranking_scoring_gap

SCALE = LikertScale()


def test_point_metrics_by_hand() -> None:
    judge = np.array([1, 2, 3, 5, 5, 4])
    human = np.array([1, 3, 3, 3, 5, 5])
    p = point_metrics(judge, human, SCALE)
    assert p["exact_accuracy"] == pytest.approx(3 / 6)
    assert p["within1_accuracy"] == pytest.approx(5 / 6)
    assert p["within2_accuracy"] == 1.0
    assert p["mae"] == pytest.approx((0 + 1 + 0 + 2 + 0 + 1) / 6)
    assert p["bias"] == pytest.approx((0 - 1 + 0 + 2 + 0 - 1) / 6)
    assert p["bias_by_label"] == {"1": 0.0, "2": None, "3": pytest.approx(1 / 3), "4": None, "5": -0.5}
    assert p["pearson"] == pytest.approx(np.corrcoef(judge, human)[0, 1])


def test_constant_scores_have_no_correlation() -> None:
    p = point_metrics(np.full(5, 3), np.array([1, 2, 3, 4, 5]), SCALE)
    assert p["pearson"] is None and p["spearman"] is None and p["kendall"] is None


def test_overconfidence() -> None:
    P = np.array([[0.995, 0.005, 0, 0, 0], [0.9995, 0.0005, 0, 0, 0], [0.5, 0.5, 0, 0, 0]])
    p = point_metrics([1, 1, 1], [1, 1, 2], SCALE, P)
    assert p["overconfident_99"] == pytest.approx(2 / 3) and p["overconfident_999"] == pytest.approx(1 / 3)


def test_confusion_rows_are_ground_truth() -> None:
    cm = confusion_matrix([1, 2, 2, 5], [1, 1, 2, 4], SCALE)
    assert cm["counts"][0] == [1, 1, 0, 0, 0]
    assert cm["counts"][3] == [0, 0, 0, 0, 1]
    assert cm["within1_by_label"][0] == 1.0 and cm["within1_by_label"][2] is None


def test_ranking_scoring_gap_eq7() -> None:
    # ChartQA in the paper: rho .507, width 3.0794 -> RSG .2763
    assert ranking_scoring_gap(0.5065, 3.0794, SCALE) == pytest.approx(0.2763, abs=1e-4)
    assert ranking_scoring_gap(None, 3.0, SCALE) is None


def test_informativeness_bins() -> None:
    assert informativeness(np.array([0, 1, 1.5, 3, 3.5, 4])) == {
        "decisive": pytest.approx(2 / 6), "moderate": pytest.approx(2 / 6), "uninformative": pytest.approx(2 / 6)}


def test_counted_ranks_and_spearman_are_scipys() -> None:
    """average_ranks counts half-integer data instead of sorting; the ranks and Spearman's rho
    must be exactly scipy's (rankdata, spearmanr), and other data falls back to rankdata."""
    from scipy import stats

    from judgecp.stats.diagnostics import average_ranks, correlation

    rng = np.random.default_rng(0)
    for a in (rng.integers(1, 6, 1000).astype(float), rng.integers(0, 11, 5000) / 2, rng.normal(size=300),
              np.array([3.0]), np.array([1.5, 1.5, 2.0]), np.array([1e9, -1e9, 0.5])):
        assert np.array_equal(average_ranks(a), stats.rankdata(a))
    # sorted in place: continuous data with ties of every length, infinities, and NaN (scipy's own)
    mixed = np.concatenate([rng.normal(size=3000), np.round(rng.normal(size=3000), 1), [np.inf, -np.inf, np.inf]])
    for a in (rng.permutation(mixed), np.repeat(rng.normal(size=50), rng.integers(1, 30, 50)), np.full(7, 0.3),
              rng.normal(size=2) + 0.1, np.array([np.nan, 1.0, 2.0])):
        assert np.array_equal(average_ranks(a), stats.rankdata(a), equal_nan=True)
    for _ in range(20):
        a, b = rng.normal(size=2000), np.round(rng.normal(size=2000), 1)
        assert correlation("spearman", a, b) == float(stats.spearmanr(a, b)[0])
    for _ in range(20):
        a = rng.integers(1, 6, 2000).astype(float)
        b = np.round(a + rng.normal(size=2000)) / 2
        assert correlation("spearman", a, b) == float(stats.spearmanr(a, b)[0])


def test_ranks_checked_a_block_at_a_time_and_written_into_a_column(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small blocks: data that stops being half-integer, or finite, after the first block is still ranked
    as rankdata ranks it, and ranks written into a matrix column are the same numbers."""
    from scipy import stats

    import judgecp.stats.diagnostics as diagnostics

    monkeypatch.setattr(diagnostics, "RANK_BLOCK", 64)
    rng = np.random.default_rng(1)
    halves = rng.integers(2, 11, 500) / 2
    late_fraction, late_nan, late_huge = halves.copy(), halves.copy(), halves.copy()
    late_fraction[300] = 2.3
    late_nan[400] = np.nan
    late_huge[450] = 1e308  # finite, but twice it is not: rankdata
    for a in (halves, late_fraction, late_nan, late_huge, rng.normal(size=500)):
        expected = stats.rankdata(a)
        assert np.array_equal(diagnostics.average_ranks(a), expected, equal_nan=True)
        matrix = np.zeros((a.size, 2))
        diagnostics.average_ranks(a, out=matrix[:, 1])
        assert np.array_equal(matrix[:, 1], expected, equal_nan=True) and not matrix[:, 0].any()


def test_in_place_pearson_is_scipys() -> None:
    """diagnostics.pearson does scipy's steps in place (two temporaries instead of about five); its r must
    be scipy.stats.pearsonr's, exactly, for normal, integer, half-integer, huge, tiny, offset and 2-row data."""
    from scipy import stats

    from judgecp.stats.diagnostics import correlation, pearson

    rng = np.random.default_rng(3)
    for n in (2, 3, 17, 1000, 50_001):
        normal = rng.normal(size=n)
        columns = [
            (normal, normal * 0.3 + rng.normal(size=n)),
            (rng.integers(1, 6, n).astype(float), rng.integers(1, 6, n).astype(float)),
            (rng.integers(2, 11, n) / 2.0, -3.0 * rng.integers(2, 11, n) + 1.0),
            (rng.normal(size=n) * 1e200, rng.normal(size=n) * 1e-200),
            (rng.normal(size=n) + 1e8, rng.normal(size=n)),
        ]
        for a, b in columns:
            if np.ptp(a) == 0 or np.ptp(b) == 0:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # scipy's near-constant warning for the offset column
                expected = float(stats.pearsonr(a, b)[0])
            assert pearson(a, b) == expected
            assert correlation("pearson", a, b) == expected
    assert pearson(np.array([1.0, 2.0]), np.array([5.0, 3.0])) == -1.0  # two rows: exactly +-1, as scipy


def test_pearson_without_numpy_vecdot(monkeypatch: pytest.MonkeyPatch) -> None:
    """numpy 1.x (supported: numpy>=1.24) has no vecdot; pearson then takes the dot product with np.dot."""
    from scipy import stats

    from judgecp.stats.diagnostics import pearson

    monkeypatch.delattr(np, "vecdot", raising=False)
    rng = np.random.default_rng(4)
    a = rng.normal(size=5000)
    b = 0.5 * a + rng.normal(size=5000)
    assert pearson(a, b) == pytest.approx(float(stats.pearsonr(a, b)[0]), rel=1e-12)
