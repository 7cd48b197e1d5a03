"""docs/lm_eval.md's first command and its numbers: the table excerpt and the coverage range are what the demo
prints."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import REPO
from tests.lm_eval.helpers import metric, results_file, run_lm_eval, skip_without_lm_eval

skip_without_lm_eval()

DOC = REPO / "docs" / "lm_eval.md"


def doc_table() -> list[tuple[str, str, str, str]]:
    """``(task, metric, value, stderr)`` of every row of the doc's results excerpt (a blank task: the row above's)."""
    block = DOC.read_text().split("## First command")[1].split("```\n|")[1].split("```")[0]
    rows, task = [], ""
    for line in ("|" + block).splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        task = cells[0].removeprefix("- ").strip() or task
        rows.append((task, cells[4], cells[6], cells[8]))
    return rows


def test_the_docs_demo_numbers_are_what_the_command_prints(tmp_path: Path) -> None:
    command = "lm_eval --model judgecp-replay --tasks judgecp_demo --output_path out/demo --log_samples"
    assert command in DOC.read_text()
    run_lm_eval(tmp_path, *command.split()[1:-3], "--output_path", str(tmp_path))
    results = results_file(tmp_path)
    rows = doc_table()
    assert len(rows) >= 10 and {task for task, *_ in rows} == {
        "judgecp_demo_all",
        "judgecp_demo_easy",
        "judgecp_demo_hard",
    }
    for task, name, value, stderr in rows:
        assert value == f"{metric(results, task, name):.4f}", (task, name)
        err = metric(results, task, name + "_stderr")
        assert stderr == (err if err == "N/A" else f"{err:.4f}"), (task, name)
    low, high = map(float, re.search(r"coverage (\d\.\d\d) to (\d\.\d\d) at alpha 0\.1", DOC.read_text()).groups())
    coverages = [metric(results, f"judgecp_demo_{t}", f"coverage_{m}") for t in ("all", "easy", "medium", "hard")
                 for m in ("naive", "lac")]
    assert (low, high) == (round(min(coverages), 2), round(max(coverages), 2))
