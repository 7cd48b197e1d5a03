"""``judgecp plan`` and ``judgecp select`` (issue 27 item 3): label counts that give the width asked for; active
labeling whose estimates stay valid and are narrower than uniform sampling where the judge knows its errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2

from judgecp import Fields, load
from judgecp.base.errors import InputError
from judgecp.cli import main
from judgecp.stats.active import active_mean, probabilities, sampling_design
from judgecp.stats.plan import plan, ppi_variance, proxy_check
from judgecp.stats.ppi import ppi_mean, quantile
from judgecp.synthetic.judges import simulate_likert_judge
from judgecp.workflows.nightly.runs import proxy_and_target
from judgecp.workflows.nightly.select import select
from tests.helpers import (
    FALSE_FAILURE,
    binomial_at_most,
    coverage_floor,
    mean_margin,
    shared_file,
    write_likert_csv,
)

ALPHA = 0.1


# A coverage check's floor is tests.helpers.coverage_floor: the Binomial(draws, 0.9) quantile at the test's share
# of FALSE_FAILURE (the intervals are asymptotic; at these sample sizes their coverage is the nominal one).


def judge(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Human scores (mean 3, sd 1.2) and a judge proxy biased by +0.4 that correlates with them at about 0.8."""
    y = 3.0 + rng.normal(0, 1.2, n)
    return y, 3.4 + 0.6 * (y - 3.0) + rng.normal(0, 0.5, n)


# -- plan ---------------------------------------------------------------------------------------------------


def test_ppi_variance_closed_forms() -> None:
    # lam = 0 when rho = 0: the labels alone; N unbounded and lam unclipped: s2_Y (1 - rho^2) / n.
    assert ppi_variance(100, sd_y=1.0, sd_f=1.0, rho=0.0, n_unlabeled=math.inf) == pytest.approx(1.0 / 100)
    assert ppi_variance(100, sd_y=1.0, sd_f=1.0, rho=0.6, n_unlabeled=math.inf) == pytest.approx(0.64 / 100)
    assert ppi_variance(100, sd_y=1.0, sd_f=1.0, rho=0.6, n_unlabeled=100) == pytest.approx((1 - 0.36 / 2) / 100)
    # The formula is ppi_mean's variance: averaged over 200 draws, within Monte-Carlo error (about 1%).
    y, f = judge(np.random.default_rng(0), 400_000)
    rho, sd_y, sd_f = np.corrcoef(y, f)[0, 1], y.std(), f.std()
    variances = []
    for seed in range(200):
        y, f = judge(np.random.default_rng(seed + 1), 5400)
        variances.append(ppi_mean(y[:400], f[:400], f[400:])["estimate"]["ppi"]["se"] ** 2)
    assert np.mean(variances) == pytest.approx(ppi_variance(400, sd_y=sd_y, sd_f=sd_f, rho=rho, n_unlabeled=5000),
                                               rel=0.03)


@pytest.mark.slow
def test_planned_labels_give_intervals_no_wider_than_asked_on_average() -> None:
    """30 pilots of 200 labeled pairs, each planning for half-width 0.08 with 5,000 unlabeled items; 40 runs per
    plan with that many labels. The mean half-width is at most 0.08 (the plan is conservative at confidence 0.9),
    and not wasteful (above 0.06); planned at the pilot's point estimates it is about 0.08."""
    h, big_n = 0.08, 5000
    halves = {"ppi": [], "labeled_only": [], "ppi_at_estimates": []}
    for pilot in range(30):
        rng = np.random.default_rng(pilot)
        p = plan(*judge(rng, 200), h, alpha=ALPHA, n_unlabeled=big_n)
        for run in range(40):
            rng = np.random.default_rng(10_000 + 100 * pilot + run)
            for name, n in (("ppi", p["labels"]["ppi"]), ("labeled_only", p["labels"]["labeled_only"]),
                            ("ppi_at_estimates", p["labels_at_estimates"]["ppi"])):
                y, f = judge(rng, n + big_n)
                e = ppi_mean(y[:n], f[:n], f[n:], alpha=ALPHA)["estimate"]
                est = e["labeled_only"] if name == "labeled_only" else e["ppi"]
                halves[name].append((est["upper"] - est["lower"]) / 2)
    means = {k: float(np.mean(v)) for k, v in halves.items()}
    assert 0.06 < means["ppi"] <= h and 0.06 < means["labeled_only"] <= h, means
    assert means["ppi_at_estimates"] == pytest.approx(h, rel=0.05), means


