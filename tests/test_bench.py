"""The benchmark commands run and write their tables (what they measure lives in docs/benchmarks.md, never here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgecp.cli import main


def test_bench_scope_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "scope", "--pairs", "300", "--splits", "20"]) == 0
    out = capsys.readouterr().out
    for name in ("scope", "clopper_pearson", "naive", "heuristic", "vanilla", "SCOPE end to end"):
        assert name in out


def test_bench_scale_runs_each_measurement_in_its_own_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "scale.json"
    assert main(["bench", "scale", "--rows", "3000", "--pairs", "2000", "--pair-splits", "5", "--method-rows", "1000",
                 "--methods", "naive,lac", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "x CPU" in out and "x wall" in out and "--jobs 2" in out and "written plainly:" in out
    rows = json.loads(report.read_text())
    assert [r["n"] for r in rows[2:6]] == [3000, 3000, 2000, 3000]
    assert "every row distinct" in rows[5]["what"]
    assert all(r["peak_mb"] > 0 and r["cpu_seconds"] >= 0 for r in rows)
    assert rows[2]["value"] == rows[3]["value"]  # --jobs 2 gives the same study
    # The plain pass of the same five methods ran each of them: a mean width on the 1-5 scale for each.
    assert all(0 < rows[1][m] <= 4 for m in ("naive", "lac", "aps", "ordinal_aps", "cqr"))
    assert rows[1]["naive"] == rows[0]["width"]  # the same splits and quantile as the one-method plain pass


def test_bench_protocol_on_a_written_table_at_a_smoke_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/benchmarks.md's 1M-row block (minutes, left to `make test-full`) at 5,000 rows: the same two commands,
    each method timed."""
    from judgecp.bench.scale import write_likert_csv

    table = tmp_path / "likert.csv"
    write_likert_csv(table, 5_000)
    methods = ("naive", "lac", "aps", "ordinal_aps", "cqr")
    assert main(["bench", "protocol", "--data", str(table), "--splits", "2", "--methods", ",".join(methods)]) == 0
    out = capsys.readouterr().out
    assert all(m in out for m in methods), out
