"""The split-conformal building blocks and the contract every method keeps."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from judgecp.base.errors import InputError
from judgecp.base.scale import LikertScale
from judgecp.kinds.registry import build_method, method_classes
from judgecp.stats.conformal import (
    NotCalibratedError,
    Prediction,
    check_alpha,
    conformal_quantile,
    conformal_rank,
    min_calibration_size,
)
from tests.helpers import cheap_spec, judge_draw

SCALE = LikertScale()
ALL = list(method_classes())


def spec(name: str) -> str:
    return cheap_spec(name, epochs=5, rounds=5, levels=100)


# -- quantile ---------------------------------------------------------------


def test_quantile_is_the_ceil_rank_order_statistic() -> None:
    s = np.arange(1.0, 11.0)  # 1..10, n = 10
    assert conformal_quantile(s, 0.1) == 10.0  # ceil(11 * 0.9) = 10
    assert conformal_quantile(s, 0.2) == 9.0  # ceil(11 * 0.8) = 9
    assert conformal_quantile(s[::-1], 0.5) == 6.0  # ceil(5.5) = 6, order does not matter


def test_rank_survives_float_rounding() -> None:
    # (9 + 1) * (1 - 0.1) is 9.000000000000002 in floating point
    assert conformal_rank(9, 0.1) == 9
    assert conformal_quantile(np.arange(9.0), 0.1) == 8.0


def test_too_few_points_give_infinity() -> None:
    assert conformal_quantile(np.arange(8.0), 0.1) == math.inf
    assert conformal_quantile([], 0.1) == math.inf
    assert min_calibration_size(0.1) == 9
    assert min_calibration_size(0.05) == 19


def test_min_calibration_size_is_the_smallest_finite_rank_by_search() -> None:
    """The closed form's start and the two correcting loops (mutation testing, docs/testing.md): against a plain
    upward search for the smallest n with ceil((n + 1)(1 - alpha)) <= n, counted here with exact rationals (no
    float, no judgecp code), at levels whose answer is 1, 2 or a few hundred; and a tiny level answers at once
    with 1/alpha to the 1e-9 the rank's tolerance takes off (a start of 1 would count for 1e20 steps)."""

    def search(alpha: float) -> int:
        a, n = Fraction(alpha), 1
        while math.ceil((n + 1) * (1 - a) - Fraction(1, 10**9)) > n:
            n += 1
        return n

    for alpha in (0.999, 0.6, 0.5, 0.4, 1 / 3, 0.26, 0.25, 0.2, 0.1, 0.05, 0.011, 0.01, 0.0033):
        got = min_calibration_size(alpha)
        assert type(got) is int and got == search(alpha), alpha
    assert min_calibration_size(1e-20) == pytest.approx(1e20 * (1 - 1e-9), rel=1e-12)
    # From 2**52 on float ranks no longer count by ones: the exact closed form is the answer, an int (the first
    # level is the one whose closed form is exactly 2**52; the float search answers far below it).
    for alpha in (2.2204460470298666e-16, 1.5e-16, 1e-17, 1e-20, 1e-300):
        got = min_calibration_size(alpha)
        assert type(got) is int and got == math.ceil((1 - Fraction(alpha) - Fraction(1e-9)) / Fraction(alpha))
    # Near alpha = 1 the rank of size 0 is 0 too; the smallest calibration set is still one item.
    assert min_calibration_size(1 - 1e-10) == 1 and conformal_rank(0, 1 - 1e-10) == 0
    # Below about 1e-7 the float rank and the rationals part ways and the loops step (down 1,988 and
    # 592,321 steps for the first two levels, up one for the other two: found by search); the answer
    # is still the smallest n whose rank fits.
    for alpha in (1.3128534416365096e-10, 1.2359228558422129e-11, 1.512518837911924e-08,
                  3.1645147997689536e-08):
        n = min_calibration_size(alpha)
        assert conformal_rank(n, alpha) <= n and conformal_rank(n - 1, alpha) > n - 1, alpha


