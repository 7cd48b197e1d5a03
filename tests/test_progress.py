"""The progress line of long evaluations: off by default, on with --progress, short in logs."""

from __future__ import annotations

import io
from pathlib import Path

from judgecp.cli import main
from judgecp.progress import enabled, progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_unless_enabled() -> None:
    out = io.StringIO()
    bar = progress(5, "work")
    for _ in range(5):
        bar.update()
    bar.close()
    with enabled(False, out):
        progress(3, "work").update()
    assert out.getvalue() == ""


def test_log_lines_at_each_tenth_and_terminal_rewrites() -> None:
    log = io.StringIO()
    with enabled(True, log):
        bar = progress(100, "likert splits")
        for _ in range(100):
            bar.update()
        bar.close()
    lines = log.getvalue().splitlines()
    assert 10 <= len(lines) <= 11  # 0%, 10%, ..., 100%: not one line per step
    assert lines[0].startswith("judgecp: likert splits 0/100") and "100/100 (100%)" in lines[-1]
    term = Terminal()
    with enabled(True, term):
        bar = progress(3, "x")
        for _ in range(3):
            bar.update()
        bar.close()
    text = term.getvalue()
    assert text.count("\r") == 5 and text.endswith("\n") and text.count("\n") == 1


def test_cli_progress_flag(capsys) -> None:
    assert main(["evaluate", "--example", "--methods", "naive", "--splits", "3", "--quiet", "--progress"]) == 0
    err = capsys.readouterr().err
    assert "judgecp: likert splits (alpha 0.1) 3/3 (100%)" in err
    assert main(["evaluate", "--example", "--kind", "mcq", "--methods", "lac", "--splits", "2", "--quiet"]) == 0
    assert "judgecp: multiple choice" not in capsys.readouterr().err  # stderr is not a terminal here
    assert main(["evaluate", "--example", "--kind", "pairwise", "--splits", "40", "--quiet", "--progress"]) == 0
    assert "judgecp: pairwise splits 40/40" in capsys.readouterr().err


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

    from judgecp import tables
    from judgecp.progress import enabled

    big = tmp_path / "big.jsonl"
    line = '{"id": "x", "label": 3, "logprobs": {"1": -2.0, "2": -1.5, "3": -0.2, "4": -3.0, "5": -4.0}}\n'
    big.write_text(line * (tables.PROGRESS_BYTES // len(line) + 10))
    small = tmp_path / "small.jsonl"
    small.write_text(line * 10)
    for path, expected in ((big, True), (small, False)):
        out = io.StringIO()
        with enabled(True, out):
            tables.read_table(path, engine="python")
        assert ("reading " + path.name in out.getvalue()) is expected, out.getvalue()
