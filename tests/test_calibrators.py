"""Calibrators (issue 10): the saved form, refusal on mismatch, coverage after a round trip, drift, the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgecp import from_records
from judgecp.base.errors import InputError
from judgecp.cli import main
from judgecp.data import ScoreData
from judgecp.kinds.reading import to_records
from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_pairwise_judge,
)
from judgecp.workflows.calibrators import (
    SCHEMA,
    Calibrator,
    apply,
    calibrate,
    content_digest,
    drift_test,
)
from tests.helpers import (
    FALSE_FAILURE,
    binomial_at_least,
    binomial_at_most,
    judge_draw,
    mean_margin,
)

ALPHA = 0.1
SAVEABLE = ("naive", "lac", "aps", "aps(randomized=False)", "raps", "margin", "ordinal_aps", "ordinal_set", "lvd")


def round_trip(cal: Calibrator) -> Calibrator:
    """Through the JSON text, as a file would carry it."""
    return Calibrator.from_dict(json.loads(json.dumps(cal.to_dict())))


def likert(n: int, seed: int) -> ScoreData:
    X, y = judge_draw(n, np.random.default_rng(seed))
    return ScoreData.from_arrays(X, y, fields={"judge": np.array(["j"] * n)})


@pytest.mark.parametrize("method", SAVEABLE)
def test_round_trip_gives_the_same_predictions(method: str) -> None:
    data = simulate_likert_judge(n=800, seed=3)
    cal = calibrate(data.take(np.arange(400)), method=method, alpha=ALPHA, random_state=1)
    obj = cal.to_dict()
    assert obj["schema"] == SCHEMA and obj["n_calibration"] == 400 and obj["alpha"] == ALPHA
    assert obj["scale"] == [1, 5] and obj["judgecp_version"] and obj["drift"]["n"] == 400
    new = data.take(np.arange(400, 800))
    before, after = apply(cal, new), apply(round_trip(cal), new)
    assert before.sets == after.sets
    assert before.summary["mean_set_size"] == after.summary["mean_set_size"]


def test_mondrian_and_choice_and_pairwise_round_trip() -> None:
    data = simulate_likert_judge(n=800, seed=4)
    cal = calibrate(data.take(np.arange(400)), method="lac", groups="group")
    assert (
        apply(round_trip(cal), data.take(np.arange(400, 800))).sets == apply(cal, data.take(np.arange(400, 800))).sets
    )
    choices = from_records(simulate_mcq_records(600, seed=2))
    mcal = calibrate(choices.take(np.arange(300)), method="aps")
    assert (
        apply(round_trip(mcal), choices.take(np.arange(300, 600))).sets
        == apply(mcal, choices.take(np.arange(300, 600))).sets
    )
    pairs = simulate_pairwise_judge(1200, seed=5)
    pcal = calibrate(pairs.take(np.arange(600)), alpha=0.15)
    a, b = apply(pcal, pairs.take(np.arange(600, 1200))), apply(round_trip(pcal), pairs.take(np.arange(600, 1200)))
    assert a.accept is not None and b.accept is not None and (a.accept == b.accept).all()
    assert 0.0 < a.summary["abstention_rate"] < 1.0


def resign(obj: dict[str, Any]) -> dict[str, Any]:
    """Recompute the digest of an edited calibrator object, as a tamperer could."""
    obj["digest"] = content_digest(obj)
    return obj


def test_fitted_models_are_refused_not_pickled() -> None:
    data = simulate_likert_judge(n=300, seed=1)
    with pytest.raises(InputError, match="does not hold as data"):
        calibrate(data, method="lac(probabilities=recalibrated)")
    # The state holds the fields its estimator reads, nothing else: an added object is an unknown field.
    for name, value in (
        ("model_", {"__reduce__": "os.system"}),
        ("__dict__", {}),
        ("__class__", "x"),
        ("quantile_", 1.0),
    ):
        bad = calibrate(data, method="naive").to_dict()
        bad["state"]["method"][name] = value
        with pytest.raises(InputError, match=f"state.method.{name}: unknown field"):
            Calibrator.from_dict(resign(bad))
    bad = calibrate(data, method="lac").to_dict()
    bad["state"]["method"]["scores"][0] = {"array": [1], "shape": [1], "dtype": "O"}
    with pytest.raises(InputError, match="state.method.scores: expected numbers"):
        Calibrator.from_dict(resign(bad))
    for mutate in (lambda o: o["state"].pop("method"), lambda o: o.update(scale="x"), lambda o: o.update(alpha=[1]),
                   lambda o: o["state"].update(method=[]), lambda o: o.update(ppi={"labels": [1.0], "proxy": []})):
        broken = calibrate(data, method="naive").to_dict()
        mutate(broken)
        with pytest.raises(InputError):
            Calibrator.from_dict(resign(broken))


def test_mismatch_is_refused_unless_forced() -> None:
    cal = calibrate(likert(400, 0), method="naive")
    other = ScoreData.from_arrays(*judge_draw(50, np.random.default_rng(1)), fields={"judge": np.array(["k"] * 50)})
    with pytest.raises(InputError, match="judge \\['k'\\] differs"):
        apply(cal, other)
    forced = apply(cal, other, force=True)
    assert forced.summary["warnings"][0]["kind"] == "compatibility"
    with pytest.raises(InputError, match="for likert judges"):
        apply(cal, simulate_pairwise_judge(50, seed=1))
    from judgecp.base.scale import LikertScale

    X, y = judge_draw(50, np.random.default_rng(2), scale=LikertScale(1, 7))
    with pytest.raises(InputError, match="scale 1:7"):
        apply(cal, ScoreData.from_arrays(X, y, scale=LikertScale(1, 7)))
    with pytest.raises(InputError, match="not a judgecp calibrator"):
        Calibrator.from_dict({"schema": "judgecp.record/1"})


@pytest.mark.slow
@pytest.mark.parametrize("method", ["naive", "lac", "aps", "lvd"])
def test_applied_calibrator_covers_the_other_half(method: str) -> None:
    """Fitted on one seeded half, saved, loaded and applied to the other: coverage in the split-conformal band."""
    seeds, n = 200, 400
    coverage = []
    for seed in range(seeds):
        data = likert(n, seed)
        perm = np.random.default_rng(10_000 + seed).permutation(n)
        cal = round_trip(calibrate(data.take(perm[: n // 2]), method=method, alpha=ALPHA, random_state=seed))
        test = data.take(perm[n // 2 :])
        coverage.append(apply(cal, test).summary["labeled"]["coverage"])
    cov = np.asarray(coverage)
    # Split conformal: 1 - alpha <= E[coverage] (<= 1 - alpha + 1/(n_cal + 1) for continuous scores); each side
    # a one-sided t margin at half the test's false-failure probability (tests/helpers.py).
    margin = mean_margin(cov, FALSE_FAILURE / 2)
    assert cov.mean() >= 1 - ALPHA - margin, (cov.mean(), margin)
    upper = 1 - ALPHA + 1 / (n // 2 + 1)
    if method in ("naive", "aps"):  # continuous (or randomised) scores: the upper band holds too
        assert cov.mean() <= upper + margin, (cov.mean(), margin)


@pytest.mark.slow
def test_applied_choice_sets_and_selective_judge_keep_their_promises() -> None:
    seeds = 100
    cov, risk = [], []
    for seed in range(seeds):
        choices = from_records(simulate_mcq_records(400, seed=seed))
        cal = round_trip(calibrate(choices.take(np.arange(200)), method="aps", alpha=ALPHA, random_state=seed))
        cov.append(apply(cal, choices.take(np.arange(200, 400))).summary["labeled"]["coverage"])
        pairs = simulate_pairwise_judge(1000, seed=seed)
        pcal = round_trip(calibrate(pairs.take(np.arange(500)), alpha=ALPHA))
        lab = apply(pcal, pairs.take(np.arange(500, 1000))).summary["labeled"]
        risk.append(lab["error_among_accepted"] or 0.0)
    c, r = np.asarray(cov), np.asarray(risk)
    assert c.mean() >= 1 - ALPHA - mean_margin(c, FALSE_FAILURE / 2)
    # SCOPE: E[error among accepted] <= alpha.
    assert r.mean() <= ALPHA + mean_margin(r, FALSE_FAILURE / 2), r.mean()


@pytest.mark.slow
def test_calibrated_estimate_covers_the_mean_of_an_unlabeled_run() -> None:
    """PPI++ with the calibrator's labels and an unlabeled run: covers E[Y]; the judge-only interval does not.
    A run whose drift check false-alarms gets no estimate (at most the two levels' 0.02, within a binomial band;
    coverage is of the rest). Each binomial check at half the test's false-failure probability."""
    truth = float(np.mean(judge_draw(400_000, np.random.default_rng(123))[1]))
    seeds, cover, judge_cover, n_eff, withheld = 300, [], [], [], []
    for seed in range(seeds):
        cal = round_trip(calibrate(likert(200, seed), method="naive", alpha=ALPHA))
        run = likert(2000, 50_000 + seed)
        unlabeled = ScoreData.from_arrays(run.logprobs, np.full(run.n, np.nan), fields=dict(run.fields))
        est = apply(cal, unlabeled).summary["estimate"]
        withheld.append(est is None)
        if est is None:
            continue
        assert est["labeled_from"] == "calibrator" and est["n_labeled"] == 200 and est["n_unlabeled"] == 2000
        ppi, judge = est["estimate"]["ppi"], est["estimate"]["judge_only"]
        cover.append(ppi["lower"] <= truth <= ppi["upper"])
        judge_cover.append(judge["lower"] <= truth <= judge["upper"])
        n_eff.append(est["effective_sample_size"])
    assert sum(cover) >= binomial_at_least(1 - ALPHA, len(cover), FALSE_FAILURE / 2), np.mean(cover)
    assert sum(withheld) <= binomial_at_most(0.02, seeds, FALSE_FAILURE / 2), np.mean(withheld)
    assert np.mean(judge_cover) < 0.05  # negative control: the synthetic judge scores +0.28 too high
    assert np.mean(n_eff) > 200


