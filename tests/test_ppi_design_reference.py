"""Mutation testing's survivors of judgecp.stats.ppi_design (issue 37, docs/testing.md), against scipy's t and
normal intervals and formulas worked by hand: each stratum's own intervals and the summary's derived numbers; the
building blocks (unit sums, the CR1 variance, the tuned and counted ``lam``, ppi-python's ``lam``, the quantile);
the stratified design's degrees of freedom, judge-only interval, refusals and per-stratum results; and
:func:`difference`'s defaults, degrees of freedom and report."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from judgecp.base.errors import InputError
from judgecp.stats.ppi import ppi_items
from judgecp.stats.ppi_design import (
    NO_PROXY,
    clustered_variance,
    design,
    difference,
    estimable,
    ppi_python_lambda,
    quantile,
    summarize,
    tuned_count,
    tuned_lambda,
    unit_sums,
)


def _stratified(seed: int = 3, n: int = 90, biased: tuple[str, ...] = ("a", "b", "c")) -> tuple[np.ndarray, ...]:
    """Three strata (b's labels shifted by 1), proxies ``y + noise`` with a bias of 0.3 in the ``biased`` strata,
    about 60% of the labels hidden (NaN)."""
    rng = np.random.default_rng(seed)
    strata = np.array(["a", "b", "c"] * (n // 3))
    y = rng.normal(size=n) + (strata == "b") * 1.0
    f = y + rng.normal(scale=0.6, size=n) + 0.3 * np.isin(strata, biased)
    y[rng.uniform(size=n) < 0.6] = np.nan  # unlabeled
    return y, f, strata


@pytest.mark.parametrize("conventions", ["small-sample", "ppi-python"])
def test_each_stratums_labeled_only_interval_is_the_t_interval_of_its_labels(conventions: str) -> None:
    """A stratum's labeled-only interval is its labels' mean +- t(1 - alpha/2, n_h - 1) s / sqrt(n_h) (small-sample)
    or the normal quantile with the ddof-0 deviation (ppi-python); its PPI interval uses the same quantile on its own
    standard error; its counts are its own."""
    y, f, strata = _stratified()
    alpha = 0.1
    out = ppi_items(y, f, strata=strata, alpha=alpha, conventions=conventions)
    for h in ("a", "b", "c"):
        yh = y[(strata == h) & ~np.isnan(y)]
        n_h = yh.size
        s = out["strata"][h]
        assert s["n_labeled"] == n_h and s["n_unlabeled"] == int(((strata == h) & np.isnan(y)).sum())
        if conventions == "small-sample":
            q, se = stats.t.ppf(1 - alpha / 2, n_h - 1), yh.std(ddof=1) / math.sqrt(n_h)
        else:
            q, se = stats.norm.ppf(1 - alpha / 2), yh.std(ddof=0) / math.sqrt(n_h)
        lo = s["labeled_only"]
        assert lo["mean"] == pytest.approx(yh.mean(), rel=1e-12)
        assert (lo["lower"], lo["upper"]) == pytest.approx((yh.mean() - q * se, yh.mean() + q * se), rel=1e-9)
        ppi = s["ppi"]
        assert ppi["upper"] - ppi["mean"] == pytest.approx(q * ppi["se"], rel=1e-9)


def test_the_summarys_derived_numbers() -> None:
    """Effective sample size n se(labeled)^2 / se(PPI)^2, the judge's bias as judge-only minus PPI mean, one common
    lambda reported (none with a lambda per stratum)."""
    y, f, strata = _stratified(5)
    out = ppi_items(y, f, strata=strata)
    est = out["estimate"]
    n = int((~np.isnan(y)).sum())
    assert out["effective_sample_size"] == pytest.approx(
        n * est["labeled_only"]["se"] ** 2 / est["ppi"]["se"] ** 2, rel=1e-12)
    assert out["effective_sample_size"] > n
    assert out["judge_bias"] == pytest.approx(est["judge_only"]["mean"] - est["ppi"]["mean"], rel=1e-12)
    assert isinstance(out["lambda"], float)
    assert ppi_items(y, f, strata=strata, stratum_lambda="per_stratum")["lambda"] is None


def _half_width_over_se(interval: dict[str, float]) -> float:
    return (interval["upper"] - interval["mean"]) / interval["se"]


def _sample(seed: int, n_labeled: int, n_unlabeled: int, slope: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Labels (NaN: unlabeled) and proxies ``slope * y + noise``."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n_labeled + n_unlabeled)
    f = slope * y + rng.normal(scale=0.5, size=y.size)
    y[n_labeled:] = np.nan
    return y, f


# -- the building blocks, by hand -----------------------------------------------------------------------------------


def test_quantile_at_the_fewest_degrees_of_freedom() -> None:
    """Mutation testing's survivors (docs/testing.md): Student's t with 1 degree of freedom at ``df = 1`` (the
    floor every caller applies), and ``df`` below 1 raised to 1, not to 2."""
    assert quantile(0.05, 1.0) == pytest.approx(stats.t.ppf(0.975, 1), rel=1e-12)  # 12.706...
    assert quantile(0.05, 0.5) == pytest.approx(stats.t.ppf(0.975, 1), rel=1e-12)
    assert quantile(0.05, 2.0) == pytest.approx(stats.t.ppf(0.975, 2), rel=1e-12)
    assert quantile(0.05) == pytest.approx(stats.norm.ppf(0.975), rel=1e-12)


def test_unit_sums_of_no_items_and_of_units_in_sorted_order() -> None:
    """Mutation testing's survivors (docs/testing.md): no items have no units (an empty result, 1-D and 2-D, not
    an error or a phantom unit); the sums are the units' in sorted order of their keys."""
    empty = unit_sums(np.array([], dtype=np.int64), np.array([], dtype=np.float64))
    assert empty.shape == (0,)
    assert unit_sums(np.array([], dtype=np.int64), np.zeros((0, 2))).shape == (0, 2)
    keys = np.array(["b", "a", "b", "c"])
    np.testing.assert_array_equal(unit_sums(keys, np.array([1.0, 2.0, 4.0, 8.0])), [2.0, 5.0, 8.0])
    np.testing.assert_array_equal(unit_sums(keys, np.array([[1.0, 0.0], [2.0, 1.0], [4.0, 0.0], [8.0, 3.0]])),
                                  [[2.0, 1.0], [5.0, 0.0], [8.0, 3.0]])


