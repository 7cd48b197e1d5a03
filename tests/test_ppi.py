"""PPI++ (issue 10): coverage of the true mean over seeded draws, width against labeled-only, real data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from judgecp import Fields, load
from judgecp.base.errors import InputError
from judgecp.stats.ppi import ppi_items, ppi_mean, stratification
from judgecp.synthetic.judges import simulate_pairwise_judge
from judgecp.workflows.nightly.estimate import estimate
from judgecp.workflows.nightly.runs import proxy_and_target
from tests.helpers import coverage_floor, mean_margin, shared_file

ALPHA = 0.1
DRAWS = 600
TRUE_MEAN = 3.0


def biased_judge(rng: np.random.Generator, n: int, big_n: int, informative: bool = True) -> tuple[np.ndarray, ...]:
    """Human scores with mean 3 and a judge off by +0.4 (compressed, noisy), on n labeled and N unlabeled items."""
    y = TRUE_MEAN + rng.normal(0, 1.2, n + big_n)
    f = (
        (3.4 + 0.6 * (y - TRUE_MEAN) + rng.normal(0, 0.5, n + big_n))
        if informative
        else rng.normal(3.4, 1.0, n + big_n)
    )
    return y[:n], f[:n], f[n:]


def coverage_and_width(n: int, big_n: int, informative: bool = True, draws: int = DRAWS) -> dict[str, np.ndarray]:
    cover: dict[str, list[bool]] = {"ppi": [], "labeled_only": [], "judge_only": []}
    width: dict[str, list[float]] = {k: [] for k in cover}
    for seed in range(draws):
        y, f, g = biased_judge(np.random.default_rng(seed), n, big_n, informative)
        out = ppi_mean(y, f, g, alpha=ALPHA)["estimate"]
        for k in cover:
            cover[k].append(out[k]["lower"] <= TRUE_MEAN <= out[k]["upper"])
            width[k].append(out[k]["upper"] - out[k]["lower"])
    return {
        **{f"cover_{k}": np.asarray(v) for k, v in cover.items()},
        **{f"width_{k}": np.asarray(v) for k, v in width.items()},
    }


# A coverage check's floor is tests.helpers.coverage_floor: the Binomial(draws, 0.9) quantile at the test's share
# of FALSE_FAILURE (the intervals are asymptotic; at these sample sizes their coverage is the nominal one).


@pytest.mark.slow
def test_ppi_covers_the_true_mean_and_is_narrower_than_labeled_only() -> None:
    res = coverage_and_width(200, 4000)
    assert res["cover_ppi"].mean() >= coverage_floor(1 - ALPHA, DRAWS), res["cover_ppi"].mean()
    # Negative control: the judge-only interval ignores the +0.4 bias and fails.
    assert res["cover_judge_only"].mean() < 0.05
    # Informative judge: narrower than labeled-only on average (beyond Monte-Carlo error).
    diff = res["width_ppi"] - res["width_labeled_only"]
    assert diff.mean() + mean_margin(diff) < 0


@pytest.mark.slow
def test_ppi_with_an_uninformative_judge_is_not_wider_than_labeled_only() -> None:
    res = coverage_and_width(200, 4000, informative=False)
    assert res["cover_ppi"].mean() >= coverage_floor(1 - ALPHA, DRAWS)
    ratio = res["width_ppi"] / res["width_labeled_only"]
    # Power tuning sends lambda to ~0: at most the estimation noise of lambda (O(1/n)) wider.
    assert ratio.mean() <= 1.01, ratio.mean()


@pytest.mark.slow
def test_stratified_ppi_covers() -> None:
    cover = []
    for seed in range(DRAWS // 2):
        rng = np.random.default_rng(seed)
        groups = np.array(["a", "b"])[(rng.random(3000) < 0.3).astype(int)]
        y = np.where(groups == "a", 2.0, 4.0) + rng.normal(0, 1, 3000)
        f = y + np.where(groups == "a", 0.8, -0.2) + rng.normal(0, 0.7, 3000)
        lab = rng.random(3000) < 0.1
        out = ppi_mean(y[lab], f[lab], f[~lab], alpha=ALPHA, groups_labeled=groups[lab], groups_unlabeled=groups[~lab])
        truth = 0.7 * 2.0 + 0.3 * 4.0  # P(group a) = 0.7
        cover.append(out["estimate"]["ppi"]["lower"] <= truth <= out["estimate"]["ppi"]["upper"])
        assert set(out["strata"]) == {"a", "b"}
    assert np.mean(cover) >= coverage_floor(1 - ALPHA, len(cover))


@pytest.mark.slow
def test_stratified_ppi_with_many_small_strata_covers() -> None:
    """14 strata with about 20 labels each (as the LLaVA-Critic tasks with 300 labels): the common lambda covers."""
    cover, widths = [], []
    bias = np.linspace(-0.5, 1.0, 14)
    for seed in range(DRAWS // 2):
        rng = np.random.default_rng(seed)
        groups = rng.integers(0, 14, 6000)
        y = 1.0 + 0.2 * groups + rng.normal(0, 1, 6000)
        f = y + bias[groups] + rng.normal(0, 1.0, 6000)
        lab = np.zeros(6000, bool)
        for h in range(14):  # proportional allocation, about 21 labels per stratum
            rows = np.flatnonzero(groups == h)
            lab[rng.choice(rows, max(2, round(300 * rows.size / 6000)), replace=False)] = True
        out = ppi_mean(y[lab], f[lab], f[~lab], alpha=ALPHA, groups_labeled=groups[lab], groups_unlabeled=groups[~lab])
        truth = float(np.mean(1.0 + 0.2 * np.arange(14)))  # strata equally likely
        e = out["estimate"]["ppi"]
        cover.append(e["lower"] <= truth <= e["upper"])
        widths.append(
            (e["upper"] - e["lower"])
            / (out["estimate"]["labeled_only"]["upper"] - out["estimate"]["labeled_only"]["lower"])
        )
    assert np.mean(cover) >= coverage_floor(1 - ALPHA, len(cover)), np.mean(cover)
    assert np.mean(widths) < 1.0


def test_lambda_zero_and_one_are_the_classical_estimators() -> None:
    rng = np.random.default_rng(0)
    y, f, g = biased_judge(rng, 100, 1000)
    zero = ppi_mean(y, f, g, lam=0.0)["estimate"]
    assert zero["ppi"] == zero["labeled_only"]
    one = ppi_mean(y, f, g, lam=1.0)["estimate"]["ppi"]
    assert one["mean"] == pytest.approx(y.mean() + g.mean() - f.mean())
    # PPI (Angelopoulos et al. 2023a), small-sample conventions: ddof 1, Student's t with n - 1 degrees of freedom.
    se = np.sqrt(np.var(g, ddof=1) / g.size + np.var(y - f, ddof=1) / y.size)
    assert one["se"] == pytest.approx(se)
    assert one["upper"] - one["mean"] == pytest.approx(student_t.ppf(1 - ALPHA / 2, y.size - 1) * se)
    # ppi-python's conventions: ddof 0 and the normal quantile.
    py = ppi_mean(y, f, g, lam=1.0, conventions="ppi-python")["estimate"]["ppi"]
    assert py["se"] == pytest.approx(np.sqrt(np.var(g) / g.size + np.var(y - f) / y.size))
    assert py["upper"] - py["mean"] == pytest.approx(norm.ppf(1 - ALPHA / 2) * py["se"])
    # Power tuning: the minimiser of the variance (ddof 1) ...
    tuned = ppi_mean(y, 2 * f, 2 * g)
    lam = (np.cov(y, 2 * f)[0, 1] / y.size) / (np.var(2 * f, ddof=1) / y.size + np.var(2 * g, ddof=1) / g.size)
    assert 0 < lam < 1 and tuned["lambda"] == pytest.approx(lam)
    for other in (0.9 * lam, 1.1 * lam):
        assert ppi_mean(y, 2 * f, 2 * g, lam=other)["estimate"]["ppi"]["se"] > tuned["estimate"]["ppi"]["se"]
    lam *= 2  # for f itself
    # ... and ppi-python's, which takes s2(f) over all n + N proxies.
    lam_py = np.cov(y, f, ddof=0)[0, 1] / ((1 + y.size / g.size) * np.var(np.concatenate([f, g]), ddof=1))
    assert ppi_mean(y, f, g, conventions="ppi-python")["lambda"] == pytest.approx(lam_py)
    assert ppi_mean(y, 3 * f, 3 * g)["lambda"] == pytest.approx(lam / 3)
    assert ppi_mean(y, f, g)["lambda"] == 1.0 < lam  # clipped, as ppi-python does
    assert ppi_mean(y, f / 3, g / 3, clip=False)["lambda"] == pytest.approx(3 * lam)
    assert tuned["effective_sample_size"] > y.size


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="at least 2 labeled"):
        ppi_mean([1.0], [1.0], [1.0, 2.0])
    with pytest.raises(InputError, match="NaN"):
        ppi_mean([1.0, 2.0], [1.0, np.nan], [1.0])
    with pytest.raises(InputError, match="no labeled ones"):
        ppi_mean([1.0, 2.0], [1.0, 2.0], [1.0], groups_labeled=["a", "a"], groups_unlabeled=["b"])


@pytest.mark.slow
def test_pairwise_win_rate_over_a_finite_population() -> None:
    """Pairwise records: PPI++ on 300 labeled pairs covers the all-pairs human win rate."""
    pairs = simulate_pairwise_judge(4000, seed=11)
    f, y, target = proxy_and_target(pairs)
    assert target.startswith("human win rate")
    truth = y.mean()
    cover = []
    for seed in range(200):
        idx = np.random.default_rng(seed).permutation(pairs.n)
        lab, unl = idx[:300], idx[300:]
        e = ppi_mean(y[lab], f[lab], f[unl], alpha=ALPHA)["estimate"]["ppi"]
        cover.append(e["lower"] <= truth <= e["upper"])
    assert np.mean(cover) >= coverage_floor(1 - ALPHA, 200)


def llava_critic() -> tuple[np.ndarray, np.ndarray]:
    data = load(shared_file("mllm_judge", "llava_critic_7b_features.csv"), "likert",
                Fields(label="gt_score", logprobs="s2_lp*", prediction="parsed_score"))
    f, y, _ = proxy_and_target(data)
    return f, y


def test_llava_critic_bias_reproduces() -> None:
    """The issue's figures: the judge's generated score is +0.38 off the human mean, +1.73 on items humans rated 1."""
    data = load(shared_file("mllm_judge", "llava_critic_7b_features.csv"), "likert",
                Fields(label="gt_score", logprobs="s2_lp*", prediction="parsed_score"))
    assert data.n == 5716
    assert data.parsed.mean() - data.labels.mean() == pytest.approx(0.38, abs=0.005)
    ones = data.labels == 1
    assert (data.parsed[ones] - 1).mean() == pytest.approx(1.73, abs=0.005)


@pytest.mark.slow
def test_llava_critic_300_labels_cover_the_full_human_mean() -> None:
    """The issue's 'done when': 300 labeled rows, the rest unlabeled, 200 draws, alpha 0.1."""
    f, y = llava_critic()
    truth, draws = y.mean(), 200
    cover = {"ppi": 0, "labeled_only": 0, "judge_only": 0}
    width = {"ppi": 0.0, "labeled_only": 0.0}
    for seed in range(draws):
        idx = np.random.default_rng(seed).permutation(y.size)
        lab, unl = idx[:300], idx[300:]
        est = ppi_mean(y[lab], f[lab], f[unl], alpha=ALPHA)["estimate"]
        for k in cover:
            cover[k] += est[k]["lower"] <= truth <= est[k]["upper"]
        for k in width:
            width[k] += (est[k]["upper"] - est[k]["lower"]) / draws
    assert cover["ppi"] / draws >= coverage_floor(1 - ALPHA, draws)
    assert width["ppi"] < width["labeled_only"]
    assert cover["judge_only"] / draws < 0.05


