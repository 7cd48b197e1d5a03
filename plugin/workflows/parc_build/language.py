"""PARC's language variations: the A7.2 prompts, output checks and answer re-keying.

Reformulations keep the answer (``LR-I`` instruction, ``LR-C`` concise,
``LR-V`` verbose). Semantic changes ask for the opposite (``LS-N`` with
"not", ``LS-A`` with antonyms, ``LS-M`` "more" to "less"/"fewer"): the
originally wrong options become the correct ones (PARC section 2.1: "for
most questions the correct answers after negation are those that were
originally wrong"; with more than two options there are several correct
answers, which the scores merge). ``LS-M`` is built only for questions with
"more", "less" or "fewer" (MMBench has none in PARC's Table 2).

The prompts are the supplement's (A7.2) verbatim, stored as
``prompts/<variation>.txt``: the seed's text with the line breaks its
extraction lost put back (a space where two words were joined, a newline
before each ``Q:``/``A:`` example); ``tests/test_parc_build.py`` checks
them against the seed, character for character apart from white space.
``<Prompt to alter>`` is replaced by the question. ``prompts/clean.txt`` is
A7.4's question-rephrasing prompt (MMBench cleaning, steps 2-3).

Every rewriter output is cleaned (:func:`clean_output`: first line, ``A:``
prefix and surrounding quotes removed) and checked (:func:`check_output`);
an output that fails is left out and listed in the build's review file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from importlib import resources

LANGUAGE_REFORMULATIONS = ("LR-I", "LR-C", "LR-V")
LANGUAGE_SEMANTIC = ("LS-N", "LS-A", "LS-M")
LANGUAGE_VARIATIONS = LANGUAGE_REFORMULATIONS + LANGUAGE_SEMANTIC
PLACEHOLDERS = ("<Prompt to alter>", "<Prompt to Rephrase>")

#: Checks (reason names in the manifest and the review file).
CHECKS = ("rewrite_empty", "rewrite_unchanged", "question_mark_lost", "options_leaked", "not_a_question")

_MORE_LESS = re.compile(r"\b(more|less|fewer)\b", re.IGNORECASE)
_AUXILIARIES = ("is", "are", "was", "were", "am", "does", "do", "did", "can", "could", "will", "would", "should",
                "shall", "may", "might", "must", "has", "have", "had")
_AUX = re.compile(r"\b(" + "|".join(_AUXILIARIES) + r")\b(?!\s+not\b)", re.IGNORECASE)


def prompt_template(variation: str) -> str:
    """The A7.2 prompt of a language variation (``"clean"``: A7.4's question-rephrasing prompt)."""
    name = f"{variation}.txt"
    return (
        resources.files("judgecp.workflows.parc_build")
        .joinpath("prompts")
        .joinpath(name)
        .read_text(encoding="utf-8")
        .rstrip("\n")
    )


def prompt_digest(variation: str) -> str:
    return hashlib.sha256(prompt_template(variation).encode("utf-8")).hexdigest()


def fill(template: str, question: str) -> str:
    """The prompt for one question: the placeholder replaced (inner double quotes kept as they are)."""
    for placeholder in PLACEHOLDERS:
        if placeholder in template:
            return template.replace(placeholder, question.strip())
    raise ValueError("prompt template without a <Prompt to alter> placeholder")


def clean_output(text: str) -> str:
    """The rewritten question from a model's answer: its first non-blank line, without ``A:`` and quotes."""
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    if not lines:
        return ""
    out = lines[0]
    out = re.sub(r"^(A|Answer)\s*:\s*", "", out)
    # A model continuing the few-shot pattern: cut at the next example.
    out = re.split(r'"?\s*Q:\s*"', out)[0]
    # A chatty preamble before the quoted answer ('Here is the question: "..."').
    preamble = re.fullmatch(r'[^"“]*:\s*["“](.+)["”]\s*', out)
    if preamble is not None:
        out = preamble.group(1).strip()
    pairs = {'"': '"', "“": "”", "'": "'", "‘": "’"}
    while len(out) >= 2 and out[0] in pairs and out.endswith(pairs[out[0]]):
        out = out[1:-1].strip()
    if out[:1] in pairs and out.count(out[0]) == 1:
        out = out[1:].strip()
    if out[-1:] in ('"', "”") and out.count(out[-1]) == 1:
        out = out[:-1].strip()
    return out


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def options_leaked(original: str, rewritten: str, options: Mapping[str, str]) -> list[str]:
    """Letters of options whose text the rewrite contains but the original question did not."""
    before, after = f" {_norm(original)} ", f" {_norm(rewritten)} "
    leaked = []
    for letter, text in options.items():
        needle = _norm(str(text))
        if len(needle) >= 2 and f" {needle} " in after and f" {needle} " not in before:
            leaked.append(str(letter))
    if re.search(r"\([A-Z]\)|\b[A-Z]\.\s", rewritten) and not re.search(r"\([A-Z]\)|\b[A-Z]\.\s", original):
        leaked.append("lettered options")
    return leaked


def check_output(variation: str, original: str, rewritten: str, options: Mapping[str, str]) -> list[str]:
    """Reasons the rewrite cannot be used (empty list: it passes).

    * ``rewrite_empty``;
    * ``rewrite_unchanged``: the same question (case, spaces and punctuation
      aside) where a change is required: every variation but LR-I and LR-C,
      whose prompts allow keeping the original (and A7.4's cleaning);
    * ``question_mark_lost``: the original ends in "?" and the rewrite does
      not, for every variation but LR-I (an instruction);
    * ``options_leaked``: the rewrite names an option the original did not,
      or lists lettered options;
    * ``not_a_question``: A7.4's cleaning (``variation="clean"``) must ask (a "?").
    """
    if not rewritten.strip():
        return ["rewrite_empty"]
    reasons = []
    if variation not in ("LR-I", "LR-C", "clean") and _norm(original) == _norm(rewritten):
        reasons.append("rewrite_unchanged")
    if variation == "clean":
        if "?" not in rewritten:  # A7.4's own example ends in a quoted sentence after the "?"
            reasons.append("not_a_question")
    elif variation != "LR-I" and original.rstrip().endswith("?") and not rewritten.rstrip().endswith("?"):
        reasons.append("question_mark_lost")
    if options_leaked(original, rewritten, options):
        reasons.append("options_leaked")
    return reasons


def unchanged(original: str, rewritten: str) -> bool:
    return _norm(original) == _norm(rewritten)


def has_more_less(question: str) -> bool:
    """LS-M applies: the question says "more", "less" or "fewer"."""
    return bool(_MORE_LESS.search(question))


def rekey(variation: str, options: Sequence[str], correct: Sequence[str]) -> list[str]:
    """The correct letters after a language variation: kept (LR), the originally wrong ones (LS)."""
    if variation in LANGUAGE_REFORMULATIONS:
        return list(correct)
    if variation in LANGUAGE_SEMANTIC:
        return [letter for letter in options if letter not in set(correct)]
    raise ValueError(f"not a language variation: {variation!r}")


def negate_by_rule(question: str) -> str | None:
    """LS-N without a language model: "not" after the first auxiliary verb, or None.

    "Which animal has longer fur?" -> "Which animal has not longer fur?"
    (PARC's Table 1 example). Used only when asked for (``ls_n_fallback``)
    and every record it makes is flagged ``ls_n_rule_fallback``.
    """
    match = _AUX.search(question)
    if match is None:
        return None
    return question[: match.end()] + " not" + question[match.end():]
