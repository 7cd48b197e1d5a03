"""Multiple-choice tasks scored over option letters: conformal option sets, and PARC's reliability.

A benchmark's ``utils.py`` turns its rows into documents with
:func:`choice_document`: the question, the option texts (lettered A, B, ...
in display order; items may have any number of options), the correct
letters, and the images (``image_refs``: local paths, or references into a
registered hub table, :mod:`judgecp.adapters.lm_eval.images`). Each document
is one ``multiple_choice`` request set over its letters, which the judgecp
HF models score in one forward pass; the record keeps every option letter's
log-likelihood, the answer key, and the model's answer (the highest).

* :class:`MultipleChoiceTask`: split-conformal prediction sets over the
  options (:func:`judgecp.mcq.evaluate_mcq`), per method and per category;
* :class:`PARCTask`: the same records plus ``source_id``/``variation``,
  evaluated by :func:`judgecp.parc.evaluate_parc`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from judgecp.adapters.lm_eval import data_sources, images
from judgecp.adapters.lm_eval.mcq_metrics import (
    MCQSettings,
    PARCSettings,
    mcq_aggregations,
    parc_aggregations,
)
from judgecp.adapters.lm_eval.metrics import Metric
from judgecp.adapters.lm_eval.records import choice_record, model_name
from judgecp.adapters.lm_eval.task import JudgeReportTask
from judgecp.exclusions import Exclusions

logger = logging.getLogger("lm_eval.judgecp")

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: PARC's variations in the paper's order (Table 1); others follow, sorted.
PARC_VARIATIONS = ("O", "LR-I", "LR-C", "LR-V", "LS-N", "LS-A", "LS-M", "VR-B", "VR-L", "VR-R", "VS-S", "VS-E")


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


def option_lines(options: Sequence[Any]) -> str:
    """``A. first option`` lines, one per option."""
    return "\n".join(f"{letter}. {text}" for letter, text in zip(LETTERS, options, strict=False))


def letter_list(letters: Sequence[str]) -> str:
    """``A, B, C, D`` (the seed prompt's "(A, B, C, D, E)" list)."""
    return ", ".join(letters)


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
    a short placeholder with a blank image (:func:`judgecp.adapters.lm_eval.images.load_images`).
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
        logger.warning("judgecp: %s: %d item(s) cannot be judged (counted in excluded): %s", what, entry["count"], entry["reason"])
    return data_sources.as_dataset_dict(docs, what=what)


#: The zero-shot instruction of the conformal VLM benchmark seed (its Table 5, ScienceQA), with
#: the domain and the item's letters filled in (its appendix A: "identical phrasing, adjusted only
#: for domain specificity and option letter range").
SEED_INSTRUCTION = (
    "I will show you an image along with a multiple-choice {domain} question. Please select the correct answer "
    "from the given options. Only respond with the option letter ({letters})."
)


def placeholder_prompt(doc: Mapping[str, Any]) -> str | None:
    """The short prompt of a document that cannot be judged (with its blank image), or ``None`` for a real one."""
    return f"<image>\n(left out: {doc['exclude']})" if doc.get("exclude") else None


def seed_prompt(doc: Mapping[str, Any], domain: str) -> str:
    """The user turn: the images, the seed's instruction, the question (with its context) and the options."""
    placeholder = placeholder_prompt(doc)
    if placeholder is not None:
        return placeholder
    placeholders = "<image>\n" * max(len(doc.get("image_refs") or ()), 1)
    context = f"Context: {doc['context']}\n" if doc.get("context") else ""
    instruction = SEED_INSTRUCTION.format(domain=domain, letters=letter_list(doc["letters"]))
    return f"{placeholders}{instruction}\n{context}{doc['question']}\n{option_lines(doc['options'])}"


# -- lm-eval hooks shared by the multiple-choice task folders ---------------------------


def doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    """The option letters (one placeholder letter for an item without options: the core counts it)."""
    return list(doc["letters"]) or ["A"]


def doc_to_target(doc: Mapping[str, Any]) -> str:
    return ",".join(doc.get("correct") or [])


def doc_to_image(doc: Mapping[str, Any]) -> list[Any]:
    return images.load_images(doc)


class MultipleChoiceTask(JudgeReportTask):
    """A multiple-choice benchmark evaluated with split-conformal option sets over the whole task."""

    def read_settings(self, metadata: Mapping[str, Any]) -> MCQSettings:
        return MCQSettings.from_metadata(metadata)

    def categories(self) -> list[str]:
        """The documents' categories (per-category metrics), sorted; none when the dataset has none."""
        docs = self.task_docs
        return sorted({str(c) for c, e in zip(docs["category"], docs["exclude"], strict=True) if c not in (None, "") and not e})

    def build_metrics(self) -> list[tuple[Metric, Callable[[Sequence[Any]], float]]]:
        return mcq_aggregations(self.settings, str(self.config.task), self.categories())

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        logprobs = self.choice_logprobs(doc_to_choice(doc), results)
        letters = list(doc["letters"])
        logprobs = {k: v for k, v in logprobs.items() if k in letters}
        return choice_record(
            doc["id"], letters, doc.get("correct") or [], logprobs, self.argmax_label(logprobs),
            exclude=self.document_exclusion(doc), **self.record_fields(doc),
        )

    def record_fields(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        return {"dataset": doc.get("dataset"), "category": doc.get("category")}


def core_variation(variation: str, family: str | None) -> str:
    """The variation name the core reads its family from.

    The core takes a variation's family from its name (``LR-I`` -> LR). A
    variation named otherwise but given a ``family`` (docs/parc_format.md)
    becomes ``<family>-<name>`` (``VR-blurry``); without one it stays as it
    is and the core counts it as ``variation_unknown``.
    """
    from judgecp.errors import InputError
    from judgecp.parc import FAMILIES, family_of

    if variation == "O":
        return variation
    wanted = (family or "").strip().upper() or None
    try:
        own = family_of(variation)
    except InputError:
        own = None
    if own is not None and (wanted is None or own == wanted):
        return variation
    if wanted in FAMILIES:
        return f"{wanted}-{variation}"
    return variation


class PARCTask(MultipleChoiceTask):
    """PARC: accuracy, certainty, consistency and reliability across prompt variations, calibrated."""

    def read_settings(self, metadata: Mapping[str, Any]) -> PARCSettings:  # type: ignore[override]
        return PARCSettings.from_metadata(metadata)

    def build_metrics(self) -> list[tuple[Metric, Callable[[Sequence[Any]], float]]]:
        from judgecp.errors import InputError
        from judgecp.parc import family_of

        docs = self.task_docs
        names = {core_variation(str(v), f) for v, f, e in zip(docs["variation"], docs["family"], docs["exclude"], strict=True)
                 if v and not e}
        variations = [v for v in PARC_VARIATIONS if v in names] + sorted(names - set(PARC_VARIATIONS))
        families = []
        for v in variations:
            try:
                f = family_of(v)
            except InputError:
                continue
            if f != "O" and f not in families:
                families.append(f)
        datasets = sorted({str(d) for d, e in zip(docs["dataset"], docs["exclude"], strict=True) if d and not e})
        return parc_aggregations(self.settings, str(self.config.task), variations, sorted(families), datasets)

    def record_fields(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        fields = {
            "dataset": doc.get("dataset"),
            "source_id": doc.get("source_id"),
            "variation": core_variation(str(doc.get("variation")), doc.get("family")),
            "model": self.settings.model or model_name(),
        }
        if doc.get("family"):
            fields["family"] = doc["family"]
        return fields
