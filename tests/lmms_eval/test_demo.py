"""The embedded demo through lmms-eval's own command line, and judgecp's commands on what it writes.

``python -m lmms_eval --model judgecp-replay --tasks judgecp_demo --output_path OUT --log_samples``
with nothing else typed: the model comes from the ``lmms_eval.models`` entry
point, the tasks from the startup hook. Its table holds judgecp's metrics,
the same numbers as lm-eval's demo (docs/lm_eval.md); its samples file holds
one record per document, which ``judgecp evaluate`` reads by content and turns
into the same numbers; ``judgecp gate`` reads its results file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.lm_eval.helpers import offline_env, run
from tests.lm_eval.test_lm_eval_doc import doc_table
from tests.lmms_eval.helpers import (
    evaluate_matches_the_table,
    metric,
    results_file,
    run_lmms_eval,
    samples,
    samples_file,
    skip_without_lmms_eval,
)

skip_without_lmms_eval()

from judgecp.adapters.lm_eval.demo import demo_items  # noqa: E402
from judgecp.cli import main as judgecp_cli  # noqa: E402

TASKS = ("judgecp_demo_all", "judgecp_demo_easy", "judgecp_demo_medium", "judgecp_demo_hard")
COMMAND = "--model judgecp-replay --tasks judgecp_demo --log_samples"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The demo's output folder and what the command printed."""
    out = tmp_path_factory.mktemp("demo")
    proc = run_lmms_eval(out, *COMMAND.split(), "--output_path", str(out / "out"))
    return out / "out", proc.stdout


def test_the_table_shows_judgecps_metrics_with_lm_evals_demo_numbers(demo: tuple[Path, str]) -> None:
    """Every row of docs/lm_eval.md's demo excerpt (lm-eval 0.4.13's run) is in lmms-eval's results, to the digit."""
    out, stdout = demo
    results = results_file(out)
    assert set(TASKS) <= set(results["results"])
    assert "| - judgecp_demo_all   |none  |     0|coverage_naive      |   |  0.9077|±  |0.0235|" in stdout
    rows = doc_table()
    assert len(rows) >= 10
    for task, name, value, stderr in rows:
        assert value == f"{metric(results, task, name):.4f}", (task, name)
        err = metric(results, task, name + "_stderr")
        assert stderr == (err if err == "N/A" else f"{err:.4f}"), (task, name)


def test_one_record_per_document_with_the_recorded_logprobs(demo: tuple[Path, str]) -> None:
    recorded = {item["id"]: item["recorded_logprobs"] for item in demo_items()}
    lines = samples(demo[0], "judgecp_demo_all")
    records = [line["n"] for line in lines]
    assert len(lines) == len(recorded) == 600
    assert sorted(r["id"] for r in records) == sorted(recorded)  # each document once
    for line, record in zip(lines, records, strict=True):
        assert record["logprobs"] == recorded[record["id"]]  # exact: lmms-eval's str() of the pairs round-trips
        assert all(line[name] is None for name in line if name.startswith(("coverage_", "width_")))  # the record once


@pytest.mark.parametrize("task", TASKS)
def test_judgecp_evaluate_on_the_samples_file_reproduces_the_table(
    demo: tuple[Path, str], tmp_path: Path, task: str
) -> None:
    """``judgecp evaluate SAMPLES`` (format recognised by content) gives every metric of the task's row."""
    written, compared = evaluate_matches_the_table(demo[0], task, tmp_path / "report.json")
    assert written["lmms_eval"]["samples_file"].endswith(f"_samples_{task}.jsonl")  # read as lmms-eval's
    assert {"coverage_naive", "coverage_lac", "width_naive", "width_lac_stderr"} <= compared
    assert {"n", "excluded"} <= compared


def test_gate_calibrate_and_apply_read_lmms_evals_output(demo: tuple[Path, str], tmp_path: Path) -> None:
    out = demo[0]
    (results,) = sorted(out.rglob("*_results.json"))
    assert judgecp_cli(["gate", str(results), "--min", "judgecp_demo_all.coverage_naive=0.88"]) == 0
    assert judgecp_cli(["gate", str(results), "--min", "judgecp_demo_all.coverage_naive=0.95"]) == 1
    cal = tmp_path / "cal.json"
    assert judgecp_cli(["calibrate", str(samples_file(out, "judgecp_demo_all")), "-o", str(cal)]) == 0
    summary = tmp_path / "apply.json"
    args = ["apply", str(cal), str(samples_file(out, "judgecp_demo_easy")), "-o", str(tmp_path / "sets.jsonl"),
            "--json", str(summary)]
    assert judgecp_cli(args) == 0
    assert json.loads(summary.read_text())["n"] == 205


HOOK_CHECK = (
    "from lmms_eval.tasks import TaskManager; "
    "print('judgecp_demo_easy' in TaskManager('ERROR').all_tasks)"
)


def test_without_the_startup_hook_lmms_eval_does_not_find_the_tasks(tmp_path: Path) -> None:
    """The hook is what adds the task folder (the demo run above finds the tasks with it on; lmms-eval's
    LMMS_EVAL_PLUGINS cannot add them, see docs/lmms_eval.md)."""
    proc = run([sys.executable, "-c", HOOK_CHECK], offline_env(tmp_path, JUDGECP_LMMS_EVAL_AUTOLOAD="0"), cwd=tmp_path)
    assert proc.stdout.strip().splitlines()[-1] == "False"