@pytest.mark.slow
def test_llava_critic_stratified_by_task_covers() -> None:
    """Stratified by the 14 task categories (about 21 labels each, 300 in all): the common lambda covers."""
    folder = shared_file("mllm_judge")
    data = load(folder / "llava_critic_7b_features.csv", "likert",
                Fields(label="gt_score", logprobs="s2_lp*", prediction="parsed_score",
                       joins=(str(folder / "task_labels.csv"),)))
    f, y, _ = proxy_and_target(data)
    strata = np.asarray(data.fields["orig_dataset"]).astype(str)
    cats, counts = np.unique(strata, return_counts=True)
    assert cats.size == 14
    cover, draws = 0, 200
    for seed in range(draws):
        rng = np.random.default_rng(seed)
        lab = np.concatenate([rng.choice(np.flatnonzero(strata == c), max(2, round(300 * k / y.size)), replace=False)
                              for c, k in zip(cats, counts, strict=True)])
        unl = np.setdiff1d(np.arange(y.size), lab)
        e = ppi_mean(y[lab], f[lab], f[unl], alpha=ALPHA, groups_labeled=strata[lab], groups_unlabeled=strata[unl])
        cover += e["estimate"]["ppi"]["lower"] <= y.mean() <= e["estimate"]["ppi"]["upper"]
    assert cover / draws >= coverage_floor(1 - ALPHA, draws)