def test_clustered_variance_by_hand() -> None:
    """Mutation testing's survivors (docs/testing.md): CR1 by hand. ``z = 1, 2, 3, 6`` (mean 3): with clusters
    ``{1, 2}, {3, 6}`` the deviations' sums are -3 and 3, so ``18 / 4**2 * 2 / (2 - 1) = 2.25`` (the factor ``G /
    (G - 1)`` at 2 clusters); one cluster: its sum is 0 and the factor 1 (not a division by zero); every item its
    own: ``s2 / n = (14 / 3) / 4``."""
    z = np.array([1.0, 2.0, 3.0, 6.0])
    assert clustered_variance(z, np.array(["a", "a", "b", "b"])) == 2.25
    assert clustered_variance(z, np.array(["a", "a", "a", "a"])) == 0.0
    assert clustered_variance(z, np.array([0, 1, 2, 0])) == pytest.approx((1 + 1 + 0) / 16 * 3 / 2, rel=1e-12)
    assert clustered_variance(z, None) == pytest.approx(14 / 3 / 4, rel=1e-12)


def test_tuned_lambda_of_separate_columns_is_each_columns_own_slope() -> None:
    """Mutation testing's survivors (docs/testing.md): columns on separate rows (a lambda per stratum) make the least
    squares separate, ``lam_j = -(a . b_j) / (b_j . b_j)``, each clipped to [0, 1] when ``clip``: here 1.5 and -0.5
    unclipped (clipped: exactly 1 and 0, where bounded least squares by active sets lands; lsq_linear's default
    trust-region solver stops 1e-20 off), 0.25 and 0.75 inside; a zero column stays 0. The count of tuned lambdas
    is the nonzero columns'."""
    b = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 2.0, 0.0]])
    outside = np.array([-1.5, -1.5, 1.0, 1.0])  # -(a . b_1) / 2 = 1.5, -(a . b_2) / 8 = -0.5
    np.testing.assert_allclose(tuned_lambda(outside, b, clip=False), [1.5, -0.5, 0.0], rtol=1e-12, atol=1e-14)
    assert tuned_lambda(outside, b, clip=True).tolist() == [1.0, 0.0, 0.0]  # on the bounds, not 1e-20 off
    inside = np.array([-0.25, -0.25, -1.5, -1.5])  # 0.5 / 2 = 0.25, 6 / 8 = 0.75
    np.testing.assert_allclose(tuned_lambda(inside, b, clip=True), [0.25, 0.75, 0.0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tuned_lambda(inside, b, clip=False), [0.25, 0.75, 0.0], rtol=1e-12, atol=1e-14)
    assert tuned_count(b) == 2
    assert tuned_count(np.zeros((3, 2))) == 0
    assert tuned_count(np.array([[0.0, -1.0], [0.0, 0.0]])) == 1


def test_ppi_python_lambda_by_hand() -> None:
    """Mutation testing's survivors (docs/testing.md): ``cov(Y, f) / ((1 + n/N) s2_f)``: ``y = 1, 2, 3``, ``f = 1, 3,
    2``, one unlabeled ``g = 4``: ``cov = 1/3``, ``s2_f = 5/3`` (ddof 1 on all four), ``lam = (1/3) / (4 * 5/3) =
    0.05``; a constant proxy or no unlabeled item gives 0 (not a division by zero); a proxy against the labels is
    clipped to 0, a steep one to 1, and left as it is without ``clip``."""
    y, f = np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])
    assert ppi_python_lambda(y, f, np.array([4.0]), clip=True) == pytest.approx(0.05, rel=1e-12)
    assert ppi_python_lambda(y, np.full(3, 2.0), np.full(4, 2.0), clip=True) == 0.0
    assert ppi_python_lambda(y, np.full(3, 2.0), np.full(4, 2.0), clip=False) == 0.0
    assert ppi_python_lambda(y, f, np.array([]), clip=False) == 0.0
    # f = -y: cov = -2/3; all four proxies -1, -2, -3, 0: s2_f = 5/3; lam = (-2/3) / ((1 + 3) * 5/3) = -0.1
    against = -y
    assert ppi_python_lambda(y, against, np.array([0.0]), clip=True) == 0.0
    assert ppi_python_lambda(y, against, np.array([0.0]), clip=False) == pytest.approx(-0.1, rel=1e-12)
    # f = y / 10 and 300 unlabeled proxies like them: cov = (2/3) / 10, s2_f on all 303 near 2/300: lam near 10
    steep_f, g = y / 10, np.tile(y / 10, 100)
    s2_f = float(np.concatenate([steep_f, g]).var(ddof=1))
    expected = (2 / 30) / ((1 + 3 / 300) * s2_f)
    assert expected > 2
    assert ppi_python_lambda(y, steep_f, g, clip=False) == pytest.approx(expected, rel=1e-12)
    assert ppi_python_lambda(y, steep_f, g, clip=True) == 1.0


