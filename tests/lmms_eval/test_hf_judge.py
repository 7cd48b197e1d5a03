"""``judgecp-hf`` on a tiny random LLaVA built here: its numbers against a manual forward pass, and a CLI run.

The requests are lmms-eval's own (its ``TaskManager`` builds judgecp's
MLLM-as-a-Judge tasks on a local copy; ``build_all_requests`` makes the
instances), answered in batches of 1 and 3. Every direct-scoring value and
every captured chain-of-thought logprob equals an unbatched, unpadded pass by
hand (1e-4), and direct scoring runs one forward pass per document.
"""

from __future__ import annotations

import json
import math
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.lmms_eval.helpers import (
    build_tasks,
    evaluate_matches_the_table,
    metric,
    results_file,
    run_lmms_eval,
    samples,
    skip_without_lmms_eval,
)

skip_without_lmms_eval()

import torch  # noqa: E402  (after the skip: torch is part of what it checks)

from judgecp.adapters.capture.logits import RatingVocabulary  # noqa: E402
from judgecp.adapters.lmms_eval import METADATA_ENV  # noqa: E402
from judgecp.adapters.lmms_eval.models import HFJudge, with_prefix  # noqa: E402
from judgecp.adapters.lmms_eval.replay import ReplayJudge  # noqa: E402
from judgecp.adapters.lmms_eval.task import loglikelihood_pair  # noqa: E402
from judgecp.base.records import parse_judge_output  # noqa: E402
from judgecp.base.scale import LikertScale  # noqa: E402
from tests.lm_eval.scripted import SCRIPT  # noqa: E402
from tests.lmms_eval import by_hand  # noqa: E402

DIRECT, COT = "mllm_judge_cp_all", "mllm_judge_cp_cot_all"


@pytest.fixture(scope="module")
def tasks(mllm_dir: Path) -> dict[str, Any]:
    """judgecp's two MLLM-as-a-Judge tasks as lmms-eval builds them, with their requests."""
    return build_tasks([DIRECT, COT], {METADATA_ENV: json.dumps({"data_dir": str(mllm_dir)})})


@pytest.fixture(scope="module")
def judge(tiny_llava: Path, tasks: dict[str, Any]) -> Any:
    model = HFJudge(pretrained=str(tiny_llava), dtype="float32", device="cpu")
    for name, task in tasks.items():
        model.task_dict[name] = task.dataset
    return model


def forward_calls(model: Any) -> tuple[list[int], Any]:
    calls = [0]
    handle = model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls, handle


def manual_inputs(judge: Any, task: Any, request: Any, prefix: str | None) -> tuple[dict[str, Any], str]:
    """The document's prompt (with its images) encoded by the processor, unpadded, and its text."""
    doc = task.dataset[task.config.test_split][request.args[3]]
    visuals = task.doc_to_visual(doc)
    text = with_prefix(judge.prompt(request.args[0], len(visuals)), prefix)
    return dict(judge.processor(text=[text], images=visuals, return_tensors="pt")), text


def manual_loglikelihood(
    judge: Any, encoding: dict[str, Any], text: str, continuation: str
) -> tuple[float, bool]:
    """log P(continuation | text) by hand: one unbatched pass over the encoded ``text`` (its images
    included) and the continuation's tokens."""
    added = by_hand.continuation_ids(judge.tokenizer, text, continuation)
    ids = torch.cat([encoding["input_ids"], torch.tensor([added])], dim=1)
    with torch.no_grad():
        logits = judge.model(input_ids=ids, pixel_values=encoding["pixel_values"]).logits[0]
    return by_hand.continuation_loglikelihood(logits, encoding["input_ids"].shape[1], added)


