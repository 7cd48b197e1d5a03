"""The real lm-eval command line, end to end on CPU, with tiny local judges and fixture data.

Each run is a subprocess (``python -m lm_eval ...``), as a user would start
it: judgecp is found through its startup hook, without ``--include_path``
(the text fixture task, which lives in a temporary folder, is the exception).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.lm_eval.helpers import (
    judge_run,
    metric,
    offline_env,
    results_file,
    run,
    run_lm_eval,
    same,
    samples,
    samples_records,
    skip_without_lm_eval,
    task_metrics,
)

skip_without_lm_eval()

from judgecp.adapters.lm_eval import tasks_path  # noqa: E402
from judgecp.base.records import parse_judge_output  # noqa: E402
from judgecp.base.scale import LikertScale  # noqa: E402

METADATA = json.dumps({"seeds": 5})


def judgecp_metrics(results: dict[str, Any], task: str) -> dict[str, float]:
    return {
        k.split(",")[0]: v
        for k, v in results["results"][task].items()
        if k.endswith(",none") and not k.split(",")[0].endswith("_stderr_stderr")
    }


@pytest.fixture(scope="module")
def text_run(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path, text_tasks: Path) -> Path:
    out = tmp_path_factory.mktemp("text_run")
    judge_run(out, "hf-judge", f"pretrained={tiny_llama},dtype=float32,record={out / 'recording.jsonl'}",
              "judge_text,judge_text_cot", out / "results", METADATA, "--include_path", str(text_tasks))
    return out


def test_results_json_holds_the_conformal_metrics(text_run: Path) -> None:
    results = results_file(text_run / "results")
    for task in ("judge_text", "judge_text_cot"):
        got = judgecp_metrics(results, task)
        assert got["n"] == 39 and got["excluded"] == 1  # the label "7" is off the 1-5 scale
        for name in ("coverage_naive", "coverage_lac", "width_naive", "interval_width_naive", "width_lac"):
            assert not math.isnan(got[name]) and not math.isnan(got[f"{name}_stderr"])
        assert 0.8 <= got["coverage_naive"] <= 1.0 and 0 <= got["width_lac"] <= 4
        assert results["higher_is_better"][task]["width_naive"] is False


def test_samples_file_recomputes_every_metric(text_run: Path) -> None:
    results = results_file(text_run / "results")
    for task in ("judge_text", "judge_text_cot"):
        files = sorted((text_run / "results").rglob(f"samples_{task}_2*.jsonl"))
        got = task_metrics("likert", samples_records(files), results["configs"][task]["metadata"], scale=LikertScale())
        expected = judgecp_metrics(results, task)
        for name, value in got.items():
            assert same(value, expected[name]), name


@pytest.mark.parametrize("route", ["samples file", "exported records"])
def test_judgecp_evaluate_on_the_samples_file_gives_the_same_numbers(
    text_run: Path, tmp_path: Path, route: str
) -> None:
    from judgecp.cli import main as judgecp_cli

    (samples_file,) = sorted((text_run / "results").rglob("samples_judge_text_2*.jsonl"))
    source = [str(samples_file), "--format", "lm-eval"]
    if route == "exported records":
        assert judgecp_cli(["records", *source, "-o", str(tmp_path / "records.jsonl")]) == 0
        source = [str(tmp_path / "records.jsonl")]
    args = [
        "evaluate",
        *source,
        "--methods",
        "naive,lac",
        "--seeds",
        "5",
        "--quiet",
        "--json",
        str(tmp_path / "r.json"),
    ]
    assert judgecp_cli(args) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    results = results_file(text_run / "results")
    assert report["methods"]["naive"]["labels"]["coverage"] == metric(results, "judge_text", "coverage_naive")
    assert report["methods"]["lac"]["labels"]["width_std"] == metric(results, "judge_text", "width_lac_stderr")
    assert report["n"] == metric(results, "judge_text", "n")


def test_cot_responses_are_judge_outputs(text_run: Path) -> None:
    lines = samples(text_run / "results", "judge_text_cot")
    response = parse_judge_output(lines[0]["resps"][0][0], "score")
    assert (
        response is not None
        and response["meta"]["text"] == " Fine Score: 3"
        and response["meta"]["stage"] == "anchored"
    )
    record = lines[0]["n"]
    assert (
        record["logprobs"] == response["logprobs"]
        and record["prediction"] == 3
        and "text" not in record.get("meta", {})
    )


def test_stock_hf_still_works_and_agrees(text_run: Path, tiny_llama: Path, text_tasks: Path, tmp_path: Path) -> None:
    """``--model hf`` with judgecp installed: same log-likelihoods as hf-judge; its plain-text
    answers to the CoT task are counted as response_not_json, the run does not fail."""
    judge_run(tmp_path, "hf", f"pretrained={tiny_llama},dtype=float32", "judge_text,judge_text_cot", tmp_path, METADATA,
              "--include_path", str(text_tasks))
    stock = {s["doc"]["id"]: s["n"]["logprobs"] for s in samples(tmp_path, "judge_text")}
    ours = {s["doc"]["id"]: s["n"]["logprobs"] for s in samples(text_run / "results", "judge_text")}
    assert stock.keys() == ours.keys()
    for doc_id, lp in ours.items():
        assert lp == pytest.approx(stock[doc_id], abs=1e-4)
    results = results_file(tmp_path)
    assert metric(results, "judge_text_cot", "excluded") == 40 and metric(results, "judge_text_cot", "n") == 0
    assert math.isnan(metric(results, "judge_text_cot", "coverage_naive"))
    reasons = {s["n"]["exclude"] for s in samples(tmp_path, "judge_text_cot")}
    assert reasons == {"response_not_json"}


def test_two_process_accelerate_run_gives_the_same_metrics(
    text_run: Path, tiny_llama: Path, text_tasks: Path, tmp_path: Path
) -> None:
    """Same records, same metrics. Same to float32 rounding, that is: CPU forward passes in two
    processes are not always bit-identical (generation logprobs have differed by ~2e-6)."""
    proc = run(
        [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--multi_gpu",
            "--num_processes",
            "2",
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
            "-m",
            "lm_eval",
            "--model",
            "hf-judge",
            "--model_args",
            f"pretrained={tiny_llama},dtype=float32",
            "--device",
            "cpu",
            "--tasks",
            "judge_text,judge_text_cot",
            "--include_path",
            str(text_tasks),
            "--output_path",
            str(tmp_path),
            "--log_samples",
            "--metadata",
            METADATA,
        ],
        offline_env(tmp_path, ACCELERATE_USE_CPU="true"),
    )
    assert "CPU data parallel, process 1 of 2" in proc.stderr
    single, double = results_file(text_run / "results"), results_file(tmp_path)
    for task in ("judge_text", "judge_text_cot"):
        a, b = judgecp_metrics(single, task), judgecp_metrics(double, task)
        assert a.keys() == b.keys()
        for k in a:
            assert same(a[k], b[k]) or a[k] == pytest.approx(b[k], rel=1e-6, abs=1e-9), (task, k, a[k], b[k])
        one = {s["doc"]["id"]: s["n"] for s in samples(text_run / "results", task)}
        two = {s["doc"]["id"]: s["n"] for s in samples(tmp_path, task)}
        assert one.keys() == two.keys() and len(two) == 40  # every document once, gathered from both ranks
        for doc_id, record in one.items():
            assert record["prediction"] == two[doc_id]["prediction"] and record["exclude"] == two[doc_id]["exclude"]
            assert record["logprobs"] == pytest.approx(two[doc_id]["logprobs"], abs=1e-5)


def test_image_judge_on_the_shipped_tasks(tiny_llava: Path, mllm_dir: Path, polaris_dir: Path, tmp_path: Path) -> None:
    """MLLM-as-a-Judge (14 categories + pooled, direct), its CoT variant, Polaris; bad documents counted."""
    proc = judge_run(tmp_path, "hf-multimodal-judge", f"pretrained={tiny_llava},dtype=float32,max_length=4096",
                     "mllm_judge_cp,mllm_judge_cp_cot_chartqa,polaris_cp", tmp_path, METADATA,
                     env={"JUDGECP_MLLM_JUDGE_DIR": str(mllm_dir), "JUDGECP_POLARIS_DIR": str(polaris_dir)})
    results = results_file(tmp_path)
    # 28 MLLM-as-a-Judge documents in 15 tasks and 10 Polaris ones, each scored once in one
    # forward pass: the pooled task shares the category tasks' passes.
    assert "judgecp: 38 documents scored in 38 forward passes (0 needed one pass per choice)" in proc.stderr
    # Two documents per category are too few for a calibration/test split: NaN, said in the log.
    assert (
        math.isnan(metric(results, "mllm_judge_cp_wit", "coverage_naive"))
        and metric(results, "mllm_judge_cp_wit", "n") == 2
    )
    assert "mllm_judge_cp_wit: metrics undefined: need at least 4 valid rows" in proc.stderr
    assert metric(results, "mllm_judge_cp_all", "n") == 26 and metric(results, "mllm_judge_cp_all", "excluded") == 2
    assert not math.isnan(metric(results, "mllm_judge_cp_all", "coverage_naive"))
    # coco holds the unreadable image and the 0 score: nothing left to calibrate, counted, not fatal.
    assert metric(results, "mllm_judge_cp_coco", "excluded") == 2 and math.isnan(
        metric(results, "mllm_judge_cp_coco", "width_naive")
    )
    coco = {s["doc"]["id"]: s["n"]["exclude"] for s in samples(tmp_path, "mllm_judge_cp_coco")}
    assert coco == {"0": "image_load_failed", "1": None}
    label_zero = next(s for s in samples(tmp_path, "mllm_judge_cp_coco") if s["doc"]["id"] == "1")
    assert label_zero["n"]["label"] == "0"  # excluded by the core as label_off_scale
    chartqa = samples(tmp_path, "mllm_judge_cp_cot_chartqa")
    assert {parse_judge_output(s["resps"][0][0])["prediction"] for s in chartqa} == {3}  # type: ignore[index]
    assert metric(results, "polaris_cp", "n") == 10
    labels = sorted(s["n"]["label"] for s in samples(tmp_path, "polaris_cp"))
    assert labels == sorted(str(round(4 * (i % 5) / 4) + 1) for i in range(10))
    assert "mllm_judge_cp_all" in results["group_subtasks"]["mllm_judge_cp"]


def test_all_judgecp_tasks_listed_without_flags(tmp_path: Path) -> None:
    listed = run_lm_eval(tmp_path, "ls", "tasks").stdout
    names = {p.stem for p in tasks_path().rglob("*.yaml") if not p.name.startswith("_")}
    names |= {"mllm_judge_cp", "mllm_judge_cp_cot", "judgecp_demo"}
    assert len(names) > 30
    missing = sorted(n for n in names if f"|{n} " not in listed)
    assert not missing


def test_embedded_demo_runs_with_plain_lm_eval(tmp_path: Path) -> None:
    proc = run_lm_eval(tmp_path, "--model", "judgecp-replay", "--tasks", "judgecp_demo", "--output_path", str(tmp_path),
                       "--log_samples")
    results = results_file(tmp_path)
    for task, n in (
        ("judgecp_demo_all", 600),
        ("judgecp_demo_easy", 205),
        ("judgecp_demo_medium", 212),
        ("judgecp_demo_hard", 183),
    ):
        assert metric(results, task, "n") == n and metric(results, task, "excluded") == 0
        assert 0.85 <= metric(results, task, "coverage_naive") <= 0.95
    assert metric(results, "judgecp_demo_easy", "width_naive") < metric(results, "judgecp_demo_hard", "width_naive")
    assert "Custom kwargs" not in proc.stderr  # lm-eval's hint, once per task before: not for judgecp's tasks
    # The samples file holds each record once: at most 1.5x the same samples without judgecp's fields.
    lines = samples(tmp_path, "judgecp_demo_all")
    assert len(lines) == 600 and all([m for m in s["metrics"] if s[m] is not None] == ["n"] for s in lines)
    size = sum(len(json.dumps(s, ensure_ascii=False)) for s in lines)
    plain = sum(
        len(json.dumps({**{k: v for k, v in s.items() if k not in s["metrics"]}, "metrics": []}, ensure_ascii=False))
        for s in lines
    )
    assert size <= 1.5 * plain, f"samples {size} bytes, {size / plain:.2f}x the {plain} bytes without judgecp's fields"


def test_autoload_switch_and_the_wrapper(tmp_path: Path) -> None:
    env = {"JUDGECP_LM_EVAL_AUTOLOAD": "0"}
    off = run_lm_eval(tmp_path, "--model", "judgecp-replay", "--tasks", "judgecp_demo_easy", env=env, check=False)
    assert off.returncode != 0 and "Tasks not found: judgecp_demo_easy" in off.stderr
    run([sys.executable, "-m", "judgecp.cli", "lm-eval", "--model", "judgecp-replay", "--tasks", "judgecp_demo_easy",
         "--output_path", str(tmp_path)], offline_env(tmp_path, **env))
    assert metric(results_file(tmp_path), "judgecp_demo_easy", "n") == 205


def test_api_judge_against_a_local_server(text_tasks: Path, tmp_path: Path) -> None:
    from tests.lm_eval.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        run_lm_eval(
            tmp_path,
            "--model",
            "openai-judge",
            "--model_args",
            f"base_url={server.url},model=judge,top_logprobs=5,num_concurrent=1,max_retries=1",
            "--apply_chat_template",
            "--tasks",
            "judge_text_cot",
            "--include_path",
            str(text_tasks),
            "--output_path",
            str(tmp_path),
            "--log_samples",
            "--metadata",
            METADATA,
        )
        sent = [r["body"] for r in server.requests]
    assert len(sent) == 40 and sent[0]["logprobs"] is True and sent[0]["top_logprobs"] == 5
    record = samples(tmp_path, "judge_text_cot")[0]["n"]
    assert record["prediction"] == 4 and record["flags"] == ["missing_token"]
    assert record["logprobs"]["1"] == pytest.approx(math.log(1e-5)) and record["logprobs"]["3"] == -1.6
    assert record["logprobs"]["4"] == pytest.approx(math.log(math.exp(-0.3) + math.exp(-3.0)))
    assert metric(results_file(tmp_path), "judge_text_cot", "n") == 39


def test_a_bad_metadata_value_ends_lm_eval_with_one_line(tiny_llama: Path, text_tasks: Path, tmp_path: Path) -> None:
    proc = run_lm_eval(
        tmp_path, "--model", "hf-judge", "--model_args", f"pretrained={tiny_llama},dtype=float32", "--device", "cpu",
        "--tasks", "judge_text", "--include_path", str(text_tasks), "--output_path", str(tmp_path),
        "--metadata", json.dumps({"methods": "naiv,lac"}), check=False,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("judgecp: error: task judge_text: metadata methods") and "did you mean 'naive'" in last