def test_fit_size_splits_the_calibration_rows_as_documented() -> None:
    """``fit_size(n)``: ``round(fit_fraction * n)`` rows fit the model, kept within 1 .. n - 1 so that both parts
    have a row; 0 or 1 rows are given to the fit as they are (a method without a model fits on none). The table
    is worked by hand (Python's round: halves to even)."""
    expected = {0.5: {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 2, 7: 4}, 0.1: {2: 1, 3: 1, 9: 1, 15: 2},
                0.9: {2: 1, 3: 2, 9: 8, 30: 27}}
    for fraction, table in expected.items():
        method = method_classes()["cqr"](alpha=0.1, fit_fraction=fraction)
        assert {n: method.fit_size(n) for n in table} == table, fraction
    assert method_classes()["lac"](alpha=0.1).fit_size(100) == 0


@pytest.mark.parametrize("fraction", [0.0, 1.0, 1.5, -0.2])
def test_fit_fraction_outside_the_open_unit_interval_is_an_error(fraction: float) -> None:
    X, y = judge_draw(40, np.random.default_rng(0))
    with pytest.raises(InputError, match="fit_fraction"):
        method_classes()["cqr"](alpha=0.1, fit_fraction=fraction).calibrate(X, y)


def test_calibrate_conformalizes_on_the_rows_it_did_not_fit() -> None:
    """18 rows, half fitted: the 9 others set the threshold (no leak of the fitted rows into it), and 9 is exactly
    enough at alpha 0.1 (rank ceil(10 * 0.9) = 9 <= 9): a finite interval, not the flagged full range; 8 are not."""
    X, y = judge_draw(18, np.random.default_rng(1))
    method = method_classes()["naive"](alpha=0.1, predictor="regressor").calibrate(X, y)
    assert method.n_conformalize_ == 9 and not method.insufficient_
    pred = method.predict(X[:3])
    assert np.isfinite(pred.lower).all() and np.isfinite(pred.upper).all() and not pred.full_range.any()
    short = method_classes()["naive"](alpha=0.1, predictor="regressor").calibrate(X[:16], y[:16])
    assert short.n_conformalize_ == 8 and short.insufficient_ and short.model_skipped_
    full = short.predict(X[:3])  # no model was fitted: the whole scale, flagged, never the model's interval
    assert full.has_interval and full.full_range.all() and full.lower.shape == (3,)
    assert (full.lower == SCALE.minimum).all() and (full.upper == SCALE.maximum).all()
    sets = method_classes()["lac"](alpha=0.1, probabilities="recalibrated").calibrate(X[:16], y[:16])
    assert sets.model_skipped_ and sets.predict(X[:3]).sets.all() and sets.predict(X[:3]).full_range.all()


def test_nan_scores_are_an_error() -> None:
    with pytest.raises(ValueError, match="NaN"):
        conformal_quantile([0.1, float("nan"), 0.3], 0.1)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan"), "abc", None])
def test_alpha_outside_unit_interval(alpha: object) -> None:
    with pytest.raises(InputError, match="alpha"):
        check_alpha(alpha)  # type: ignore[arg-type]


# -- predictions ------------------------------------------------------------


def test_label_set_is_ceil_floor_and_expanded_is_floor_ceil() -> None:
    p = Prediction.from_interval([1.2, 0.2, 2.2, 3.0], [3.7, 6.0, 2.8, 3.0], SCALE)
    assert p.sets.tolist() == [
        [False, True, True, False, False],  # [1.2, 3.7] -> {2, 3}
        [True, True, True, True, True],  # clipped to [1, 5]
        [False, False, False, False, False],  # [2.2, 2.8] holds no label
        [False, False, True, False, False],  # a point interval on a label
    ]
    exp = p.expanded_sets()
    assert exp is not None
    assert exp[0].tolist() == [True, True, True, True, False]  # [1, 4]
    assert exp[2].tolist() == [False, True, True, False, False]  # [2, 3]
    assert p.lower[1] == 1 and p.upper[1] == 5


def test_label_set_has_exactly_the_interval_coverage() -> None:
    rng = np.random.default_rng(0)
    lo = rng.uniform(0, 5, 1000)
    hi = lo + rng.uniform(0, 3, 1000)
    y = rng.integers(1, 6, 1000).astype(float)
    p = Prediction.from_interval(lo, hi, SCALE)
    in_interval = (y >= p.lower) & (y <= p.upper)
    in_set = p.sets[np.arange(1000), SCALE.index(y)]
    np.testing.assert_array_equal(in_interval, in_set)