def test_estimate_on_records_splits_labeled_and_unlabeled() -> None:
    pairs = simulate_pairwise_judge(1000, seed=3)
    labels = pairs.labels.copy()
    labels[200:] = -1
    from dataclasses import replace

    out = estimate(replace(pairs, labels=labels), alpha=0.05)
    assert out["n_labeled"] == 200 and out["n_unlabeled"] == 800 and out["alpha"] == 0.05
    assert out["kind"] == "pairwise"


def test_agrees_with_ppi_python() -> None:
    """ppi-python's ppi_mean_ci (PPI++ with power tuning) to rounding, when it is installed (it is heavy: numba,
    statsmodels)."""
    ppi_py = pytest.importorskip("ppi_py", reason="pip install ppi-python to compare with the reference implementation")
    for seed in range(20):
        rng = np.random.default_rng(seed)
        y, f, g = biased_judge(rng, 50 + 10 * seed, 500 + 100 * seed, informative=seed % 4 != 0)
        ours = ppi_mean(y, f, g, alpha=ALPHA, conventions="ppi-python")["estimate"]
        lower, upper = ppi_py.ppi_mean_ci(y, f, g, alpha=ALPHA)
        assert ours["ppi"]["lower"] == pytest.approx(float(np.ravel(lower)[0]), rel=1e-10, abs=1e-12)
        assert ours["ppi"]["upper"] == pytest.approx(float(np.ravel(upper)[0]), rel=1e-10, abs=1e-12)
        point = ppi_py.ppi_mean_pointestimate(y, f, g)
        assert ours["ppi"]["mean"] == pytest.approx(float(np.ravel(point)[0]), rel=1e-10)
        c_lower, c_upper = ppi_py.classical_mean_ci(y, alpha=ALPHA)
        assert ours["labeled_only"]["lower"] == pytest.approx(float(np.ravel(c_lower)[0]), rel=1e-10)
        assert ours["labeled_only"]["upper"] == pytest.approx(float(np.ravel(c_upper)[0]), rel=1e-10)


