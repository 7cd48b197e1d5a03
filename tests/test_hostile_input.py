"""Hostile input on the command line, one test per row of the bad-input sweep: a clear error (exit 2, one
line naming the file, column or flag) or a counted, reported exclusion; never a traceback, never silent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from judgecp.base.records import pair_record, score_record
from judgecp.cli import main
from judgecp.synthetic.judges import simulate_likert_judge, simulate_pairwise_judge
from tests.helpers import write_likert_csv


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("judgecp: error:"), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture
def likert_csv(tmp_path: Path) -> Path:
    d = simulate_likert_judge(n=300, seed=3)
    return write_likert_csv(tmp_path / "features.csv", d, abs_error=np.abs(d.parsed - d.labels.astype(int)))


def samples_file(tmp_path: Path) -> tuple[Path, list[str]]:
    d = simulate_likert_judge(n=60, seed=1)
    lines = []
    for i in range(d.n):
        record = score_record(d.ids[i], label=str(int(d.labels[i])), prediction=int(d.parsed[i]),
                              logprobs=dict(zip("12345", d.logprobs[i].tolist(), strict=True)))
        lines.append(
            json.dumps({"doc_id": i, "metrics": ["n", "coverage_naive"], "n": record, "coverage_naive": record})
        )
    return tmp_path / "samples_judge_2026.jsonl", lines


def test_a_damaged_samples_file_is_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, lines = samples_file(tmp_path)
    damaged = [*lines[:-1], "garbage", "[1, 2, 3]", *lines[:5], lines[-1][:40]]  # five repeated lines, a cut last line
    path.write_text("\n".join(damaged) + "\n")
    code, _, err = run(capsys, "evaluate", str(path), "--format", "lm-eval", "--methods", "naive", "--splits", "2",
                       "--quiet", "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["n"] == 59 and report["n_read"] == 67
    assert {e["reason"]: e["count"] for e in report["excluded"]} == {"malformed_json_line": 3, "duplicate_record": 5}
    code, _, err = run(capsys, "records", str(path), "--format", "auto", "-o", str(tmp_path / "out.jsonl"))
    assert code == 0 and "59 records written" in err and "duplicate_record 5" in err


def test_numeric_pairwise_labels_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = simulate_pairwise_judge(50, seed=0)
    rows = [pair_record(f"{p}/fwd", pair_id=p, order="fwd", label=str(int(d.labels[i])),
                        logprobs={"A": float(np.log(d.p_fwd[i])), "B": float(np.log1p(-d.p_fwd[i]))})
            for i, p in enumerate(d.pair_ids.tolist())]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = run(capsys, "evaluate", str(path), "--splits", "10")
    one_line_error(code, err, "not numbers", "0, 1", "--label")


def test_infinite_label_is_off_the_scale(likert_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = likert_csv.read_text().splitlines()
    text[1] = ",".join([*text[1].split(",")[:6], "inf", *text[1].split(",")[7:]])
    likert_csv.write_text("\n".join(text) + "\n")
    code, _, err = run(capsys, "evaluate", str(likert_csv), "--methods", "naive", "--splits", "2", "--quiet",
                       "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    assert json.loads((tmp_path / "r.json").read_text())["excluded"][0]["reason"] == "label_off_scale"


@pytest.mark.parametrize(("kind", "flag", "value", "needle"), [
    ("mcq", "--cal-fraction", "0", "--cal-fraction must be a number in (0, 1)"),
    ("mcq", "--cal-fraction", "1", "--cal-fraction must be a number in (0, 1)"),
    ("parc", "--cal-fraction", "nan", "--cal-fraction must be a finite number"),
    ("pairwise", "--delta", "0", "--delta must be a number in (0, 1)"),
    ("likert", "--seeds", "100000000000", "--splits must be between 1 and"),
    ("likert", "--jobs", "0", "--jobs must be at least 1"),
    ("likert", "--jobs", "-1", "--jobs must be at least 1"),
    ("likert", "--controllers", "scope", "--controllers does not apply to kind 'likert'"),
    ("likert", "--methods", "naiv,lac", "did you mean 'naive'"),
    ("likert", "--methods", "lac(probabilties=judge)", "no parameter 'probabilties'; did you mean 'probabilities'"),
])
def test_bad_protocol_values_name_the_flag(kind: str, flag: str, value: str, needle: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", "--example", "--kind", kind, flag, value)
    one_line_error(code, err, needle)


def test_output_paths_are_checked_before_any_work(likert_csv: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", str(likert_csv), "--json", str(tmp_path / "missing" / "r.json"))
    one_line_error(code, err, "does not exist")
    code, _, err = run(capsys, "evaluate", str(likert_csv), "--json", str(tmp_path))
    one_line_error(code, err, "a directory")


def test_a_positive_floor_is_refused(likert_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", str(likert_csv), "--floor", "5")
    one_line_error(code, err, "--floor must be a negative log-probability")


def test_the_wrong_label_column_warns(likert_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", str(likert_csv), "--label", "abs_error", "--methods", "naive",
                       "--splits", "2", "--quiet", "--json", str(tmp_path / "r.json"))
    assert code == 0
    warnings = json.loads((tmp_path / "r.json").read_text())["warnings"]
    share = next(w for w in warnings if w["warning"] == "excluded_share")
    assert share["share"] > 0.1 and "judgecp: warning:" in err and "label_off_scale" in err


def test_a_scale_that_does_not_fit_names_the_scale(likert_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", str(likert_csv), "--scale", "0:10")
    one_line_error(code, err, "--scale 0:10", "s2_lp1..s2_lp5 are a 1:5 scale", "is --scale right?")


def test_field_names_say_did_you_mean_and_list_the_columns(likert_csv: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", str(likert_csv), "--mondrian", "abs_eror")
    one_line_error(code, err, "--mondrian", "did you mean 'abs_error'", "gt_score")
    # the judge's own score is a field like any other column: score-conditional tables
    code, _, err = run(capsys, "evaluate", str(likert_csv), "--group", "parsed_score", "--methods", "naive",
                       "--splits", "2", "--quiet", "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    assert set(json.loads((tmp_path / "r.json").read_text())["groups"]) <= {"1", "2", "3", "4", "5"}


def test_a_group_under_its_target_is_data_a_script_can_act_on(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", "--example", "--methods", "lac", "--splits", "5", "--quiet",
                       "--json", str(tmp_path / "r.json"))
    assert code == 0
    under = [
        w for w in json.loads((tmp_path / "r.json").read_text())["warnings"] if w["warning"] == "group_under_target"
    ]
    assert [(w["group"], w["method"]) for w in under] == [("hard", "lac")]
    assert under[0]["coverage"] < under[0]["target"] - under[0]["mc_error"]
    assert "group 'hard': lac covers" in err


def test_an_exclusion_reason_from_a_cell_stays_one_line(tmp_path: Path) -> None:
    """An ``exclude`` cell with line breaks (a cut file, a hostile writer) is counted as one-line text."""
    from judgecp.base.errors import NoUsableRecords
    from judgecp.kinds.reading import load

    path = tmp_path / "t.csv"
    path.write_text('id,label,lp1,lp2,lp3,lp4,lp5,exclude\n1,1,-1,-2,-3,-4,-5,"0\r"\n2,2,-1,-2,-3,-4,-5,"bad\nrow"\n')
    with pytest.raises(NoUsableRecords) as err:
        load(path, "likert")
    assert "\n" not in str(err.value) and "\r" not in str(err.value)
    assert dict(err.value.excluded.counts) == {"0": 1, "bad row": 1}


def test_jobs_from_a_script_without_main_guard_fails_fast(tmp_path: Path) -> None:
    """``evaluate(..., jobs=2)`` at a script's top level: spawn's workers import the script again and
    stop. The caller must get one clear error, not wait forever: CPython's spawn writes the worker's
    start pipe while holding its read end, so data sent that way (more than a pipe's 64 KB) hung."""
    import subprocess
    import sys

    script = tmp_path / "no_guard.py"
    script.write_text(
        "import judgecp\n"
        "data = judgecp.simulate_likert_judge(n=2000, seed=0)\n"
        "judgecp.evaluate(data, judgecp.Protocol(methods=('naive',), splits=4, jobs=2))\n",
        encoding="utf-8",
    )
    try:
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("evaluate with jobs=2 from a script without a main guard hung")
    assert proc.returncode != 0
    error = [ln for ln in proc.stderr.splitlines() if ln.startswith("judgecp.base.errors.InputError: ")]
    assert error and "a worker process of jobs=2 stopped" in error[-1], proc.stderr[-2000:]
    assert 'if __name__ == "__main__":' in error[-1]
