"""The judge models' numbers against a manual forward pass of the same tiny model (in process)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.lm_eval.helpers import skip_without_lm_eval

skip_without_lm_eval()

import torch  # noqa: E402

from judgecp.adapters.capture.logits import (  # noqa: E402
    RatingVocabulary,
    capture_from_vllm_output,
    plan_document,
    response_from_vllm_capture,
)
from judgecp.base.records import parse_judge_output  # noqa: E402
from judgecp.base.scale import LikertScale  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")


def instances(task_names: list[str], include: Path, metadata: dict[str, Any] | None = None) -> list[Any]:
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(include), include_defaults=False, metadata=metadata)
    loaded = manager.load(task_names)["tasks"]
    out = []
    for name in task_names:
        loaded[name].build_all_requests(rank=0, world_size=1, limit=None)
        out += loaded[name].instances
    return out


def forward_count(model: Any) -> tuple[list[int], Any]:
    calls = [0]
    handle = model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    return calls, handle


def manual_loglikelihood(model: Any, tokenizer: Any, context: str, continuation: str) -> float:
    """lm-eval's split (encode context + continuation, drop the context's tokens), one plain forward pass."""
    whole = tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
    ctx = tokenizer(context, add_special_tokens=False)["input_ids"]
    cont = whole[len(ctx):]
    with torch.no_grad():
        logits = model(torch.tensor([ctx + cont[:-1]])).logits[0]
    lp = torch.log_softmax(logits.float(), -1)
    return float(sum(lp[len(ctx) - 1 + k, t] for k, t in enumerate(cont)))


def test_plan_document() -> None:
    one = plan_document([[7, 1], [7, 2], [7, 3]])
    assert one.single_pass and one.rows == [[7]] and one.reads == [(0, [7, 1]), (0, [7, 2]), (0, [7, 3])]
    many = plan_document([[1, 0], [2]])  # "10" vs "2": differ before the last token
    assert not many.single_pass and many.rows == [[1], []]
    assert not plan_document([[7, 1], [7, 2]], one_pass=False).single_pass


def test_rating_vocabulary_finds_every_spelling(tiny_llama: Path) -> None:
    from transformers import AutoTokenizer

    vocab = RatingVocabulary(AutoTokenizer.from_pretrained(tiny_llama), LikertScale())
    assert {"1", "Ġ1", "5", "Ġ5"} <= set(vocab.tokens)
    assert all(t.lstrip("Ġ") in "12345" for t in vocab.tokens)


@pytest.fixture(scope="module")
def text_judge(tiny_llama: Path) -> Any:
    from judgecp.adapters.lm_eval.models import HFJudgeLM

    return HFJudgeLM(pretrained=str(tiny_llama), dtype="float32", device="cpu", batch_size=4)


def test_direct_scoring_one_pass_per_document_equals_manual_forward(
    text_judge: Any, text_tasks: Path, tiny_llama: Path
) -> None:
    from lm_eval.models.huggingface import HFLM

    reqs = instances(["judge_text"], text_tasks)
    docs = {r.doc_id for r in reqs}
    calls, handle = forward_count(text_judge.model)
    text_judge.judgecp_stats.clear()
    ours = text_judge.loglikelihood(reqs)
    handle.remove()
    assert text_judge.judgecp_stats["documents"] == len(docs) == 40
    assert calls[0] == text_judge.judgecp_stats["forward_passes"] == math.ceil(len(docs) / 4)  # batches of 4 documents
    for req, (ll, _greedy) in list(zip(reqs, ours, strict=True))[:10]:
        assert ll == pytest.approx(manual_loglikelihood(text_judge.model, text_judge.tokenizer, *req.args), abs=1e-4)
    first = reqs[:25]  # five documents
    stock = HFLM(pretrained=str(tiny_llama), dtype="float32", device="cpu", batch_size=1).loglikelihood(first)
    assert [ll for ll, _ in ours[:25]] == pytest.approx([ll for ll, _ in stock], abs=1e-4)
    assert [g for _, g in ours[:25]] == [g for _, g in stock]


def manual_reads(model: Any, context: list[int], continuation: list[int]) -> tuple[float, bool]:
    """One unpadded forward pass over context + continuation[:-1]: the continuation's log-likelihood and greediness."""
    with torch.no_grad():
        lp = torch.log_softmax(model(torch.tensor([context + continuation[:-1]])).logits[0].float(), -1)
    rows = lp[len(context) - 1 : len(context) - 1 + len(continuation)]
    return float(sum(rows[k, t] for k, t in enumerate(continuation))), bool(
        (rows.argmax(-1) == torch.tensor(continuation)).all()
    )


