"""``judgecp evaluate`` end to end: the JSON schema users' scripts rely on, strictness, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgecp.cli import main
from judgecp.synthetic.judges import simulate_likert_judge
from tests.helpers import write_likert_csv

METHOD_NAMES = ["naive", "cqr", "cqr_asym", "chr", "lvd", "boosted_cqr", "boosted_lcp", "r2ccp",
                "ordinal_aps", "lac", "aps", "raps", "ordinal_set", "margin"]


def strict_load(text: str) -> Any:
    def reject(token: str) -> None:
        raise AssertionError(f"non-strict JSON constant {token}")

    return json.loads(text, parse_constant=reject)


@pytest.fixture
def judge_csv(tmp_path: Path) -> Path:
    d = simulate_likert_judge(n=400, seed=3)
    p = write_likert_csv(tmp_path / "features.csv", d, task=d.fields["group"])
    with p.open("a") as handle:
        handle.write("bad1," + ",".join(["-11.512925464970229"] * 5) + ",4.0,-1,easy\n")  # a parse failure
    return p


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_report_schema(judge_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "r.json"
    code, out, _ = run(["evaluate", str(judge_csv), "--methods", "all", "--seeds", "3", "--group", "task",
                        "--json", str(out_json)], capsys)
    assert code == 0
    r = strict_load(out_json.read_text())
    assert r["n"] == 400 and r["alpha"] == 0.1
    assert r["excluded"] == [{"reason": "no_score_logprobs", "count": 1, "examples": ["bad1"]}]
    for key in ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae", "bias"):
        assert isinstance(r["point"][key], float)
    assert list(r["methods"]) == METHOD_NAMES
    for name, m in r["methods"].items():
        variants = ("interval", "labels", "expanded") if m["interval"] is not None else ("labels",)
        for v in variants:
            assert set(m[v]) >= {"coverage", "coverage_std", "width", "width_std"}, (name, v)
        if m["interval"] is None:
            assert m["expanded"] is None
    assert set(r["groups"]) == {"easy", "medium", "hard"}
    g = r["groups"]["hard"]
    assert g["n"] > 0 and "rsg" in g["methods"]["naive"] and "pearson" in g["point"]
    assert r["worst_group"]["naive"]["group"] in r["groups"]
    assert "Conformal methods" in out and "naive" in out


#: Every interval and set method, the fitted ones at a test's size.
EVERY_METHOD = "naive,lac,aps,chr,r2ccp(epochs=5),boosted_cqr(max_rounds=10),boosted_lcp(max_rounds=10),raps,lvd,cqr"


def test_same_seed_same_bytes(judge_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outs = []
    for i, jobs in enumerate(("1", "1", "2")):
        p = tmp_path / f"r{i}.json"
        run(
            [
                "evaluate",
                str(judge_csv),
                "--methods",
                EVERY_METHOD,
                "--seeds",
                "2",
                "--jobs",
                jobs,
                "--json",
                str(p),
                "--quiet",
            ],
            capsys,
        )
        outs.append(p.read_bytes())
    assert outs[0] == outs[1] == outs[2]
    p = tmp_path / "other.json"
    run(
        [
            "evaluate",
            str(judge_csv),
            "--methods",
            EVERY_METHOD,
            "--seeds",
            "5,6",
            "--json",
            str(p),
            "--quiet",
        ],
        capsys,
    )
    assert p.read_bytes() != outs[0]


def test_mondrian_groups(judge_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "m.json"
    code, out, _ = run(["evaluate", str(judge_csv), "--methods", "naive,lac", "--seeds", "3",
                        "--mondrian", "task", "--json", str(p)], capsys)
    assert code == 0
    r = strict_load(p.read_text())
    assert r["protocol"]["mondrian"] == "task"
    for g in ("easy", "medium", "hard"):
        assert r["groups"][g]["methods"]["naive"]["insufficient_calibration_seeds"] == 0
    assert "Mondrian by task" in out


def test_group_too_small_for_the_level_is_flagged(
    judge_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = judge_csv.read_text().splitlines()
    # five rows of a tiny task: at most ~3 land in calibration, alpha 0.1 needs 9
    text = text + [line.rsplit(",", 1)[0] + ",tiny" for line in text[1:6]]
    text = [
        line.replace(f"{line.split(',')[0]},", f"{line.split(',')[0]}x,", 1) if line.endswith(",tiny") else line
        for line in text
    ]
    judge_csv.write_text("\n".join(text) + "\n")
    p = tmp_path / "m.json"
    code, _out, _ = run(["evaluate", str(judge_csv), "--methods", "naive", "--seeds", "3", "--mondrian", "task",
                        "--json", str(p)], capsys)
    assert code == 0
    tiny = strict_load(p.read_text())["groups"]["tiny"]["methods"]["naive"]
    assert tiny["insufficient_calibration_seeds"] == 3 and tiny["full_range"] == 1.0
    assert tiny["labels"]["coverage"] == 1.0 and tiny["labels"]["width"] == 4.0


@pytest.mark.parametrize("alpha", ["0", "1", "-0.2", "1.5"])
def test_alpha_outside_unit_interval(judge_csv: Path, alpha: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["evaluate", str(judge_csv), "--alpha", alpha, "--methods", "naive"], capsys)
    assert code == 2 and "--alpha must be a number in (0, 1)" in err


def test_errors_exit_2_without_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    code, _, err = run(["evaluate", str(empty)], capsys)
    assert code == 2 and err.startswith("judgecp: error:") and "empty" in err
    code, _, err = run(["evaluate", str(empty), "--example"], capsys)
    assert code == 2 and "not both" in err
    code, _, err = run(["evaluate", "--example", "--methods", "naive,nope"], capsys)
    assert code == 2 and "--methods: unknown method 'nope'" in err
    code, _, err = run(["evaluate", "--example", "--seeds", "x"], capsys)
    assert code == 2 and "--seeds" in err


def test_example_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "e.json"
    code, out, _ = run(["evaluate", "--example", "--methods", "naive,lac", "--seeds", "2", "--json", str(p)], capsys)
    assert code == 0 and "synthetic judge" in out and "not a real model" in out
    assert strict_load(p.read_text())["groups"]


def test_methods_listing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["methods"], capsys)
    assert code == 0
    methods = out.split("risk controllers")[0].splitlines()[1:]
    detail = ("parameters:", "one split of n rows:")
    assert [line.split()[0] for line in methods if not line.strip().startswith(detail)] == METHOD_NAMES
    assert "lac(" not in out and "parameters: probabilities, fit_fraction" in out
    # Every built-in method states its cost, which the listing and `judgecp bench scale` print.
    assert "one split of n rows: time O(n K log K); memory O(n K)" in out and "not stated" not in out
    assert "scope" in out.split("risk controllers")[1]


def test_strict_json_turns_nan_into_null() -> None:
    from judgecp.base.jsonio import dumps

    text = dumps({"a": float("nan"), "b": [np.float64("inf"), np.int64(3)], "c": {"d": np.bool_(True)}})
    assert strict_load(text) == {"a": None, "b": [None, 3], "c": {"d": True}}


def test_pairwise_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json as _json

    from judgecp.synthetic.judges import simulate_pairwise_judge

    d = simulate_pairwise_judge(300, seed=2)
    rows = []
    for i in range(d.n):
        label = "A" if d.labels[i] else "B"
        lp_a = float(np.log(d.p_fwd[i]))
        rows.append(
            {
                "pair_id": d.pair_ids[i],
                "order": "fwd",
                "lp_A": lp_a,
                "lp_B": float(np.log1p(-d.p_fwd[i])),
                "label": label,
            }
        )
        if i % 10:  # every tenth pair judged in one order only
            rows.append({"pair_id": d.pair_ids[i], "order": "rev", "lp_A": float(np.log1p(-d.p_rev[i])),
                         "lp_B": float(np.log(d.p_rev[i])), "label": label})
    p = tmp_path / "pairs.jsonl"
    p.write_text("\n".join(_json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "r.json"
    code, text, _ = run(["evaluate", "--kind", "pairwise", str(p), "--splits", "100", "--json", str(out)], capsys)
    assert code == 0 and "scope" in text
    r = strict_load(out.read_text())
    assert r["n"] == 300 and r["flags"][0]["flag"] == "single_order" and r["flags"][0]["count"] == 30
    assert r["controllers"]["scope"]["0.1"]["risk"] <= 0.12
    assert set(r["uncertainty"]) == {"bpe", "predictive"}


def test_likert_default_is_the_fast_methods(
    judge_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --methods: the protocol's fast default (the same as lm-eval's and the API's), and the table says how to get
    all."""
    from judgecp.kinds.protocol import Protocol

    out_json = tmp_path / "r.json"
    code, out, _ = run(["evaluate", str(judge_csv), "--seeds", "2", "--json", str(out_json)], capsys)
    assert code == 0
    assert (
        list(strict_load(out_json.read_text())["methods"])
        == list(Protocol().method_specs("likert"))
        == ["naive", "lac"]
    )
    assert "methods: naive, lac (the default; --methods all runs every method" in out
    code, out, _ = run(["evaluate", str(judge_csv), "--seeds", "2", "--methods", "naive,ordinal_aps"], capsys)
    assert code == 0 and "(the default;" not in out