def test_estimable_keeps_items_without_a_proxy_from_two_labeled_units() -> None:
    """Mutation testing's survivors (docs/testing.md): 2 labeled units without a proxy are enough to keep them
    (every item kept); 1 is not (only the proxied items)."""
    nan = np.nan
    f = np.array([0.1, 0.2, 0.3, nan, nan, nan])
    two = np.array([1.0, nan, 0.0, 1.0, 0.0, nan])
    assert estimable(two, f, np.arange(6)).tolist() == [True] * 6
    one = np.array([1.0, nan, 0.0, 1.0, nan, nan])
    assert estimable(one, f, np.arange(6)).tolist() == [True, True, True, False, False, False]
    # two labeled items of one cluster are one unit
    assert estimable(two, f, np.array([0, 1, 2, 3, 3, 4])).tolist() == [True, True, True, False, False, False]


# -- one sample's design --------------------------------------------------------------------------------------------


def test_stratified_degrees_of_freedom_and_judge_only_interval() -> None:
    """Mutation testing's survivors (docs/testing.md): the PPI interval's degrees of freedom are the labeled items
    less the strata less the tuned lambdas (1 common, 3 per stratum); the judge-only interval is the mean of all
    the proxies (the strata's shares times their means), its variance ``sum_h N_h/(N_h - 1) SS_h / N^2``, its
    quantile Student's t with ``N - H`` degrees of freedom (the strata summed, not only the last)."""
    y, f, strata = _stratified(11, 120, biased=("c",))
    alpha = 0.1
    n_lab = int((~np.isnan(y)).sum())
    common = ppi_items(y, f, strata=strata, alpha=alpha)
    assert common["df"] == n_lab - 3 - 1
    assert _half_width_over_se(common["estimate"]["ppi"]) == pytest.approx(
        stats.t.ppf(1 - alpha / 2, n_lab - 4), rel=1e-9)
    assert ppi_items(y, f, strata=strata, alpha=alpha, stratum_lambda="per_stratum")["df"] == n_lab - 3 - 3
    judge = common["estimate"]["judge_only"]
    assert judge["mean"] == pytest.approx(float(f.mean()), rel=1e-12)
    ss = sum(h.size / (h.size - 1) * float(((h - h.mean()) ** 2).sum()) for h in (f[strata == s] for s in "abc"))
    assert judge["se"] == pytest.approx(math.sqrt(ss) / f.size, rel=1e-12)
    assert _half_width_over_se(judge) == pytest.approx(stats.t.ppf(1 - alpha / 2, f.size - 3), rel=1e-9)