def test_infinite_bounds_are_flagged_full_range() -> None:
    p = Prediction.from_interval([-np.inf, 2.0], [np.inf, 3.0], SCALE)
    assert p.full_range.tolist() == [True, False]
    assert p.sets[0].all()


# -- the method contract ----------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_too_few_calibration_points_give_flagged_full_range(name: str) -> None:
    rng = np.random.default_rng(1)
    X, y = judge_draw(40, rng)
    m = build_method(spec(name), alpha=0.05, scale=SCALE, random_state=0)
    if m.fits_model:
        m.fit(X[:30], y[:30])
    m.conformalize(X[30:40], y[30:40])  # 10 points; alpha 0.05 needs 19
    assert m.insufficient_
    pred = m.predict(X[:7])
    assert pred.full_range.all() and pred.sets.all()
    if pred.has_interval:
        assert (pred.lower == 1).all() and (pred.upper == 5).all()


@pytest.mark.parametrize("name", ALL)
def test_same_random_state_same_predictions(name: str) -> None:
    rng = np.random.default_rng(2)
    X, y = judge_draw(400, rng)
    a = build_method(spec(name), alpha=0.1, scale=SCALE, random_state=3).calibrate(X[:300], y[:300]).predict(X[300:])
    b = build_method(spec(name), alpha=0.1, scale=SCALE, random_state=3).calibrate(X[:300], y[:300]).predict(X[300:])
    np.testing.assert_array_equal(a.sets, b.sets)
    np.testing.assert_array_equal(a.lower, b.lower)


@pytest.mark.parametrize("name", ALL)
def test_stages_in_order(name: str) -> None:
    rng = np.random.default_rng(3)
    X, y = judge_draw(100, rng)
    m = build_method(spec(name), alpha=0.1, scale=SCALE)
    with pytest.raises(NotCalibratedError):
        m.predict(X)
    if m.fits_model:
        with pytest.raises(NotCalibratedError, match="fit"):
            m.conformalize(X, y)


@pytest.mark.parametrize("name", ALL)
def test_bad_inputs_are_clear_errors(name: str) -> None:
    rng = np.random.default_rng(4)
    X, y = judge_draw(60, rng)
    m = build_method(spec(name), alpha=0.1, scale=SCALE)
    with pytest.raises(InputError, match="off the scale"):
        m.calibrate(X, np.where(np.arange(60) == 5, 6.0, y))
    X_nan = X.copy()
    X_nan[3, 2] = np.nan
    with pytest.raises(InputError, match="NaN"):
        m.calibrate(X_nan, y)
    with pytest.raises(InputError, match="5 score-token logprobs"):
        m.calibrate(X[:, :4], y)
    with pytest.raises(InputError, match="rows"):
        m.calibrate(X, y[:-1])


@pytest.mark.parametrize("name", [n for n in ALL if method_classes()[n].output == "set"])
def test_set_methods_need_integer_labels(name: str) -> None:
    X, y = judge_draw(60, np.random.default_rng(5))
    with pytest.raises(InputError, match="integer"):
        build_method(spec(name), alpha=0.1, scale=SCALE).calibrate(X, y + 0.5 * (y < 5))


#: Methods that read only the judge's probabilities: extra columns change nothing.
PROBABILITY_ONLY = {"naive", "ordinal_aps", "lac", "aps", "raps", "ordinal_set", "margin"}
#: Methods whose fitted model changes with them here (the others' models, fitted on 75 rows, barely split on them).
FEATURE_MODELS = {"chr", "lvd", "boosted_lcp"}


