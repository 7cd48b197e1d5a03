"""lm-eval's own evaluator (in process, the replay model): records kept once per sample, one report per task."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from tests.lm_eval.helpers import skip_without_lm_eval

skip_without_lm_eval()

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")

PAIRWISE_METADATA = {"n_splits": 50, "alphas": [0.1, 0.2]}


def evaluate_in_process(task: str, metadata: dict[str, Any], recording: Path | None) -> dict[str, Any]:
    """``simple_evaluate`` as ``lm_eval --model judgecp-replay --tasks TASK --log_samples`` runs it."""
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from judgecp.adapters.lm_eval import tasks_path
    from judgecp.adapters.lm_eval.replay import ReplayJudgeLM

    manager = TaskManager(include_path=str(tasks_path()), include_defaults=False, metadata=metadata)
    model = ReplayJudgeLM(recording=None if recording is None else str(recording))
    results = simple_evaluate(model=model, tasks=[task], task_manager=manager, log_samples=True, bootstrap_iters=0)
    assert results is not None
    return results


def pairwise_recording(path: Path, data: Path) -> Path:
    """Random A/B log-likelihoods for every document of the MT-Bench fixture (ids as the task makes them)."""
    from lm_eval.tasks import TaskManager

    from judgecp.adapters.lm_eval import tasks_path

    task = TaskManager(include_path=str(tasks_path()), include_defaults=False).load(["mt_bench_human_cp"])["tasks"][
        "mt_bench_human_cp"
    ]
    rng = random.Random(0)
    with path.open("w") as handle:
        for doc in task.eval_docs:
            p = rng.uniform(0.05, 0.95)
            handle.write(json.dumps({"id": doc["id"], "logprobs": {"A": math.log(p), "B": math.log1p(-p)}}) + "\n")
    return path


def test_a_pairwise_task_computes_its_report_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    from judgecp.adapters.lm_eval import metrics
    from tests.lm_eval import fixtures
    from tests.lm_eval.helpers import task_metrics

    monkeypatch.setenv("JUDGECP_MT_BENCH_HUMAN_DIR", str(fixtures.build_mt_bench_human_dir(tmp_path / "mt_bench")))
    recording = pairwise_recording(tmp_path / "recording.jsonl", tmp_path / "mt_bench")
    computed: list[int] = []
    sorted_: list[int] = []
    compute, by_id = metrics._compute, metrics.by_id
    monkeypatch.setattr(metrics, "_compute", lambda records, *a: computed.append(len(records)) or compute(records, *a))
    monkeypatch.setattr(metrics, "by_id", lambda records: sorted_.append(len(records)) or by_id(records))
    results = evaluate_in_process("mt_bench_human_cp", PAIRWISE_METADATA, recording)

    samples = results["samples"]["mt_bench_human_cp"]
    names = samples[0]["metrics"]
    written = results["results"]["mt_bench_human_cp"]
    got = {name: written[f"{name},none"] for name in names}
    assert len(got) > 50  # every metric aggregated ...
    assert computed == sorted_ == [len(samples)]  # ... from one report, sorted once
    assert got["n_pairs"] == 16 and got["excluded"] == 4
    # 16 pairs: SCOPE accepts no verdict at 0.1, so its risk is undefined (NaN, issue 38), as in
    # the headline; the controller that accepts every verdict has one
    assert got["coverage_scope_0.1"] == 0.0 and math.isnan(got["risk_scope_0.1"])
    assert not math.isnan(got["risk_vanilla_0.1"])
    for sample in samples:  # the record once per sample line, whatever the number of metrics
        assert sample["metrics"] == names and [m for m in names if sample[m] is not None] == ["n_pairs"]
    assert not [r for r in caplog.records if "Custom kwargs" in r.getMessage()]  # lm-eval's hint: not for judgecp tasks
    records = [s["n_pairs"] for s in samples]
    assert task_metrics("pairwise", records, PAIRWISE_METADATA) == pytest.approx(got, nan_ok=True)
