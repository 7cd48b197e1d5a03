"""Logprob capture on a tiny local Llama's real ``generate``: raw logits, equal to a manual forward pass."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from judgecp.adapters.vlmeval.capture import (  # noqa: E402
    FLAG_BEAM_SEARCH,
    FLAG_NO_CAPTURE,
    GenerateCapture,
    label_token_ids,
    likert_record,
    position_logprobs,
    prediction_sha1,
)
from judgecp.adapters.vlmeval.models import attach_capture  # noqa: E402
from judgecp.adapters.vlmeval.runtime import PROMPTS, run_context  # noqa: E402
from judgecp.errors import InputError  # noqa: E402
from judgecp.scale import LikertScale  # noqa: E402
from tests.vlmeval.tiny_models import tiny_llama  # noqa: E402

PROMPT = "the chart shows a red table value. final analysis and rating"


@pytest.fixture(scope="module")
def llama() -> tuple[Any, Any]:
    return tiny_llama(seed=3)


def forced(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def generate(model: Any, tokenizer: Any, force: str | None = None, **kwargs: Any) -> tuple[Any, int]:
    inputs = tokenizer(PROMPT, return_tensors="pt")
    start = inputs["input_ids"].shape[1]
    if force is not None:
        ids = [*forced(tokenizer, force), tokenizer.eos_token_id]

        def allowed(batch_id: int, input_ids: Any) -> list[int]:
            step = input_ids.shape[-1] - start
            return [ids[min(step, len(ids) - 1)]]

        kwargs["prefix_allowed_tokens_fn"] = allowed
    kwargs.setdefault("max_new_tokens", 10)
    kwargs.setdefault("do_sample", False)
    out = model.generate(**inputs, pad_token_id=tokenizer.pad_token_id, **kwargs)
    return out, start


def manual_logprobs(model: Any, sequence: Any) -> Any:
    """log-softmax of a plain forward pass over the whole generated sequence (row i predicts token i+1)."""
    with torch.no_grad():
        logits = model(sequence[None, :]).logits[0].float()
    return torch.log_softmax(logits, dim=-1)


def test_generate_returns_what_the_caller_asked_for(llama: tuple[Any, Any]) -> None:
    from transformers.generation.utils import GenerationMixin

    model, tok = llama
    original = GenerationMixin.generate
    with GenerateCapture() as cap:
        assert GenerationMixin.generate is not original
        seq, _ = generate(model, tok)
        assert isinstance(seq, torch.Tensor)  # the tensor, although logits were forced on
        full, _ = generate(model, tok, return_dict_in_generate=True, output_scores=True)
        assert full.scores is not None and full.logits is not None
    assert GenerationMixin.generate is original
    assert len(cap.calls) == 2
    with pytest.raises(RuntimeError), GenerateCapture():
        raise RuntimeError("boom")
    assert GenerationMixin.generate is original  # restored on errors too
    plain, _ = generate(model, tok)
    assert isinstance(plain, torch.Tensor) and torch.equal(plain, seq)  # no change to what is generated


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"repetition_penalty": 1.5},
        {"do_sample": True, "temperature": 0.7, "top_k": 5},
    ],
    ids=["greedy", "repetition_penalty", "sampling"],
)
def test_captured_logprobs_equal_a_manual_forward_pass(llama: tuple[Any, Any], kwargs: dict[str, Any]) -> None:
    model, tok = llama
    torch.manual_seed(0)
    with GenerateCapture() as cap:
        seq, start = generate(model, tok, **kwargs)
    call = cap.calls[0]
    tokens, per_position, flags = position_logprobs(call, tok, LikertScale())
    assert flags == []
    generated = seq[0, start:]
    assert tokens == tok.convert_ids_to_tokens(generated.tolist())
    manual = manual_logprobs(model, seq[0])
    variants = label_token_ids(tok, LikertScale())
    assert len(variants) >= 5
    for i, entry in enumerate(per_position):
        row = manual[start + i - 1]
        assert entry[tokens[i]] == pytest.approx(float(row[generated[i]]), abs=1e-5)
        for text, idx in variants.items():
            assert entry[text] == pytest.approx(float(row[idx]), abs=1e-5)


def test_score_record_from_raw_logits_not_constrained_scores(llama: tuple[Any, Any]) -> None:
    """The forced "Score: 4" has processed score 0 for "4" and -inf elsewhere; the record keeps the raw logits."""
    model, tok = llama
    with GenerateCapture() as cap:
        seq, start = generate(model, tok, force=" Score: 4", max_new_tokens=12)
    record = likert_record(cap.calls, tok)
    assert record["parsed"] == 4 and record["stage"] == "anchored"
    assert record["flags"] == []
    position = record["position"]
    manual = manual_logprobs(model, seq[0])[start + position - 1]
    variants = label_token_ids(tok, LikertScale())
    for label in "12345":
        ids = [idx for text, idx in variants.items() if text.lstrip("Ġ▁ ") == label]
        expected = float(torch.logsumexp(manual[ids], dim=0))
        assert record["logprobs"][label] == pytest.approx(expected, abs=1e-5)
    probs = [math.exp(v) for v in record["logprobs"].values()]
    assert all(p < 0.99 for p in probs)  # a random model: not the constrained one-hot


def test_beam_search_and_no_call_are_flagged(llama: tuple[Any, Any]) -> None:
    model, tok = llama
    with GenerateCapture() as cap:
        generate(model, tok, num_beams=2, max_new_tokens=4)
    record = likert_record(cap.calls, tok)
    assert record["logprobs"] is None and FLAG_BEAM_SEARCH in record["flags"]
    assert likert_record([], tok)["flags"] == [FLAG_NO_CAPTURE]


class TextJudge:
    """The shape of a VLMEvalKit model: ``generate(message, dataset)`` -> ``generate_inner`` -> HF generate."""

    def __init__(self, model: Any, tokenizer: Any, force: str | None = " Score: 3") -> None:
        self.model, self.tokenizer, self.force = model, tokenizer, force
        self.calls = 0

    def generate(self, message: Any, dataset: str | None = None) -> str:
        self.calls += 1
        return self.generate_inner(message, dataset)

    def generate_inner(self, message: Any, dataset: str | None = None) -> str:
        out, start = generate(self.model, self.tokenizer, force=self.force, max_new_tokens=12)
        return self.tokenizer.decode(out[0, start:], skip_special_tokens=True)


def test_attach_capture_returns_structured_predictions_and_writes_the_sidecar(
    llama: tuple[Any, Any], tmp_path: Path
) -> None:
    model, tok = llama
    judge = attach_capture(TextJudge(model, tok), name="tiny-lp")
    assert attach_capture(judge, name="tiny-lp") is judge  # idempotent
    message = [{"type": "text", "value": PROMPT}]
    PROMPTS.register("MLLMJudge_CP", message, 42)
    with run_context(tmp_path, "tiny-lp"):
        out = judge.generate(message=message, dataset="MLLMJudge_CP")
    assert set(out) == {"prediction", "extra_records"}
    assert out["prediction"].strip() == "Score: 3"
    record = json.loads(out["extra_records"])
    assert record["index"] == "42" and record["parsed"] == 3 and record["model"] == "tiny-lp"
    assert record["prediction_sha1"] == prediction_sha1(out["prediction"])
    lines = (tmp_path / "tiny-lp_MLLMJudge_CP_lprecords.jsonl").read_text().splitlines()
    assert len(lines) == 1
    side = json.loads(lines[0])
    assert side["logprobs"] == record["logprobs"] and side["index"] == "42"
    # any other dataset passes straight through, as plain text
    plain = judge.generate(message=message, dataset="MMBench_DEV_EN")
    assert isinstance(plain, str) and plain.strip() == "Score: 3"
    assert judge.calls == 2


def test_attach_capture_refuses_what_it_cannot_capture(llama: tuple[Any, Any]) -> None:
    class Api:
        is_api = True

    with pytest.raises(InputError, match="JudgeCPOpenAI"):
        attach_capture(Api(), name="gpt")

    class NoTokenizer:
        def generate(self, message: Any, dataset: str | None = None) -> str:
            return "Score: 5"

    with pytest.raises(InputError, match="tokenizer"):
        attach_capture(NoTokenizer(), name="x")

    class Fixed(NoTokenizer):
        tokenizer = llama[1]

    out = attach_capture(Fixed(), name="fixed").generate([{"type": "text", "value": "q"}], dataset="Polaris_CP")
    assert json.loads(out["extra_records"])["flags"] == [FLAG_NO_CAPTURE]
