"""Score-token logprobs from a Hugging Face model's own ``generate`` call, from raw logits.

Used by VLMEvalKit's ``-lp`` models (:mod:`judgecp.adapters.vlmeval.models`), which
wrap a model they did not write; its letter and score outputs from top-K lists
(:func:`positions_output`) also serve the OpenAI-compatible API judge. No harness
is imported here.

:class:`GenerateCapture` patches ``transformers.GenerationMixin.generate``
while it is active: every call is made with ``output_logits=True,
return_dict_in_generate=True`` (no extra forward pass), the raw per-step
logits are kept, and the caller gets back exactly what it asked for (the
token tensor, unless it asked for the output object itself). Raw logits are
the model's outputs before any logits processor (temperature, top-k,
repetition penalty, constrained decoding), which is what the judge "believes";
``output_scores`` would give the processed ones.

:func:`likert_record` turns the last captured call into a ``score`` judge output
(``judgecp.record/1`` without the row's fields, docs/records.md): it reads, at every
generated position, the log-probability of every vocabulary token that spells a rating
(``"4"``, ``"▁4"``, ``"Ġ4"``, ...) and of the generated token, and runs the core's
three-stage score extractor through :func:`judgecp.data.extraction.score_output`.
:func:`letter_record` does the same for a letter answer (a pairwise verdict "A"/"B": a
``pair`` output; a multiple-choice option letter: a ``choice`` output) through
:func:`judgecp.data.extraction.letter_output`: the answer position is the first generated
token that is one of the letters (``"A"``, ``"▁A"``, ``"ĠA"``, ``<0x41>``), and the
output holds log P of every letter there (variants combined by log-sum-exp), the letter
generated as ``prediction`` and, in ``meta``, ``stage``, ``position``, ``n_tokens``,
``letters`` and ``source`` (``hf_generate``); no letter generated gives ``logprobs: null``
and the flag ``no_answer_letter``. Log-probabilities are
computed per step as ``logit - logsumexp(logits)`` in float32, so the full
``steps x vocabulary`` log-softmax is never materialised (the logits
themselves are held by ``generate`` for the whole call: ``steps x vocab``
values in the model's dtype, e.g. 0.6 GB for 2,048 steps of a 152k vocabulary
in bf16).

Record flags (besides the extractor's): ``no_capture`` (``generate`` was not
called, e.g. a model that decodes in its own loop or with vLLM),
``multiple_generate_calls`` (the last call is used), ``beam_search``
(several beams: raw logits do not follow the returned sequence, no logprobs),
``batched_generate`` (row 0 is used).

Needs torch and transformers, imported when a capture starts (the torch extra).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from judgecp.base.records import judge_output
from judgecp.base.records.schema import Shape
from judgecp.base.scale import LikertScale
from judgecp.data.extraction import DEFAULT_FLOOR, letter_output, score_output
from judgecp.data.extraction import label_token_ids as core_label_token_ids
from judgecp.kinds import get_kind

FLAG_NO_CAPTURE = "no_capture"
FLAG_MULTIPLE_CALLS = "multiple_generate_calls"
FLAG_BEAM_SEARCH = "beam_search"
FLAG_BATCHED = "batched_generate"
FLAG_NO_LETTER = "no_answer_letter"

#: Flags that mean "no logprobs could be read" (not the extractor's ``no_score``, which the
#: Likert core counts itself). A letter record without a generated letter has no answer
#: position, so ``no_answer_letter`` is one of them.
CAPTURE_FAILURE_FLAGS = (FLAG_NO_CAPTURE, FLAG_BEAM_SEARCH, "no_tokenizer", "api_no_logprobs", FLAG_NO_LETTER)


@dataclass
class GenerateCall:
    """One ``generate`` call: the returned sequences and the raw per-step logits."""

    sequences: Any  # torch.LongTensor [batch, length]
    logits: tuple[Any, ...]  # one [batch * beams, vocab] tensor per generated step


_lock = threading.RLock()
_active: list[GenerateCapture] = []
_original_generate: Any = None


def _patched_generate(self: Any, *args: Any, **kwargs: Any) -> Any:
    config = kwargs.get("generation_config") or getattr(self, "generation_config", None)
    wants_dict = kwargs.get("return_dict_in_generate")
    if wants_dict is None:
        wants_dict = bool(getattr(config, "return_dict_in_generate", False))
    kwargs["output_logits"] = True
    kwargs["return_dict_in_generate"] = True
    out = _original_generate(self, *args, **kwargs)
    logits = getattr(out, "logits", None)
    sequences = getattr(out, "sequences", None)
    with _lock:
        target = _active[-1] if _active else None
    if target is not None and logits is not None and sequences is not None:
        target.calls.append(GenerateCall(sequences=sequences, logits=tuple(logits)))
    return out if wants_dict else sequences


class GenerateCapture:
    """Context manager recording the raw logits of every ``generate`` call made inside it.

    Nested captures are allowed (calls go to the innermost). The patch is on
    the ``GenerationMixin`` class, so subclasses that override ``generate``
    and call ``super().generate`` are captured as well.
    """

    def __init__(self) -> None:
        self.calls: list[GenerateCall] = []

    def __enter__(self) -> GenerateCapture:
        global _original_generate
        from transformers.generation.utils import GenerationMixin

        with _lock:
            if not _active:
                _original_generate = GenerationMixin.generate
                GenerationMixin.generate = functools.wraps(_original_generate)(_patched_generate)  # type: ignore[method-assign]
            _active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        global _original_generate
        from transformers.generation.utils import GenerationMixin

        with _lock:
            _active.remove(self)
            if not _active and _original_generate is not None:
                GenerationMixin.generate = _original_generate  # type: ignore[method-assign]
                _original_generate = None


# -- tokens that spell a rating ------------------------------------------------

_variant_cache: dict[tuple[int, tuple[str, ...]], tuple[Any, dict[str, int]]] = {}


def label_token_ids(tokenizer: Any, labels: LikertScale | Sequence[str]) -> dict[str, int]:
    """Every vocabulary token that spells one of the labels (:func:`judgecp.data.extraction.label_token_ids`),
    for a scale (its tokens ``"1"``..``"5"``) or answer letters; cached per tokenizer."""
    wanted = tuple(labels.tokens) if isinstance(labels, LikertScale) else tuple(labels)
    key = (id(tokenizer), wanted)
    cached = _variant_cache.get(key)
    if cached is None or cached[0] is not tokenizer:
        cached = _variant_cache[key] = (tokenizer, core_label_token_ids(tokenizer.get_vocab(), wanted))
    return cached[1]


def position_logprobs(
    call: GenerateCall, tokenizer: Any, labels: LikertScale | Sequence[str]
) -> tuple[list[str], list[dict[str, float]], list[str]]:
    """Generated tokens and, per position, log P of the generated token and of every label token.

    Returns ``(tokens, per_position, flags)``. Row 0 of a batch is used.
    """
    import torch

    flags: list[str] = []
    steps = len(call.logits)
    sequences = call.sequences
    if steps == 0:
        return [], [], flags
    if call.logits[0].shape[0] != sequences.shape[0]:
        return [], [], [FLAG_BEAM_SEARCH]
    if sequences.shape[0] > 1:
        flags.append(FLAG_BATCHED)
    generated = sequences[0, -steps:].tolist()
    tokens = [str(t) for t in tokenizer.convert_ids_to_tokens(generated)]
    vocab_size = int(call.logits[0].shape[-1])
    variants = {tok: idx for tok, idx in label_token_ids(tokenizer, labels).items() if idx < vocab_size}
    variant_ids = torch.tensor(list(variants.values()), dtype=torch.long)
    per_position: list[dict[str, float]] = []
    with torch.no_grad():
        for i, step in enumerate(call.logits):
            row = step[0].float()
            lse = torch.logsumexp(row, dim=-1)
            chosen = float(row[generated[i]] - lse)
            values = (row[variant_ids.to(row.device)] - lse).tolist() if len(variants) else []
            entry = dict(zip(variants.keys(), (float(v) for v in values), strict=True))
            entry[tokens[i]] = chosen
            per_position.append(entry)
    return tokens, per_position, flags


def likert_record(
    calls: Sequence[GenerateCall],
    tokenizer: Any,
    *,
    scale: LikertScale | None = None,
    floor: float = DEFAULT_FLOOR,
) -> dict[str, Any]:
    """The ``score`` judge output of one judged item from the ``generate`` calls made for it."""
    scale = scale or LikertScale()
    if not calls:
        return failed_record(FLAG_NO_CAPTURE, kind="likert")
    flags = [FLAG_MULTIPLE_CALLS] if len(calls) > 1 else []
    tokens, per_position, more = position_logprobs(calls[-1], tokenizer, scale)
    flags += more
    if FLAG_BEAM_SEARCH in flags:
        return failed_record(*flags, kind="likert")
    return positions_output("likert", tokens, per_position, scale=scale, floor=floor, flags=flags)


def letter_record(
    calls: Sequence[GenerateCall],
    tokenizer: Any,
    letters: Sequence[str],
    *,
    kind: str,
    floor: float = DEFAULT_FLOOR,
) -> dict[str, Any]:
    """The ``pair`` or ``choice`` judge output of one letter answer (pairwise verdict, option letter) from its
    ``generate`` calls: :func:`judgecp.data.extraction.letter_output` (the first generated letter; the output keeps
    all letters' values, the reader restricts them to a row's options)."""
    wanted = [str(x) for x in letters]
    if not calls:
        return failed_record(FLAG_NO_CAPTURE, kind=kind, letters=wanted)
    flags = [FLAG_MULTIPLE_CALLS] if len(calls) > 1 else []
    tokens, per_position, more = position_logprobs(calls[-1], tokenizer, wanted)
    flags += more
    if FLAG_BEAM_SEARCH in flags:
        return failed_record(*flags, kind=kind, letters=wanted)
    return positions_output(kind, tokens, per_position, letters=wanted, floor=floor, flags=flags)


def generate_record(
    calls: Sequence[GenerateCall], tokenizer: Any, kind: str, *, scale: LikertScale | None = None,
    letters: Sequence[str] = (),
) -> dict[str, Any]:
    """The judge output of ``kind`` (scores, ``likert``: :func:`likert_record`; the others: :func:`letter_record`)."""
    if get_kind(kind).reader.record_shape == "score":
        return likert_record(calls, tokenizer, scale=scale)
    return letter_record(calls, tokenizer, letters, kind=kind)


def positions_output(
    kind: str, tokens: Sequence[str], positions: Sequence[dict[str, float]], *, scale: LikertScale | None = None,
    letters: Sequence[str] = (), floor: float = DEFAULT_FLOOR, flags: Sequence[str] = (), source: str = "hf_generate",
) -> dict[str, Any]:
    """The judge output of ``kind`` from generated tokens and per-position candidate logprobs (full
    vocabulary or a top-K list): :func:`~judgecp.data.extraction.score_output` for ``likert`` (``scale``),
    :func:`~judgecp.data.extraction.letter_output` at the first generated letter for the others."""
    shape = get_kind(kind).reader.record_shape
    if shape == "score":
        return score_output(tokens, positions, scale=scale or LikertScale(), floor=floor, flags=flags, source=source)
    return letter_output(
        cast(Literal["pair", "choice"], shape),
        tokens,
        positions,
        list(letters),
        floor=floor,
        flags=flags,
        source=source,
    )


def failed_record(
    *flags: str, kind: str, source: str = "hf_generate", letters: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A judge output without logprobs (``flags`` say why)."""
    shape = cast(Shape, get_kind(kind).reader.record_shape)
    extra = {} if shape == "score" else {"letters": list(letters or [])}
    return judge_output(shape, logprobs=None, flags=flags, stage=None, position=None, n_tokens=0, source=source,
                        **extra)
