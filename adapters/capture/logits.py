"""Reading a judge's score-token logprobs from raw logits (every judgecp lm-eval model: HF, vLLM, API).

Two paths, both from the model's raw logits (never sampling-warped scores):

* **direct scoring** (``multiple_choice`` over the labels): all of a
  document's label continuations share its context, so one forward pass over
  the context plus the continuations' common prefix gives every label's
  log-likelihood at once (:func:`plan_document`, :func:`read_continuations`). Choices that differ in more
  than their last token fall back to one pass per choice, counted.
* **chain of thought** (``generate_until``): ``generate(output_logits=True,
  return_dict_in_generate=True)``; the core's extractor finds the score
  position in each row's tokens and reads the rating tokens' log-softmax
  there (:class:`RatingVocabulary`, :class:`GenerationCapture`: computed
  for the positions read, not for every step, batched rows each from their
  own tokens); the model returns the ``score`` judge output as JSON
  (:func:`judge_response_from_ids`), because lm-eval keeps ``str()`` of each
  response in the samples file.

Results are identical to a model's own per-choice scoring up to float
rounding: the same tokens, the same causal prefix. No harness is imported;
torch only when logits are read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgecp.base.scale import LikertScale
from judgecp.data.extraction import DEFAULT_FLOOR, label_token_ids, score_output


class RatingVocabulary:
    """Every vocabulary id whose token is a rating label in some spelling (``4``, ``Ġ4``, ``▁4``)."""

    def __init__(self, tokenizer: Any, scale: LikertScale) -> None:
        pairs = sorted((i, tok) for tok, i in label_token_ids(tokenizer.get_vocab(), scale.tokens).items())
        if not pairs:
            raise ValueError(f"the tokenizer has no token for any label of the scale {scale}")
        self.ids = [i for i, _ in pairs]
        self.tokens = [tok for _, tok in pairs]
        self.scale = scale


# -- direct scoring --------------------------------------------------------------


@dataclass
class DocumentPlan:
    """How to score one document's continuations.

    ``rows`` are the token ids to append to the context, one model input
    each; ``reads`` gives, for each continuation, ``(row, tokens)``: the row
    whose logits predict all of the continuation's tokens.
    """

    rows: list[list[int]]
    reads: list[tuple[int, list[int]]]

    @property
    def single_pass(self) -> bool:
        return len(self.rows) == 1


def common_prefix(seqs: Sequence[Sequence[int]]) -> list[int]:
    prefix: list[int] = []
    for column in zip(*seqs, strict=False):
        if any(t != column[0] for t in column):
            break
        prefix.append(column[0])
    return prefix


def plan_document(continuations: Sequence[Sequence[int]], *, one_pass: bool = True) -> DocumentPlan:
    """One row (context + common prefix) when every continuation adds at most one token to the
    common prefix; otherwise (or with ``one_pass=False``) one row per continuation."""
    conts = [list(c) for c in continuations]
    prefix = common_prefix(conts)
    if one_pass and all(len(c) - len(prefix) <= 1 for c in conts):
        return DocumentPlan([prefix], [(0, c) for c in conts])
    return DocumentPlan([c[:-1] for c in conts], [(i, c) for i, c in enumerate(conts)])


def read_continuations(logits: Any, reads: Sequence[tuple[int, int, Sequence[int]]]) -> list[tuple[float, bool]]:
    """Log-likelihood and greediness of every continuation read from one batch's logits.

    ``logits`` is ``[rows, positions, vocabulary]``; each read is ``(row, first,
    tokens)``: ``logits[row, first + k]`` predict token ``k`` of the
    continuation. The log-softmax runs once per distinct position in float32
    (a document's labels share theirs), and the values reach the host in one
    copy, whatever the number of reads.
    """
    import torch

    if not reads:
        return []
    slots: dict[tuple[int, int], int] = {}
    slot_of: list[int] = []
    targets: list[int] = []
    for row, first, tokens in reads:
        for k, token in enumerate(tokens):
            slot_of.append(slots.setdefault((row, first + k), len(slots)))
            targets.append(int(token))
    where = [row for row, _ in slots] + [position for _, position in slots] + slot_of + targets
    index = torch.tensor(where, dtype=torch.long).to(logits.device, non_blocking=True)
    n_slots, n_tokens = len(slots), len(targets)
    rows, positions = index[:n_slots], index[n_slots : 2 * n_slots]
    slot, target = index[2 * n_slots : 2 * n_slots + n_tokens], index[2 * n_slots + n_tokens :]
    selected = logits[rows, positions].float()  # [slots, vocabulary]
    logprob = selected[slot, target] - torch.logsumexp(selected, dim=-1)[slot]
    greedy = selected.argmax(dim=-1)[slot] == target
    values, hits = torch.stack((logprob.double(), greedy.double())).tolist()
    out: list[tuple[float, bool]] = []
    start = 0
    for _row, _first, tokens in reads:
        end = start + len(tokens)
        out.append((float(sum(values[start:end])), all(h == 1.0 for h in hits[start:end])))
        start = end
    return out


# -- chain of thought -----------------------------------------------------------------


class GenerationCapture:
    """One generated row: its new token ids, and its rating tokens' logprobs per position, read on demand.

    It holds the call's raw per-step logits (``[batch, vocabulary]`` each, as
    ``generate`` returned them) and its row; :meth:`rating_logprobs` normalises
    one position (the rating tokens' logits minus the log-sum-exp over the
    vocabulary, in float32). The extractor reads the position it picks, so a
    generation costs one normalisation, not one per step. :meth:`release`
    computes every position and drops the logits.
    """

    def __init__(self, ids: list[int], logits: Sequence[Any], row: int, vocabulary: RatingVocabulary) -> None:
        self.ids = ids
        self._logits: Sequence[Any] | None = logits
        self._row = row
        self._vocabulary = vocabulary
        self._done: dict[int, list[float]] = {}

    def rating_logprobs(self, position: int) -> list[float]:
        """log P of every rating token (:attr:`RatingVocabulary.tokens` order) at one generated position."""
        if position not in self._done:
            if self._logits is None:
                raise IndexError(f"position {position} was not kept")
            self._done[position] = _normalised(self._logits[position][self._row], self._vocabulary)
        return self._done[position]

    def release(self) -> None:
        """Compute every position and drop the logits (memory back to one call's worth)."""
        if self._logits is not None:
            for position in range(len(self.ids)):
                self.rating_logprobs(position)
            self._logits = None


def _normalised(step: Any, vocabulary: RatingVocabulary) -> list[float]:
    import torch

    step = step.float()  # no copy for float32 logits (transformers keeps them so)
    ids = torch.tensor(vocabulary.ids, device=step.device)
    return (step.index_select(-1, ids) - torch.logsumexp(step, dim=-1)).tolist()  # type: ignore[no-any-return]


class RatingPosition(Mapping[str, float]):
    """One generated position's rating-token logprobs, computed when first read."""

    def __init__(self, capture: GenerationCapture, position: int) -> None:
        self._capture = capture
        self._position = position
        self._tokens = capture._vocabulary.tokens

    def __getitem__(self, token: str) -> float:
        values = self._capture.rating_logprobs(self._position)
        return values[self._tokens.index(token)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    def items(self) -> Any:
        return list(zip(self._tokens, self._capture.rating_logprobs(self._position), strict=True))


def capture_generation(
    output: Any, prompt_length: int, vocabulary: RatingVocabulary, stop_ids: set[int]
) -> list[GenerationCapture]:
    """Per batch row, the generated ids up to the first stop id, with the call's logits to read from.

    ``output`` is ``generate(..., output_logits=True, return_dict_in_generate=True)``'s result.
    Batched generation works as lm-eval runs it: prompts left-padded to
    ``prompt_length``, rows that stopped early padded after their stop id,
    and every row's score position read from its own tokens. Nothing is
    computed here (:class:`GenerationCapture` reads a position when asked);
    the captures keep the logits, not the rest of the output (its cache).
    """
    logits = tuple(output.logits)
    new = output.sequences[:, prompt_length:].tolist()
    captures = []
    for row, row_ids in enumerate(new):
        end = next((i for i, t in enumerate(row_ids) if t in stop_ids), len(row_ids))
        captures.append(GenerationCapture(row_ids[:end], logits, row, vocabulary))
    return captures


def _aligned_length(tokenizer: Any, ids: Sequence[int], text: str) -> int:
    """The fewest leading tokens whose decoded text covers ``text`` (the harness's cut answer)."""
    if not ids:
        return 0
    if len(tokenizer.decode(list(ids), skip_special_tokens=True)) <= len(text):
        return len(ids)
    lo, hi = 0, len(ids)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(tokenizer.decode(list(ids[:mid]), skip_special_tokens=True)) >= len(text):
            hi = mid
        else:
            lo = mid + 1
    return lo


def judge_response_from_ids(
    text: str,
    capture: GenerationCapture,
    tokenizer: Any,
    vocabulary: RatingVocabulary,
    *,
    floor: float = DEFAULT_FLOOR,
) -> str:
    """The JSON judge response for one generation: ``text`` plus the extracted score logprobs."""
    n = _aligned_length(tokenizer, capture.ids, text)
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    keep = [i for i in range(n) if capture.ids[i] not in special]
    tokens = tokenizer.convert_ids_to_tokens([capture.ids[i] for i in keep])
    positions = [RatingPosition(capture, i) for i in keep]
    return response_from_candidates(text, tokens, positions, vocabulary.scale, floor=floor)


def response_from_candidates(
    text: str,
    tokens: Sequence[str],
    position_logprobs: Sequence[Mapping[str, float]],
    scale: LikertScale,
    *,
    floor: float = DEFAULT_FLOOR,
) -> str:
    """The ``score`` judge output (JSON) from generated tokens and per-position candidate logprobs.

    Shared by every backend: full-vocabulary rating logprobs (HF), or a
    top-k list per position (vLLM, OpenAI-compatible APIs), where a label
    missing from the list gets ``floor`` and a ``missing_token`` flag.
    ``text`` is kept in ``meta.text``: the samples file shows what the judge wrote.
    """
    output = score_output(list(tokens), list(position_logprobs), scale=scale, floor=floor, text=text)
    return json.dumps(output, ensure_ascii=False)


# -- top-k backends (vLLM) -------------------------------------------------------------


def capture_from_vllm_output(output: Any) -> tuple[list[int], list[dict[int, float]]]:
    """Generated ids and per-position ``{token id: logprob}`` (top-k) of a vLLM ``RequestOutput``."""
    completion = output.outputs[0]
    positions = [
        {int(tid): float(lp.logprob) for tid, lp in (step or {}).items()} for step in (completion.logprobs or [])
    ]
    return list(completion.token_ids), positions


def response_from_vllm_capture(
    text: str, capture: tuple[list[int], list[dict[int, float]]], tokenizer: Any, scale: LikertScale, floor: float
) -> str:
    ids, positions = capture
    n = min(_aligned_length(tokenizer, ids, text), len(positions))
    tokens = tokenizer.convert_ids_to_tokens(ids[:n])
    candidates = [dict(zip(tokenizer.convert_ids_to_tokens(list(p)), p.values(), strict=True)) for p in positions[:n]]
    return response_from_candidates(text, tokens, candidates, scale, floor=floor)
