"""Pairwise image preference under every prompt of a prompt set: the harness side of prompt ensembles.

A task of this family (``tasks/image_pref_ensemble_cp``) makes one lm-eval
document per (item, prompt): the item is a caption and two candidate images
with the human preference (:class:`judgecp.data.ensemble.sources.PreferenceItem`,
from HPSv2's HPD v2 or MJ-Bench), the prompt one entry of a prompt set
(:mod:`judgecp.data.ensemble.prompts`: persona x template x criteria, with the
candidates' order flipped and the answer glyphs changed). The document shows
the two images in the prompt's ``order`` and is one ``multiple_choice``
request set over the prompt's two glyphs (``A``/``B`` or ``I``/``II``), which
the judgecp HF models score in one forward pass.

Each document's record is a ``pair`` record (``judgecp.record/1``):
``logprobs`` over the displayed glyphs, ``prompt`` the prompt id,
``meta.item`` the item, ``meta.answer_key`` which original candidate each
glyph names, ``label`` the human preference in the original order,
``pair_id`` the item and ``order`` ``fwd``/``rev`` as the prompt shows the
candidates. :func:`judgecp.data.ensemble.records.read_ensemble_records` reads them
as they are (``judgecp evaluate --kind ensemble samples_<task>_<date>.jsonl``),
so the ensemble is fitted and applied post hoc on any validation set.

Inside lm-eval the task also reports the ensemble study over all its records
(:func:`judgecp.kinds.ensemble.evaluate.ensemble_report`): per method (``uniform``,
``bpe`` and, with an ``embeddings`` file, ``mixture``) ``ece``, ``mce``,
``auprc``, ``nll``, ``accuracy`` (each with ``_stderr``: the std over seeds)
and the BY selection's ``fdp`` and ``selected``; plus ``n_items``,
``n_prompts``, ``excluded``. Settings come from ``--metadata`` (:data:`PROMPT_SETTINGS`
and :data:`judgecp.kinds.ensemble.study.STUDY_SETTINGS`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from judgecp.adapters.lm_eval import model_name
from judgecp.adapters.lm_eval.metrics import by_id, counted
from judgecp.adapters.lm_eval.task import JudgeReportTask
from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.data import datasources
from judgecp.data.ensemble.prompts import JudgePrompt
from judgecp.data.ensemble.sources import PreferenceItem
from judgecp.kinds.ensemble.study import (
    displayed,
    ensemble_metrics,
    sample_items,
    select_prompts,
    study_record,
    study_report,
    study_settings,
    undefined_study_report,
)
from judgecp.kinds.metrics import Metric

logger = logging.getLogger("lm_eval.judgecp")

#: Image placeholder of lm-eval's multimodal models.
IMAGE_TOKEN = "<image>"
#: ``--metadata`` keys of the prompt choice (besides the study's, :data:`judgecp.kinds.ensemble.study.STUDY_SETTINGS`,
#: and the data's: ``data_dir``, ``max_items``, ``data_seed``, ``split``) and their defaults.
PROMPT_SETTINGS: dict[str, Any] = {"prompt_set": None, "prompts": None, "prompt_seed": 0}


def item_documents(
    item: PreferenceItem, prompts: Sequence[JudgePrompt], *, dataset: str, image_refs: Sequence[str]
) -> list[dict[str, Any]]:
    """One document per prompt (every value a string, a list of strings or None).

    ``image_refs`` are the item's two images in stored order (local paths or
    :func:`judgecp.data.images.table_ref` references); each
    document lists them in the prompt's displayed order.
    """
    docs = []
    for prompt in prompts:
        shown, order, _ = displayed(prompt, item.preferred)
        docs.append({
            "id": f"{item.id}/{prompt.id}", "item": item.id, "prompt_id": prompt.id,
            "text": prompt.render(item.caption, (IMAGE_TOKEN, IMAGE_TOKEN)), "caption": item.caption,
            "image_refs": [str(image_refs[k]) for k in shown], "glyphs": list(prompt.glyphs),
            "answer_key": json.dumps(prompt.answer_key), "order": order, "label": item.preferred,
            "dataset": dataset, "exclude": None,
        })
    return docs


def ensemble_dataset(
    items: Sequence[PreferenceItem],
    *,
    what: str,
    dataset: str,
    reader_exclusions: Exclusions,
    image_refs: Callable[[PreferenceItem], Sequence[str]] = lambda item: [str(i) for i in item.images],
    max_items: Any = None,
    data_seed: Any = 0,
    prompt_set: str | None = None,
    prompts: Any = None,
    prompt_seed: Any = 0,
) -> Any:
    """The task's ``DatasetDict``: every chosen item under every chosen prompt.

    Source rows the reader could not use (ties, missing images, malformed
    lines: ``reader_exclusions``) are counted in the log; they have no
    candidate pair to show, so they make no documents.
    """
    chosen_prompts = select_prompts(prompt_set, prompts, prompt_seed)
    chosen = sample_items(list(items), max_items, data_seed)
    for entry in reader_exclusions.to_json():
        logger.warning("judgecp: %s: %d source row(s) left out: %s", what, entry["count"], entry["reason"])
    if len(chosen) < len(items):
        logger.warning("judgecp: %s: a sample of %d of %d items (max_items)", what, len(chosen), len(items))
    logger.info("judgecp: %s: %d items x %d prompts", what, len(chosen), len(chosen_prompts))
    docs = [doc for item in chosen for doc in item_documents(item, chosen_prompts, dataset=dataset,
                                                               image_refs=image_refs(item))]
    return datasources.as_dataset_dict(docs, what=what)


# -- lm-eval hooks ---------------------------------------------------------------------------------


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The glyph naming the human's preferred candidate in this document ("" when unlabeled)."""
    by_candidate = {candidate: glyph for glyph, candidate in json.loads(doc["answer_key"]).items()}
    return by_candidate.get(str(doc.get("label")), "")


