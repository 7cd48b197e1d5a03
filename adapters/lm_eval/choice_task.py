"""Multiple-choice tasks scored over option letters: conformal option sets, and PARC's reliability.

A benchmark's ``utils.py`` turns its rows into documents with
:func:`choice_document`: the question, the option texts (lettered A, B, ...
in display order; items may have any number of options), the correct
letters, and the images (``image_refs``: local paths, or references into a
registered hub table, :mod:`judgecp.data.images`). Each document
is one ``multiple_choice`` request set over its letters, which the judgecp
HF models score in one forward pass; the record keeps every option letter's
log-likelihood, the answer key, and the model's answer (the highest).

* :class:`MultipleChoiceTask`: split-conformal prediction sets over the
  options, per method and per category (the core's multiple-choice study);
* :class:`PARCTask`: the same ``choice`` records plus ``source_id`` and
  ``variation`` (and the model as ``judge``): PARC's reliability.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from judgecp.adapters.lm_eval import model_name
from judgecp.adapters.lm_eval.task import JudgeReportTask
from judgecp.base.exclusions import Exclusions
from judgecp.base.records import choice_record, likeliest
from judgecp.data import datasources, images
from judgecp.data.choice import LETTERS, variation_name
from judgecp.data.prompts import choice_seed_prompt
from judgecp.kinds.choice.parc_study import parc_metrics
from judgecp.kinds.choice.study import mcq_metrics
from judgecp.kinds.metrics import Metric
from judgecp.stats.parc import variation_order

logger = logging.getLogger("lm_eval.judgecp")


def letters_for(options: Sequence[Any]) -> list[str]:
    return list(LETTERS[: min(len(options), len(LETTERS))])


def letter_of_index(answer: Any) -> list[str]:
    """An answer key given as an option index ("0", 1, ...) as its letter.

    A key past the letters or not an index stays as it is; an empty key gives
    no answer. Either way the core counts an answer that names no option.
    """
    if answer is None or str(answer).strip() == "":
        return []
    try:
        index = int(str(answer).strip())
    except ValueError:
        return [str(answer).strip()]
    return [LETTERS[index]] if 0 <= index < len(LETTERS) else [str(answer).strip()]


def choice_document(
    doc_id: str,
    *,
    question: str,
    options: Sequence[Any],
    correct: Sequence[str],
    image_refs: Sequence[str],
    dataset: str | None,
    category: str | None = None,
    exclude: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """One document; every value a string, a list of strings or None (the samples file keeps it)."""
    texts = ["" if o is None else str(o) for o in options]
    return {
        "id": doc_id,
        "question": question,
        "options": texts,
        "letters": letters_for(texts),
        "correct": [str(c) for c in correct],
        "image_refs": [str(r) for r in image_refs],
        "dataset": dataset,
        "category": category,
        "exclude": exclude,
        **{k: None if v is None else str(v) for k, v in fields.items()},
    }


def left_out_document(doc_id: str, reason: str, *, dataset: str | None, **fields: Any) -> dict[str, Any]:
    """A source item the task cannot judge (an open question, a malformed line, ...).

    It stays in the task as a document with ``exclude`` set, as the Likert
    tasks keep malformed lines: its record is counted in ``excluded`` and kept
    in the samples file (which alone recomputes every metric). Its prompt is
    a short placeholder with a blank image (:func:`judgecp.data.images.load_images`).
    """
    return choice_document(doc_id, question="", options=[], correct=[], image_refs=[], dataset=dataset,
                           exclude=reason, **fields)


def documents_dataset(docs: list[dict[str, Any]], *, what: str) -> Any:
    """The task's ``DatasetDict``; the documents that cannot be judged are counted in the log."""
    skipped = Exclusions()
    for doc in docs:
        if doc.get("exclude"):
            skipped.add(str(doc["exclude"]), doc["id"])
    for entry in skipped.to_json():
        logger.warning(
            "judgecp: %s: %d item(s) cannot be judged (counted in excluded): %s", what, entry["count"], entry["reason"]
        )
    return datasources.as_dataset_dict(docs, what=what)


