"""`--judge NAME` (issue 29 item 6): records and calibrators made from a table name their judge, and apply checks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgecp.cli import main
from judgecp.kinds.reading import to_records
from judgecp.synthetic.judges import simulate_likert_judge, simulate_mcq_records
from tests.helpers import write_likert_csv

COLUMNS = ["--logprobs", "s2_lp*", "--label", "gt_score", "--id", "sample_id"]


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Path, Path]:
    """A labeled calibration table and a run table of the same simulated judge (no judge column)."""
    data = simulate_likert_judge(n=600, seed=11)
    return (write_likert_csv(tmp_path / "cal.csv", data.take(np.arange(300))),
            write_likert_csv(tmp_path / "run.csv", data.take(np.arange(300, 600))))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_records_from_a_table_carry_the_judge(tables: tuple[Path, Path], tmp_path: Path) -> None:
    cal, _ = tables
    assert main(["records", str(cal), "-o", str(tmp_path / "r.jsonl"), *COLUMNS, "--judge", "llava-critic-7b"]) == 0
    records = read_jsonl(tmp_path / "r.jsonl")
    assert len(records) == 300 and {r["judge"] for r in records} == {"llava-critic-7b"}
    assert main(["records", str(cal), "-o", str(tmp_path / "plain.jsonl"), *COLUMNS]) == 0
    assert all(r.get("judge") is None for r in read_jsonl(tmp_path / "plain.jsonl"))  # negative control


def test_calibrate_records_the_judge_and_apply_checks_it(tables: tuple[Path, Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    cal_table, run_table = tables
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(cal_table), "-o", str(cal), *COLUMNS, "--judge", "judge-a"]) == 0
    assert "judge: judge-a;" in capsys.readouterr().err
    assert json.loads(cal.read_text(encoding="utf-8"))["identity"]["judge"] == ["judge-a"]
    # The same judge: applied, and the printed line says it was checked.
    assert (
        main(["apply", str(cal), str(run_table), *COLUMNS, "--judge", "judge-a", "--json", str(tmp_path / "s.json")])
        == 0
    )
    assert "judge judge-a (checked against the calibrator's)" in capsys.readouterr().out
    summary = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert summary["judge"] == {"calibrator": ["judge-a"], "records": ["judge-a"], "checked": True}
    # Another judge: refused in one line unless --force, as the other identity fields are.
    assert main(["apply", str(cal), str(run_table), *COLUMNS, "--judge", "judge-b"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "judge ['judge-b'] differs from the calibrator's ['judge-a']" in err
    assert main(["apply", str(cal), str(run_table), *COLUMNS, "--judge", "judge-b", "--force",
                 "--json", str(tmp_path / "forced.json")]) == 0
    forced = json.loads((tmp_path / "forced.json").read_text(encoding="utf-8"))
    assert [w["kind"] for w in forced["warnings"]] == ["compatibility"]
    # A run that names no judge is applied, and the output says it was not checked.
    assert main(["apply", str(cal), str(run_table), *COLUMNS]) == 0
    assert "judge not checked: the records name none (the calibrator's: judge-a)" in capsys.readouterr().out


def test_apply_says_when_neither_side_names_a_judge(tables: tuple[Path, Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    cal_table, run_table = tables
    assert main(["calibrate", str(cal_table), "-o", str(tmp_path / "cal.json"), *COLUMNS]) == 0
    assert "judge: none named (--judge NAME" in capsys.readouterr().err
    assert (
        main(["apply", str(tmp_path / "cal.json"), str(run_table), *COLUMNS, "--json", str(tmp_path / "s.json")]) == 0
    )
    assert (
        "judge not checked: neither the calibrator nor the records name one (--judge NAME)" in capsys.readouterr().out
    )
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["judge"]["checked"] is False


def test_judge_of_records_that_name_another_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [dict(r, judge="judge-a") for r in to_records(simulate_likert_judge(n=50, seed=1))]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for command in (["records", str(path), "-o", str(tmp_path / "o.jsonl")], ["estimate", str(path)],
                    ["calibrate", str(path), "-o", str(tmp_path / "c.json")]):
        assert main([*command, "--judge", "judge-b"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "--judge judge-b:" in err and "names the judge 'judge-a'" in err, err
    assert main(["records", str(path), "-o", str(tmp_path / "o.jsonl"), "--judge", "judge-a"]) == 0
    assert main(["records", str(path), "-o", str(tmp_path / "o.jsonl"), "--judge", " "]) == 2


def test_multiple_choice_reads_the_judge_from_a_model_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [dict(r, model="llava") for r in simulate_mcq_records(60, seed=2)]
    for r in rows:
        r.pop("judge", None)
    path = tmp_path / "mcq.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["calibrate", str(path), "-o", str(tmp_path / "c.json"), "--judge", "gpt"]) == 2
    assert "in its 'model' column" in capsys.readouterr().err
    assert main(["calibrate", str(path), "-o", str(tmp_path / "c.json"), "--judge", "llava"]) == 0
    assert json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))["identity"]["judge"] == ["llava"]


def test_evaluate_and_estimate_take_the_judge(tables: tuple[Path, Path], tmp_path: Path) -> None:
    cal_table, _ = tables
    assert main(["evaluate", str(cal_table), *COLUMNS, "--judge", "judge-a", "--methods", "naive", "--splits", "2",
                 "--quiet", "--json", str(tmp_path / "e.json")]) == 0
    assert json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))["judge"] == "judge-a"
    assert main(["evaluate", "--example", "--judge", "judge-a"]) == 2
    rows = to_records(simulate_likert_judge(n=200, seed=3))
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(dict(r, label=None) if i >= 50 else r) + "\n" for i, r in enumerate(rows)),
                     encoding="utf-8")
    assert main(["estimate", str(mixed), "--judge", "judge-a", "--json", str(tmp_path / "est.json")]) == 0


def test_records_from_a_harness_file_take_the_judge(tmp_path: Path) -> None:
    records = to_records(simulate_likert_judge(n=40, seed=8))
    samples = [{"doc_id": i, "doc": {}, "resps": [["..."]], "filtered_resps": ["..."],
                "cp_naive": json.dumps(dict(r, label=None))} for i, r in enumerate(records)]
    path = tmp_path / "samples_mllm_judge_cp_2026-01-01T00-00-00.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    assert main(["records", str(path), "--format", "auto", "-o", str(tmp_path / "r.jsonl"), "--judge", "tiny"]) == 0
    assert {r["judge"] for r in read_jsonl(tmp_path / "r.jsonl")} == {"tiny"}
