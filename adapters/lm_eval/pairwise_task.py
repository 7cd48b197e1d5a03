"""Pairwise judge tasks: each pair judged in both orders, scored over the tokens "A"/"B" (SCOPE).

A benchmark's ``utils.py`` turns its rows into :class:`Pair` objects (the
question turns, the two responses in the *original* order, the human
preference) and :func:`pair_documents` makes two lm-eval documents of each
pair: ``<pair_id>/fwd`` shows the original first response as "Assistant A",
``<pair_id>/rev`` swaps the two. Each document is one ``multiple_choice``
request set over ``A``/``B`` (the judgecp HF models read both logits in one
forward pass); its ``pair`` record keeps the log-likelihoods of ``A`` and
``B`` and the human label in the original order, and the task's metrics come
from the core's pairwise study over all records (BPE, SCOPE).

The prompt is MT-Bench's pairwise judge template (FastChat
``judge_prompts.jsonl``, ``pair-v2`` and ``pair-v2-multi-turn``) reduced to
answering with the letter only, as SCOPE (arXiv:2602.13110, appendix B.3.1)
describes: the request for an explanation and the tie verdict ``[[C]]`` are
removed, and the verdict is the bare letter (its first token is what is
scored): :mod:`judgecp.data.prompts`, the same words in both harnesses. The exact
text is in each task's README.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judgecp.adapters.lm_eval.task import JudgeReportTask
from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.base.records import likeliest, pair_record
from judgecp.data import datasources
from judgecp.data.prompts import PAIRWISE_SYSTEM_SINGLE_TURN, pairwise_user_turn
from judgecp.kinds.metrics import Metric
from judgecp.kinds.pairwise.study import pairwise_metrics

logger = logging.getLogger("lm_eval.judgecp")

#: The two choices, in the order ``doc_to_choice`` lists them.
LABELS = ("A", "B")

def conversation_turns(messages: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """``([user messages], [assistant answers])`` of an OpenAI-format conversation, turn by turn.

    A turn is a user message and the assistant message after it; a user
    message without an answer ends the conversation there.
    """
    questions: list[str] = []
    answers: list[str] = []
    pending: str | None = None
    for message in messages or ():
        role, content = message.get("role"), message.get("content")
        if role == "user":
            pending = "" if content is None else str(content)
        elif role == "assistant" and pending is not None:
            questions.append(pending)
            answers.append("" if content is None else str(content))
            pending = None
    return questions, answers


@dataclass
class Pair:
    """One human-judged pair in its original order (``first`` shown as "A" in the forward prompt)."""

    pair_id: str
    questions: list[str]
    first: list[str]
    second: list[str]
    #: Human preference in the original order: "A", "B", or the raw value (the core counts it).
    label: str | None
    system_prompt: str = PAIRWISE_SYSTEM_SINGLE_TURN
    fields: dict[str, Any] = field(default_factory=dict)
    #: Why the source row cannot be judged (a tie vote, a malformed line, ...), or None.
    exclude: str | None = None


def left_out(pair_id: str, reason: str, label: Any = None, **fields: Any) -> Pair:
    """A source row the task cannot judge: one document that keeps the row and its reason.

    Like the Likert tasks' malformed lines, the row stays in the task (its
    record is counted in ``excluded`` and kept in the samples file, so the
    samples file alone recomputes every metric); its prompt is a short
    placeholder, so it costs the model next to nothing.
    """
    return Pair(pair_id, [], [], [], None if label is None else str(label), "", fields, exclude=reason)


def pair_documents(pair: Pair) -> list[dict[str, Any]]:
    """The forward and the reversed document of a pair (one placeholder document for a left-out row)."""
    fields = {k: None if v is None else str(v) for k, v in pair.fields.items()}
    shown = [("fwd", [], [])] if pair.exclude else [("fwd", pair.first, pair.second), ("rev", pair.second, pair.first)]
    return [{
        "id": f"{pair.pair_id}/{order}",
        "pair_id": pair.pair_id,
        "order": order,
        "label": pair.label,
        "system_prompt": "" if pair.exclude else pair.system_prompt + "\n\n",
        "questions": [] if pair.exclude else list(pair.questions),
        "answers_a": list(shown_a),
        "answers_b": list(shown_b),
        "exclude": pair.exclude or None,
        **fields,
    } for order, shown_a, shown_b in shown]


def winner_label(winner: Any) -> str | None:
    """MT-Bench / Chatbot Arena ``winner`` -> the original-order label ("A", "B"; others stay raw)."""
    if winner is None:
        return None
    text = str(winner).strip()
    return {"model_a": "A", "model_b": "B"}.get(text.lower(), text)


def is_tie(winner: Any) -> bool:
    return winner is not None and str(winner).strip().lower().startswith("tie")


def pairwise_dataset(pairs: Sequence[Pair], *, what: str, max_pairs: Any = None, data_seed: Any = 0) -> Any:
    """The task's ``DatasetDict``: two documents per pair, one per left-out row (:func:`left_out`).

    ``max_pairs`` (``--metadata``) keeps a random sample of that many usable
    pairs (seed ``data_seed``), as SCOPE evaluates 2,000 non-tied pairs per
    dataset; the left-out rows are then not part of the task (the log says
    how many).
    """
    usable = [p for p in pairs if not p.exclude]
    skipped = Exclusions()
    for p in pairs:
        if p.exclude:
            skipped.add(p.exclude, p.pair_id)
    chosen = list(pairs)
    if max_pairs not in (None, "", 0):
        try:
            k = int(max_pairs)
            seed = int(data_seed)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"metadata max_pairs and data_seed must be integers, got {max_pairs!r}, {data_seed!r}"
            ) from exc
        if k < 1:
            raise InputError(f"metadata max_pairs must be positive, got {max_pairs!r}")
        keep = sorted(random.Random(seed).sample(range(len(usable)), k)) if k < len(usable) else range(len(usable))
        chosen = [usable[i] for i in keep]
        logger.warning("judgecp: %s: a sample of %d of %d usable pairs (max_pairs); %d row(s) not eligible: %s",
                       what, len(chosen), len(usable), skipped.total,
                       ", ".join(f"{e['reason']} {e['count']}" for e in skipped.to_json()) or "none")
    else:
        for entry in skipped.to_json():
            logger.warning("judgecp: %s: %d row(s) cannot be judged (counted in excluded): %s",
                           what, entry["count"], entry["reason"])
    docs = [doc for pair in chosen for doc in pair_documents(pair)]
    return datasources.as_dataset_dict(docs, what=what)


# -- lm-eval hooks shared by the pairwise task folders ---------------------------------


def doc_to_text(doc: Mapping[str, Any]) -> str:
    if doc.get("exclude"):
        return f"(left out: {doc['exclude']})"
    return pairwise_user_turn(doc["questions"], doc["answers_a"], doc["answers_b"])


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The letter the human preference is in this document's order ("" when there is none)."""
    label = doc.get("label")
    if label not in LABELS:
        return ""
    if doc.get("order") == "rev":
        return "B" if label == "A" else "A"
    return str(label)


class PairwiseJudgeTask(JudgeReportTask):
    """A pairwise benchmark judged in both orders; SCOPE risk control and BPE over the whole task."""

    KIND = "pairwise"

    def metrics(self) -> list[Metric]:
        if [str(c).strip() for c in self.doc_to_choice(self.task_docs[0])] != list(LABELS):
            raise InputError(f"task {self.config.task}: doc_to_choice must be {list(LABELS)}")
        return pairwise_metrics(self.protocol)

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        logprobs = self.choice_logprobs(LABELS, results)
        return pair_record(
            doc["id"], pair_id=doc["pair_id"], order=doc["order"], label=doc.get("label"), logprobs=logprobs,
            prediction=likeliest(logprobs), exclude=self.document_exclusion(doc), meta=self.meta(doc),
        )