def test_judge_only_interval_with_one_degree_of_freedom() -> None:
    """Mutation testing's survivors (docs/testing.md): two labeled items, no unlabeled ones: the judge-only interval
    has ``2 - 1 = 1`` degree of freedom (t_1, not a floor of 2), and so has the PPI interval (no lambda to tune);
    the judge-only mean is the proxies' mean."""
    alpha = 0.1
    out = summarize(design([1.0, 2.0], [0.5, 1.5]), alpha=alpha)
    judge, ppi = out["estimate"]["judge_only"], out["estimate"]["ppi"]
    assert judge["mean"] == 1.0 and judge["se"] == pytest.approx(0.5, rel=1e-12)  # sqrt(2 * 0.5 / 4)
    assert _half_width_over_se(judge) == pytest.approx(stats.t.ppf(1 - alpha / 2, 1), rel=1e-9)
    assert out["df"] == 1.0 and _half_width_over_se(ppi) == pytest.approx(stats.t.ppf(1 - alpha / 2, 1), rel=1e-9)


def test_the_fewest_labels_with_a_tuned_lambda_keep_one_degree_of_freedom() -> None:
    """Mutation testing's survivors (docs/testing.md): 2 labels and a tuned lambda leave ``2 - 1 - 1 = 0`` degrees of
    freedom, floored at 1 (not 2)."""
    y, f = _sample(4, 2, 20)
    out = summarize(design(y, f), alpha=0.1)
    assert out["df"] == 1.0
    assert _half_width_over_se(out["estimate"]["ppi"]) == pytest.approx(stats.t.ppf(0.95, 1), rel=1e-9)


def test_too_few_labels_refused_naming_the_stratum() -> None:
    """Mutation testing's survivors (docs/testing.md): one labeled item is refused as too few, naming the stratum
    when there are strata (not when there are none); a stratum with no labeled item is refused as such."""
    nan = np.nan
    with pytest.raises(InputError) as single:
        design([1.0, nan, nan], [0.1, 0.2, 0.3])
    assert str(single.value) == "PPI needs at least 2 labeled items in every stratum, got 1"
    y = np.array([1.0, 2.0, 0.0, nan, nan, nan])
    f = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    with pytest.raises(InputError) as one:
        design(y, f, strata=["a", "a", "b", "b", "a", "b"])
    assert str(one.value) == "PPI needs at least 2 labeled items in every stratum, got 1 (stratum 'b')"
    with pytest.raises(InputError) as none:
        design(y, f, strata=["a", "a", "a", "b", "a", "b"])
    assert str(none.value) == "PPI: stratum ['b'] has unlabeled items but no labeled ones"
    with pytest.raises(InputError) as clusters:
        design(y, f, keys=[0, 0, 0, 1, 2, 3])
    assert str(clusters.value) == "PPI needs at least 2 labeled clusters in every stratum, got 1"


