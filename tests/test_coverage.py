"""Every method holds its coverage promise on exchangeable data.

Split conformal gives, for n exchangeable calibration points and continuous
scores, E[coverage] in [1 - alpha, 1 - alpha + 1/(n+1)] (MAPIE's
``test_coverage_validity`` idea: many seeded splits, mean coverage tested
against the band). Tolerance: 4 standard errors of the mean over the
repetitions (two-sided p about 6e-5 per check, so the ~150 checks here have
a family-wise false-alarm rate below 1%); the seeds are fixed, so a pass
is reproducible.

Where scores tie (integer quantile predictions of CQR on integer labels,
CHR's level grid, deterministic ordinal APS whose last label always has mass
1) coverage may exceed the upper end: those cases test the lower end only,
as the theory promises nothing more.

Two designs:

* ``test_band_given_fit``: the method's model is fitted once on independent
  data, then conformalize + predict are repeated on fresh draws. The
  guarantee holds conditionally on the fit, so this isolates the conformal
  step with many repetitions.
* ``test_calibrate_end_to_end``: ``calibrate()`` as users call it (fit on
  part, conformalize on the rest), fewer repetitions. A method that fitted on
  the points that set its threshold would under-cover here;
  ``test_leaky_calibration_is_detected`` shows the check can fail.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from judgecp.base.scale import LikertScale
from judgecp.kinds.registry import build_method
from tests.helpers import cheap_spec, judge_draw, repeated_coverage

SCALE = LikertScale()


def fast(name: str) -> str:
    """Cheaper settings where the guarantee does not depend on them."""
    return cheap_spec(name, epochs=25, rounds=15, levels=200)


ALL = ["naive", "cqr", "cqr_asym", "chr", "lvd", "boosted_cqr", "boosted_lcp", "r2ccp",
       "ordinal_aps", "lac", "aps", "raps", "ordinal_set", "margin"]
INTERVAL = ["naive", "cqr", "cqr_asym", "chr", "lvd", "boosted_cqr", "boosted_lcp", "r2ccp"]
# Methods whose reported prediction is exactly {y : score <= threshold} with
# continuous scores. R2CCP reports the hull of its (possibly non-contiguous)
# grid set, a superset, so it is tested one-sided here and its exact set is
# tested two-sided in test_r2ccp_exact_set_band.
TWO_SIDED_DISCRETE = {"naive", "lvd", "boosted_lcp", "lac", "aps", "raps", "ordinal_set", "margin"}
TWO_SIDED_CONTINUOUS = {"naive", "cqr", "cqr_asym", "lvd", "boosted_cqr", "boosted_lcp"}
Z = 4.0


def upper_slack(name: str, n: int) -> float:
    # Asymmetric CQR corrects each side at alpha/2: miscoverage in [alpha - 2/(n+1), alpha].
    return (2.0 if name == "cqr_asym" else 1.0) / (n + 1)


def covered(method: Any, X: np.ndarray, y: np.ndarray) -> float:
    pred = method.predict(X)
    if pred.has_interval:
        return float(np.mean((y >= pred.lower) & (y <= pred.upper)))
    return float(np.mean(pred.sets[np.arange(y.size), SCALE.index(y)]))


def check_band(name: str, covs: list[float], alpha: float, n: int, two_sided: bool) -> None:
    c = np.asarray(covs)
    se = c.std(ddof=1) / np.sqrt(c.size)
    lo, hi = 1 - alpha, 1 - alpha + upper_slack(name, n)
    assert c.mean() >= lo - Z * se, f"{name}: mean coverage {c.mean():.4f} < {lo} - {Z}*{se:.4f}"
    if two_sided:
        assert c.mean() <= hi + Z * se, f"{name}: mean coverage {c.mean():.4f} > {hi:.4f} + {Z}*{se:.4f}"


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [0.1, 0.2])
@pytest.mark.parametrize("n", [100, 500])
@pytest.mark.parametrize("labels", ["integer", "continuous"])
@pytest.mark.parametrize("name", ALL)
def test_band_given_fit(name: str, labels: str, n: int, alpha: float) -> None:
    continuous = labels == "continuous"
    if continuous and name not in INTERVAL:
        pytest.skip("set methods need integer labels")
    reps, n_test = 150, 400
    rng = np.random.default_rng([ALL.index(name), n, int(alpha * 100), int(continuous)])
    method = build_method(fast(name), alpha=alpha, scale=SCALE, random_state=7)
    X_fit, y_fit = judge_draw(500, rng, continuous=continuous)
    method.fit(X_fit, y_fit)
    covs = []
    for _ in range(reps):
        Xc, yc = judge_draw(n, rng, continuous=continuous)
        Xt, yt = judge_draw(n_test, rng, continuous=continuous)
        method.conformalize(Xc, yc)
        covs.append(covered(method, Xt, yt))
    two_sided = name in (TWO_SIDED_CONTINUOUS if continuous else TWO_SIDED_DISCRETE)
    check_band(name, covs, alpha, n, two_sided)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_calibrate_end_to_end(name: str) -> None:
    alpha, reps = 0.1, 25
    rng = np.random.default_rng([ALL.index(name), 99])
    covs = repeated_coverage(fast(name), lambda n: judge_draw(n, rng), covered, n_cal=600, n_test=1000,
                             alpha=alpha, reps=reps, scale=SCALE)
    n_conf = 600 if not build_method(fast(name), alpha=alpha, scale=SCALE).fits_model else 300
    check_band(name, list(covs), alpha, n_conf, two_sided=False)


@pytest.mark.slow
@pytest.mark.parametrize("labels", ["integer", "continuous"])
def test_r2ccp_exact_set_band(labels: str) -> None:
    """R2CCP's conformal set (before taking the hull) has the two-sided band: the
    finite-sample quantile is right (the PyPI package's is not)."""
    continuous = labels == "continuous"
    alpha, n, reps = 0.2, 200, 150
    rng = np.random.default_rng([3, int(continuous)])
    method = build_method(fast("r2ccp"), alpha=alpha, scale=SCALE, random_state=7)
    method.fit(*judge_draw(500, rng, continuous=continuous))
    covs = []
    for _ in range(reps):
        method.conformalize(*judge_draw(n, rng, continuous=continuous))
        Xt, yt = judge_draw(400, rng, continuous=continuous)
        s = method.grid_scores(Xt)[np.arange(yt.size), method._nearest(yt)]
        covs.append(float(np.mean(s <= method.threshold_)))
    check_band("r2ccp-set", covs, alpha, n, two_sided=True)


def test_leaky_calibration_is_detected() -> None:
    """Conformalizing on the points the model was fitted on under-covers; the check above catches it."""
    rng = np.random.default_rng(5)
    covs = []
    for r in range(25):
        method = build_method("naive(predictor=regressor)", alpha=0.1, scale=SCALE, random_state=r)
        Xc, yc = judge_draw(300, rng)
        Xt, yt = judge_draw(1000, rng)
        method.fit(Xc, yc).conformalize(Xc, yc)  # the leak
        covs.append(covered(method, Xt, yt))
    with pytest.raises(AssertionError, match="mean coverage"):
        check_band("leaky", covs, 0.1, 300, two_sided=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["naive", "lac", "chr"])
def test_mondrian_group_conditional_coverage(name: str) -> None:
    """Mondrian calibration covers within every group, including the hard one."""
    from judgecp.stats.methods import Mondrian

    alpha, reps = 0.1, 60
    rng = np.random.default_rng(11)
    per_group: dict[int, list[float]] = {0: [], 1: []}
    for r in range(reps):
        Xs, ys, gs = [], [], []
        for g, shift in ((0, 0.0), (1, 1.5)):
            X, y = judge_draw(300, rng)
            # group 1: a much noisier judge (its logprobs are shuffled against the labels half the time)
            if shift:
                flip = rng.random(y.size) < 0.5
                X[flip] = X[rng.permutation(np.flatnonzero(flip))]
            Xs.append(X)
            ys.append(y)
            gs.append(np.full(y.size, g))
        X, y, groups = np.vstack(Xs), np.concatenate(ys), np.concatenate(gs)
        perm = rng.permutation(y.size)
        cal, test = perm[:300], perm[300:]
        m = Mondrian(lambda i, r=r: build_method(fast(name), alpha=alpha, scale=SCALE, random_state=r * 10 + i))
        pred = m.calibrate(X[cal], y[cal], groups[cal]).predict(X[test], groups[test])
        hit = pred.sets[np.arange(test.size), SCALE.index(y[test])]
        for g in (0, 1):
            per_group[g].append(float(hit[groups[test] == g].mean()))
    for g, covs in per_group.items():
        c = np.asarray(covs)
        se = c.std(ddof=1) / np.sqrt(c.size)
        assert c.mean() >= 1 - alpha - Z * se, f"group {g}: {c.mean():.4f}"


def test_pooled_calibration_misses_the_hard_group() -> None:
    """Without Mondrian the noisy group under-covers: the reason the wrapper exists."""
    alpha = 0.1
    rng = np.random.default_rng(12)
    covs = []
    for _r in range(40):
        X0, y0 = judge_draw(400, rng)
        X1, y1 = judge_draw(400, rng)
        X1 = X1[rng.permutation(y1.size)]  # group 1: logprobs unrelated to labels
        X, y = np.vstack([X0, X1]), np.concatenate([y0, y1])
        g = np.r_[np.zeros(400), np.ones(400)]
        perm = rng.permutation(800)
        cal, test = perm[:400], perm[400:]
        m = build_method("naive", alpha=alpha, scale=SCALE).calibrate(X[cal], y[cal])
        pred = m.predict(X[test])
        hit = pred.sets[np.arange(test.size), SCALE.index(y[test])]
        covs.append(float(hit[g[test] == 1].mean()))
    assert np.mean(covs) < 1 - alpha - 0.02


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["lvd(max_anchors=50)", "cqr(max_fit_rows=60)"])
def test_bounded_fits_keep_the_guarantee(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """LVD's kernel anchors and CQR's fit rows are capped at scale (never an n x n kernel); the cap
    subsamples what the model learns from, not what calibrates, so coverage holds as before."""
    from judgecp.stats.methods import quantile_regression

    fit_rows: list[int] = []
    real = quantile_regression.quantile_regressor

    def spy(kind: str, quantile: float, random_state: int) -> Any:
        model = real(kind, quantile, random_state)
        fit = model.fit
        model.fit = lambda F, y: (fit_rows.append(len(y)), fit(F, y))[1]
        return model

    monkeypatch.setattr(quantile_regression, "quantile_regressor", spy)
    alpha, reps = 0.1, 25
    rng = np.random.default_rng([17, len(spec)])
    covs = []
    for r in range(reps):
        method = build_method(spec, alpha=alpha, scale=SCALE, random_state=r)
        Xc, yc = judge_draw(600, rng)
        Xt, yt = judge_draw(1000, rng)
        method.calibrate(Xc, yc)
        covs.append(covered(method, Xt, yt))
    if spec.startswith("lvd"):
        assert method.Z_.shape[0] == 50  # the fit part (300 rows) subsampled to the anchors
    else:
        assert fit_rows and set(fit_rows) == {60}  # every quantile model fitted on the capped rows
    check_band(spec, covs, alpha, 300, two_sided=False)