@pytest.mark.slow
def test_mcq_accuracy_over_a_finite_population() -> None:
    """Multiple-choice records: PPI++ on 200 labeled items covers the all-items accuracy."""
    from judgecp import from_records
    from judgecp.synthetic.judges import simulate_mcq_records

    choices = from_records(simulate_mcq_records(3000, seed=4))
    f, y, target = proxy_and_target(choices)
    assert target == "accuracy" and set(np.unique(y)) <= {0.0, 1.0}
    truth, cover = y.mean(), []
    for seed in range(200):
        idx = np.random.default_rng(seed).permutation(choices.n)
        e = ppi_mean(y[idx[:200]], f[idx[:200]], f[idx[200:]], alpha=ALPHA)["estimate"]["ppi"]
        cover.append(e["lower"] <= truth <= e["upper"])
    assert np.mean(cover) >= coverage_floor(1 - ALPHA, 200)


def test_what_the_estimate_reports_about_its_design() -> None:
    """Mutation testing's survivors (docs/testing.md): --stratify no says the estimate is not stratified, and an
    estimate in ppi-python's conventions (the normal quantile) reports no degrees of freedom."""
    groups = np.array(["a", "b", "a", "b", "a", "b"])
    assert stratification(groups, np.ones(6, bool), "no") == (None, {"stratified": False, "reason": "--stratify no"})
    rng = np.random.default_rng(5)
    y = rng.normal(size=30)
    out = ppi_mean(y, y + rng.normal(size=30), rng.normal(size=200), conventions="ppi-python")
    assert out["df"] is None
    assert ppi_mean(y, y + rng.normal(size=30), rng.normal(size=200))["df"] == 30 - 1 - 1