@pytest.mark.parametrize("batch_size", [1, 3])
def test_direct_scoring_equals_a_manual_forward_pass(judge: Any, tasks: dict[str, Any], batch_size: int) -> None:
    """log P(label | prompt, "Score:"): the prefix the task's metadata gives the model."""
    task = tasks[DIRECT]
    requests = task.instances
    assert len(requests) == 8 * 5  # eight documents, five labels each
    calls, handle = forward_calls(judge.model)
    try:
        with by_hand.in_batches_of(judge, batch_size):
            results = judge.loglikelihood(requests)
    finally:
        handle.remove()
    assert calls[0] == math.ceil(8 / batch_size)  # one row per document, batch_size rows a pass
    for request, result in zip(requests, results, strict=True):
        ll, greedy = loglikelihood_pair(str(result))  # lmms-eval stores the str() of each answer
        encoding, text = manual_inputs(judge, task, request, "Score:")
        want, want_greedy = manual_loglikelihood(judge, encoding, text, request.args[1])
        assert ll == pytest.approx(want, abs=1e-4) and greedy == want_greedy
        assert ll < 0


def next_logprobs(judge: Any, encoding: dict[str, Any]) -> Callable[[list[int]], Any]:
    """``new ids -> log-softmax of the next token``: one full unpadded pass over the encoding and
    ``new``."""
    ids = encoding["input_ids"]

    def step(new: list[int]) -> Any:
        full = torch.cat([ids, torch.tensor([new], dtype=ids.dtype)], dim=1)
        logits = judge.model(input_ids=full, pixel_values=encoding["pixel_values"]).logits[0, -1]
        return torch.log_softmax(logits.float(), -1)

    return step


@pytest.mark.parametrize("batch_size", [1, 3])
def test_cot_capture_equals_a_manual_forward_pass_at_the_score_position(
    judge: Any, tasks: dict[str, Any], batch_size: int
) -> None:
    task = tasks[COT]
    requests = task.instances
    with by_hand.in_batches_of(judge, batch_size):
        responses = [parse_judge_output(r, "score") for r in judge.generate_until(requests)]
    vocab = RatingVocabulary(judge.tokenizer, LikertScale())
    assert len(responses) == 8
    for request, response in zip(requests, responses, strict=True):
        assert response is not None and response["meta"]["text"] == SCRIPT
        assert response["meta"]["stage"] == "anchored" and response["prediction"] == 3
        encoding, _text = manual_inputs(judge, task, request, None)
        eos = judge.tokenizer.eos_token_id
        new, logprobs = by_hand.greedy_decoding(next_logprobs(judge, encoding), eos, 12)
        assert judge.tokenizer.decode(new, skip_special_tokens=True) == response["meta"]["text"]
        at = logprobs[response["meta"]["position"]]
        by_hand.assert_label_logprobs(response["logprobs"], at, vocab)


def test_interleaved_images_stay_at_their_placeholders(judge: Any) -> None:
    """A pairwise prompt with one ``<image>`` per image (judgecp's prompt-ensemble documents): the images
    go where the placeholders are, and the labels' log-likelihoods equal a manual pass of that text."""
    from PIL import Image

    images = [Image.new("RGB", (20, 18), (200, 30, 30)), Image.new("RGB", (26, 22), (30, 30, 200))]
    judge.task_dict["pair"] = {"test": [{"id": "p0"}]}
    context = "Image A: <image> Image B: <image> Which image is better? Answer:"
    assert judge.prompt(context, 2) == context  # no template: the placeholders are the image tokens
    requests = [types.SimpleNamespace(args=(context, f" {g}", lambda doc: images, 0, "pair", "test"), metadata={})
                for g in "AB"]
    results = judge.loglikelihood(requests)
    encoding = dict(judge.processor(text=[context], images=images, return_tensors="pt"))
    for request, (ll, _greedy) in zip(requests, results, strict=True):
        want, _want_greedy = manual_loglikelihood(judge, encoding, context, request.args[1])
        assert ll == pytest.approx(want, abs=1e-4)


