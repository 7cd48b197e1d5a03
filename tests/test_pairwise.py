"""Pairwise judges: BPE's invariance and quality, and every controller's promise.

Simulation: a position-biased judge (judgecp.synthetic.judges.simulate_pairwise_judge)
on exchangeable pairs. Two designs, both with 1000 repetitions:

* random 50/50 splits of one pool of 2000 pairs, test risk measured on the
  test half (the protocol users run; the guarantee holds conditionally on
  the pool, so several pools are used);
* 1000 independent calibration sets drawn from the judge, the true risk of
  each chosen threshold measured on an independent population of 10^6
  pairs (the theorems' own statement: over calibration draws).

Tolerances: 3 standard errors, counting both the repetitions and the
population's own sampling error.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import norm

from judgecp.base.errors import InputError
from judgecp.data import PairData
from judgecp.kinds.pairwise.study import Splits, make_controller
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.reading import from_records, load
from judgecp.stats.selective import ClopperPearson, apply
from judgecp.stats.signals import signals
from judgecp.synthetic.judges import simulate_pairwise_judge
from judgecp.workflows.study import evaluate
from tests.helpers import FALSE_FAILURE, binomial_at_most, mean_margin

ALPHAS = (0.05, 0.10, 0.15, 0.20, 0.25)
POPULATION = 1_000_000


@pytest.fixture(scope="module")
def population() -> tuple[np.ndarray, np.ndarray]:
    """Sorted BPE uncertainties and cumulative errors of 10^6 pairs: the true FDR of any threshold."""
    pop = simulate_pairwise_judge(POPULATION, seed=999)
    sig = signals(pop)["bpe"]
    order = np.argsort(sig.uncertainty)
    return sig.uncertainty[order], np.cumsum((sig.prediction != pop.labels)[order])


def true_risk(thresholds: np.ndarray, population: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """True FDR and acceptance rate at each threshold (FDR 0 where nothing is accepted)."""
    u, cum = population
    k = np.searchsorted(u, thresholds, side="right")
    errors = np.where(k > 0, cum[np.maximum(k - 1, 0)], 0)
    return np.where(k > 0, errors / np.maximum(k, 1), 0.0), k / u.size


def run(data: PairData, name: str, alpha: float, splits: int = 1000, seed: int = 0, delta: float = 0.1):
    sig = signals(data)["bpe"]
    sp = Splits.of(sig, data.labels, splits, 0.5, seed)
    thr = make_controller(name, delta).thresholds(sp.u_sorted, sp.e_sorted, alpha, sig)
    risk, cov, n_acc = apply(thr, sp.u_test, sp.e_test)
    return thr, risk, cov, n_acc


def independent_thresholds(name: str, alpha: float, reps: int = 1000, n_cal: int = 1000, seed: int = 7,
                           delta: float = 0.1) -> np.ndarray:
    """Thresholds chosen on ``reps`` independent calibration sets drawn from the judge."""
    draw = simulate_pairwise_judge(reps * n_cal, seed=seed)
    sig = signals(draw)["bpe"]
    u = sig.uncertainty.reshape(reps, n_cal)
    e = (sig.prediction != draw.labels).reshape(reps, n_cal)
    order = np.argsort(u, axis=1, kind="stable")
    return make_controller(name, delta).thresholds(
        np.take_along_axis(u, order, axis=1), np.take_along_axis(e, order, axis=1), alpha, sig)


@pytest.mark.slow
@pytest.mark.parametrize("pool", [0, 1, 2])
def test_scope_controls_risk_over_splits(pool: int) -> None:
    data = simulate_pairwise_judge(2000, seed=pool)
    for alpha in ALPHAS:
        _, risk, cov, _ = run(data, "scope", alpha, seed=pool)
        # a one-sided t margin, the test's false-failure probability split over the levels (tests/helpers.py)
        assert risk.mean() <= alpha + mean_margin(risk, FALSE_FAILURE / len(ALPHAS)), (alpha, risk.mean())
        assert cov.mean() > 0.2  # it accepts something: the check is not vacuous


@pytest.mark.slow
def test_scope_theorem_over_calibration_draws(population: tuple[np.ndarray, np.ndarray]) -> None:
    """SCOPE's Theorem 2.1: E[S E] / E[S] <= alpha over calibration draws and the test point."""
    for alpha in ALPHAS:
        thr = independent_thresholds("scope", alpha)
        fdr, accept = true_risk(thr, population)
        errors = fdr * accept
        ratio = errors.sum() / accept.sum()
        # delta-method standard error of the ratio of means, plus the population's sampling error
        se = np.sqrt(np.var(errors - ratio * accept, ddof=1) / thr.size) / accept.mean()
        se_population = np.sqrt(alpha * (1 - alpha) / (accept.mean() * POPULATION))
        z = float(norm.ppf(1 - FALSE_FAILURE / len(ALPHAS)))  # one-sided, the ratio of means close to normal
        assert ratio <= alpha + z * np.hypot(se, se_population), (alpha, ratio)
        assert accept.mean() > 0.2