def test_mcq_and_parc_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for kind, key in (("mcq", "methods"), ("parc", "reliability")):
        out = tmp_path / f"{kind}.json"
        code, _text, _ = run(["evaluate", "--kind", kind, "--example", "--seeds", "2", "--json", str(out)], capsys)
        assert code == 0, kind
        r = strict_load(out.read_text())
        assert r["kind"] == kind and key in r
    r = strict_load((tmp_path / "parc.json").read_text())
    for score in ("reliability", "accuracy", "certainty", "consistency"):
        assert set(r[score]["variation"]["LR-I"]) >= {"raw", "calibrated"}
    code, _, err = run(["evaluate", "--kind", "mcq", "--example", "--methods", "ordinal_aps"], capsys)
    assert code == 2 and "no order" in err


def test_row_features_reach_the_fitted_models(
    judge_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--row-features task,parsed appends the task's indicators and the parsed score to X: the report
    names them, the fitted method's intervals change, the unfitted one's do not; a wrong field or
    another kind is a one-line error."""
    reports = {}
    for flag in ([], ["--row-features", "task,parsed"]):
        p = tmp_path / f"r{len(flag)}.json"
        code, _, _ = run(["evaluate", str(judge_csv), "--methods", "naive,cqr(quantile_model=linear)", "--seeds", "2",
                          "--json", str(p), *flag], capsys)
        assert code == 0
        reports[len(flag)] = strict_load(p.read_text())
    assert reports[2]["input"]["columns"]["row_features"] == ["task=easy", "task=hard", "task=medium", "parsed"]
    assert "row_features" not in reports[0]["input"]["columns"]
    assert reports[2]["methods"]["naive"] == reports[0]["methods"]["naive"]
    cqr = "cqr(quantile_model=linear)"
    assert reports[2]["methods"][cqr]["interval"]["width"] != reports[0]["methods"][cqr]["interval"]["width"]
    code, _, err = run(["evaluate", str(judge_csv), "--row-features", "tsk", "--methods", "naive"], capsys)
    assert code == 2 and "unknown row feature field 'tsk'" in err and "task" in err
    code, _, err = run(["evaluate", "--example", "--kind", "mcq", "--row-features", "group"], capsys)
    assert code == 2 and "--row-features" in err and err.count("\n") == 1