def test_per_stratum_results_and_options_by_hand() -> None:
    """Mutation testing's survivors (docs/testing.md): each stratum's own PPI++ interval is its labeled mean plus
    its lambda times its proxies' unlabeled-minus-labeled gap, with variance s2(y - lam f)/n + lam^2 s2(g)/N
    (ddof 1, worked here from the arrays); stratum_lambda="per_stratum" reaches the estimator (each stratum its
    own lambda, unlike the common one); a NaN among the labeled proxies is named as such."""
    rng = np.random.default_rng(11)
    groups_l, groups_u = np.repeat(["a", "b"], 40), np.repeat(["a", "b"], 300)
    y = rng.normal(size=80) + (groups_l == "b")
    f = np.where(groups_l == "a", 0.9, 0.2) * y + rng.normal(0, 0.5, 80)
    g = rng.normal(size=600) * 0.8 + 0.3
    common = ppi_mean(y, f, g, groups_labeled=groups_l, groups_unlabeled=groups_u)
    own = ppi_mean(y, f, g, groups_labeled=groups_l, groups_unlabeled=groups_u, stratum_lambda="per_stratum")
    assert common["strata"]["a"]["lambda"] == common["strata"]["b"]["lambda"]
    assert own["strata"]["a"]["lambda"] != pytest.approx(own["strata"]["b"]["lambda"], abs=0.05)
    for out in (common, own):
        for h in ("a", "b"):
            lam = out["strata"][h]["lambda"]
            yh, fh, gh = y[groups_l == h], f[groups_l == h], g[groups_u == h]
            e = out["strata"][h]["ppi"]
            assert e["mean"] == pytest.approx(yh.mean() + lam * (gh.mean() - fh.mean()), rel=1e-12)
            var = np.var(yh - lam * fh, ddof=1) / yh.size + lam**2 * np.var(gh, ddof=1) / gh.size
            assert e["se"] == pytest.approx(np.sqrt(var), rel=1e-10)
    with pytest.raises(InputError, match="the labeled proxies contain NaN"):
        ppi_mean(y, np.where(np.arange(80) == 3, np.nan, f), g)
    with pytest.raises(InputError, match="the unlabeled proxies contain NaN"):
        ppi_mean(y, f, np.where(np.arange(600) == 3, np.nan, g))
    with pytest.raises(InputError, match="at least 2 labeled items in every stratum, got 1"):
        ppi_items(np.array([1.0, np.nan, np.nan, np.nan]), np.array([0.5, 1.0, 2.0, 3.0]))
    with pytest.raises(InputError, match="at least 2 labeled items in every stratum, got 0"):
        ppi_items(np.full(4, np.nan), np.array([0.5, 1.0, 2.0, 3.0]))
    # Unclipped per-stratum lambdas (fitted together by least squares): each stratum's interval as above.
    free = ppi_mean(y, f, g, groups_labeled=groups_l, groups_unlabeled=groups_u, stratum_lambda="per_stratum",
                    clip=False)
    for h in ("a", "b"):
        lam = free["strata"][h]["lambda"]
        yh, fh, gh = y[groups_l == h], f[groups_l == h], g[groups_u == h]
        assert free["strata"][h]["ppi"]["mean"] == pytest.approx(yh.mean() + lam * (gh.mean() - fh.mean()), rel=1e-12)
    # A judge whose proxy never varies corrects nothing, and the result says so.
    flat = ppi_mean(y, np.full(80, 3.0), np.full(600, 3.0))
    assert "no spread" in flat["degenerate"][0]