@pytest.mark.slow
def test_naive_calibration_can_exceed_alpha() -> None:
    """Without the finite-sample correction the chosen threshold overfits small calibration sets."""
    data = simulate_pairwise_judge(300, seed=4)
    _, risk, _, _ = run(data, "naive", 0.05, splits=2000, seed=4)
    assert risk.mean() > 0.05 + mean_margin(risk, FALSE_FAILURE / 2)  # beyond Monte-Carlo error: a real excess
    _, risk_scope, _, _ = run(data, "scope", 0.05, splits=2000, seed=4)
    assert risk_scope.mean() <= 0.05 + mean_margin(risk_scope, FALSE_FAILURE / 2)


def test_no_feasible_threshold_means_abstain_on_everything() -> None:
    """A judge at chance: no threshold satisfies sum S(E - alpha) <= -1, so SCOPE accepts nothing."""
    rng = np.random.default_rng(0)
    n = 1000
    p = rng.uniform(size=n)
    data = PairData.from_arrays(p, p, rng.integers(0, 2, size=n))
    for name in ("scope", "clopper_pearson"):
        thr, risk, cov, n_acc = run(data, name, 0.05, splits=200)
        assert np.isneginf(thr).all() and (n_acc == 0).all() and (cov == 0).all(), name
        assert (risk == 0).all()


@pytest.mark.slow
def test_clopper_pearson_holds_at_its_confidence(population: tuple[np.ndarray, np.ndarray]) -> None:
    """P(true FDR of the chosen threshold > alpha) <= delta, over calibration draws."""
    for delta in (0.1, 0.2):
        for alpha in ALPHAS:
            thr = independent_thresholds("clopper_pearson", alpha, delta=delta)
            fdr, accept = true_risk(thr, population)
            exceed = int(np.sum(fdr > alpha))  # Binomial(draws, <= delta): each check at its share of 1e-3
            assert exceed <= binomial_at_most(delta, thr.size, FALSE_FAILURE / (2 * len(ALPHAS))), (
                alpha,
                delta,
                exceed,
            )
            assert accept.mean() > 0.2


@pytest.mark.slow
def test_clopper_pearson_over_splits() -> None:
    for pool in (0, 1):
        data = simulate_pairwise_judge(2000, seed=pool)
        for alpha in ALPHAS:
            _, risk, _, _ = run(data, "clopper_pearson", alpha, seed=pool)
            assert risk.mean() <= alpha, (alpha, risk.mean())


def test_clopper_pearson_abstains_when_the_first_threshold_fails() -> None:
    """The reference code returned its first threshold when that already failed; we abstain."""

    class Sig:
        confidence_floor = 0.5

        @staticmethod
        def uncertainty_at_confidence(c: float) -> float:
            return 1.0 - c

    # 40 calibration judgments, all very confident, a third of them wrong.
    u = np.full((1, 40), 0.001)
    e = np.zeros((1, 40), bool)
    e[0, ::3] = True
    ctrl = ClopperPearson(delta=0.1, grid=50)
    assert np.isneginf(ctrl.thresholds(u, e, 0.1, Sig())).all()
    # the same judgments, all right: the whole grid passes
    assert ctrl.thresholds(u, np.zeros_like(e), 0.1, Sig())[0] == pytest.approx(0.5)