@pytest.mark.parametrize("batch_size", [1, 3, 8, "auto"])
def test_batched_direct_scoring_equals_a_manual_pass_per_continuation(text_judge: Any, batch_size: Any) -> None:
    """Rows of different lengths share batches (right padding, logits kept from the earliest context end);
    documents whose choices differ before their last token take one row per choice."""
    import random

    rng = random.Random(0)
    vocab = len(text_judge.tokenizer)
    documents: list[Any] = []
    for d in range(11):
        context = [rng.randrange(5, vocab) for _ in range(rng.randrange(3, 40))]
        if d % 3 == 2:  # "10" against "2": one row per choice
            continuations = [[rng.randrange(5, vocab), rng.randrange(5, vocab)], [rng.randrange(5, vocab)]]
        else:
            prefix = [rng.randrange(5, vocab)] * (d % 2)
            continuations = [[*prefix, t] for t in rng.sample(range(5, vocab), 5)]
        documents.append((context, continuations, None))
    saved = (text_judge.batch_size_per_gpu, text_judge.max_batch_size)
    text_judge.batch_size_per_gpu, text_judge.max_batch_size = batch_size, 8
    try:
        got = text_judge._judgecp_score(documents)
    finally:
        text_judge.batch_size_per_gpu, text_judge.max_batch_size = saved
    for (context, continuations, _), values in zip(documents, got, strict=True):
        for continuation, (ll, greedy) in zip(continuations, values, strict=True):
            want, want_greedy = manual_reads(text_judge.model, context, continuation)
            assert ll == pytest.approx(want, abs=1e-4) and greedy == want_greedy