def indexed_image_questions(
    name: str, table: Any, key: str, *, options: str, category: str | None = None, context: str | None = None,
) -> list[dict[str, Any]]:
    """One document per row of a hub table of single-image questions whose answer is an option index.

    AI2D and ScienceQA-IMG share this layout (``question``, an options
    column, ``answer`` as an index, ``image``); the images stay in the table
    (registered under ``key``) until a document is judged.
    """
    images.register_table(key, table, ["image"])
    docs = []
    for i, row in enumerate(table.select_columns([c for c in table.column_names if c != "image"])):
        extra = {"context": (row.get(context) or "").strip() or None} if context else {}
        docs.append(choice_document(
            f"{name}/{i:05d}", question=row.get("question") or "", options=row.get(options) or [],
            correct=letter_of_index(row.get("answer")), image_refs=[images.table_ref(key, i, "image")], dataset=name,
            category=row.get(category) if category else None, **extra,
        ))
    return docs


def placeholder_prompt(doc: Mapping[str, Any]) -> str | None:
    """The short prompt of a document that cannot be judged (with its blank image), or ``None`` for a real one."""
    return f"<image>\n(left out: {doc['exclude']})" if doc.get("exclude") else None


def seed_prompt(doc: Mapping[str, Any], domain: str) -> str:
    """The user turn: the images, the seed's instruction, the question (with its context) and the options."""
    placeholder = placeholder_prompt(doc)
    if placeholder is not None:
        return placeholder
    placeholders = "<image>\n" * max(len(doc.get("image_refs") or ()), 1)
    return placeholders + choice_seed_prompt(doc["question"], doc["options"], doc["letters"], domain=domain,
                                             context=doc.get("context"))


# -- lm-eval hooks shared by the multiple-choice task folders ---------------------------


def doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    """The option letters (one placeholder letter for an item without options: the core counts it)."""
    return list(doc["letters"]) or ["A"]


def doc_to_target(doc: Mapping[str, Any]) -> str:
    return ",".join(doc.get("correct") or [])


class MultipleChoiceTask(JudgeReportTask):
    """A multiple-choice benchmark evaluated with split-conformal option sets over the whole task."""

    KIND = "mcq"

    def categories(self) -> list[str]:
        """The documents' categories (per-category metrics), sorted; none when the dataset has none."""
        docs = self.task_docs
        return sorted(
            {str(c) for c, e in zip(docs["category"], docs["exclude"], strict=True) if c not in (None, "") and not e}
        )

    def metrics(self) -> list[Metric]:
        return mcq_metrics(self.protocol, self.categories())

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        letters = list(doc["letters"])
        logprobs = {k: v for k, v in self.choice_logprobs(doc_to_choice(doc), results).items() if k in letters}
        return choice_record(
            doc["id"], options=letters, label=doc.get("correct") or [], logprobs=logprobs,
            prediction=likeliest(logprobs), exclude=self.document_exclusion(doc), meta=self.meta(doc) or None,
            **self.record_fields(doc),
        )

    def record_fields(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        return {"task": doc.get("dataset"), "group": doc.get("category")}


class PARCTask(MultipleChoiceTask):
    """PARC: accuracy, certainty, consistency and reliability across prompt variations, calibrated.

    The records name the model (``judge``) from ``--metadata '{"model": ...}'``
    or the judgecp model's ``pretrained`` name (``model`` for a stock model).
    """

    KIND = "parc"

    def metrics(self) -> list[Metric]:
        docs = self.task_docs
        names = {
            variation_name(str(v), f, Exclusions(), "")
            for v, f, e in zip(docs["variation"], docs["family"], docs["exclude"], strict=True)
            if v and not e
        }
        variations, families = variation_order(names)
        datasets = sorted({str(d) for d, e in zip(docs["dataset"], docs["exclude"], strict=True) if d and not e})
        return parc_metrics(variations, families, datasets)

    def record_fields(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        model = (self.config.metadata or {}).get("model")
        return {"task": doc.get("dataset"), "source_id": doc.get("source_id"), "variation": doc.get("variation"),
                "family": doc.get("family") or None, "judge": str(model) if model else model_name()}