def test_clopper_pearson_bound_is_exact() -> None:
    from scipy.stats import binom

    ub = ClopperPearson.upper_bound(np.array([3]), np.array([50]), 0.1)[0]
    # the bound p solves P(Binomial(50, p) <= 3) = 0.1
    assert binom.cdf(3, 50, ub) == pytest.approx(0.1, abs=1e-9)
    assert ClopperPearson.upper_bound(np.array([0]), np.array([0]), 0.1)[0] == 1.0


def test_bpe_beats_single_order_confidence_on_a_position_biased_judge() -> None:
    from judgecp.stats.signals import uncertainty_quality

    for seed in range(3):
        data = simulate_pairwise_judge(4000, seed=seed)
        s = signals(data)
        bpe = uncertainty_quality(s["bpe"], data.labels)
        single = uncertainty_quality(s["predictive"], data.labels)
        assert bpe["auroc"] > single["auroc"] + 0.01
        assert bpe["ece"] < single["ece"]


def test_bpe_is_invariant_to_swapping_every_pair() -> None:
    data = simulate_pairwise_judge(1000, seed=5)
    a, b = signals(data), signals(data.swapped())
    np.testing.assert_allclose(a["bpe"].uncertainty, b["bpe"].uncertainty, atol=1e-15)
    np.testing.assert_array_equal(a["bpe"].prediction, b["bpe"].prediction)
    assert not np.allclose(a["predictive"].uncertainty, b["predictive"].uncertainty)


def test_records_in_both_orders_are_aligned_to_the_original_a() -> None:
    recs = [
        {"pair_id": "p1", "order": "fwd", "lp_A": -0.1, "lp_B": -2.5, "label": "A"},
        # reversed: original B is shown first as "A"; preferring "B" here means preferring original A
        {"pair_id": "p1", "order": "rev", "lp_A": -3.0, "lp_B": -0.05, "label": "A"},
    ]
    d = from_records(recs, "pairwise")
    assert isinstance(d, PairData)
    pf = 1 / (1 + np.exp(-2.4))
    pr = 1 / (1 + np.exp(-2.95))
    assert d.p_fwd[0] == pytest.approx(pf) and d.p_rev[0] == pytest.approx(pr)
    assert signals(d)["bpe"].prediction[0] == 1


def test_bad_pairwise_input_is_counted(tmp_path: Path) -> None:
    recs = [
        {"pair_id": "ok", "order": "fwd", "lp_A": -0.1, "lp_B": -2.0, "label": "A"},
        {"pair_id": "ok", "order": "rev", "lp_A": -2.0, "lp_B": -0.2, "label": "A"},
        {"pair_id": "conflict", "order": "fwd", "lp_A": -0.1, "lp_B": -2.0, "label": "A"},
        {"pair_id": "conflict", "order": "rev", "lp_A": -2.0, "lp_B": -0.2, "label": "B"},
        {"pair_id": "single", "order": "rev", "lp_A": -2.0, "lp_B": -0.2, "label": "B"},
        {"pair_id": "tie", "order": "fwd", "lp_A": -0.1, "lp_B": -2.0, "label": "tie"},
        {"pair_id": "over", "order": "fwd", "p_A": 0.8, "p_B": 0.5, "label": "A"},
        {"pair_id": "under", "order": "fwd", "p_A": 0.6, "p_B": 0.2, "label": "A"},
        {"pair_id": "nan", "order": "fwd", "lp_A": float("nan"), "lp_B": -1.0, "label": "A"},
        {"pair_id": "dup", "order": "fwd", "lp_A": -0.1, "lp_B": -2.0, "label": "A"},
        {"pair_id": "dup", "order": "fwd", "lp_A": -0.1, "lp_B": -2.0, "label": "A"},
        {"pair_id": "sideways", "order": "up", "lp_A": -0.1, "lp_B": -2.0, "label": "A"},
    ]
    p = tmp_path / "pairs.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    d = load(p, "pairwise")
    assert isinstance(d, PairData)
    assert sorted(d.pair_ids.tolist()) == ["ok", "single", "under"]
    assert dict(d.excluded.counts) == {
        "label_conflict": 1, "tie_label": 1, "probabilities_invalid": 1, "logprob_invalid": 1,
        "duplicate_order": 1, "order_unknown": 1}
    assert dict(d.flags.counts) == {"single_order": 2}  # single and under have one order each
    assert d.p_fwd[d.pair_ids.tolist().index("under")] == pytest.approx(0.75)  # renormalised 0.6/0.8
    with pytest.raises(InputError, match="no usable records"):
        from_records([recs[2], recs[3]], "pairwise")