def test_a_stratum_uses_its_proxies_only_from_enough_unlabeled_units() -> None:
    """Mutation testing's survivors (docs/testing.md): small-sample, a stratum with one unlabeled item is estimated
    by its labels' mean (lambda 0); ppi-python uses one unlabeled item: its estimate is ``mean(y) + lam (g -
    mean(f))`` with ppi-python's lam ``cov(Y, f) / ((1 + n/1) s2_f)`` (worked here by hand)."""
    y = np.array([1.0, 2.0, 3.0, 4.0, np.nan])
    f = np.array([1.0, 3.0, 2.0, 5.0, 6.0])
    small = ppi_items(y, f)
    assert small["lambda"] == 0.0
    assert small["estimate"]["ppi"] == small["estimate"]["labeled_only"]
    pp = ppi_items(y, f, conventions="ppi-python")
    # cov = mean((y - 2.5)(f - 2.75)) = (2.625 - 0.125 - 0.375 + 3.375) / 4 = 1.375; s2_f on 1, 3, 2, 5, 6: 4.3
    lam = 1.375 / ((1 + 4 / 1) * 4.3)
    assert pp["lambda"] == pytest.approx(lam, rel=1e-12)
    assert pp["estimate"]["ppi"]["mean"] == pytest.approx(2.5 + lam * (6.0 - 2.75), rel=1e-12)


def test_a_constant_proxy_that_rounds_is_not_tuned() -> None:
    """Mutation testing's survivors (docs/testing.md): a constant proxy (0.1, whose means round off 0.1) corrects
    nothing: lambda 0, the PPI interval is the labels' own, with ``n - 1`` degrees of freedom (no lambda tuned
    on the rounding residue)."""
    y, _ = _sample(7, 10, 30)
    f = np.full(y.size, 0.1)
    assert float(f[:10].mean()) != 0.1 or float(f[10:].mean()) != 0.1  # the residue this is about
    out = ppi_items(y, f)
    assert out["lambda"] == 0.0 and out["df"] == 9
    assert out["estimate"]["ppi"] == out["estimate"]["labeled_only"]


def test_one_stratum_per_stratum_is_the_common_lambda() -> None:
    """Mutation testing's survivors (docs/testing.md): a lambda per stratum with one proxied stratum (with or
    without a no-proxy stratum beside it) is one lambda: the same result as the common lambda, lambda reported."""
    y, f = _sample(8, 30, 60)
    y[85:] = 1.0  # 5 labeled items without a proxy
    f[85:] = np.nan
    for proxied_only in (False, True):
        yy, ff = (y[:85], f[:85]) if proxied_only else (y, f)
        per = ppi_items(yy, ff, stratum_lambda="per_stratum")
        assert isinstance(per["lambda"], float)
        assert per == ppi_items(yy, ff)


def test_summary_default_clip_and_strata_without_a_lambda() -> None:
    """Mutation testing's survivors (docs/testing.md): ``summarize`` clips the tuned lambda by default (a proxy
    against the labels: 0); a stratum without unlabeled items, and the no-proxy stratum, report lambda 0 and their
    labels' mean as their PPI estimate."""
    y, f = _sample(9, 30, 60, slope=-1.0)
    d = design(y, f)
    assert summarize(d, alpha=0.1)["lambda"] == 0.0
    assert summarize(d, alpha=0.1, clip=False)["lambda"] < 0
    y2, f2, strata = _stratified(12, 120, biased=("c",))
    y2[strata == "c"] = np.arange(40.0)  # stratum c: every item labeled
    f2[:6] = np.nan  # six items without a proxy (labeled: y2[0], y2[3] are stratum a's and c's)
    y2[:6] = [1.0, 2.0, 4.0, 0.0, 5.0, 7.0]
    res = summarize(design(y2, f2, strata=strata), alpha=0.1)["_strata"]
    for name in ("c", NO_PROXY):
        rows = (strata == name) & ~np.isnan(f2) if name == "c" else np.isnan(f2)
        assert res[name]["lambda"] == 0.0
        assert res[name]["ppi"]["mean"] == pytest.approx(float(y2[rows].mean()), rel=1e-12)
        assert res[name]["ppi"] == res[name]["labeled_only"]
    assert res["a"]["lambda"] > 0