def test_coverage_check_fails_under_a_shifted_judge() -> None:
    """Negative control: a judge whose scores moved one label up breaks coverage, and the summary says so."""
    cal = calibrate(likert(1000, 0), method="naive", alpha=ALPHA)
    data = likert(600, 1)
    shifted = ScoreData.from_arrays(np.roll(data.logprobs, 2, axis=1), data.labels, fields=dict(data.fields))
    summary = apply(cal, shifted).summary
    assert summary["labeled"]["coverage"] < 0.8
    kinds = {w["kind"] for w in summary["warnings"]}
    assert {"drift", "coverage"} <= kinds
    assert summary["drift"]["drift"] is True


@pytest.mark.slow
def test_drift_test_size_and_power() -> None:
    """Size <= level under exchangeability; power under a stated shift (scores rolled one label up)."""
    level, seeds = 0.05, 300
    null, shift = [], []
    for seed in range(seeds):
        cal = calibrate(likert(300, seed), method="naive", alpha=ALPHA)
        run = likert(300, 100_000 + seed)
        result = drift_test(cal, run, level)
        null.append(result["drift"])
        moved = ScoreData.from_arrays(np.roll(run.logprobs, 1, axis=1), run.labels, fields=dict(run.fields))
        shift.append(drift_test(cal, moved, level)["drift"])
    size, power = np.mean(null), np.mean(shift)
    assert sum(null) <= binomial_at_most(level, seeds), size
    assert power >= 0.9, power