# -- the task ---------------------------------------------------------------------------------------


def task_settings(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The prompt choice and the study's settings of ``--metadata`` (a bad value names ``metadata <key>``)."""
    meta = dict(metadata or {})
    prompts = {k: v if meta.get(k) is None else meta[k] for k, v in PROMPT_SETTINGS.items()}
    return {**prompts, **study_settings(meta)}


def records_report(records: Sequence[Mapping[str, Any]], settings: Mapping[str, Any], task: str = "") -> dict[str, Any]:
    """The ensemble report of a task's records (sorted by id); ``error`` when undefined."""
    return _report(by_id(records), settings, task)


def _report(ordered: list[Mapping[str, Any]], settings: Mapping[str, Any], task: str) -> dict[str, Any]:
    try:
        report = study_report(ordered, settings)
    except InputError as exc:
        report = undefined_study_report(ordered, str(exc))
    return counted(report, task)


class PromptEnsembleTask(JudgeReportTask):
    """Every item under every prompt of a prompt set; the prompt-ensemble study over the whole task.

    The records name the model (``judge``) from ``--metadata '{"model": ...}'``
    or the judgecp model's ``pretrained`` name.
    """

    KIND = "ensemble"

    def read_settings(self, metadata: Mapping[str, Any]) -> None:
        # The ensemble's settings are its own, not a conformal Protocol; no calibrator applies.
        self.settings = task_settings(metadata)
        self.check_output_type()
        self.calibrator = None

    def metrics(self) -> list[Metric]:
        return ensemble_metrics(with_mixture=bool(self.settings.get("embeddings")))

    def report(self, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return records_report(records, self.settings, task=str(self.config.task))

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        glyphs = list(doc["glyphs"])
        logprobs = self.choice_logprobs(glyphs, results)
        model = (self.config.metadata or {}).get("model")
        return study_record(
            doc["item"],
            doc["prompt_id"],
            order=doc["order"],
            label=doc.get("label"),
            logprobs=logprobs,
            answer_key=json.loads(doc["answer_key"]),
            judge=str(model) if model else model_name(),
            task=doc.get("dataset"),
            exclude=self.document_exclusion(doc),
        )