# -- two samples' difference ----------------------------------------------------------------------------------------


def _pair(n_a: int, n_b: int, slope: float = 1.0, **kw: Any) -> tuple[Any, Any]:
    ya, fa = _sample(21, n_a, 40, slope)
    yb, fb = _sample(22, n_b, 40, slope)
    return (design(ya, fa, keys=np.arange(ya.size), **kw),
            design(yb, fb, keys=np.arange(1000, 1000 + yb.size), **kw))


def test_difference_clips_lambda_by_default() -> None:
    """Mutation testing's survivors (docs/testing.md): proxies against the labels: the difference's tuned lambdas are
    clipped to 0 by default (the labeled-only difference), negative without ``clip``."""
    da, db = _pair(30, 30, slope=-1.0)
    default = difference(da, db, alpha=0.1)
    assert default == difference(da, db, alpha=0.1, clip=True)
    assert default["lambda"] == {"a": 0.0, "b": 0.0}
    assert (default["ppi"]["mean"], default["ppi"]["se"]) == (default["labeled_only"]["mean"],
                                                                default["labeled_only"]["se"])
    unclipped = difference(da, db, alpha=0.1, clip=False)["lambda"]
    assert unclipped["a"] < 0 and unclipped["b"] < 0


def test_difference_degrees_of_freedom_are_the_smaller_samples() -> None:
    """Mutation testing's survivors (docs/testing.md): each sample's labels less 1 less its tuned lambda, the smaller
    of the two (A's or B's), floored at 1 (2 labels: 0); ``None`` with ppi-python's normal quantile."""
    for n_a, n_b in ((6, 12), (12, 6)):
        diff = difference(*_pair(n_a, n_b), alpha=0.1)
        assert diff["df"] == min(n_a, n_b) - 2
        assert _half_width_over_se(diff["ppi"]) == pytest.approx(stats.t.ppf(0.95, min(n_a, n_b) - 2), rel=1e-9)
        assert diff["labeled_only"]["se"] > 0
        assert _half_width_over_se(diff["labeled_only"]) == pytest.approx(
            stats.t.ppf(0.95, min(n_a, n_b) - 1), rel=1e-9)
    assert difference(*_pair(2, 12), alpha=0.1)["df"] == 1.0
    pp = difference(*_pair(6, 12, conventions="ppi-python"), alpha=0.1)
    assert pp["df"] is None
    assert _half_width_over_se(pp["ppi"]) == pytest.approx(stats.norm.ppf(0.95), rel=1e-9)


def test_difference_reports_a_lambda_only_when_each_sample_has_one() -> None:
    """Mutation testing's survivors (docs/testing.md): with a lambda per stratum (2 strata: 2 columns each) no single
    lambda is reported for either sample; with one common lambda each, both are."""
    strata = np.array(["x", "y"] * 40)  # each stratum: 20 labeled, 20 unlabeled items
    ya, fa = _sample(31, 40, 40)
    yb, fb = _sample(32, 40, 40)
    per = {k: design(v[0], v[1], strata=strata, keys=np.arange(80) + k * 100, stratum_lambda="per_stratum")
           for k, v in ((0, (ya, fa)), (1, (yb, fb)))}
    assert difference(per[0], per[1], alpha=0.1)["lambda"] == {"a": None, "b": None}
    common = {k: design(v[0], v[1], strata=strata, keys=np.arange(80) + k * 100)
              for k, v in ((0, (ya, fa)), (1, (yb, fb)))}
    lam = difference(common[0], common[1], alpha=0.1)["lambda"]
    assert isinstance(lam["a"], float) and isinstance(lam["b"], float)