# -- command line --------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_calibrate_apply_estimate_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = to_records(simulate_likert_judge(n=1200, seed=7))
    for r in records:
        r["judge"] = "tiny-judge"
    cal_file = write_jsonl(tmp_path / "cal.jsonl", records[:600])
    run = [dict(r, label=None) if i >= 100 else r for i, r in enumerate(records[600:])]
    run_file = write_jsonl(tmp_path / "run.jsonl", run)
    assert (
        main(["calibrate", str(cal_file), "-o", str(tmp_path / "cal.json"), "--method", "aps", "--alpha", "0.1"]) == 0
    )
    assert json.loads((tmp_path / "cal.json").read_text())["method"] == "aps"
    assert main(["apply", str(tmp_path / "cal.json"), str(run_file), "-o", str(tmp_path / "out.jsonl"),
                 "--json", str(tmp_path / "sum.json")]) == 0
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(out) == len(run) and all(isinstance(r["set"], list) for r in out)
    assert [r["id"] for r in out] == [r["id"] for r in run] and out[0]["judge"] == "tiny-judge"
    summary = json.loads((tmp_path / "sum.json").read_text())
    assert summary["n"] == 600 and summary["n_applied"] == 600 and summary["labeled"]["n"] == 100
    assert 1.0 <= summary["mean_set_size"] <= 5.0 and summary["drift"]["p_value"] is not None
    assert main(["estimate", str(run_file), "--json", str(tmp_path / "est.json")]) == 0
    est = json.loads((tmp_path / "est.json").read_text())
    assert est["n_labeled"] == 100 and est["n_unlabeled"] == 500 and est["alpha"] == 0.1
    assert {"ppi", "judge_only", "labeled_only"} <= set(est["estimate"])
    assert main(["gate", str(tmp_path / "est.json"), "--min", "estimate.ppi.lower=1"]) == 0
    capsys.readouterr()
    assert main(["gate", str(tmp_path / "sum.json"), "--max", "set_size=0.5", "--min", "n=1"]) == 1
    assert capsys.readouterr().out.count("FAIL") == 1
    assert main(["gate", str(tmp_path / "sum.json"), "--min", "no.such.metric=1"]) == 2
    # Another judge: refused (exit 2) unless --force.
    other = write_jsonl(tmp_path / "other.jsonl", [dict(r, judge="big-judge") for r in run])
    assert main(["apply", str(tmp_path / "cal.json"), str(other)]) == 2
    assert "judge ['big-judge'] differs" in capsys.readouterr().err
    assert main(["apply", str(tmp_path / "cal.json"), str(other), "--force"]) == 0
    (tmp_path / "bad.json").write_text('{"schema": "x"}')
    assert main(["apply", str(tmp_path / "bad.json"), str(run_file)]) == 2


