"""Find a judge's score in its generated tokens and read the label log-probabilities there.

The heuristic is the one of the seed paper (appendix A.2), applied in order:

1. **anchored**: the literal ``Score:`` and the first rating token after it
   (markdown or punctuation tokens in between are skipped);
2. **keyword**: ``score`` or ``rating`` (any case) followed, within
   ``window`` tokens, by a rating token;
3. **backward**: the last rating token of the output.

Where an anchor occurs several times the last one that is followed by a
rating wins: the prompts ask for the final score at the very end.

A *rating token* is a token whose text, stripped of whitespace and of the
SentencePiece ``▁`` / byte-level ``Ġ`` markers, is one of the scale's labels,
and that is not part of a longer number (no digit just before it, no digit or
decimal point + digit just after it).

At the score position, log P(label) combines every token variant of the label
(``"4"``, ``" 4"``, ``"▁4"``, ``"Ġ4"``) by log-sum-exp. A label absent from
the candidates (a top-k list) gets ``floor`` (default ``log 1e-5``) and a
``missing_token`` flag (so does ``-inf``); a NaN gets ``floor`` and a
``nan_logprob`` flag. Values present are never floored: a full-vocabulary
log-probability of -30 is information. No
score position gives ``logprobs=None`` and a ``no_score`` flag: the caller
excludes the row and counts it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from judgecp.base.hookspecs import hookimpl
from judgecp.base.plugins import get_plugin_manager
from judgecp.base.records.schema import judge_output
from judgecp.base.scale import LikertScale

#: Default floor for a rating token missing from a top-k list: log(1e-5) = -11.51.
DEFAULT_FLOOR = math.log(1e-5)
#: Tokens searched after a ``score``/``rating`` keyword.
KEYWORD_WINDOW = 6
#: Non-alphanumeric tokens (``**``, ``:``, spaces) skipped after ``Score:``.
MAX_SKIPPED_AFTER_ANCHOR = 4

SENTENCEPIECE_SPACE = "\u2581"  # ▁
BYTE_LEVEL_SPACE = "\u0120"  # Ġ
BYTE_LEVEL_NEWLINE = "\u010a"  # Ċ

FLAG_NO_SCORE = "no_score"
FLAG_MISSING_TOKEN = "missing_token"
FLAG_NAN = "nan_logprob"
FLAG_KEYWORD = "keyword_anchor"
FLAG_BACKWARD = "backward_scan"
FLAG_NO_LETTER = "no_answer_letter"

_ANCHOR = re.compile(r"Score:")
_KEYWORD = re.compile(r"score|rating", re.IGNORECASE)
_SP_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@dataclass(frozen=True)
class ScoreExtraction:
    """Where the score is and what the judge's distribution over the labels was there."""

    logprobs: dict[str, float] | None
    position: int | None
    stage: str | None  # "anchored" | "keyword" | "backward" | None
    parsed: int | None  # the label the judge generated at the position
    flags: tuple[str, ...] = ()
    floored: tuple[str, ...] = field(default=())  # labels that got the floor

    @property
    def ok(self) -> bool:
        return self.logprobs is not None


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's byte-to-unicode table used by byte-level BPE tokenizers."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    codes = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, codes, strict=True)}


def detect_style(tokens: Sequence[str]) -> str:
    """``"sentencepiece"``, ``"bytelevel"`` or ``"plain"`` from the markers the tokens carry."""
    joined = "".join(tokens)
    if SENTENCEPIECE_SPACE in joined:
        return "sentencepiece"
    if BYTE_LEVEL_SPACE in joined or BYTE_LEVEL_NEWLINE in joined:
        return "bytelevel"
    return "plain"


def token_text(token: str, style: str) -> str:
    """The text a raw token stands for."""
    if style == "sentencepiece":
        token = _SP_BYTE.sub(lambda m: chr(int(m.group(1), 16)), token)
        return token.replace(SENTENCEPIECE_SPACE, " ")
    if style == "bytelevel":
        decoder = _byte_decoder()
        if all(ch in decoder for ch in token):
            return bytes(decoder[ch] for ch in token).decode("utf-8", errors="replace")
        return token
    return token


