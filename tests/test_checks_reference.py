"""The checks `apply` makes with a run's labels (judgecp.stats.checks) against references computed another way.

Mutation testing (docs/testing.md) found these functions covered only by the slow Monte-Carlo tests of their
false-alarm rates: a changed p-value formula, slope or reported field passed every fast test. Here each result is
recomputed item by item: the beta-binomial law from its closed form with ``math.lgamma`` and the groups' sum law
by a convolution written as loops; the permutation tests with the same seeded permutations (the randomness is
an input: ``Generator.permuted`` row by row) and every statistic summed in Python; the least-squares slope by
``statistics.linear_regression``; the normal quantiles by ``statistics.NormalDist``.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np
import pytest

from judgecp.stats.checks import (
    DRAWS,
    POWER,
    RISK_DRAWS,
    GroupCount,
    _permutation_splits,
    beta_binomial_pvalue,
    label_shift_test,
    risk_permutation_test,
)


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _beta_binomial_pmf(k: int, m: int, a: float, b: float) -> float:
    """P(X = k) for X ~ BetaBinomial(m, a, b): C(m, k) B(k + a, m - k + b) / B(a, b)."""
    return math.comb(m, k) * math.exp(_log_beta(k + a, m - k + b) - _log_beta(a, b))


def _law(c: GroupCount) -> list[float]:
    return [_beta_binomial_pmf(k, c.m, c.rank, c.n + 1 - c.rank) for k in range(c.m + 1)]


def test_one_groups_coverage_pvalue_is_its_beta_binomial_cdf() -> None:
    """7 of 10 run items covered under the 18th of 19 calibration scores: P(X <= 7), X ~ BB(10, 18, 2)."""
    got = beta_binomial_pvalue([GroupCount("all", covered=7, m=10, n=19, rank=18)])
    want = math.fsum(_law(GroupCount("all", 7, 10, 19, 18))[:8])
    assert set(got) == {"test", "covered", "n", "p_value"}
    assert (got["test"], got["covered"], got["n"]) == ("beta_binomial", 7, 10)
    assert got["p_value"] == pytest.approx(want, rel=1e-10)
    assert 0.05 < want < 0.5  # a p-value the mutated laws (other shape parameters, other cut) move


def _groups_reference(counts: list[GroupCount]) -> dict[str, Any]:
    tested = [c for c in counts if c.rank <= c.n and c.m > 0]
    per_group = {c.group: math.fsum(_law(c)[: c.covered + 1]) for c in tested}
    pmf = [1.0]
    for c in tested:  # the law of the sum: a convolution, by loops
        law = _law(c)
        out = [0.0] * (len(pmf) + len(law) - 1)
        for i, a in enumerate(pmf):
            for j, b in enumerate(law):
                out[i + j] += a * b
        pmf = out
    p_sum = min(1.0, math.fsum(pmf[: sum(c.covered for c in tested) + 1]))
    p_min = min(1.0, len(tested) * min(per_group.values()))
    return {"p_sum": p_sum, "per_group": per_group, "p": min(1.0, 2.0 * min(p_sum, p_min))}


@pytest.mark.parametrize("covered", [(0, 3, 9), (1, 5, 12), (1, 6, 14)])
def test_groups_combine_the_sum_law_and_the_smallest_group_by_bonferroni(covered: tuple[int, int, int]) -> None:
    """Mondrian groups: a group whose set is the full range (rank > n) and an empty one are left out of the test
    but counted in the totals; a one-item group is tested; p = min(1, 2 min(p_sum, G min_g p_g)) with the sum's law
    the convolution of the groups' laws. The three cases: a low p-value, a middle one where the group term is
    clipped at 1, and all covered (the sum law's whole mass: clipped at 1)."""
    a, b, c = covered
    counts = [
        GroupCount("one", covered=a, m=1, n=9, rank=9),
        GroupCount("small", covered=b, m=6, n=19, rank=18),
        GroupCount("large", covered=c, m=14, n=39, rank=36),
        GroupCount("full range", covered=4, m=4, n=3, rank=4),
        GroupCount("no labels", covered=0, m=0, n=30, rank=28),
    ]
    got = beta_binomial_pvalue(counts)
    want = _groups_reference(counts)
    assert got["test"] == "beta_binomial" and got["covered"] == a + b + c + 4 and got["n"] == 1 + 6 + 14 + 4
    assert got["combination"] == "Bonferroni of the sum law and the smallest group p-value (times the groups)"
    assert set(got["p_value_groups"]) == {"one", "small", "large"}
    for name, p in want["per_group"].items():
        assert got["p_value_groups"][name] == pytest.approx(p, rel=1e-10), name
    assert got["p_value_sum"] == pytest.approx(want["p_sum"], rel=1e-10) and got["p_value_sum"] <= 1.0
    assert got["p_value"] == pytest.approx(want["p"], rel=1e-10) and got["p_value"] <= 1.0
    if covered == (1, 6, 14):
        assert got["p_value"] == 1.0


def test_the_sum_laws_pvalue_is_clipped_at_one() -> None:
    """Every run item covered: the sum law's whole mass, which float rounding puts above 1 for these two groups
    (1.0000000000000002), is reported as 1."""
    got = beta_binomial_pvalue([GroupCount("a", covered=1, m=1, n=10, rank=5), GroupCount("b", 3, 3, 19, 18)])
    assert got["p_value_sum"] == 1.0 and got["p_value"] == 1.0


def test_no_coverage_test_when_every_set_is_the_full_range() -> None:
    got = beta_binomial_pvalue([GroupCount("a", covered=3, m=3, n=2, rank=3), GroupCount("b", 0, 0, 50, 40)])
    assert got == {"test": "beta_binomial", "covered": 3, "n": 3, "p_value": None,
                   "reason": "every labeled item's set is the full range (too few calibration items)"}


def test_permutation_splits_come_in_chunks_of_whole_permutations() -> None:
    """Each yielded row is a permutation of range(size); rows come in chunks of at most 2e6 / size cells, with
    ``draws`` rows in all (500,000 items: chunks of 4, 4 and 2 rows for 10 draws)."""
    chunks = list(_permutation_splits(500_000, 10, np.random.default_rng(0)))
    assert [c.shape for c in chunks] == [(4, 500_000), (4, 500_000), (2, 500_000)]
    for chunk in chunks:
        assert (np.sort(chunk, axis=1) == np.arange(500_000)).all()
    small = list(_permutation_splits(7, 25, np.random.default_rng(0)))
    assert [c.shape for c in small] == [(25, 7)]


def _permutations(size: int, draws: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return rng.permuted(np.broadcast_to(np.arange(size), (draws, size)), axis=1).tolist()


def _label_shift_reference(y_cal: list[float], f_cal: list[float], y_run: list[float], f_run: list[float],
                           level: float, draws: int, seed: int) -> dict[str, Any]:
    n, m = len(y_cal), len(y_run)
    y, f = y_cal + y_run, f_cal + f_run
    slope, intercept = statistics.linear_regression(f, y)
    resid = [yi - (intercept + slope * fi) for yi, fi in zip(y, f, strict=True)]

    def gap(run: list[int]) -> float:
        run_sum = math.fsum(resid[i] for i in run)
        return abs(run_sum / m - (math.fsum(resid) - run_sum) / n)

    observed = gap(list(range(n, n + m)))
    exceed = sum(gap(perm[n:]) >= observed - 1e-12 for perm in _permutations(n + m, draws, seed))
    z = statistics.NormalDist()
    sd = statistics.stdev(resid)
    return {"slope": slope, "mean_cal": statistics.fmean(resid[:n]), "mean_run": statistics.fmean(resid[n:]),
            "p": (1 + exceed) / (draws + 1), "exceed": exceed,
            "detectable": (z.inv_cdf(1 - level / 2) + z.inv_cdf(POWER)) * sd * math.sqrt(1 / n + 1 / m)}


@pytest.mark.parametrize("shift", [0.0, 0.35, 1.5])
def test_label_shift_test_against_an_item_by_item_recomputation(shift: float) -> None:
    """The permutation test of the judge's residuals: slope, residual means, p-value (the same seeded
    permutations, each split's gap summed in Python) and the detectable shift, for a run whose labels moved by 0,
    0.35 and 1.5 against its proxy (p-values high, middling, at the floor 1 / (draws + 1)). 9 + 6 items: each
    split recurs among the draws, so the ties at the observed gap count."""
    rng = np.random.default_rng(3)
    f_cal, f_run = rng.normal(size=9), rng.normal(size=6)
    y_cal = (2.0 + 0.7 * f_cal + rng.normal(scale=0.5, size=9)).tolist()
    y_run = (2.0 + 0.7 * f_run + shift + rng.normal(scale=0.5, size=6)).tolist()
    got = label_shift_test(np.array(y_cal), f_cal, np.array(y_run), f_run, level=0.05, draws=DRAWS, seed=4)
    want = _label_shift_reference(y_cal, f_cal.tolist(), y_run, f_run.tolist(), 0.05, DRAWS, 4)
    assert got == {
        "test": "permutation (residuals of the judge's proxy)", "draws": DRAWS, "level": 0.05,
        "n_calibration": 9, "n_run": 6, "slope": pytest.approx(want["slope"], rel=1e-9),
        "mean_residual_calibration": pytest.approx(want["mean_cal"], abs=1e-12),
        "mean_residual_run": pytest.approx(want["mean_run"], abs=1e-12),
        "shift": pytest.approx(want["mean_run"] - want["mean_cal"], abs=1e-12),
        "p_value": pytest.approx(want["p"], abs=1e-12), "shift_detected": want["p"] < 0.05,
        "detectable_shift": pytest.approx(want["detectable"], rel=1e-9), "power": POWER,
    }
    assert want["exceed"] > 0 or shift == 1.5
    if shift == 1.5:
        assert got["shift_detected"] and got["p_value"] == 1 / (DRAWS + 1)


def test_label_shift_test_defaults_and_a_constant_proxy() -> None:
    """The default seed is 0 and the default draws DRAWS; a constant proxy has no slope (residuals are the labels
    about their mean); two items leave a standard deviation with one degree of freedom."""
    y_cal, y_run = np.array([1.0, 2.0, 4.0]), np.array([3.0, 5.0])
    f = np.ones(5)
    got = label_shift_test(y_cal, f[:3], y_run, f[3:], level=0.1)
    assert got == label_shift_test(y_cal, f[:3], y_run, f[3:], level=0.1, draws=DRAWS, seed=0)
    assert got["slope"] == 0.0
    assert got["mean_residual_run"] - got["mean_residual_calibration"] == pytest.approx(4.0 - 7.0 / 3.0)
    z = statistics.NormalDist()
    sd = statistics.stdev([1.0, 2.0, 4.0, 3.0, 5.0])
    z_sum = z.inv_cdf(0.95) + z.inv_cdf(POWER)
    assert got["detectable_shift"] == pytest.approx(z_sum * sd * math.sqrt(1 / 3 + 1 / 2))


class _PrefixController:
    """A toy risk controller written here: for each split, the largest calibration uncertainty whose prefix
    (sorted ascending, to the end of its ties) has an error rate <= alpha; -inf where none has."""

    def __init__(self) -> None:
        self.signals: list[Any] = []

    def thresholds(self, u_sorted: np.ndarray, e_sorted: np.ndarray, alpha: float, signal: Any) -> list[float]:
        self.signals.append(signal)
        out = []
        for u, e in zip(u_sorted.tolist(), e_sorted.tolist(), strict=True):
            best = -math.inf
            for j in range(len(u)):
                if (j + 1 == len(u) or u[j + 1] > u[j]) and sum(e[: j + 1]) <= alpha * (j + 1):
                    best = u[j]
            out.append(best)
        return out


@pytest.mark.parametrize("run_errors", [0, 3, 6])
def test_risk_permutation_test_against_an_item_by_item_recomputation(run_errors: int) -> None:
    """The statistic sum over accepted run pairs of (E_i - alpha), under the threshold the controller fits on the
    calibration part, for the observed split and each seeded re-split, summed in Python; the p-value (1 + #{T_b >=
    T}) / (draws + 1); the signal reaches the controller. Runs with 0, 3 and 6 errors among 8 pairs."""
    rng = np.random.default_rng(5)
    u_cal = rng.uniform(size=12).round(1)  # ties
    e_cal = rng.uniform(size=12) < 0.25
    u_run = rng.uniform(size=8).round(1)
    e_run = np.zeros(8, dtype=bool)
    e_run[np.argsort(u_run, kind="stable")[:run_errors]] = True
    alpha, signal = 0.3, object()
    controller = _PrefixController()
    got = risk_permutation_test(u_cal, e_cal, u_run, e_run, controller=controller, alpha=alpha, signal=signal,
                                draws=199, seed=6)
    assert controller.signals and all(s is signal for s in controller.signals)

    u, e = u_cal.tolist() + u_run.tolist(), e_cal.tolist() + e_run.tolist()
    ref = _PrefixController()

    def statistic(cal: list[int], run: list[int]) -> float:
        order = sorted(cal, key=lambda i: u[i])
        lam = ref.thresholds(np.array([[u[i] for i in order]]), np.array([[e[i] for i in order]]), alpha, None)[0]
        return math.fsum(e[i] - alpha for i in run if u[i] <= lam)

    observed = statistic(list(range(12)), list(range(12, 20)))
    exceed = sum(statistic(p[:12], p[12:]) >= observed - 1e-12 for p in _permutations(20, 199, 6))
    assert got == {"test": "permutation (controller re-run)", "draws": 199,
                   "statistic": pytest.approx(observed, abs=1e-12), "p_value": pytest.approx((1 + exceed) / 200)}
    assert 0 < exceed < 199 or run_errors in (0, 6)


def test_risk_permutation_test_defaults() -> None:
    """Default draws RISK_DRAWS and seed 0."""
    rng = np.random.default_rng(1)
    args = (rng.uniform(size=10), rng.uniform(size=10) < 0.3, rng.uniform(size=5), rng.uniform(size=5) < 0.5)
    got = risk_permutation_test(*args, controller=_PrefixController(), alpha=0.3, signal=None)
    assert got == risk_permutation_test(*args, controller=_PrefixController(), alpha=0.3, signal=None,
                                        draws=RISK_DRAWS, seed=0)
    assert got["draws"] == RISK_DRAWS


def test_label_shift_test_in_chunks_with_ties_at_the_observed_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    """5 + 3 items have 56 splits: among 399 draws the observed split recurs, and each recurrence counts (a tie
    within rounding); the permutations in chunks of 10 rows (a small chunk size) give the same answer as in one;
    a proxy whose variance is below 1 still gets its slope; a p-value equal to the level is not below it."""
    monkeypatch.setattr("judgecp.stats.checks._CHUNK_CELLS", 80)
    rng = np.random.default_rng(8)
    f_cal, f_run = 0.4 * rng.normal(size=5), 0.4 * rng.normal(size=3)
    y_cal = (1.0 + 2.0 * f_cal + rng.normal(scale=0.3, size=5)).tolist()
    y_run = (1.3 + 2.0 * f_run + rng.normal(scale=0.3, size=3)).tolist()
    want = _label_shift_reference(y_cal, f_cal.tolist(), y_run, f_run.tolist(), 0.05, 399, 2)
    got = label_shift_test(np.array(y_cal), f_cal, np.array(y_run), f_run, level=0.05, draws=399, seed=2)
    assert float(np.var(np.concatenate([f_cal, f_run]))) < 1.0
    assert got["slope"] == pytest.approx(want["slope"], rel=1e-9)
    assert got["p_value"] == pytest.approx(want["p"], abs=1e-12) and want["exceed"] >= 5
    at_level = label_shift_test(np.array(y_cal), f_cal, np.array(y_run), f_run, level=got["p_value"], draws=399,
                                seed=2)
    assert at_level["p_value"] == got["p_value"] and at_level["shift_detected"] is False


def test_label_shift_test_of_one_item_each_side() -> None:
    """One calibration and one run item with the same proxy value: no slope, residuals +-1/2 of the labels'
    difference, their standard deviation (one degree of freedom) in the detectable shift."""
    got = label_shift_test(np.array([1.0]), np.array([2.0]), np.array([3.0]), np.array([2.0]), level=0.1, draws=9)
    z = statistics.NormalDist()
    sd = statistics.stdev([-1.0, 1.0])
    assert got["slope"] == 0.0 and got["shift"] == 2.0
    assert got["detectable_shift"] == pytest.approx((z.inv_cdf(0.95) + z.inv_cdf(POWER)) * sd * math.sqrt(2.0))


def test_risk_permutation_test_in_chunks_accepts_a_run_pair_at_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run pair whose uncertainty equals the fitted threshold is accepted (u <= lambda), in the observed
    statistic; the permutations in chunks of 4 rows give the same p-value as the reference's one pass."""
    monkeypatch.setattr("judgecp.stats.checks._CHUNK_CELLS", 40)
    u_cal = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    e_cal = np.array([False, False, False, False, True, False, True, True])
    u_run = np.array([0.2, 0.6, 0.6, 0.9])  # the toy controller's threshold on the calibration part is 0.6
    e_run = np.array([False, True, True, False])
    alpha = 0.2
    got = risk_permutation_test(u_cal, e_cal, u_run, e_run, controller=_PrefixController(), alpha=alpha,
                                signal=None, draws=39, seed=1)
    assert got["statistic"] == pytest.approx((0 - alpha) + 2 * (1 - alpha))
    u, e = u_cal.tolist() + u_run.tolist(), e_cal.tolist() + e_run.tolist()
    ref = _PrefixController()

    def statistic(cal: list[int], run: list[int]) -> float:
        order = sorted(cal, key=lambda i: u[i])
        lam = ref.thresholds(np.array([[u[i] for i in order]]), np.array([[e[i] for i in order]]), alpha, None)[0]
        return math.fsum(e[i] - alpha for i in run if u[i] <= lam)

    exceed = sum(statistic(p[:8], p[8:]) >= got["statistic"] - 1e-12 for p in _permutations(12, 39, 1))
    assert got["p_value"] == pytest.approx((1 + exceed) / 40)
