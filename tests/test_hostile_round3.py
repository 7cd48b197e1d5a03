"""Round 3 of the hostile sweep (after issue 25): one test per defect it still found on main.

Each ends in a clear error (exit 2, one line naming the flag, file or field), a counted exclusion, or
the numbers an honest input gives; never a traceback, a hang, or exit 0 with meaningless numbers.
Calls that hung run in a subprocess with a timeout (a guard, not a timing check).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from judgecp.kinds.reading import to_records
from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_pairwise_judge,
)
from tests.test_hostile_input import one_line_error, run


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def likert_records(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "likert.jsonl", to_records(simulate_likert_judge(300, seed=1)))


@pytest.fixture
def pair_records(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "pairs.jsonl", to_records(simulate_pairwise_judge(200, seed=1)))


@pytest.fixture
def mcq_records(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "mcq.jsonl", simulate_mcq_records(300, seed=1))


# -- seeds: numpy takes none below 0 ------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "flag"), [("likert", "--random-state=-1"), ("pairwise", "--random-state=-1"),
                                            ("mcq", "--random-state=-1"), ("likert", "--seeds=-1,3"),
                                            ("mcq", "--seeds=-1,3"), ("ensemble", "--seeds=-1,3")])
def test_a_negative_seed_is_refused_by_name(kind: str, flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", "--example", "--kind", kind, flag, "--quiet")
    one_line_error(code, err, flag.split("=")[0], ">= 0")


def test_calibrate_refuses_a_negative_random_state(likert_records: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "calibrate", str(likert_records), "-o", str(tmp_path / "c.json"), "--random-state", "-1")
    one_line_error(code, err, "--random-state", ">= 0")
    assert not (tmp_path / "c.json").exists()


def test_a_seed_the_shuffling_thread_refuses_reaches_the_caller() -> None:
    """The pairwise study shuffles in a thread; a generator it cannot build used to leave the caller waiting."""
    code = ("import numpy as np\n"
            "from judgecp.kinds.pairwise.study import shuffled_rows\n"
            "try:\n"
            "    with shuffled_rows(np.arange(5), 3, -1) as rows:\n"
            "        list(rows)\n"
            "except ValueError:\n"
            "    print('raised')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "raised", proc.stderr


# -- judgecp example keeps what the user changed -------------------------------------------------------


def test_example_rerun_keeps_a_file_the_user_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ex"
    assert run(capsys, "example", str(out))[0] == 0
    assert run(capsys, "example", str(out))[0] == 0  # the same bytes again: nothing to lose
    (out / "night_a.jsonl").write_text("my labels\n")
    code, _, err = run(capsys, "example", str(out))
    one_line_error(code, err, "night_a.jsonl", "--force")
    assert (out / "night_a.jsonl").read_text() == "my labels\n"
    assert sorted(p.name for p in out.iterdir()) == ["calibration.jsonl", "night_a.jsonl", "night_b.jsonl"]
    assert run(capsys, "example", str(out), "--force")[0] == 0
    assert (out / "night_a.jsonl").read_text().startswith('{"schema": "judgecp.record/1"')


def test_example_refuses_an_empty_folder_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "example", "")
    one_line_error(code, err, "OUT is empty")


# -- a judgecp file given where another is expected is named ------------------------------------------


@pytest.fixture
def nightly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert run(capsys, "example", str(tmp_path))[0] == 0
    assert run(capsys, "calibrate", str(tmp_path / "calibration.jsonl"), "-o", str(tmp_path / "cal.json"))[0] == 0
    assert run(capsys, "apply", str(tmp_path / "cal.json"), str(tmp_path / "night_a.jsonl"), "--json",
               str(tmp_path / "a.json"))[0] == 0
    return tmp_path


@pytest.mark.parametrize(("args", "needles"), [
    (("compare", "{d}/night_a.jsonl", "{d}/cal.json"), ("cal.json", "a calibrator", "not a table")),
    (("estimate", "{d}/a.json"), ("a.json", "apply summary", "not a table")),
    (("evaluate", "{d}/cal.json"), ("cal.json", "a calibrator")),
    (("apply", "{d}/cal.json", "{d}/night_b.jsonl", "--history", "{d}/a.json"), ("--history", "apply summary")),
])
def test_a_misplaced_judgecp_file_is_named(nightly: Path, args: tuple[str, ...], needles: tuple[str, ...],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    before = {p.name: p.read_bytes() for p in nightly.iterdir()}
    code, _, err = run(capsys, *(a.format(d=nightly) for a in args))
    one_line_error(code, err, *needles)
    assert {p.name: p.read_bytes() for p in nightly.iterdir()} == before