@pytest.mark.parametrize("name", ALL)
def test_extra_feature_columns_are_accepted(name: str) -> None:
    """Multi-judge fusion: columns after the K logprobs feed the fitted models, and only them."""
    rng = np.random.default_rng(6)
    X, y = judge_draw(200, rng)
    X2, _ = judge_draw(200, rng)
    fused = np.hstack([X, X2])

    def predict(X: np.ndarray) -> Prediction:
        return (
            build_method(spec(name), alpha=0.1, scale=SCALE, random_state=0)
            .calibrate(X[:150], y[:150])
            .predict(X[150:])
        )

    pred, alone = predict(fused), predict(X)
    assert pred.sets.shape == (50, 5) and pred.sets.any(axis=1).all()
    same = bool((pred.sets == alone.sets).all()) and (
        not pred.has_interval or (np.array_equal(pred.lower, alone.lower) and np.array_equal(pred.upper, alone.upper)))
    if name in PROBABILITY_ONLY:
        assert same, f"{name} reads only probabilities, yet the extra columns changed its prediction"
    if name in FEATURE_MODELS:
        assert not same, f"{name}'s model did not see the extra columns"


def test_other_scales() -> None:
    scale = LikertScale(0, 10)
    rng = np.random.default_rng(7)
    X, y = judge_draw(400, rng, scale=scale)
    for name in ("naive", "lac", "chr(n_levels=100)", "ordinal_set"):
        pred = build_method(name, alpha=0.1, scale=scale, random_state=0).calibrate(X[:300], y[:300]).predict(X[300:])
        assert pred.sets.shape == (100, 11)
        assert pred.sets[np.arange(100), scale.index(y[300:])].mean() > 0.75


def test_unknown_method_and_bad_spec() -> None:
    with pytest.raises(InputError, match="unknown method 'nope'"):
        build_method("nope", alpha=0.1, scale=SCALE)
    with pytest.raises(InputError, match="probabilities"):
        build_method("lac(probabilities=magic)", alpha=0.1, scale=SCALE)
    with pytest.raises(InputError, match="unexpected keyword"):
        build_method("naive(bogus=1)", alpha=0.1, scale=SCALE)
    with pytest.raises(InputError, match="cannot read"):
        build_method("lac(", alpha=0.1, scale=SCALE)


def test_recalibrated_probabilities_fit_a_model() -> None:
    m = build_method("lac(probabilities=recalibrated)", alpha=0.1, scale=SCALE)
    assert m.fits_model
    assert not build_method("lac", alpha=0.1, scale=SCALE).fits_model


def test_cqr_and_asymmetric_cqr_are_named_correctly() -> None:
    """The reference code swapped them: CQR corrects both ends by one quantile at alpha,
    the asymmetric variant each end separately at alpha/2."""
    rng = np.random.default_rng(8)
    X, y = judge_draw(2000, rng, continuous=True)
    sym = build_method("cqr", alpha=0.1, scale=SCALE, random_state=0).calibrate(X, y)
    asym = build_method("cqr_asym", alpha=0.1, scale=SCALE, random_state=0).calibrate(X, y)
    assert hasattr(sym, "correction_") and not hasattr(sym, "correction_lower_")
    assert hasattr(asym, "correction_lower_") and hasattr(asym, "correction_upper_")
    # same fitted quantile models (same seed and fit part), different corrections
    lo_s, _hi_s = sym.quantiles(X[:5])
    lo_a, _hi_a = asym.quantiles(X[:5])
    np.testing.assert_allclose(lo_s, lo_a)
    assert (asym.correction_lower_, asym.correction_upper_) != (sym.correction_, sym.correction_)


def test_min_calibration_size_where_float_ranks_drift_from_the_exact_ones() -> None:
    """At alpha near 1e-14 the float rank is off the exact one by up to 1e11 sizes: the old walk by ones did not
    return (docs/testing.md); the bisection gives the smallest size whose float rank fits."""
    import judgecp.stats.conformal as conformal

    rank = conformal.conformal_rank
    calls = 0

    def counted(n: int, alpha: float) -> int:
        nonlocal calls
        calls += 1
        if calls > 500:  # the old walk by ones made ~1e11 calls here: fail instead of hanging
            raise AssertionError("min_calibration_size walks instead of bisecting")
        return rank(n, alpha)

    for alpha in (2.764369719954072e-14, 1e-13, 3e-15):
        calls = 0
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(conformal, "conformal_rank", counted)
            n = conformal.min_calibration_size(alpha)
        assert type(n) is int and rank(n, alpha) <= n and rank(n - 1, alpha) > n - 1, alpha
