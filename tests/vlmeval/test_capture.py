"""Logprob capture on a tiny local Llama's real ``generate``: raw logits, equal to a manual forward pass."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from judgecp.adapters.capture.generate import (  # noqa: E402
    FLAG_BEAM_SEARCH,
    FLAG_NO_CAPTURE,
    FLAG_NO_LETTER,
    GenerateCapture,
    label_token_ids,
    letter_record,
    likert_record,
    position_logprobs,
)
from judgecp.adapters.vlmeval.models import attach_capture  # noqa: E402
from judgecp.adapters.vlmeval.runtime import (  # noqa: E402
    PROMPTS,
    mark_mcq,
    prediction_sha1,
    register_prompt,
    run_context,
)
from judgecp.base.errors import InputError  # noqa: E402
from judgecp.base.records import SCHEMA  # noqa: E402
from judgecp.base.scale import LikertScale  # noqa: E402
from judgecp.data.extraction import DEFAULT_FLOOR, letter_output, token_letter  # noqa: E402
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
    assert record["schema"] == SCHEMA and record["shape"] == "score"
    assert record["prediction"] == 4 and record["meta"]["stage"] == "anchored"
    assert record["flags"] == [] and record["meta"]["source"] == "hf_generate"
    position = record["meta"]["position"]
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
    assert record["id"] == "42" and record["prediction"] == 3 and record["judge"] == "tiny-lp"
    assert record["meta"]["prediction_sha1"] == prediction_sha1(out["prediction"])
    lines = (tmp_path / "tiny-lp_MLLMJudge_CP_lprecords.jsonl").read_text().splitlines()
    assert len(lines) == 1
    side = json.loads(lines[0])
    assert side["logprobs"] == record["logprobs"] and side["id"] == "42" and side["task"] == "MLLMJudge_CP"
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


# -- letter answers: pairwise verdicts, option letters ---------------------------------------


def test_letter_output_from_candidates_reads_the_first_letter() -> None:
    tokens = ["The", "Ġanswer", "Ġis", "ĠB", "."]
    per_position = [{}, {}, {}, {"ĠB": -0.2, "B": -3.0, "ĠA": -1.9, "<0x44>": -6.0}, {}]
    record = letter_output("choice", tokens, per_position, ["A", "B", "C", "D"], source="openai_api")
    assert record["prediction"] == "B" and record["meta"]["position"] == 3
    assert record["meta"]["stage"] == "first_letter"
    assert record["logprobs"]["B"] == pytest.approx(math.log(math.exp(-0.2) + math.exp(-3.0)))
    assert record["logprobs"]["A"] == pytest.approx(-1.9) and record["logprobs"]["D"] == pytest.approx(-6.0)
    assert record["logprobs"]["C"] == pytest.approx(DEFAULT_FLOOR) and record["flags"] == ["missing_token"]
    none = letter_output("pair", ["ĠScore", ":", "Ġ4"], [{}, {}, {}], ["A", "B"], source="hf_generate")
    assert none["logprobs"] is None and none["flags"] == [FLAG_NO_LETTER] and none["meta"]["n_tokens"] == 3
    assert [token_letter(t) for t in ("A", "▁C", "ĠZ", "<0x42>", "AB", "a", "Ġ", "1")] == [
        "A", "C", "Z", "B", None, None, None, None]


def test_letter_record_from_raw_logits_equals_a_manual_forward_pass(llama: tuple[Any, Any]) -> None:
    """A forced verdict " B": the record holds the raw-logit log P of every letter variant at that position."""
    model, tok = llama
    with GenerateCapture() as cap:
        seq, start = generate(model, tok, force=" B", max_new_tokens=4)
    record = letter_record(cap.calls, tok, ["A", "B"], kind="pairwise")
    assert record["prediction"] == "B" and record["flags"] == [] and record["shape"] == "pair"
    manual = manual_logprobs(model, seq[0])[start + record["meta"]["position"] - 1]
    variants = label_token_ids(tok, ["A", "B"])
    for letter in "AB":
        ids = [idx for text, idx in variants.items() if token_letter(text) == letter]
        assert ids
        assert record["logprobs"][letter] == pytest.approx(float(torch.logsumexp(manual[ids], dim=0)), abs=1e-5)
    assert sum(math.exp(v) for v in record["logprobs"].values()) < 0.99  # raw logits, not the forced one-hot
    with GenerateCapture() as cap:
        generate(model, tok, force=" the chart", max_new_tokens=6)
    assert letter_record(cap.calls, tok, ["A", "B"], kind="pairwise")["flags"] == [FLAG_NO_LETTER]
    assert letter_record([], tok, ["A"], kind="parc")["flags"] == [FLAG_NO_CAPTURE]


class PromptedJudge(TextJudge):
    """A model with its own prompt for some datasets (VLMEvalKit's ``use_custom_prompt``/``build_prompt``)."""

    def build_prompt(self, line: Any, dataset: str | None = None) -> list[dict[str, str]]:
        return [{"type": "text", "value": f"{line['question']} A. {line['A']} B. {line['B']} C. {line['C']}"}]


def test_vlmeval_multiple_choice_gets_plain_predictions_and_sidecar_records(
    llama: tuple[Any, Any], tmp_path: Path
) -> None:
    model, tok = llama
    judge = attach_capture(PromptedJudge(model, tok, force=" C"), name="tiny-lp")
    line = {"index": 7, "question": "What colour?", "A": "red", "B": "blue", "C": "green", "D": float("nan")}
    message = judge.build_prompt(line, dataset="AI2D_TEST")
    with run_context(tmp_path, "tiny-lp"):
        assert isinstance(judge.generate(message, dataset="AI2D_TEST"), str)  # not marked: passes through
        assert not (tmp_path / "tiny-lp_AI2D_TEST_lprecords.jsonl").exists()
        mark_mcq("AI2D_TEST")  # what the launcher does for a dataset of TYPE "MCQ"
        message = judge.build_prompt(line, dataset="AI2D_TEST")  # the model's own prompt, registered
        out = judge.generate(message, dataset="AI2D_TEST")
    assert isinstance(out, str) and out.strip() == "C"  # VLMEvalKit's own evaluation sees plain text
    (record,) = [json.loads(x) for x in (tmp_path / "tiny-lp_AI2D_TEST_lprecords.jsonl").read_text().splitlines()]
    assert record["shape"] == "choice" and record["id"] == "7" and record["meta"]["letters"] == ["A", "B", "C"]
    assert record["prediction"] == "C" and set(record["logprobs"]) == {"A", "B", "C"}
    assert record["meta"]["prediction_sha1"] == prediction_sha1(out) and record["task"] == "AI2D_TEST"


def test_judgecp_letter_datasets_get_structured_predictions(llama: tuple[Any, Any], tmp_path: Path) -> None:
    model, tok = llama
    judge = attach_capture(TextJudge(model, tok, force=" A"), name="tiny-lp")
    pair_msg = [{"type": "text", "value": "which is better, A or B?"}]
    PROMPTS.register("MLLMJudgePair_CP", pair_msg, 3)
    parc_msg = [{"type": "text", "value": "Question: which? Options: A. x B. y C. z D. w"}]
    register_prompt("PARC_toy", parc_msg, {"index": 11, "A": "x", "B": "y", "C": "z", "D": "w"})
    with run_context(tmp_path, "tiny-lp"):
        pair = json.loads(judge.generate(pair_msg, dataset="MLLMJudgePair_CP")["extra_records"])
        parc = json.loads(judge.generate(parc_msg, dataset="PARC_toy")["extra_records"])
    assert pair["shape"] == "pair" and pair["meta"]["letters"] == ["A", "B"] and pair["id"] == "3"
    assert parc["shape"] == "choice" and parc["meta"]["letters"] == ["A", "B", "C", "D"] and parc["id"] == "11"
    assert pair["prediction"] == parc["prediction"] == "A"
    assert (tmp_path / "tiny-lp_PARC_toy_lprecords.jsonl").exists()
