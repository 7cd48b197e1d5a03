"""Shared by the lm-eval integration tests: skipping, the CLI runner, result readers."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

NEEDED = ("lm_eval", "transformers", "torch", "accelerate", "PIL", "datasets")


def skip_without_lm_eval() -> None:
    """Skip the calling test module when the lm-eval integration's dependencies are absent."""
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(
            f"lm-eval integration tests need {', '.join(missing)}: pip install torch==2.13.0 'judgecp[lm-eval]'",
            allow_module_level=True,
        )


def offline_env(tmp: Path, **extra: str) -> dict[str, str]:
    """Environment of a harness subprocess: offline, one thread, caches under ``tmp``."""
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HOME=str(tmp / "hf_home"),
        HF_DATASETS_CACHE=str(tmp / "hf_datasets"),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        JUDGECP_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    env.update(extra)
    return env


def run(
    cmd: list[str], env: dict[str, str], *, cwd: Path | None = None, timeout: int = 300, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}\n--- "
            f"stderr\n{proc.stderr[-8000:]}"
        )
    return proc


def lm_eval_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "lm_eval", *args]


def run_lm_eval(home: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 300,
                check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m lm_eval ARGS`` as a user starts it: offline, caches under ``home``, ``env`` added."""
    return run(lm_eval_cmd(*args), offline_env(home, **(env or {})), timeout=timeout, check=check)


def judge_run(home: Path, model: str, model_args: str, tasks: str | Sequence[str], output: Path, metadata: Any,
              *more: str, **options: Any) -> subprocess.CompletedProcess[str]:
    """A judge's CPU run that logs its samples: ``--model MODEL --model_args MODEL_ARGS --device cpu
    --tasks TASKS --output_path OUTPUT --log_samples --metadata METADATA MORE`` (``metadata``: a dict
    or its JSON), through :func:`run_lm_eval` with ``options``."""
    return run_lm_eval(
        home, "--model", model, "--model_args", model_args, "--device", "cpu",
        "--tasks", tasks if isinstance(tasks, str) else ",".join(tasks), "--output_path", str(output),
        "--log_samples", "--metadata", metadata if isinstance(metadata, str) else json.dumps(metadata), *more,
        **options,
    )


def results_file(output: Path) -> dict[str, Any]:
    files = sorted(output.rglob("results_*.json"))
    assert files, f"no results file under {output}"
    return json.loads(files[-1].read_text())


def samples(output: Path, task: str) -> list[dict[str, Any]]:
    files = sorted(output.rglob(f"samples_{task}_2*.jsonl"))  # _2: the date, not a longer task name
    assert files, f"no samples file for {task} under {output}"
    return [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]


def metric(results: dict[str, Any], task: str, name: str) -> Any:
    return results["results"][task][f"{name},none"]


def same(a: Any, b: Any) -> bool:
    """Equal, NaN included (lm-eval writes "N/A" for a metric without a stderr)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def samples_records(files: list[Path]) -> list[dict[str, Any]]:
    """The judgecp records of samples files, read as ``judgecp evaluate --format lm-eval`` reads them."""
    from judgecp.adapters.lm_eval.plugin import read_samples

    return [r for f in files for r in read_samples(f).records]


def task_metrics(kind: str, records: list[dict[str, Any]], metadata: dict[str, Any], metric_list: Any = None,
                 **options: Any) -> dict[str, float]:
    """Every metric of a task recomputed from its records, as the task's aggregations compute them."""
    from judgecp.adapters.lm_eval import metrics
    from judgecp.kinds.likert.metrics import likert_metrics
    from judgecp.kinds.metrics import metric_values
    from judgecp.kinds.pairwise.study import pairwise_metrics

    protocol = metrics.task_protocol(metadata, kind)
    report = metrics.task_report(records, kind, protocol, **options)
    if metric_list is None:
        metric_list = {"likert": likert_metrics, "pairwise": pairwise_metrics}[kind](protocol)
    return metric_values(report, metric_list)


def aggregate_as_lm_eval(
    metric_list: Sequence[Any], compute: Any, records: Sequence[dict[str, Any]]
) -> tuple[dict[str, float], Any]:
    """Every metric's value as lm-eval computes it: each document's ``process_results`` values
    (:func:`~judgecp.adapters.lm_eval.metrics.document_values`) collected per metric, then one aggregation
    per metric in that order. Returns the values and the task's
    :class:`~judgecp.adapters.lm_eval.metrics.TaskReport`."""
    from judgecp.adapters.lm_eval.metrics import TaskReport, aggregations, document_values

    per_metric: dict[str, list[Any]] = {}
    for record in records:
        for name, value in document_values(metric_list, record).items():
            per_metric.setdefault(name, []).append(value)
    report = TaskReport(compute, task="t")
    aggs = aggregations(metric_list, report.of)
    return {name: aggs[name](values) for name, values in per_metric.items()}, report