def test_requests_are_encoded_as_lm_eval_encodes_them(
    text_judge: Any, text_tasks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each distinct string tokenised once, in one call: the same ids as lm-eval's own per-request encoding."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    reqs = instances(["judge_text"], text_tasks)
    bos = text_judge.tokenizer.decode(text_judge.prefix_token_id)
    odd = [("", " 3"), ("Score:  ", "4"), (bos + "Judge this. Score:", " 5"), ("Score: 1", "0"), ("x", "")]
    reqs += [Instance("loglikelihood", {}, args, 0) for args in odd]
    captured: list[Any] = []
    monkeypatch.setattr(
        text_judge,
        "_loglikelihood_tokens",
        lambda encoded, **_: captured.extend(encoded) or [(0.0, True)] * len(encoded),
    )
    HFLM.loglikelihood(text_judge, reqs, disable_tqdm=True)  # lm-eval's own encoding
    assert text_judge._judgecp_encode_pairs([r.args for r in reqs]) == captured


def test_per_label_scoring_gives_the_same_numbers(text_tasks: Path, tiny_llama: Path, text_judge: Any) -> None:
    from judgecp.adapters.lm_eval.models import HFJudgeLM

    reqs = instances(["judge_text"], text_tasks)[:20]
    per_label = HFJudgeLM(pretrained=str(tiny_llama), dtype="float32", device="cpu", scoring="per_label")
    calls, handle = forward_count(per_label.model)
    slow = per_label.loglikelihood(reqs)
    handle.remove()
    assert calls[0] == 20  # one pass per choice
    assert [ll for ll, _ in slow] == pytest.approx([ll for ll, _ in text_judge.loglikelihood(reqs)], abs=1e-4)


def test_cot_capture_equals_manual_forward_at_the_score_position(text_judge: Any, text_tasks: Path) -> None:
    reqs = instances(["judge_text_cot"], text_tasks)[:6]
    responses = text_judge.generate_until(reqs)
    vocab = RatingVocabulary(text_judge.tokenizer, LikertScale())
    for req, raw in zip(reqs, responses, strict=True):
        response = parse_judge_output(raw, "score")
        assert response is not None and response["meta"]["text"] == " Fine Score: 3"
        assert response["meta"]["stage"] == "anchored" and response["prediction"] == 3 and response["flags"] == []
        prompt = text_judge.tokenizer(req.args[0], add_special_tokens=False)["input_ids"]
        generated = text_judge.tokenizer(response["meta"]["text"], add_special_tokens=False)["input_ids"]
        upto = prompt + generated[: response["meta"]["position"]]
        with torch.no_grad():
            lp = torch.log_softmax(text_judge.model(torch.tensor([upto])).logits[0, -1].float(), -1)
        for label in "12345":
            ids = [i for i, t in zip(vocab.ids, vocab.tokens, strict=True) if t.lstrip("Ġ") == label]
            assert response["logprobs"][label] == pytest.approx(float(torch.logsumexp(lp[ids], 0)), abs=1e-4)


def greedy_reference(model: Any, tokenizer: Any, prompt: str, steps: int) -> tuple[list[int], list[Any]]:
    """Greedy decoding by hand, one unpadded full forward pass per step: the new ids (up to end of
    sequence) and each step's log-softmax."""
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    new: list[int] = []
    logprobs: list[Any] = []
    with torch.no_grad():
        for _ in range(steps):
            lp = torch.log_softmax(model(torch.tensor([ids + new])).logits[0, -1].float(), -1)
            token = int(lp.argmax())
            if token == tokenizer.eos_token_id:
                break
            new.append(token)
            logprobs.append(lp)
    return new, logprobs


def test_batched_cot_capture_equals_a_manual_pass_per_row(text_judge: Any) -> None:
    """Eight rows a batch, as lm-eval batches generation: prompts of different lengths (left padding),
    rows that end after 1 to 7 tokens beside longer ones (padding after their end), a stop string that
    cuts a row's text while the batch goes on generating, and each row's score position found in its own
    tokens. Every captured value equals an unpadded greedy pass by hand; batch 1 gives the same responses."""
    from lm_eval.api.instance import Instance

    endings = [".", ". Fine", ". Fine Score:", " what?"]  # the scripted judge continues " Fine Score: 3" from "."
    reqs = []
    for i in range(24):
        until = ["\n\n"] if i < 16 else [" Score"]  # a separate batch: lm-eval batches one set of settings
        gen_kwargs = {"until": until, "max_gen_toks": 12, "do_sample": False}
        reqs.append(
            Instance(
                "generate_until", {"id": str(i)}, (f"Case {i}{'x' * (i % 5)}: rate it{endings[i % 4]}", gen_kwargs), i
            )
        )
    vocab = RatingVocabulary(text_judge.tokenizer, LikertScale())
    saved = text_judge.batch_size_per_gpu
    try:
        text_judge.batch_size_per_gpu = 8
        batched = [parse_judge_output(r, "score") for r in text_judge.generate_until(reqs, disable_tqdm=True)]
        text_judge.batch_size_per_gpu = 1
        single = [parse_judge_output(r, "score") for r in text_judge.generate_until(reqs, disable_tqdm=True)]
    finally:
        text_judge.batch_size_per_gpu = saved
    positions, lengths, cut = set(), set(), 0
    for req, got, alone in zip(reqs, batched, single, strict=True):
        assert got is not None and alone is not None
        new, logprobs = greedy_reference(text_judge.model, text_judge.tokenizer, req.args[0], 12)
        text = text_judge.tokenizer.decode(new, skip_special_tokens=True).split(req.args[1]["until"][0])[0]
        cut += len(text) < len(text_judge.tokenizer.decode(new, skip_special_tokens=True))
        lengths.add(len(new))
        assert got["meta"]["text"] == alone["meta"]["text"] == text
        assert (
            got["meta"]["position"] == alone["meta"]["position"]
            and got["meta"]["n_tokens"] == alone["meta"]["n_tokens"]
        )
        if got["logprobs"] is None:
            assert alone["logprobs"] is None
            continue
        position = got["meta"]["position"]
        positions.add((position, req.args[1]["until"][0]))
        for label in "12345":
            ids = [i for i, t in zip(vocab.ids, vocab.tokens, strict=True) if t.lstrip("Ġ") == label]
            want = float(torch.logsumexp(logprobs[position][ids], 0))
            assert got["logprobs"][label] == pytest.approx(want, abs=1e-4)
            assert alone["logprobs"][label] == pytest.approx(want, abs=1e-4)
    # score at 6, 2, 0 after ".", ". Fine", ". Fine Score:"; a stop string " Score" leaves only the last
    assert {(6, "\n\n"), (2, "\n\n"), (0, "\n\n"), (0, " Score")} <= positions
    assert (6, " Score") not in positions and (2, " Score") not in positions and cut >= 4
    assert len(lengths) >= 3


def test_a_capture_reads_positions_on_demand_and_can_let_go_of_its_logits() -> None:
    from judgecp.adapters.capture.logits import GenerationCapture, RatingPosition

    tokenizer = SimpleNamespace(get_vocab=lambda: {"x": 0, "1": 1, "y": 2, "Ġ3": 3, "z": 4})
    vocab = RatingVocabulary(tokenizer, LikertScale())
    logits = tuple(torch.randn(2, 5, generator=torch.Generator().manual_seed(k)) for k in range(3))
    capture = GenerationCapture([7, 8, 9], logits, 1, vocab)
    want = [torch.log_softmax(step[1], -1)[[1, 3]].tolist() for step in logits]
    position = RatingPosition(capture, 2)
    assert list(position) == ["1", "Ġ3"] and position["Ġ3"] == pytest.approx(want[2][1])
    assert capture._done.keys() == {2}  # only the position read was computed
    capture.release()
    assert capture._logits is None
    for i in range(3):
        assert capture.rating_logprobs(i) == pytest.approx(want[i])


def test_identical_generation_requests_run_once(text_judge: Any, text_tasks: Path) -> None:
    reqs = instances(["judge_text_cot"], text_tasks)[:3]
    twice = reqs + reqs
    calls, handle = forward_count(text_judge.model)
    out = text_judge.generate_until(twice)
    handle.remove()
    assert out[:3] == out[3:]
    steps_per_request = calls[0] / 3
    calls[0] = 0
    handle = text_judge.model.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    text_judge.generate_until(reqs)
    handle.remove()
    assert calls[0] == 3 * steps_per_request


def test_image_direct_scoring_one_pass_per_document(tiny_llava: Path, mllm_dir: Path) -> None:
    from transformers import AutoProcessor

    from judgecp.adapters.lm_eval import tasks_path
    from judgecp.adapters.lm_eval.models import HFMultimodalJudgeLM

    judge = HFMultimodalJudgeLM(pretrained=str(tiny_llava), dtype="float32", device="cpu", max_length=4096)
    # The category task and the pooled task hold the same coco documents: scored once.
    reqs = instances(["mllm_judge_cp_coco", "mllm_judge_cp_coco"], tasks_path(), {"data_dir": str(mllm_dir)})
    calls, handle = forward_count(judge.model)
    results = judge.loglikelihood(reqs)
    handle.remove()
    assert calls[0] == judge.judgecp_stats["forward_passes"] == 2  # two coco documents
    processor = AutoProcessor.from_pretrained(tiny_llava)
    req = reqs[7]  # second document, label "3"
    context = req.args[0].replace("<image>", processor.image_token)
    enc = processor(text=[context], images=req.args[2]["visual"], return_tensors="pt")
    with torch.no_grad():
        lp = torch.log_softmax(judge.model(**enc).logits[0, -1].float(), -1)
    token = judge.tokenizer(context + req.args[1], add_special_tokens=False)["input_ids"][-1]
    assert results[7][0] == pytest.approx(float(lp[token]), abs=1e-4)


def test_vllm_outputs_to_judge_output(tiny_llama: Path) -> None:
    """vLLM is not installed here: its RequestOutput is faked with the same attributes."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_llama)
    ids = tok(" Fine Score: 3", add_special_tokens=False)["input_ids"]
    three, one = tok.convert_tokens_to_ids("Ġ3"), tok.convert_tokens_to_ids("Ġ1")
    steps = [{i: SimpleNamespace(logprob=-0.1)} for i in ids]
    steps[-1] = {three: SimpleNamespace(logprob=-0.05), one: SimpleNamespace(logprob=-3.2)}
    output = SimpleNamespace(outputs=[SimpleNamespace(token_ids=ids, logprobs=steps)])
    response = parse_judge_output(
        response_from_vllm_capture(
            " Fine Score: 3", capture_from_vllm_output(output), tok, LikertScale(), math.log(1e-5)
        )
    )
    assert response is not None and response["prediction"] == 3
    assert response["logprobs"]["3"] == pytest.approx(-0.05) and response["logprobs"]["1"] == pytest.approx(-3.2)
    assert response["logprobs"]["2"] == pytest.approx(math.log(1e-5)) and "missing_token" in response["flags"]