def test_a_recording_replays_to_the_same_answers(tiny_llava: Path, tasks: dict[str, Any], tmp_path: Path) -> None:
    """``record=PATH`` writes what ``judgecp-replay recording=PATH`` serves: the same answers, direct and CoT."""
    recording = tmp_path / "recording.jsonl"
    recorder = HFJudge(pretrained=str(tiny_llava), dtype="float32", record=str(recording))
    for name, task in tasks.items():
        recorder.task_dict[name] = task.dataset
    direct = recorder.loglikelihood(tasks[DIRECT].instances)
    cot = recorder.generate_until(tasks[COT].instances)
    replay = ReplayJudge(recording=str(recording))
    for name, task in tasks.items():
        replay.task_dict[name] = task.dataset
    assert replay.loglikelihood(tasks[DIRECT].instances) == direct
    assert replay.generate_until(tasks[COT].instances) == cot


@pytest.mark.parametrize(("options", "message"), [
    ({"batch_size": "auto"}, "batch_size must be a positive integer, got 'auto'"),
    ({"batch_size": "0"}, "batch_size must be a positive integer, got '0'"),
    ({"scoring": "one_pass"}, "unknown --model_args scoring"),
])
def test_bad_model_arguments_are_named_before_loading(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HFJudge(pretrained="/nonexistent/judge", **options)


def test_losses_of_lmms_evals_own_models_are_excluded_not_read_as_logprobs(tasks: dict[str, Any]) -> None:
    """lmms-eval's models answer loglikelihood with a loss (>= 0); such a document is counted out."""
    task = tasks[DIRECT]
    doc = task.dataset["test"][3]
    ours = task.process_results(
        doc, ["(-2.5, False)", "(-1.5, False)", "(-0.5, True)", "(-3.0, False)", "(-4.0, False)"]
    )
    record = ours["n"]
    assert record["exclude"] is None and record["logprobs"]["3"] == -0.5 and record["prediction"] == 3
    stock = task.process_results(doc, ["(2.5, False)", "(1.5, False)", "(0.5, True)", "(3.0, False)", "(4.0, False)"])
    assert stock["n"]["exclude"] == "not_logprobs"
    with pytest.raises(ValueError, match="not a log-likelihood answer"):
        task.process_results(doc, ["-0.5"] * 5)


def test_image_judge_tasks_end_to_end_in_lmms_eval(
    tiny_llava: Path, mllm_dir: Path, ai2d_dir: Path, tmp_path: Path
) -> None:
    """``lmms-eval --model judgecp-hf`` (batch 2) on MLLM-as-a-Judge direct and CoT and on AI2D: counted
    exclusions, one record per document naming the judge, and ``judgecp evaluate`` on each samples file
    gives every metric of the task's row."""
    out = tmp_path / "out"
    proc = run_lmms_eval(
        tmp_path,
        "--model",
        "judgecp-hf",
        "--model_args",
        f"pretrained={tiny_llava},dtype=float32",
        "--tasks",
        f"{DIRECT},{COT},ai2d_cp",
        "--batch_size",
        "2",
        "--output_path",
        str(out),
        "--log_samples",
        env={"JUDGECP_MLLM_JUDGE_DIR": str(mllm_dir), "JUDGECP_AI2D_DIR": str(ai2d_dir)},
    )
    assert "mllm_judge_cp_all: 2 excluded: image_load_failed 1, label_off_scale 1" in proc.stdout + proc.stderr
    results = results_file(out)
    for task, kind, n, used in ((DIRECT, "likert", 8, 6), (COT, "likert", 8, 6), ("ai2d_cp", "mcq", 10, 10)):
        lines = samples(out, task)
        assert len(lines) == n and len({line["n"]["id"] for line in lines}) == n
        assert all(line["n"]["judge"] == str(tiny_llava) for line in lines)
        assert metric(results, task, "n") == used and metric(results, task, "excluded") == n - used
        written, compared = evaluate_matches_the_table(out, task, tmp_path / f"{task}.json", kind)
        assert written["kind"] == kind and written["n"] == used
        assert {"coverage_lac", "n", "excluded"} <= compared
    cot = samples(out, COT)[1]["n"]
    assert cot["prediction"] == 3 and cot["meta"]["stage"] == "anchored"
    choice = samples(out, "ai2d_cp")[0]["n"]
    assert choice["shape"] == "choice" and set(choice["logprobs"]) == {"A", "B", "C", "D"}
