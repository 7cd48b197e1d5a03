"""Every method holds its coverage promise on exchangeable data.

Split conformal gives, for n exchangeable calibration points and continuous
scores, coverage in ``[1 - alpha, 1 - alpha + 1/(n+1))`` (Vovk et al. 2005;
Lei et al. 2018, Theorem 2.2): the held-out point's score is equally likely
to take any of the n + 1 ranks, and it is covered when its rank is at most
``k = ceil((n+1)(1-alpha))``.

* ``test_exact_coverage_given_fit`` checks that promise without sampling
  error. The method's model is fitted once on independent data; then n + 1
  exchangeable points are drawn and each in turn is held out: the method is
  conformalized on the other n and predicts the held-out one. Whatever the
  data, when the n + 1 scores are distinct exactly ``k`` of the n + 1 are
  covered (the held-out score is covered iff it is among the k smallest of
  the n + 1), so the fraction covered lies in ``[1 - alpha, 1 - alpha +
  1/(n+1))``: a deterministic identity, false-failure probability 0, and the
  average over the n + 1 hold-outs has the expectation of the marginal
  coverage. Where scores tie the count can only be larger, so those cases
  test the lower end only. The bounds come from alpha and n, not from the
  code's rank: a rank computed with n instead of n + 1 covers
  ``ceil(n(1-alpha))/(n+1) < 1 - alpha`` and fails every cell (n = 100 and
  500, alpha = 0.1 and 0.2, every method: checked by mutating
  ``judgecp.stats.conformal.conformal_rank``, docs/testing.md). A randomised
  score (APS, RAPS) keeps its uniform with its point, as exchangeability
  asks: the test hands each point's uniform to the method.
* ``test_calibrate_end_to_end``: ``calibrate()`` as users call it (fit on
  part, conformalize on the rest), on fresh draws. Its target is a leak: a
  method that fitted on the points that set its threshold under-covers here
  (``test_leaky_calibration_is_detected`` shows the check fails on one).
  Tolerance: 4 standard errors of the mean over 25 repetitions (the mean of
  25 coverages is close to normal; one-sided p about 3e-5, below the 1e-3
  the suite allows per test). It is not the rank's test: an off-by-one rank
  moves coverage by ``1/(n+1)``, about 0.002 at n = 300, which 25 draws of
  sd 0.015 cannot see; the exact test above does.
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
SET = [name for name in ALL if name not in INTERVAL]
# Where the reported prediction is exactly {y : score <= threshold} and the scores have no ties: the count
# of covered hold-outs is exactly k. Integer labels tie CQR's and the boosted CQR's integer-valued
# quantile scores and CHR's level grid; deterministic ordinal APS always gives its last label mass 1;
# R2CCP reports the hull of its grid set (a superset; its grid set itself is checked exactly).
EXACT_CONTINUOUS = set(INTERVAL)
EXACT_INTEGER = {"naive", "lvd", "boosted_lcp", "lac", "aps", "raps", "ordinal_set", "margin", "ordinal_aps"}
# The cells: interval methods on continuous labels at both sizes and on integer labels (their label sets) at
# n = 100; set methods on integer labels (a set holds integers: no continuous cell to skip).
CELLS = ([(name, "continuous", n) for name in INTERVAL for n in (100, 500)]
         + [(name, "integer", 100) for name in INTERVAL]
         + [(name, "integer", n) for name in SET for n in (100, 500)])
Z = 4.0


def exact_spec(name: str) -> str:
    """``fast`` but CHR on a 4000-level grid (its default is 1000): its scores are grid levels, and 501 scores on
    200 levels tie, which voids the exact count."""
    return cheap_spec(name, epochs=25, rounds=15, levels=4000)


def check_band(name: str, covs: list[float], alpha: float) -> None:
    """The mean coverage over repetitions is at least ``1 - alpha`` within ``Z`` standard errors (module docstring)."""
    c = np.asarray(covs)
    se = c.std(ddof=1) / np.sqrt(c.size)
    assert c.mean() >= 1 - alpha - Z * se, f"{name}: mean coverage {c.mean():.4f} < {1 - alpha} - {Z}*{se:.4f}"


def covered(method: Any, X: np.ndarray, y: np.ndarray) -> float:
    pred = method.predict(X)
    if pred.has_interval:
        return float(np.mean((y >= pred.lower) & (y <= pred.upper)))
    return float(np.mean(pred.sets[np.arange(y.size), SCALE.index(y)]))


def held_out_counts(method: Any, X: np.ndarray, y: np.ndarray, uniforms: np.ndarray | None) -> tuple[int, int]:
    """``(covered, covered by R2CCP's grid set)``: hold each of the n + 1 points out in turn, conformalize on the
    rest, predict it. ``uniforms``: each point's own uniform for a randomised score."""
    points = y.size
    hits = grid_hits = 0
    queue: list[np.ndarray] = []
    if uniforms is not None:
        method._uniforms = lambda size, rng: queue.pop(0)  # the point's uniform travels with the point
    for j in range(points):
        rest = np.arange(points) != j
        if uniforms is not None:
            queue[:] = [uniforms[rest], uniforms[j : j + 1]]
        method.conformalize(X[rest], y[rest])
        hits += covered(method, X[j : j + 1], y[j : j + 1]) == 1.0
        if method.name == "r2ccp":
            score = method.grid_scores(X[j : j + 1])[0, method._nearest(y[j : j + 1])[0]]
            grid_hits += bool(score <= method.threshold_)
    return hits, grid_hits


@pytest.mark.parametrize("alpha", [0.1, 0.2])
@pytest.mark.parametrize(("name", "labels", "n"), CELLS)
def test_exact_coverage_given_fit(name: str, labels: str, n: int, alpha: float) -> None:
    continuous = labels == "continuous"
    rng = np.random.default_rng([ALL.index(name), n, int(alpha * 100), int(continuous)])
    method = build_method(exact_spec(name), alpha=alpha, scale=SCALE, random_state=7)
    method.fit(*judge_draw(500, rng, continuous=continuous))
    X, y = judge_draw(n + 1, rng, continuous=continuous)
    uniforms = rng.uniform(size=n + 1) if getattr(method, "randomized", False) else None
    hits, grid_hits = held_out_counts(method, X, y, uniforms)
    # The band from the level and the size alone (a margin of 1e-9 for the float 1 - alpha):
    # 1 - alpha <= hits / (n + 1) < 1 - alpha + 1 / (n + 1), with asymmetric CQR's two sides each at alpha/2.
    low, high = (1 - alpha) * (n + 1) - 1e-9, (1 - alpha) * (n + 1) + (2 if name == "cqr_asym" else 1)
    assert hits >= low, f"{name}: {hits} of {n + 1} held-out points covered, below (1 - {alpha})(n + 1) = {low:.2f}"
    if name in (EXACT_CONTINUOUS if continuous else EXACT_INTEGER) and name != "r2ccp":
        assert hits < high, f"{name}: {hits} of {n + 1} held-out points covered, {high:.2f} or more"
    if name == "r2ccp" and continuous:
        assert low <= grid_hits < high, f"r2ccp's grid set covered {grid_hits} of {n + 1}"
        assert hits >= grid_hits  # the reported hull holds the grid set


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_calibrate_end_to_end(name: str) -> None:
    alpha, reps = 0.1, 25
    rng = np.random.default_rng([ALL.index(name), 99])
    covs = repeated_coverage(fast(name), lambda n: judge_draw(n, rng), covered, n_cal=600, n_test=1000,
                             alpha=alpha, reps=reps, scale=SCALE)
    check_band(name, list(covs), alpha)


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
        check_band("leaky", covs, 0.1)


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
    check_band(spec, covs, alpha)