def normalize_token(token: str) -> str:
    """Strip whitespace and the ``▁``/``Ġ``/``Ċ`` markers: ``"Ġ4"``, ``"▁4"``, ``" 4"`` -> ``"4"``."""
    return token.strip().strip(SENTENCEPIECE_SPACE + BYTE_LEVEL_SPACE + BYTE_LEVEL_NEWLINE).strip()


def _logsumexp(values: list[float]) -> float:
    m = max(values)
    if m == -math.inf:
        return -math.inf
    return m + math.log(sum(math.exp(v - m) for v in values))


def label_logprobs(
    candidates: Mapping[str, float], scale: LikertScale, floor: float
) -> tuple[dict[str, float], tuple[str, ...], tuple[str, ...]]:
    """log P(label) for every label from the candidate tokens at one position.

    Returns the logprobs, the flags raised, and the labels that got the floor.
    """
    variants: dict[str, list[float]] = {label: [] for label in scale.tokens}
    nan_labels: set[str] = set()
    for tok, lp in candidates.items():
        label = normalize_token(tok)
        if label in variants:
            value = float(lp)
            if math.isnan(value):
                nan_labels.add(label)
            elif value > -math.inf:
                variants[label].append(value)
    out: dict[str, float] = {}
    flags: list[str] = []
    floored: list[str] = []
    for label, values in variants.items():
        if values:
            out[label] = _logsumexp(values)
            continue
        out[label] = floor
        floored.append(label)
        flag = FLAG_NAN if label in nan_labels else FLAG_MISSING_TOKEN
        if flag not in flags:
            flags.append(flag)
    return out, tuple(flags), tuple(floored)


def _is_rating(i: int, norm: list[str], texts: list[str], labels: set[str]) -> bool:
    if norm[i] not in labels:
        return False
    # Part of a longer number? Look at the text glued to the label on either side.
    before = "".join(texts[max(0, i - 2) : i])
    own = texts[i]
    if not own[:1].isspace() and re.search(r"\d[.,]?$", before):
        return False
    after = "".join(texts[i + 1 : i + 3])
    if not own[-1:].isspace() and re.match(r"[.,]?\d", after):
        return False
    return True