def test_plan_needs_fewer_labels_with_a_correlated_judge() -> None:
    y, f = judge(np.random.default_rng(1), 300)
    p = plan(y, f, 0.05, n_unlabeled=20_000)
    assert p["labels"]["ppi"] < 0.6 * p["labels"]["labeled_only"]
    assert set(p["assumed"]) >= {"correlation", "sd_label", "sd_proxy", "n_unlabeled"}
    noise = plan(y, np.random.default_rng(2).normal(size=300), 0.05)
    assert noise["labels"]["ppi"] == pytest.approx(noise["labels"]["labeled_only"], rel=0.02)
    with pytest.raises(InputError, match="--half-width"):
        plan(y, f, 0.0)


def test_cli_plan_from_a_calibrator_and_from_a_pilot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = simulate_likert_judge(800, seed=3)
    table = write_likert_csv(tmp_path / "cal.csv", data)
    flags = ["--label", "gt_score", "--logprobs", "s2_lp*", "--id", "sample_id"]
    assert main(["calibrate", str(table), *flags, "-o", str(tmp_path / "cal.json")]) == 0
    assert main(["plan", str(tmp_path / "cal.json"), "--half-width", "0.05", "--json", str(tmp_path / "p.json")]) == 0
    out = json.loads((tmp_path / "p.json").read_text())
    assert out["labels"]["ppi"] <= out["labels"]["labeled_only"] and out["assumed"]["n_pairs"] == 800
    assert out["assumed"]["n_unlabeled"] is None and "labeled_only" in out["curve"]
    # A pilot table: its labeled rows give the relationship, its unlabeled rows the unlabeled count.
    lines = table.read_text().splitlines()
    pilot = tmp_path / "pilot.csv"
    pilot.write_text("\n".join([lines[0]] + [ln if i < 100 else _blank_label(ln) for i, ln in enumerate(lines[1:])]))
    assert main(["plan", str(pilot), *flags, "--half-width", "0.1", "--json", str(tmp_path / "q.json")]) == 0
    q = json.loads((tmp_path / "q.json").read_text())
    assert q["assumed"]["n_pairs"] == 100 and q["assumed"]["n_unlabeled"] == 700
    capsys.readouterr()
    assert main(["plan", str(tmp_path / "cal.json"), "--half-width", "-1"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def _blank_label(line: str) -> str:
    cells = line.split(",")
    cells[6] = ""
    return ",".join(cells)


# -- select -------------------------------------------------------------------------------------------------


def test_probabilities_sum_to_the_budget_and_stay_in_range() -> None:
    u = np.concatenate([np.full(10, 100.0), np.linspace(0, 1, 990)])
    pi = probabilities(u, 200, mix=0.2)
    assert pi.sum() == pytest.approx(200) and pi.max() <= 1.0 and (pi[:10] == 1.0).all()
    assert pi.min() >= 0.2 * 200 / 1000 * 0.99  # the uniform share bounds every weight
    assert np.allclose(probabilities(u, 50, mix=1.0), 0.05)
    with pytest.raises(InputError, match="--budget"):
        probabilities(u, 0, mix=0.5)


def test_active_mean_with_uniform_probabilities_has_its_closed_form_variance_and_covers() -> None:
    """The reference is computed outside the code: Poisson sampling with probability p of N items drawn afresh from
    :func:`judge` (y normal, sd 1.2; f = 3.4 + 0.6 (y - 3) + N(0, 0.5^2)), estimated by inverse-probability weights
    and the best linear control variate in f, has variance ((1 - p) / p * s2_e + s2_y) / N to first order, s2_e =
    Var(y | f) = 1.44 - 0.864^2 / 0.7684 (the joint normal's), s2_y = 1.44 (the items' own spread: the estimand is
    the mean of the population the run is drawn from, 3). Over 1,000 draws: the estimates' variance within the
    chi-square band of that variance, the reported variances' mean within Student's t margin of it plus 2% (the
    O(1/n) of two coefficients fitted on about 200 labels; measured 0.989), the interval covering 3 at the
    binomial floor; each at FALSE_FAILURE / 3 (1.3 s)."""
    big_n, p, draws = 2000, 0.1, 1000
    theory = ((1 - p) / p * (1.44 - 0.864**2 / 0.7684) + 1.44) / big_n
    means, variances, covered = [], [], 0
    for k in range(draws):
        rng = np.random.default_rng([37, k])
        y, f = judge(rng, big_n)
        drawn = rng.random(big_n) < p
        e = active_mean(np.where(drawn, y, np.nan), f, np.where(drawn, p, np.nan), alpha=ALPHA)["estimate"]["ppi"]
        means.append(e["mean"])
        variances.append(e["se"] ** 2)
        covered += e["lower"] <= 3.0 <= e["upper"]
    spread = np.var(means, ddof=1) * (draws - 1) / theory  # chi-square with draws - 1 degrees of freedom
    assert chi2.ppf(FALSE_FAILURE / 6, draws - 1) <= spread <= chi2.ppf(1 - FALSE_FAILURE / 6, draws - 1), spread
    ratio = np.asarray(variances) / theory
    assert abs(ratio.mean() - 1) <= mean_margin(ratio, FALSE_FAILURE / 6) + 0.02, ratio.mean()
    assert covered / draws >= coverage_floor(1 - ALPHA, draws, FALSE_FAILURE / 3), covered / draws


def test_active_mean_counts_labels_known_before_the_draw_and_refuses_bad_probabilities() -> None:
    rng = np.random.default_rng(0)
    y, f = judge(rng, 4000)
    pi = np.full(4000, 0.1)
    drawn = rng.random(4000) < pi
    # Labels known before the draw count for sure (pi = 1); a probability outside (0, 1] is an error.
    pi2 = pi.copy()
    pi2[~drawn] = np.nan
    assert active_mean(np.where(drawn, y, np.nan), f, pi2)["n_labeled_before_the_draw"] == 0
    with pytest.raises(InputError, match="outside"):
        active_mean(np.where(drawn, y, np.nan), f, np.where(drawn, 1.5, np.nan))
    # Drawn items left unlabeled are counted and the estimand says what it then assumes.
    unanswered = np.where(drawn, y, np.nan)
    unanswered[np.flatnonzero(drawn)[:5]] = np.nan
    out = active_mean(unanswered, f, np.where(drawn, 0.1, np.nan))
    assert out["selected_without_label"] == 5 and "missing at random" in out["estimand"]


def real_judge(name: str) -> tuple[np.ndarray, np.ndarray]:
    sub = {
        "polaris": ("polaris", "llava_critic_7b_features.csv"),
        "mllm": ("mllm_judge", "llava_critic_7b_features.csv"),
    }
    data = load(
        shared_file(*sub[name]), "likert", Fields(label="gt_score", logprobs="s2_lp*", prediction="parsed_score")
    )
    f, y, _ = proxy_and_target(data)
    return y, f


def against_uniform(y: np.ndarray, f: np.ndarray, pilot: np.ndarray, run: np.ndarray, *, draws: int, budget: int = 300,
                    seed: int = 0, labeled: np.ndarray | None = None) -> dict[str, float]:
    """One pilot's error model and one run: select's design, then ``draws`` Poisson draws with its probabilities and
    with uniform ones (the same uniform numbers: common random numbers), each estimated by the active estimator.
    ``labeled``: the run's items that have their label before the draw (pi = 1)."""
    known = np.zeros(run.size, bool) if labeled is None else labeled
    pool = np.flatnonzero(~known)
    pi_pool, info = sampling_design(f[run], pool, budget, labeled_pairs=(y[pilot], f[pilot]), random_state=seed)
    yr, fr = y[run], f[run]
    out = {"mix": info["mix"], "expected": info["expected_width"]["active"], "departed": float(info["mix"] != 1.0)}
    schemes = {"uniform": np.full(pool.size, budget / pool.size)}
    if info["mix"] != 1.0:
        schemes["select"] = pi_pool
    widths: dict[str, list[float]] = {name: [] for name in schemes}
    covered = dict.fromkeys(schemes, 0)
    for d in range(draws):
        u = np.random.default_rng([seed, d]).random(pool.size)
        for name, p in schemes.items():
            pi, labels = np.full(run.size, np.nan), np.where(known, yr, np.nan)
            pi[pool] = p
            labels[pool] = np.where(u < p, yr[pool], np.nan)
            e = active_mean(labels, fr, pi, alpha=ALPHA)["estimate"]["ppi"]
            widths[name].append(e["upper"] - e["lower"])
            covered[name] += e["lower"] <= yr.mean() <= e["upper"]
    out["uniform"], out["uniform_cover"] = float(np.mean(widths["uniform"])), covered["uniform"] / draws
    name = "select" if "select" in schemes else "uniform"
    out["select"], out["select_cover"] = float(np.mean(widths[name])), covered[name] / draws
    return out


def pilots_against_uniform(y: np.ndarray, f: np.ndarray, *, pilots: int, draws: int, pilot_size: int = 300,
                           seed: int = 0) -> dict[str, float]:
    """Over ``pilots`` random pilot/run splits: select's width against uniform sampling's (pooled), the expected width
    against the achieved mean width (mean of the ratios), the share of pilots select departs from uniform on."""
    rows = []
    for k in range(pilots):
        order = np.random.default_rng([seed, k]).permutation(y.size)
        rows.append(against_uniform(y, f, order[:pilot_size], order[pilot_size:], draws=draws, seed=k))
    return {"ratio": sum(r["select"] for r in rows) / sum(r["uniform"] for r in rows),
            "expected_over_achieved": float(np.mean([r["expected"] / r["select"] for r in rows])),
            "departed": float(np.mean([r["departed"] for r in rows])),
            "cover": float(np.mean([r["select_cover"] for r in rows])), "draws": pilots * draws}


def test_select_without_an_error_model_samples_uniformly_and_says_why() -> None:
    """Issue 32: the judge's own rating spread is not the size of its error (used as one, select promised 0.91-0.97x
    of uniform sampling's width and delivered 1.04-1.21x). Without a calibrator or a pilot, the draw is uniform, the
    summary says why, and no expected width is made up."""
    data = simulate_likert_judge(2000, seed=4)
    data.labels[150:] = np.nan  # a night with 150 labels
    res = select(data, 200)
    pi = res.probability[150:]
    assert np.allclose(pi, 200 / 1850) and np.isnan(res.probability[:150]).all()
    s = res.summary
    assert s["mix"] == 1.0 and s["error_model"] is None and s["expected_width"] is None
    assert "no error model" in s["why"] and "spread is not the size of its error" in s["why"]
    assert s["already_labeled"] == 150


def test_select_stays_uniform_where_the_error_size_is_flat() -> None:
    """Heavy-tailed errors of the same size everywhere (Student t, 3 degrees of freedom): an error model by proxy bin
    on 300 pairs is mostly noise. The old rule (that model, mixed half with uniform) cost 1.0% of width on average
    and 4.6% on the worst of 60 pilots (docs/benchmarks.md); the cross-validated choice departs from uniform sampling
    on few pilots, and select's width is at most uniform sampling's. 30 pilots x 30 draws, common random numbers."""
    ratios, departed = [], 0
    for k in range(30):
        rng = np.random.default_rng([32, k])
        f = rng.normal(3, 0.8, 5300)
        y = f + 0.8 * rng.standard_t(3, f.size)
        res = against_uniform(y, f, np.arange(300), np.arange(300, f.size), draws=30, seed=k)
        ratios.append(res["select"] / res["uniform"])
        departed += res["departed"]
    # Departures happen on about 1% of pilots (0 of 60 in benchmarks.md), each costing at most about 1%: more than 5
    # of 30, or a mean cost of 0.2%, is a broken choice (the old rule: 0.5% on these 30 pilots, 3.7% on the worst).
    assert departed <= 5, departed
    assert float(np.mean(ratios)) <= 1.002, ratios


def test_select_gains_where_the_proxy_knows_the_error_and_says_how_much() -> None:
    """A judge whose error grows away from the middle of its scale: select departs from uniform sampling, is narrower,
    covers, and the expected width it prints is the achieved mean width within 15% (mean over 10 pilots)."""
    rows = []
    for k in range(10):
        rng = np.random.default_rng([33, k])
        f = rng.uniform(1, 5, 5300)
        y = f + rng.normal(0, 0.2 + 0.6 * np.abs(f - 3), f.size)
        rows.append(against_uniform(y, f, np.arange(300), np.arange(300, f.size), draws=40, seed=k))
    ratio = sum(r["select"] for r in rows) / sum(r["uniform"] for r in rows)
    assert sum(r["departed"] for r in rows) >= 9 and ratio < 0.97, (ratio, rows)
    assert float(np.mean([r["expected"] / r["select"] for r in rows])) == pytest.approx(1.0, abs=0.15)
    assert float(np.mean([r["select_cover"] for r in rows])) >= coverage_floor(1 - ALPHA, 400)


def test_select_counts_the_labels_the_run_already_has() -> None:
    """A night with 150 labels and a budget of 200: the run's labels enter the expected width with pi = 1 (as the
    estimate counts them) and it is the achieved mean width within 15%. With pi = 1 they only remove their own share
    of the run (5% here) from the sampling variance: left out, the expected width is about 4% wider."""
    rows = []
    for k in range(6):
        rng = np.random.default_rng([34, k])
        y, f = judge(rng, 3300)
        known = np.zeros(3000, bool)
        known[:150] = True
        rows.append(against_uniform(y, f, np.arange(300), np.arange(300, 3300), draws=40, budget=200, seed=k,
                                    labeled=known))
    assert float(np.mean([r["expected"] / r["select"] for r in rows])) == pytest.approx(1.0, abs=0.15), rows


@pytest.mark.slow
def test_select_on_polaris_gains_and_its_expected_width_is_right() -> None:
    """Polaris captions, 300 labels drawn from 8,426 items, a 300-item pilot as the error model: the judge knows where
    it errs (its confident "1"s are mostly right), so select departs from uniform sampling and is narrower (0.86x
    over 40 pilots x 100 draws, docs/benchmarks.md), covers, and prints the achieved width within 15%."""
    y, f = real_judge("polaris")
    res = pilots_against_uniform(y, f, pilots=8, draws=30)
    assert res["departed"] >= 0.75 and res["ratio"] < 0.93, res
    assert res["expected_over_achieved"] == pytest.approx(1.0, abs=0.15), res
    assert res["cover"] >= coverage_floor(1 - ALPHA, res["draws"]), res


@pytest.mark.slow
def test_select_on_llava_critic_is_no_wider_than_uniform() -> None:
    """MLLM-as-a-Judge: the judge's errors are nearly the same size everywhere; select mostly keeps uniform sampling
    and is no wider than it (the old rule, the judge's own spread, cost 4.5%: docs/benchmarks.md); its expected width
    is the achieved mean width within 15%."""
    y, f = real_judge("mllm")
    res = pilots_against_uniform(y, f, pilots=8, draws=30)
    assert res["ratio"] <= 1.002, res
    assert res["expected_over_achieved"] == pytest.approx(1.0, abs=0.15), res
    assert res["cover"] >= coverage_floor(1 - ALPHA, res["draws"]), res


def test_select_refuses_a_fully_labeled_run() -> None:
    with pytest.raises(InputError, match="nothing to select"):
        select(simulate_likert_judge(100, seed=0), 10)


def test_cli_select_then_estimate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """select writes the run's own rows with sampling_probability; filled in, estimate weights them."""
    data = simulate_likert_judge(1500, seed=6)
    truth = write_likert_csv(tmp_path / "truth.csv", data)
    lines = truth.read_text().splitlines()
    run = tmp_path / "run.csv"
    run.write_text("\n".join([lines[0]] + [_blank_label(ln) for ln in lines[1:]]) + "\n")
    flags = ["--label", "gt_score", "--logprobs", "s2_lp*", "--id", "sample_id"]
    assert main(["select", str(run), *flags, "--budget", "150", "-o", str(tmp_path / "to_label.jsonl"),
                 "--json", str(tmp_path / "sel.json")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "to_label.jsonl").read_text().splitlines()]
    summary = json.loads((tmp_path / "sel.json").read_text())
    assert len(rows) == summary["n_selected"] and 100 < len(rows) < 200
    assert all(0 < r["sampling_probability"] <= 1 and r["gt_score"] is None and "s2_lp1" in r for r in rows)
    assert summary["expected_width"] is None and summary["mix"] == 1.0  # no error model: uniform sampling
    assert len({r["sampling_probability"] for r in rows}) == 1
    assert "no error model" in capsys.readouterr().err
    human = dict(zip(data.ids.tolist(), data.labels.tolist(), strict=True))
    for r in rows:  # the annotators' work
        r["gt_score"] = human[str(r["sample_id"])]
    labeled = tmp_path / "labeled.jsonl"
    labeled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["estimate", "--labeled", str(labeled), "--unlabeled", str(run), *flags,
                 "--json", str(tmp_path / "est.json")]) == 0
    est = json.loads((tmp_path / "est.json").read_text())
    assert est["sampling"].startswith("active") and est["n_labeled"] == len(rows)
    assert est["n_labeled"] + est["n_unlabeled"] == 1500
    e = est["estimate"]["ppi"]
    assert e["lower"] < e["upper"] and abs(e["mean"] - float(data.labels.mean())) < 0.3


def test_cli_select_then_estimate_pairwise(tmp_path: Path) -> None:
    """Pairs: both orders of a chosen pair are written, and the pair's sampling_probability reaches estimate."""
    from judgecp.kinds.reading import to_records
    from judgecp.synthetic.judges import simulate_pairwise_judge

    records = to_records(simulate_pairwise_judge(400, seed=1))
    human = {r["pair_id"]: r["label"] for r in records}
    run = tmp_path / "pairs.jsonl"
    run.write_text("".join(json.dumps(dict(r, label=None)) + "\n" for r in records))
    assert main(["select", str(run), "--budget", "60", "-o", str(tmp_path / "to_label.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "to_label.jsonl").read_text().splitlines()]
    chosen = {r["pair_id"] for r in rows}
    assert len(rows) == 2 * len(chosen) and all(0 < r["sampling_probability"] <= 1 for r in rows)
    (tmp_path / "labeled.jsonl").write_text(
        "".join(json.dumps(dict(r, label=human[r["pair_id"]])) + "\n" for r in rows)
    )
    assert main(["estimate", "--labeled", str(tmp_path / "labeled.jsonl"), "--unlabeled", str(run),
                 "--json", str(tmp_path / "est.json")]) == 0
    est = json.loads((tmp_path / "est.json").read_text())
    assert est["sampling"].startswith("active") and est["n_labeled"] == len(chosen)
    assert est["n_labeled"] + est["n_unlabeled"] == 400


def _night(tmp_path: Path, n: int, n_labeled: int, seed: int) -> tuple[Path, dict[str, float]]:
    """A simulated night as a features table whose first ``n_labeled`` rows keep their label; the humans' scores."""
    data = simulate_likert_judge(n, seed=seed)
    lines = write_likert_csv(tmp_path / f"truth{seed}.csv", data).read_text().splitlines()
    run = tmp_path / f"night{seed}.csv"
    run.write_text("\n".join([lines[0]] + [ln if i < n_labeled else _blank_label(ln)
                                           for i, ln in enumerate(lines[1:])]) + "\n")
    return run, dict(zip(data.ids.tolist(), data.labels.tolist(), strict=True))


FLAGS = ["--label", "gt_score", "--logprobs", "s2_lp*", "--id", "sample_id"]


def test_cli_estimate_counts_the_labels_the_night_already_had(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32: after select, `estimate --labeled L --unlabeled RUN` used L's labels only and dropped the night's
    own 150 ("n_labeled_before_the_draw": 0); they are known for sure and count with pi = 1."""
    run, human = _night(tmp_path, 1500, 150, seed=6)
    pilot, _ = _night(tmp_path, 400, 400, seed=7)
    assert main(["select", str(run), *FLAGS, "--pilot", str(pilot), "--budget", "100",
                 "-o", str(tmp_path / "to_label.jsonl"), "--json", str(tmp_path / "sel.json")]) == 0
    summary = json.loads((tmp_path / "sel.json").read_text())
    w = summary["expected_width"]
    assert summary["already_labeled"] == 150 and w["range"][0] < w["active"] < w["range"][1]
    assert "the run's 150 labels count with probability 1" in capsys.readouterr().err
    rows = [json.loads(line) for line in (tmp_path / "to_label.jsonl").read_text().splitlines()]
    for r in rows:
        r["gt_score"] = human[str(r["sample_id"])]
    (tmp_path / "labeled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["estimate", "--labeled", str(tmp_path / "labeled.jsonl"), "--unlabeled", str(run), *FLAGS,
                 "--json", str(tmp_path / "est.json")]) == 0
    est = json.loads((tmp_path / "est.json").read_text())
    assert est["n_labeled_before_the_draw"] == 150 and est["n_labeled"] == len(rows) + 150
    assert est["n_labeled"] + est["n_unlabeled"] == 1500


def _one_error_line(capsys: pytest.CaptureFixture[str], *words: str) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and all(w in err for w in words), err


def test_cli_select_refuses_error_models_it_cannot_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 33: a multiple-choice calibrator for a Likert run, a pilot whose labels are all equal (the old expected
    width was about 5x too optimistic), a pilot without labels (a ValueError): each refused in one line."""
    from judgecp.kinds.reading import from_records, to_records
    from judgecp.synthetic.judges import simulate_mcq_records

    run, _ = _night(tmp_path, 600, 0, seed=8)
    mcq = tmp_path / "mcq.jsonl"
    mcq.write_text("".join(json.dumps(r) + "\n" for r in to_records(from_records(simulate_mcq_records(300, seed=1)))))
    assert main(["calibrate", str(mcq), "-o", str(tmp_path / "mcq.cal.json")]) == 0
    capsys.readouterr()
    out = ["--budget", "50", "-o", str(tmp_path / "x.jsonl")]
    assert main(["select", str(run), *FLAGS, "--calibrator", str(tmp_path / "mcq.cal.json"), *out]) == 2
    _one_error_line(capsys, "mcq judges", "likert records")
    lines = (tmp_path / "truth8.csv").read_text().splitlines()
    constant = tmp_path / "constant.csv"
    constant.write_text("\n".join([lines[0]] + [_set_label(ln, "3.0") for ln in lines[1:201]]) + "\n")
    assert main(["select", str(run), *FLAGS, "--pilot", str(constant), *out]) == 2
    _one_error_line(capsys, "every label is 3", "no error model")
    assert main(["select", str(run), *FLAGS, "--pilot", str(run), *out]) == 2
    _one_error_line(capsys, "no labeled items")
    assert main(["plan", str(constant), *FLAGS, "--half-width", "0.1"]) == 2
    _one_error_line(capsys, "every label is 3")
    assert main(["select", str(run), *FLAGS, "--mix", "2", *out]) == 2
    _one_error_line(capsys, "--mix must be auto or a number in [0, 1]")
    assert not (tmp_path / "x.jsonl").exists()


def _set_label(line: str, value: str) -> str:
    cells = line.split(",")
    cells[6] = value
    return ",".join(cells)


# -- plan against the run -----------------------------------------------------------------------------------


def test_proxy_check_false_alarm_rate_and_power() -> None:
    """The check of a pilot's judge scores against the run's (KS, level 0.01): a pilot drawn from the run's population
    is refused in at most 1% of draws (binomial band at 1e-3 over 1,000 draws); a pilot whose scores are shifted by
    half their sd is caught in nearly every draw."""
    null = shifted = 0
    for k in range(1000):
        rng = np.random.default_rng([35, k])
        run = rng.normal(3, 1, 1000)
        null += proxy_check(rng.normal(3, 1, 200), run)["mismatch"]
        shifted += proxy_check(rng.normal(3.5, 1, 200), run)["mismatch"]
    assert null <= binomial_at_most(0.01, 1000), null
    assert shifted / 1000 >= 0.95, shifted


def _llava_by_task() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import csv

    with open(shared_file("mllm_judge", "task_labels.csv")) as fh:
        task_of = {r["sample_id"]: r["orig_dataset"] for r in csv.DictReader(fh)}
    data = load(shared_file("mllm_judge", "llava_critic_7b_features.csv"), "likert",
                Fields(label="gt_score", logprobs="s2_lp*", id="sample_id"))
    f, y, _ = proxy_and_target(data)
    keep = np.array([i in task_of for i in data.ids])
    return y[keep], f[keep], np.array([task_of[i] for i in np.asarray(data.ids)[keep]])


def test_plan_refuses_a_pilot_unlike_the_run() -> None:
    """Issue 32: the first 400 rows of LLaVA-Critic's file sorted by task (two tasks) as the pilot planned 217 labels
    for a half-width of 0.1 that 0.13 is achieved with (every draw above, docs/benchmarks.md), "at confidence 0.9".
    Given the run, the plan checks the pilot's judge scores against it and refuses, naming the difference; with
    --mismatch warn it plans and warns."""
    y, f, task = _llava_by_task()
    pilot = np.argsort(task, kind="stable")[:400]
    old = plan(y[pilot], f[pilot], 0.1, n_unlabeled=y.size)
    at_truth = math.sqrt(ppi_variance(old["labels"]["ppi"], sd_y=y.std(ddof=1), sd_f=f.std(ddof=1),
                                      rho=np.corrcoef(y, f)[0, 1], n_unlabeled=y.size)) * 1.6449
    assert at_truth > 0.12  # the failure: 30% optimistic
    with pytest.raises(InputError, match=r"unlike the run's \(KS p = .* < 0.01; median judge score"):
        plan(y[pilot], f[pilot], 0.1, run_proxy=f, n_unlabeled=y.size, source="pilot")
    warned = plan(y[pilot], f[pilot], 0.1, run_proxy=f, n_unlabeled=y.size, mismatch="warn")
    assert warned["warnings"] and warned["assumed"]["run"]["check"]["mismatch"]
    assert "not a run unlike the pilot" in warned["confidence_covers"]


def test_plan_from_random_pilots_of_the_run_meets_the_target_at_its_confidence() -> None:
    """200 random pilots of 400 LLaVA-Critic items, each planning for half-width 0.1 over the whole run: the check
    refuses at most 1% of them plus noise (they are samples of the run), and the planned PPI++ count meets 0.1 at the
    run's own sd and correlation for at least 90% of them (binomial band at 1e-3; 98.5% over 400, benchmarks.md)."""
    y, f, _ = _llava_by_task()
    refused = met = 0
    for k in range(200):
        pilot = np.random.default_rng([36, k]).choice(y.size, 400, replace=False)
        p = plan(y[pilot], f[pilot], 0.1, run_proxy=f, n_unlabeled=y.size, mismatch="warn")
        refused += p["assumed"]["run"]["check"]["mismatch"]
        var = ppi_variance(p["labels"]["ppi"], sd_y=y.std(ddof=1), sd_f=f.std(ddof=1), rho=np.corrcoef(y, f)[0, 1],
                           n_unlabeled=y.size)
        met += quantile(ALPHA, p["labels"]["ppi"] - 1) * math.sqrt(var) <= 0.1  # t, as estimate reports it
    assert refused <= binomial_at_most(0.01, 200, FALSE_FAILURE / 2), refused
    assert met / 200 >= coverage_floor(0.9, 200, FALSE_FAILURE / 2), met


def test_cli_plan_with_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`plan CAL --run RUN`: the run's unlabeled items and proxy sd, the check printed, the confidence wording; a run
    the calibrator's items are unlike (a judge kinder by 0.3 points) refused in one line, or planned with a warning."""
    from judgecp.kinds.reading import to_records

    def write(path: Path, data: object, n_labeled: int) -> Path:
        path.write_text("".join(json.dumps(dict(r, label=r["label"] if i < n_labeled else None)) + "\n"
                                for i, r in enumerate(to_records(data))))
        return path

    cal = write(tmp_path / "cal.jsonl", simulate_likert_judge(600, seed=1), 600)
    night_a = write(tmp_path / "a.jsonl", simulate_likert_judge(3000, seed=2), 150)
    night_b = write(tmp_path / "b.jsonl", simulate_likert_judge(3000, seed=3, judge_bias=0.6), 150)
    assert main(["calibrate", str(cal), "-o", str(tmp_path / "cal.json")]) == 0
    capsys.readouterr()
    assert main(["plan", str(tmp_path / "cal.json"), "--half-width", "0.05", "--run", str(night_a),
                 "--json", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert "for the pilot's sampling error only, not for a run unlike the pilot" in out
    assert "3000 items" in out and "KS p = " in out
    p = json.loads((tmp_path / "p.json").read_text())
    assert p["assumed"]["n_unlabeled"] == 2850 and p["assumed"]["run"]["n_items"] == 3000
    assert not p["assumed"]["run"]["check"]["mismatch"] and p["warnings"] == []
    assert main(["plan", str(tmp_path / "cal.json"), "--half-width", "0.05", "--run", str(night_b)]) == 2
    _one_error_line(capsys, "unlike run", "KS p = ", "--mismatch warn")
    assert main(["plan", str(tmp_path / "cal.json"), "--half-width", "0.05", "--run", str(night_b),
                 "--mismatch", "warn"]) == 0
    assert "judgecp: warning: " in capsys.readouterr().err
    assert main(["plan", str(tmp_path / "cal.json"), "--half-width", "0.05", "--run", str(night_a),
                 "--unlabeled", "10"]) == 2
    _one_error_line(capsys, "--run or --unlabeled")


def test_the_full_size_measurement_runs_at_a_smoke_size() -> None:
    """scripts/bench_select_plan.py (docs/benchmarks.md's figures) at a smoke size: it runs and writes its tables."""
    import subprocess
    import sys

    shared_file("mllm_judge", "task_labels.csv")
    shared_file("polaris", "llava_critic_7b_features.csv")
    script = Path(__file__).resolve().parents[1] / "scripts" / "bench_select_plan.py"
    out = subprocess.run([sys.executable, str(script), "--quick", "--data", str(shared_file())], capture_output=True,
                         text=True, check=True).stdout
    assert "| LLaVA-Critic (MLLM-as-a-Judge) | 3 x 10 |" in out and "first 400 rows sorted by task" in out
