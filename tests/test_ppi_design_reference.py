"""Mutation testing's survivors of judgecp.stats.ppi_design (issue 37, docs/testing.md): each stratum's own
intervals and the summary's derived numbers, against scipy's t and normal intervals and the formulas by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from judgecp.stats.ppi import ppi_items


def _stratified(seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 90
    strata = np.array(["a", "b", "c"] * (n // 3))
    y = rng.normal(size=n) + (strata == "b") * 1.0
    f = y + rng.normal(scale=0.6, size=n) + 0.3
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