def find_score_position(
    tokens: Sequence[str], scale: LikertScale, window: int = KEYWORD_WINDOW
) -> tuple[int | None, str | None]:
    """Index of the score token and the stage that found it (``None, None`` if none)."""
    style = detect_style(tokens)
    texts = [token_text(t, style) for t in tokens]
    norm = [normalize_token(t) for t in texts]
    labels = set(scale.tokens)
    starts = []
    pos = 0
    for t in texts:
        starts.append(pos)
        pos += len(t)
    text = "".join(texts)

    def token_at(offset: int) -> int:
        # first token that starts at or after offset
        lo, hi = 0, len(starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if starts[mid] < offset:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # 1. anchored
    for match in reversed(list(_ANCHOR.finditer(text))):
        i = token_at(match.end())
        # A token straddling the anchor end (e.g. ":4") is checked from its own start.
        if i > 0 and starts[i - 1] < match.end() < starts[i - 1] + len(texts[i - 1]):
            i -= 1
        skipped = 0
        while i < len(tokens) and skipped <= MAX_SKIPPED_AFTER_ANCHOR:
            if _is_rating(i, norm, texts, labels):
                return i, "anchored"
            if norm[i] and any(ch.isalnum() for ch in norm[i]):
                break
            skipped += 1
            i += 1
    # 2. keyword within a window
    for match in reversed(list(_KEYWORD.finditer(text))):
        first = token_at(match.end())
        for i in range(first, min(first + window, len(tokens))):
            if _is_rating(i, norm, texts, labels):
                return i, "keyword"
    # 3. backward scan
    for i in range(len(tokens) - 1, -1, -1):
        if _is_rating(i, norm, texts, labels):
            return i, "backward"
    return None, None


def extract(
    tokens: Sequence[str],
    position_logprobs: Sequence[Mapping[str, float]],
    *,
    scale: LikertScale | None = None,
    floor: float = DEFAULT_FLOOR,
    window: int = KEYWORD_WINDOW,
) -> ScoreExtraction:
    """The built-in three-stage extractor (see the module docstring)."""
    scale = scale or LikertScale()
    if len(position_logprobs) != len(tokens):
        raise ValueError(
            f"{len(tokens)} tokens but {len(position_logprobs)} per-position logprob entries"
        )
    position, stage = find_score_position(tokens, scale, window)
    if position is None:
        return ScoreExtraction(None, None, None, None, (FLAG_NO_SCORE,))
    logprobs, flags, floored = label_logprobs(position_logprobs[position], scale, floor)
    stage_flag = {"keyword": (FLAG_KEYWORD,), "backward": (FLAG_BACKWARD,)}.get(stage or "", ())
    parsed = int(normalize_token(token_text(tokens[position], detect_style(tokens))))
    return ScoreExtraction(logprobs, position, stage, parsed, stage_flag + flags, floored)


def label_token_ids(vocab: Mapping[str, int], labels: Sequence[str]) -> dict[str, int]:
    """Every vocabulary token that spells one of ``labels`` (``"4"``, ``"▁4"``, ``"Ġ4"``, ``<0x34>``): token -> id.

    ``vocab`` is a tokenizer's ``get_vocab()``; the labels are the scale's
    tokens (``"1"``..``"5"``) or answer letters. Pure Python, so both
    harness adapters share it without the core importing a tokenizer library.
    """
    style = detect_style(list(vocab))
    wanted = set(labels)
    return {
        tok: int(idx) for tok, idx in vocab.items()
        if normalize_token(tok) in wanted or normalize_token(token_text(tok, style)) in wanted
    }


def token_letter(token: str) -> str | None:
    """The single capital letter a raw token spells (``"B"``, ``"▁B"``, ``"ĠB"``, ``<0x42>``), else ``None``."""
    match = _SP_BYTE.fullmatch(token)
    text = chr(int(match.group(1), 16)) if match else normalize_token(token)
    return text if len(text) == 1 and "A" <= text <= "Z" else None


@dataclass(frozen=True)
class LetterExtraction:
    """The answer letter a judge generated and log P(letter) for every letter at that position."""

    logprobs: dict[str, float] | None
    position: int | None
    answer: str | None
    flags: tuple[str, ...] = ()


def extract_letter(
    tokens: Sequence[str],
    position_logprobs: Sequence[Mapping[str, float]],
    letters: Sequence[str],
    *,
    floor: float = DEFAULT_FLOOR,
) -> LetterExtraction:
    """Read a letter answer (a pairwise verdict, a multiple-choice option) from generated tokens.

    The answer position is the first generated token that is one of
    ``letters``. There, log P(letter) combines the letter's token variants by
    log-sum-exp; a letter absent from the candidates (a top-k list) gets
    ``floor`` and the flag ``missing_token``. No letter generated gives
    ``logprobs=None`` and the flag ``no_answer_letter``.
    """
    wanted = [str(x) for x in letters]
    position = next((i for i, tok in enumerate(tokens) if token_letter(str(tok)) in wanted), None)
    if position is None:
        return LetterExtraction(None, None, None, (FLAG_NO_LETTER,))
    variants: dict[str, list[float]] = {x: [] for x in wanted}
    for tok, lp in position_logprobs[position].items():
        letter = token_letter(str(tok))
        if letter in variants and lp is not None and not math.isnan(float(lp)):
            variants[letter].append(float(lp))
    logprobs: dict[str, float] = {}
    flags: list[str] = []
    for letter, values in variants.items():
        finite = [v for v in values if v > -math.inf]
        if not finite:
            logprobs[letter] = floor
            if FLAG_MISSING_TOKEN not in flags:
                flags.append(FLAG_MISSING_TOKEN)
            continue
        logprobs[letter] = _logsumexp(finite)
    return LetterExtraction(logprobs, position, token_letter(str(tokens[position])), tuple(flags))


def openai_logprob_positions(logprobs: object) -> tuple[list[str], list[dict[str, float]]] | None:
    """Tokens and per-position candidates from an OpenAI-style ``choices[i].logprobs``.

    The chat-completions wire format (OpenAI, vLLM, SGLang, LMDeploy servers):
    ``{"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}, ...]}, ...]}``.
    Each position's candidates are its top-k alternatives plus the sampled
    token; an entry without a logprob is left out (a rating label absent from a
    position then gets the floor and a ``missing_token`` flag in
    :func:`extract`). ``None`` when the response carries no logprobs at all.
    """
    if not isinstance(logprobs, Mapping) or not isinstance(logprobs.get("content"), list):
        return None
    tokens: list[str] = []
    positions: list[dict[str, float]] = []
    for entry in logprobs["content"]:
        token = str(entry.get("token", ""))
        candidates: dict[str, float] = {}
        for alt in entry.get("top_logprobs") or []:
            if alt.get("logprob") is not None:
                candidates[str(alt.get("token", ""))] = float(alt["logprob"])
        if entry.get("logprob") is not None:
            candidates.setdefault(token, float(entry["logprob"]))
        tokens.append(token)
        positions.append(candidates)
    return tokens, positions


def extract_score(
    tokens: Sequence[str],
    position_logprobs: Sequence[Mapping[str, float]],
    *,
    scale: LikertScale | None = None,
    floor: float = DEFAULT_FLOOR,
) -> ScoreExtraction:
    """Run the ``extract_score_logprobs`` hook (plugins first, built-in last)."""

    result = get_plugin_manager().hook.extract_score_logprobs(
        tokens=list(tokens),
        position_logprobs=list(position_logprobs),
        scale=scale or LikertScale(),
        floor=floor,
    )
    return result  # type: ignore[no-any-return]


@hookimpl(trylast=True)
def extract_score_logprobs(
    tokens: Sequence[str],
    position_logprobs: Sequence[Mapping[str, float]],
    scale: LikertScale,
    floor: float,
) -> ScoreExtraction:
    return extract(tokens, position_logprobs, scale=scale, floor=floor)


def score_output(
    tokens: Sequence[str],
    position_logprobs: Sequence[Mapping[str, float]],
    *,
    scale: LikertScale,
    floor: float = DEFAULT_FLOOR,
    flags: Sequence[str] = (),
    **meta: Any,
) -> dict[str, Any]:
    """The ``score`` judge output (:func:`judgecp.base.records.judge_output`) of one generation.

    Shared by every capture path of both harnesses: the extractor runs
    through the hook, the output keeps where it found the score
    (``meta.stage``, ``meta.position``) and ``meta`` given here (the
    generated ``text``, ...). No score found: ``logprobs`` null and the
    ``no_score`` flag (the core counts the record).
    """
    result = extract_score(list(tokens), list(position_logprobs), scale=scale, floor=floor)
    return judge_output("score", logprobs=result.logprobs, prediction=result.parsed, flags=[*flags, *result.flags],
                        stage=result.stage, position=result.position, n_tokens=len(tokens), **meta)


def letter_output(
    shape: Literal["pair", "choice"],
    tokens: Sequence[str],
    position_logprobs: Sequence[Mapping[str, float]],
    letters: Sequence[str],
    *,
    floor: float = DEFAULT_FLOOR,
    flags: Sequence[str] = (),
    **meta: Any,
) -> dict[str, Any]:
    """The ``pair`` or ``choice`` judge output of one generation (the first generated letter)."""
    result = extract_letter(tokens, position_logprobs, letters, floor=floor)
    return judge_output(shape, logprobs=result.logprobs, prediction=result.answer, flags=[*flags, *result.flags],
                        stage="first_letter" if result.position is not None else None, position=result.position,
                        n_tokens=len(tokens), letters=list(letters), **meta)
