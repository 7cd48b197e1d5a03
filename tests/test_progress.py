"""The progress line of long work: silent in a library and for short commands, a few lines a minute in logs."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from judgecp.base.progress import DELAY, LOG_INTERVAL, TERMINAL_INTERVAL, enabled, progress
from judgecp.cli import main
from tests.helpers import REPO


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run_bar(steps: int, seconds_per_step: float, clock: Clock, label: str = "work") -> None:
    bar = progress(steps, label)
    for _ in range(steps):
        clock.now += seconds_per_step
        bar.update()
    bar.close()


def test_silent_unless_enabled() -> None:
    out = io.StringIO()
    bar = progress(5, "work")
    for _ in range(5):
        bar.update()
    bar.close()
    with enabled(False, out):
        progress(3, "work").update()
    assert out.getvalue() == ""


def test_short_work_prints_nothing() -> None:
    """Under DELAY seconds from the command's start, not a line (in a log or on a terminal)."""
    for stream in (io.StringIO(), Terminal()):
        clock = Clock()
        with enabled(True, stream, clock=clock):
            run_bar(100, 0.9 * DELAY / 100, clock)
            run_bar(10, 0.0, clock)  # a second bar of the same command, still within DELAY
        assert stream.getvalue() == ""


def test_a_log_gets_a_few_lines_a_minute_whatever_the_number_of_steps() -> None:
    log = io.StringIO()
    clock = Clock()
    with enabled(True, log, clock=clock):
        run_bar(1200, 0.25, clock, "likert splits")  # 300 s of work in 1,200 steps
    lines = log.getvalue().splitlines()
    assert 300 / LOG_INTERVAL <= len(lines) <= 300 / LOG_INTERVAL + 2
    assert lines[0].startswith("judgecp: likert splits 12/1200 (  1%)    3.0 s, ~297 s left") and "s left" in lines[0]
    assert lines[-1].startswith("judgecp: likert splits 1200/1200 (100%)") and "left" not in lines[-1]
    assert "\r" not in log.getvalue()


def test_a_started_line_is_finished_and_a_terminal_line_is_rewritten() -> None:
    term = Terminal()
    clock = Clock()
    with enabled(True, term, clock=clock):
        run_bar(40, 0.1, clock)  # 4 s: past DELAY, rewritten at most every TERMINAL_INTERVAL
    text = term.getvalue()
    assert 1 <= text.count("\r") <= (4 - DELAY) / TERMINAL_INTERVAL + 2
    assert text.endswith("40/40 (100%)    4.0 s\x1b[K\n") and text.count("\n") == 1
    log = io.StringIO()
    clock = Clock()
    with enabled(True, log, clock=clock, delay=0.0):  # --progress: from the start
        run_bar(3, 1.0, clock)
    assert log.getvalue().splitlines() == ["judgecp: work 0/3 (  0%)    0.0 s", "judgecp: work 3/3 (100%)    3.0 s"]


def test_cli_progress_flag(capsys) -> None:
    assert main(["evaluate", "--example", "--methods", "naive", "--splits", "3", "--quiet", "--progress"]) == 0
    err = capsys.readouterr().err
    assert "judgecp: likert splits (alpha 0.1) 3/3 (100%)" in err
    assert main(["evaluate", "--example", "--kind", "mcq", "--methods", "lac", "--splits", "2", "--quiet"]) == 0
    assert "judgecp: multiple choice" not in capsys.readouterr().err  # --quiet: no progress
    assert main(["evaluate", "--example", "--kind", "pairwise", "--splits", "40", "--quiet", "--progress"]) == 0
    assert "judgecp: pairwise splits 40/40" in capsys.readouterr().err


def test_cli_progress_by_default_once_past_the_delay(capsys, monkeypatch) -> None:
    """Not a terminal, no flag: a command that runs past DELAY seconds says so; --quiet silences it."""
    import judgecp.base.progress as progress_module

    monkeypatch.setattr(progress_module, "DELAY", 0.0)  # as if the work had already run that long
    assert main(["evaluate", "--example", "--methods", "naive", "--splits", "3"]) == 0
    assert "judgecp: likert splits (alpha 0.1) 0/3" in capsys.readouterr().err
    assert main(["evaluate", "--example", "--methods", "naive", "--splits", "3", "--quiet"]) == 0
    assert "judgecp: likert splits" not in capsys.readouterr().err


def test_progress_with_worker_processes(capsys, tmp_path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["evaluate", "--example", "--methods", "naive", "--splits", "3", "--jobs", "2", "--quiet", "--progress",
                 "--json", str(a)]) == 0
    assert "judgecp: likert splits (alpha 0.1) 3/3 (100%)" in capsys.readouterr().err
    assert main(["evaluate", "--example", "--methods", "naive", "--splits", "3", "--quiet", "--json", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()  # progress changes nothing in the report


def test_reading_a_large_file_reports_progress(tmp_path: Path) -> None:
    """The standard-library reader of a file past PROGRESS_BYTES writes a progress line; a small one none."""
    import io

    from judgecp.base.progress import enabled
    from judgecp.data import tables

    big = tmp_path / "big.jsonl"
    line = '{"id": "x", "label": 3, "logprobs": {"1": -2.0, "2": -1.5, "3": -0.2, "4": -3.0, "5": -4.0}}\n'
    big.write_text(line * (tables.PROGRESS_BYTES // len(line) + 10))
    small = tmp_path / "small.jsonl"
    small.write_text(line * 10)
    for path, expected in ((big, True), (small, False)):
        out = io.StringIO()
        with enabled(True, out, delay=0.0):
            tables.read_table(path, engine="python")
        assert ("reading " + path.name in out.getvalue()) is expected, out.getvalue()


def test_every_install_step_says_what_it_does(tmp_path: Path) -> None:
    """`make install` (a dry run into an empty folder): an echo before each venv and pip step, never minutes of `pip
    -q`."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for target in ("install", "report", "lint"):
        proc = subprocess.run(["make", "-n", "--always-make", target, f"VENV={tmp_path / 'venv'}"], cwd=REPO,
                              capture_output=True, text=True, check=True)
        lines = proc.stdout.splitlines()
        steps = [i for i, ln in enumerate(lines) if " -m venv " in ln or "pip install" in ln]
        assert steps, target
        for i in steps:
            assert lines[i - 1].startswith("echo ") and "judgecp" in lines[i - 1], (target, lines[i - 1], lines[i])