def test_apply_output_has_one_line_per_input_record(tmp_path: Path) -> None:
    records = to_records(simulate_likert_judge(n=400, seed=9))
    assert (
        main(["calibrate", str(write_jsonl(tmp_path / "cal.jsonl", records[:200])), "-o", str(tmp_path / "c.json")])
        == 0
    )
    run = [dict(r, label=None) for r in records[200:]]
    run[3] = dict(run[3], logprobs={"1": -1.0})  # unusable: counted, kept in the output
    write_jsonl(tmp_path / "run.jsonl", run)
    assert main(["apply", str(tmp_path / "c.json"), str(tmp_path / "run.jsonl"), "-o", str(tmp_path / "o.jsonl"),
                 "--json", str(tmp_path / "s.json")]) == 0
    out = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert len(out) == len(run)
    assert out[3]["set"] == [1, 2, 3, 4, 5] and out[3]["applied"] is False  # the whole scale: a set that covers
    assert sum(r.get("applied", True) for r in out) == json.loads((tmp_path / "s.json").read_text())["n_applied"] == 199
    pairs = to_records(simulate_pairwise_judge(400, seed=1))
    assert (
        main(["calibrate", str(write_jsonl(tmp_path / "p.jsonl", pairs[:400])), "-o", str(tmp_path / "pc.json")]) == 0
    )
    write_jsonl(tmp_path / "prun.jsonl", [dict(r, label=None) for r in pairs[400:]])
    assert (
        main(["apply", str(tmp_path / "pc.json"), str(tmp_path / "prun.jsonl"), "-o", str(tmp_path / "po.jsonl")]) == 0
    )
    pout = [json.loads(line) for line in (tmp_path / "po.jsonl").read_text().splitlines()]
    assert len(pout) == 400 and all(isinstance(r["accept"], bool) for r in pout)
    by_pair: dict[str, set[bool]] = {}
    for r in pout:
        by_pair.setdefault(r["pair_id"], set()).add(r["accept"])
    assert all(len(v) == 1 for v in by_pair.values())  # both orders of a pair share the decision


