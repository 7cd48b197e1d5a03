"""What the ``judgecp-hf`` tests compare the model class with: numbers by hand, from unbatched,
unpadded passes (imports torch: import it after the module's skip)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
import torch

from judgecp.adapters.capture.logits import RatingVocabulary


@contextlib.contextmanager
def in_batches_of(judge: Any, batch_size: int) -> Iterator[None]:
    """The judge answers in batches of ``batch_size`` meanwhile, then of 1 again."""
    judge.batch_size_per_gpu = batch_size
    try:
        yield
    finally:
        judge.batch_size_per_gpu = 1


def continuation_ids(tokenizer: Any, text: str, continuation: str) -> list[int]:
    """The tokens ``continuation`` adds to ``text`` when the two are tokenized together."""
    prompt: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
    both: list[int] = tokenizer(text + continuation, add_special_tokens=False)["input_ids"]
    return both[len(prompt) :]


def continuation_loglikelihood(
    logits: Any, prompt_length: int, continuation: list[int]
) -> tuple[float, bool]:
    """log P(continuation | prompt), and whether each of its tokens is the likeliest, from the
    logits ``(tokens, vocabulary)`` of one pass over the prompt's ``prompt_length`` tokens and the
    continuation."""
    start = prompt_length - 1
    logprobs = torch.log_softmax(logits[start : start + len(continuation)].float(), -1)
    total = sum(float(logprobs[k, t]) for k, t in enumerate(continuation))
    greedy = all(int(logprobs[k].argmax()) == t for k, t in enumerate(continuation))
    return total, greedy


def greedy_decoding(
    next_logprobs: Callable[[list[int]], Any], eos: int, steps: int
) -> tuple[list[int], list[Any]]:
    """Greedy decoding by hand, ``next_logprobs(new ids)`` (one full pass) a step, up to ``steps``
    tokens or the end of sequence: the new ids and each step's log-softmax."""
    new: list[int] = []
    logprobs: list[Any] = []
    with torch.no_grad():
        for _ in range(steps):
            lp = next_logprobs(new)
            token = int(lp.argmax())
            if token == eos:
                break
            new.append(token)
            logprobs.append(lp)
    return new, logprobs


def assert_label_logprobs(captured: Mapping[str, float], at: Any, vocab: RatingVocabulary) -> None:
    """Each label's captured logprob is the log-sum-exp of the log-probabilities of the label's tokens
    (with or without a leading space) at the score position (1e-4)."""
    for label in "12345":
        ids = [i for i, t in zip(vocab.ids, vocab.tokens, strict=True) if t.lstrip("Ġ") == label]
        want = float(torch.logsumexp(at[ids], 0))
        assert captured[label] == pytest.approx(want, abs=1e-4), label