def test_report_schema() -> None:
    data = simulate_pairwise_judge(400, seed=1)
    r = evaluate(data, Protocol(splits=50))
    assert set(r["controllers"]) == {"scope", "clopper_pearson", "naive", "heuristic", "vanilla"}
    for per in r["controllers"].values():
        assert set(per) == {"0.05", "0.1", "0.15", "0.2", "0.25"}
        for cell in per.values():
            assert {"risk", "risk_std", "coverage", "coverage_std"} <= set(cell)
    assert set(r["uncertainty"]["bpe"]) == {"accuracy", "ece", "auroc", "auprc"}
    assert r["risk_coverage"]["bpe"][-1]["coverage"] == 1.0
    with pytest.raises(InputError, match="signal 'verbalized' is not available"):
        evaluate(data, Protocol(splits=5, signal="verbalized"))


@pytest.mark.parametrize("slack", [0.0, 1.0])
def test_all_levels_at_once_match_the_budget_read_one_prefix_at_a_time(slack: float) -> None:
    """largest_feasible_prefix (a suffix minimum and a binary search per level) against the
    definition: the last prefix, ending a tie, with sum (E_i - alpha) <= -slack."""
    from judgecp.stats.selective import largest_feasible_prefix

    rng = np.random.default_rng(3)
    alphas = [0.05, 0.1, 0.2, 0.25, 0.5]  # 0.1, 0.25, 0.5: budgets that hit -slack exactly
    for _ in range(200):
        m = int(rng.integers(1, 60))
        u = np.sort(rng.integers(0, 8, m) / 8.0)[None, :]  # many ties
        e = (rng.random(m) < rng.uniform(0, 0.6))[None, :]
        got = largest_feasible_prefix(u, e, alphas, slack)
        for i, alpha in enumerate(alphas):
            want = -np.inf
            for j in range(m):
                end_of_tie = j == m - 1 or u[0, j + 1] > u[0, j]
                if end_of_tie and e[0, : j + 1].sum() - alpha * (j + 1) <= -slack:
                    want = u[0, j]
            assert got[i, 0] == want, (alpha, u, e)


def test_shuffled_rows_are_the_protocols_splits_and_the_thread_ends() -> None:
    """The shuffling thread gives exactly permuted(tile(values), axis=1)'s rows, in order; a caller
    that stops early ends the thread, and an error in the thread reaches the caller."""
    import threading

    from judgecp.kinds.pairwise.study import shuffled_rows

    values = np.random.default_rng(1).permutation(1000).astype(np.int32)
    want = np.random.default_rng(7).permuted(np.tile(values, (6, 1)), axis=1)
    with shuffled_rows(values, 6, seed=7) as rows:
        got = np.stack(list(rows))
    assert np.array_equal(got, want)
    with shuffled_rows(values, 500, seed=7) as rows:
        next(rows)
    assert not any(t.name == "judgecp-shuffles" for t in threading.enumerate())
    with pytest.raises(AttributeError), shuffled_rows(None, 2, seed=0) as rows:  # type: ignore[arg-type]
        next(rows)


def test_clopper_pearson_grid_is_equally_spaced_in_confidence() -> None:
    """Mutation testing's survivor (docs/testing.md): the grid's ``grid`` thresholds run from one step below
    confidence 1 down to the signal's floor, equally spaced (worked by hand for 4 steps down to 0.5)."""
    signal = SimpleNamespace(confidence_floor=0.5, uncertainty_at_confidence=lambda c: 1.0 - c)
    assert ClopperPearson(grid=4).grid_values(signal) == pytest.approx([0.125, 0.25, 0.375, 0.5])


def test_apply_accepts_a_pair_at_the_threshold() -> None:
    """Mutation testing's survivor: a pair whose uncertainty equals the threshold is accepted (u <= threshold)."""
    risk, coverage, accepted = apply(np.array([0.5]), np.array([[0.2, 0.5, 0.7]]), np.array([[False, True, True]]))
    assert accepted.tolist() == [2] and coverage.tolist() == [2 / 3] and risk.tolist() == [0.5]