def test_cli_apply_reads_an_lm_eval_samples_file_and_gates_a_results_file(tmp_path: Path) -> None:
    records = to_records(simulate_likert_judge(n=600, seed=8))
    write_jsonl(tmp_path / "cal.jsonl", records[:300])
    assert main(["calibrate", str(tmp_path / "cal.jsonl"), "-o", str(tmp_path / "cal.json")]) == 0
    samples = [{"doc_id": i, "doc": {}, "resps": [["..."]], "filtered_resps": ["..."],
                "cp_naive": json.dumps(dict(r, label=None))} for i, r in enumerate(records[300:])]
    samples_file = write_jsonl(tmp_path / "samples_mllm_judge_cp_2026-01-01T00-00-00.jsonl", samples)
    assert main(["apply", str(tmp_path / "cal.json"), str(samples_file), "--format", "auto",
                 "--json", str(tmp_path / "sum.json")]) == 0
    assert json.loads((tmp_path / "sum.json").read_text())["n_applied"] == 300
    results = {
        "results": {"mllm_judge_cp": {"alias": "x", "coverage_naive,none": 0.87, "width_naive,none": float("nan")}}
    }
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert main(["gate", str(tmp_path / "results.json"), "--min", "coverage_naive=0.85"]) == 0
    assert main(["gate", str(tmp_path / "results.json"), "--min", "mllm_judge_cp.coverage_naive=0.9"]) == 1
    assert main(["gate", str(tmp_path / "results.json"), "--max", "width_naive=3"]) == 1  # NaN is not a pass


@pytest.mark.slow
def test_test_martingale_false_alarm_rate_and_power() -> None:
    """Ville: P(sup M >= 1/level) <= level under exchangeability; a run two thirds shifted raises the alarm
    (the run is bet on in a seeded random order, so where in the file the shift starts plays no part)."""
    from judgecp.stats.drift import martingale_test

    level, seeds = 0.1, 300
    false_alarms, alarms = [], []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        cal, run = rng.normal(size=300), rng.normal(size=300)
        false_alarms.append(martingale_test(cal, run, level=level, seed=seed)["alarm"])
        shifted = np.concatenate([rng.normal(size=100), rng.normal(0.8, 1.0, size=200)])  # shift after 100 items
        res = martingale_test(cal, shifted, level=level, seed=seed)
        alarms.append(res["alarm"])
    assert sum(false_alarms) <= binomial_at_most(level, seeds), np.mean(false_alarms)
    assert np.mean(alarms) >= 0.9, np.mean(alarms)


def test_cli_estimate_from_two_files_and_by_group(tmp_path: Path) -> None:
    records = to_records(simulate_likert_judge(n=900, seed=12))
    write_jsonl(tmp_path / "lab.jsonl", records[:300])
    write_jsonl(tmp_path / "unl.jsonl", [dict(r, label=None) for r in records[300:]])
    write_jsonl(tmp_path / "both.jsonl", records[:300] + [dict(r, label=None) for r in records[300:]])
    assert main(["estimate", "--labeled", str(tmp_path / "lab.jsonl"), "--unlabeled", str(tmp_path / "unl.jsonl"),
                 "--json", str(tmp_path / "a.json")]) == 0
    assert main(["estimate", str(tmp_path / "both.jsonl"), "--json", str(tmp_path / "b.json")]) == 0
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert a["estimate"] == b["estimate"] and a["n_labeled"] == 300 and a["n_unlabeled"] == 600
    assert main(["estimate", str(tmp_path / "both.jsonl"), "--group", "group", "--json", str(tmp_path / "g.json")]) == 0
    g = json.loads((tmp_path / "g.json").read_text())
    assert set(g["strata"]) == {"easy", "medium", "hard"}
    assert abs(sum(s["weight"] for s in g["strata"].values()) - 1.0) < 1e-12
    assert main(["estimate", "--labeled", str(tmp_path / "lab.jsonl")]) == 2
    assert main(["estimate", str(tmp_path / "lab.jsonl"), "--labeled", str(tmp_path / "lab.jsonl")]) == 2


