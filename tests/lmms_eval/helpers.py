"""Shared by the lmms-eval integration tests: skipping (never in CI), the tasks as lmms-eval builds
them, the CLI runner, result readers, ``judgecp evaluate`` against lmms-eval's table."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from judgecp.adapters.lm_eval.metrics import task_protocol
from judgecp.adapters.lmms_eval import tasks_path
from judgecp.cli import main as judgecp_cli
from judgecp.kinds.choice.study import mcq_metrics
from judgecp.kinds.likert.metrics import likert_metrics
from judgecp.kinds.metrics import metric_values
from tests.lm_eval.helpers import offline_env, run

NEEDED = ("lmms_eval", "loguru", "transformers", "torch", "accelerate", "PIL", "datasets")


def skip_without_lmms_eval() -> None:
    """Skip the calling test module when lmms-eval is absent; in CI (``CI`` set) fail instead:
    ``make install`` installs it, so a missing one there is a broken install, not a reason to skip."""
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if not missing:
        return
    message = f"lmms-eval integration tests need {', '.join(missing)}: make install (docs/lmms_eval.md, Install)"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=True)


def build_tasks(names: Iterable[str], env: Mapping[str, object]) -> dict[str, Any]:
    """judgecp's tasks ``names`` as lmms-eval's ``TaskManager`` builds them (judgecp's task folder
    included), with ``env`` set meanwhile (data folders, ``JUDGECP_LMMS_EVAL_METADATA``) and their
    requests built."""
    from lmms_eval.tasks import TaskManager, get_task_dict

    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, str(value))
        tasks = get_task_dict(list(names), TaskManager("ERROR", include_path=str(tasks_path())))
    for task in tasks.values():
        task.build_all_requests()
    return tasks  # type: ignore[no-any-return]


def run_lmms_eval(home: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> Any:
    """``python -m lmms_eval ARGS`` (lmms-eval's own command line) as a user starts it: offline, caches under
    ``home``, in ``home`` (not in the checkout, whose ``judgecp.egg-info`` may be older than the install)."""
    return run([sys.executable, "-m", "lmms_eval", *args], offline_env(home, **(env or {})), cwd=home, timeout=900,
               check=check)


def results_file(output: Path) -> dict[str, Any]:
    files = sorted(output.rglob("*_results.json"))
    assert files, f"no results file under {output}"
    return json.loads(files[-1].read_text())  # type: ignore[no-any-return]


def samples_file(output: Path, task: str) -> Path:
    files = sorted(output.rglob(f"*_samples_{task}.jsonl"))
    assert files, f"no samples file for {task} under {output}"
    return files[-1]


def samples(output: Path, task: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in samples_file(output, task).read_text().splitlines() if line.strip()]


def metric(results: dict[str, Any], task: str, name: str) -> Any:
    return results["results"][task][f"{name},none"]


def report_and_table(
    report: Any, results: dict[str, Any], task: str, kind: str = "likert"
) -> dict[str, tuple[float, Any]]:
    """Every metric of the task (default settings, no categories): (read from a ``judgecp evaluate`` report,
    the value in lmms-eval's results)."""
    metrics = {"likert": likert_metrics, "mcq": mcq_metrics}[kind](task_protocol({}, kind))
    got = metric_values(report, metrics)
    return {name: (value, metric(results, task, name)) for name, value in got.items()}


def evaluate_matches_the_table(
    output: Path, task: str, report: Path, kind: str = "likert"
) -> tuple[dict[str, Any], set[str]]:
    """``judgecp evaluate`` on the task's samples file under ``output`` gives every metric of the
    task's row in lmms-eval's results (1e-12; NaN where both are NaN). Returns the report it
    wrote to ``report`` and the names of the metrics compared."""
    samples = str(samples_file(output, task))
    assert judgecp_cli(["evaluate", samples, "--quiet", "--json", str(report)]) == 0
    written = json.loads(report.read_text())
    compared = report_and_table(written, results_file(output), task, kind)
    for name, (ours, theirs) in compared.items():
        assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-12, nan_ok=True), (task, name)
    return written, set(compared)