def test_conformity_scores_are_the_ones_that_set_the_threshold() -> None:
    """The stored conformity scores and threshold against the scores' definitions computed here from the
    logprobs (softmax, expected score) and the order statistic taken by sorting, not by judgecp's quantile."""
    data = likert(500, 3)
    p = np.exp(data.logprobs - data.logprobs.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    true = p[np.arange(500), data.labels.astype(int) - 1]
    others = np.where(np.eye(5, dtype=bool)[data.labels.astype(int) - 1], -np.inf, p).max(axis=1)
    definitions = {"naive": np.abs(data.labels - p @ np.arange(1.0, 6.0)),  # |y - E[score]|
                   "lac": 1.0 - true,  # 1 - p(y)
                   "margin": others - true}  # max_{k != y} p(k) - p(y)
    rank = math.ceil(501 * (1 - ALPHA))  # the 451st smallest of 500
    for method, attr in (("naive", "quantile_"), ("lac", "threshold_"), ("margin", "threshold_")):
        cal = round_trip(calibrate(data, method=method, alpha=ALPHA))
        assert cal.conformity is not None and cal.conformity[1].size == 500
        expected = np.sort(definitions[method])
        np.testing.assert_allclose(np.sort(cal.conformity[1]), expected, atol=1e-12)
        assert getattr(cal.estimator.method_, attr) == pytest.approx(expected[rank - 1], abs=1e-12)
        assert str(0.5) in cal.to_dict()["conformity"]["quantiles"]
    assert calibrate(data, method="aps").conformity is None  # randomised scores: no label-free formula
    # Labeled run items that humans rate one label higher (the judge unchanged): the label-side check says so.
    cal = calibrate(likert(1000, 0), method="naive", alpha=ALPHA)
    run = likert(400, 1)
    moved = ScoreData.from_arrays(run.logprobs, np.clip(run.labels + 1, 1, 5), fields=dict(run.fields))
    same, shifted = apply(cal, run).summary["label_check"], apply(cal, moved).summary
    assert same["p_value"] > 0.001 and same["n_run"] == 400
    assert shifted["label_check"]["shift_detected"] is True
    assert "label_shift" in {w["kind"] for w in shifted["warnings"]}


def test_cli_strict_fails_a_drifted_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal_rows = to_records(ScoreData.from_arrays(*judge_draw(600, np.random.default_rng(0))))
    run = ScoreData.from_arrays(*judge_draw(400, np.random.default_rng(1)))
    moved = to_records(ScoreData.from_arrays(np.roll(run.logprobs, 2, axis=1), np.full(run.n, np.nan)))
    same = to_records(ScoreData.from_arrays(run.logprobs, np.full(run.n, np.nan)))
    assert main(["calibrate", str(write_jsonl(tmp_path / "c.jsonl", cal_rows)), "-o", str(tmp_path / "c.json")]) == 0
    assert main(["apply", str(tmp_path / "c.json"), str(write_jsonl(tmp_path / "same.jsonl", same)), "--strict"]) == 0
    assert main(["apply", str(tmp_path / "c.json"), str(write_jsonl(tmp_path / "moved.jsonl", moved)), "--strict",
                 "--json", str(tmp_path / "s.json")]) == 1
    assert "warning: the run's expected_score differs" in capsys.readouterr().err
    assert main(["gate", str(tmp_path / "s.json"), "--no-drift"]) == 1
    assert main(["apply", str(tmp_path / "c.json"), str(tmp_path / "moved.jsonl")]) == 0  # not strict: warned only


def test_top_level_calibrate_takes_a_path(tmp_path: Path) -> None:
    import judgecp

    path = write_jsonl(tmp_path / "r.jsonl", to_records(from_records(simulate_mcq_records(300, seed=3))))
    cal = judgecp.calibrate(path, kind="mcq", method="lac", alpha=0.2)
    assert isinstance(cal, judgecp.Calibrator) and cal.kind == "mcq" and cal.n_calibration == 300
    assert cal.options == ["A", "B", "C", "D", "E"]
    with pytest.raises(InputError, match="--kind pairwise"):
        judgecp.calibrate(path, kind="pairwise")


def test_choice_calibrator_refuses_unseen_options_and_wider_items() -> None:
    rows = simulate_mcq_records(400, seed=6)
    narrow = [r for r in rows if len(r["options"]) <= 3]
    cal = calibrate(from_records(narrow[:100]), method="lac")
    wide = [r for r in rows if len(r["options"]) > 3][:20]
    with pytest.raises(InputError, match="options; the calibrator saw at most"):
        apply(cal, from_records(wide))
    renamed = [dict(r, options=["X", "Y", "Z"][: len(r["options"])], label=None, prediction=None,
                    logprobs=dict(zip("XYZ", r["logprobs"].values(), strict=False))) for r in narrow[100:120]]
    with pytest.raises(InputError, match="never seen in calibration"):
        apply(cal, from_records(renamed, require_label=False))
    assert (
        apply(cal, from_records(renamed, require_label=False), force=True).summary["warnings"][0]["kind"]
        == "compatibility"
    )
