"""Pairwise image preference under every prompt of a prompt set: the harness side of prompt ensembles.

A task of this family (``tasks/image_pref_ensemble_cp``) makes one lm-eval
document per (item, prompt): the item is a caption and two candidate images
with the human preference (:class:`judgecp.ensemble.sources.PreferenceItem`,
from HPSv2's HPD v2 or MJ-Bench), the prompt one entry of a prompt set
(:mod:`judgecp.ensemble.prompts`: persona x template x criteria, with the
candidates' order flipped and the answer glyphs changed). The document shows
the two images in the prompt's ``order`` and is one ``multiple_choice``
request set over the prompt's two glyphs (``A``/``B`` or ``I``/``II``), which
the judgecp HF models score in one forward pass.

Each document's record is a ``pair`` record (``judgecp.record/1``):
``logprobs`` over the displayed glyphs, ``prompt`` the prompt id,
``meta.item`` the item, ``meta.answer_key`` which original candidate each
glyph names, ``label`` the human preference in the original order,
``pair_id`` the item and ``order`` ``fwd``/``rev`` as the prompt shows the
candidates. :func:`judgecp.ensemble.records.read_ensemble_records` reads them
as they are (``judgecp evaluate --kind ensemble samples_<task>_<date>.jsonl``),
so the ensemble is fitted and applied post hoc on any validation set.

Inside lm-eval the task also reports the ensemble study over all its records
(:func:`judgecp.ensemble.evaluate.ensemble_report`): per method (``uniform``,
``bpe`` and, with an ``embeddings`` file, ``mixture``) ``ece``, ``mce``,
``auprc``, ``nll``, ``accuracy`` (each with ``_stderr``: the std over seeds)
and the BY selection's ``fdp`` and ``selected``; plus ``n_items``,
``n_prompts``, ``excluded``. Settings come from ``--metadata`` (:data:`SETTINGS`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lm_eval.api.task import ConfigurableTask

from judgecp.adapters.lm_eval import data_sources, images, model_name
from judgecp.adapters.lm_eval.metrics import Metric, aggregations, read_metric
from judgecp.adapters.lm_eval.task import JudgeReportTask
from judgecp.ensemble.prompts import CANDIDATES, JudgePrompt, build_prompt_set, read_prompt_set
from judgecp.ensemble.sources import PreferenceItem
from judgecp.errors import InputError
from judgecp.exclusions import Exclusions
from judgecp.records import pair_record

logger = logging.getLogger("lm_eval.judgecp")

#: How many prompts a task runs when the metadata names none (the supplement's largest set).
DEFAULT_PROMPTS = 20
#: The prompt every default set starts with: the supplement's sample prompt, word for word.
SAMPLE_PROMPT = "supplement-sample"
#: Image placeholder of lm-eval's multimodal models.
IMAGE_TOKEN = "<image>"
METHODS = ("uniform", "bpe", "mixture")
SCORES = ("ece", "mce", "auprc", "nll", "accuracy")

#: ``--metadata`` keys of these tasks (besides the data's: ``data_dir``, ``max_items``, ``data_seed``,
#: ``split``) and their defaults.
SETTINGS: dict[str, Any] = {
    "prompt_set": None,  # a prompt-set JSON (python -m judgecp.ensemble.prompts)
    "prompts": None,  # prompt ids (comma-separated or a list), or a count of the shipped set
    "prompt_seed": 0,  # which prompts a count draws
    "embeddings": None,  # item embeddings (.npz/.jsonl keyed by item id): enables the mixture
    "validation": 50,
    "clusters": 4,
    "seeds": 10,
    "alpha": 0.1,
    "procedure": "by",
}


# -- prompts -------------------------------------------------------------------------------


def _ids(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


def select_prompts(prompt_set: str | None = None, prompts: Any = None, prompt_seed: Any = 0) -> list[JudgePrompt]:
    """The prompts a task runs.

    ``prompt_set``: a prompt-set file (default: the shipped parts,
    :func:`~judgecp.ensemble.prompts.build_prompt_set`). ``prompts``: ids from
    that set (comma-separated or a list), or a count ``N``: the supplement's
    sample prompt and ``N - 1`` others drawn with ``prompt_seed`` (never a
    prompt with the same text and display order as one already drawn).
    Default: ``N = 20`` for the shipped set, the whole set for a file.
    """
    pool = read_prompt_set(prompt_set) if prompt_set else build_prompt_set()
    if not pool:
        raise InputError(f"metadata prompt_set {prompt_set!r}: no prompts")
    if prompts in (None, "") and prompt_set:
        return pool
    count: int | None = None
    if prompts in (None, ""):
        count = DEFAULT_PROMPTS
    elif isinstance(prompts, int) or (isinstance(prompts, str) and prompts.strip().isdigit()):
        count = int(prompts)
    if count is None:
        by_id = {p.id: p for p in pool}
        chosen = _ids(prompts)
        unknown = [i for i in chosen if i not in by_id]
        if unknown:
            raise InputError(f"metadata prompts: unknown prompt {unknown[0]!r} (e.g. {', '.join(list(by_id)[:3])})")
        if len(set(chosen)) != len(chosen):
            raise InputError("metadata prompts: a prompt is listed twice")
        return [by_id[i] for i in chosen]
    if count < 1:
        raise InputError(f"metadata prompts must be ids or a positive count, got {prompts!r}")
    try:
        seed = int(prompt_seed)
    except (TypeError, ValueError):
        raise InputError(f"metadata prompt_seed must be an integer, got {prompt_seed!r}") from None
    distinct: dict[tuple[str, tuple[str, str]], JudgePrompt] = {}
    for p in pool:  # one prompt per (text, display order): the shipped sample prompt is also a composed one
        distinct.setdefault((p.template, tuple(p.order)), p)
    unique = list(distinct.values())
    first = [p for p in unique if p.id == SAMPLE_PROMPT][:1]
    rest = [p for p in unique if p.id != SAMPLE_PROMPT]
    random.Random(seed).shuffle(rest)
    chosen_prompts = (first + rest)[:count]
    if len(chosen_prompts) < count:
        raise InputError(f"metadata prompts: {count} asked, the prompt set has {len(unique)} distinct prompts")
    return chosen_prompts


# -- documents --------------------------------------------------------------------------------


def prompt_text(prompt: JudgePrompt, caption: str) -> str:
    """The user turn: the prompt with the caption filled in and an image placeholder in each image slot."""
    return prompt.render(caption, (IMAGE_TOKEN, IMAGE_TOKEN))


def item_documents(
    item: PreferenceItem, prompts: Sequence[JudgePrompt], *, dataset: str, image_refs: Sequence[str]
) -> list[dict[str, Any]]:
    """One document per prompt (every value a string, a list of strings or None).

    ``image_refs`` are the item's two images in stored order (local paths or
    :func:`judgecp.adapters.lm_eval.images.table_ref` references); each
    document lists them in the prompt's displayed order.
    """
    docs = []
    for prompt in prompts:
        shown = [image_refs[CANDIDATES.index(c)] for c in prompt.order]
        docs.append({
            "id": f"{item.id}/{prompt.id}",
            "item": item.id,
            "prompt_id": prompt.id,
            "text": prompt_text(prompt, item.caption),
            "caption": item.caption,
            "image_refs": [str(r) for r in shown],
            "glyphs": list(prompt.glyphs),
            "answer_key": json.dumps(prompt.answer_key),
            "order": "fwd" if tuple(prompt.order) == CANDIDATES else "rev",
            "label": item.preferred,
            "dataset": dataset,
            "exclude": None,
        })
    return docs


def sample_items(items: list[PreferenceItem], max_items: Any, data_seed: Any) -> list[PreferenceItem]:
    """A seeded random sample of ``max_items`` items, in their original order (all when 0/None)."""
    if max_items in (None, "", 0, "0"):
        return items
    try:
        k, seed = int(max_items), int(data_seed)
    except (TypeError, ValueError):
        raise InputError(f"metadata max_items and data_seed must be integers, got {max_items!r}, {data_seed!r}") from None
    if k < 0:
        raise InputError(f"metadata max_items must be positive (0: all), got {max_items!r}")
    if k >= len(items):
        return items
    keep = sorted(random.Random(seed).sample(range(len(items)), k))
    return [items[i] for i in keep]


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
    return data_sources.as_dataset_dict(docs, what=what)


# -- lm-eval hooks ---------------------------------------------------------------------------------


def doc_to_text(doc: Mapping[str, Any]) -> str:
    return str(doc["text"])


def doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    return list(doc["glyphs"])


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The glyph naming the human's preferred candidate in this document ("" when unlabeled)."""
    key = json.loads(doc["answer_key"])
    by_candidate = {candidate: glyph for glyph, candidate in key.items()}
    return by_candidate.get(str(doc.get("label")), "")


def doc_to_image(doc: Mapping[str, Any]) -> list[Any]:
    return images.load_images(doc)


# -- the task ---------------------------------------------------------------------------------------


def task_settings(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ensemble settings of ``--metadata`` (a bad value names ``metadata <key>``)."""
    meta = dict(metadata or {})
    out = {k: meta.get(k, v) if meta.get(k) is not None else v for k, v in SETTINGS.items()}
    try:
        out["validation"], out["clusters"] = int(out["validation"]), int(out["clusters"])
        out["alpha"] = float(out["alpha"])
    except (TypeError, ValueError) as exc:
        raise InputError(f"metadata validation, clusters and alpha must be numbers ({exc})") from None
    seeds = out["seeds"]
    try:
        out["seeds"] = list(range(int(seeds))) if not isinstance(seeds, (list, tuple)) and "," not in str(seeds) \
            else [int(s) for s in (seeds if isinstance(seeds, (list, tuple)) else str(seeds).split(","))]
    except ValueError:
        raise InputError(f"metadata seeds must be a count or a list, got {seeds!r}") from None
    if not 0.0 < out["alpha"] < 1.0:
        raise InputError(f"metadata alpha must be in (0, 1), got {out['alpha']}")
    if out["embeddings"] and not Path(str(out["embeddings"])).expanduser().is_file():
        raise InputError(f"metadata embeddings {out['embeddings']!r}: no such file")
    if out["procedure"] not in ("by", "bh"):
        raise InputError(f"metadata procedure must be 'by' or 'bh', got {out['procedure']!r}")
    return out


def ensemble_metrics(with_mixture: bool) -> list[Metric]:
    """``n_items``, ``n_prompts``, ``excluded``; per method ``<score>_<method>`` (+ ``_stderr``),
    ``fdp_<method>`` and ``selected_<method>``."""
    metrics = [
        Metric("n_items", lambda r: r["n_items"], None, always=True),
        Metric("n_prompts", lambda r: r["n_prompts"], None, always=True),
        Metric("excluded", lambda r: r["n_excluded"], False, always=True),
    ]
    for method in METHODS if with_mixture else METHODS[:2]:
        for score in SCORES:
            higher = score in ("auprc", "accuracy")
            metrics.append(Metric(f"{score}_{method}", lambda r, m=method, s=score: r["methods"][m][s], higher))
            metrics.append(Metric(f"{score}_{method}_stderr", lambda r, m=method, s=score: r["methods"][m][f"{s}_std"], None))
        metrics.append(Metric(f"fdp_{method}", lambda r, m=method: r["selection"][m]["fdp"], False))
        metrics.append(Metric(f"selected_{method}", lambda r, m=method: r["selection"][m]["selected_share"], True))
    return metrics


_CACHE: OrderedDict[str, dict[str, Any]] = OrderedDict()


def records_report(records: Sequence[Mapping[str, Any]], settings: Mapping[str, Any], task: str = "") -> dict[str, Any]:
    """The ensemble report of a task's records (sorted by id), cached by content; ``error`` when undefined."""
    from judgecp.ensemble.embeddings import read_embeddings
    from judgecp.ensemble.evaluate import ensemble_report
    from judgecp.ensemble.records import read_ensemble_records

    ordered = sorted(records, key=lambda r: str(r.get("id")))
    digest = hashlib.sha256(json.dumps(dict(settings), sort_keys=True, default=str).encode())
    for r in ordered:
        digest.update(json.dumps(r, sort_keys=True, default=str).encode())
    key = digest.hexdigest()
    if key in _CACHE:
        return _CACHE[key]
    embeddings = settings.get("embeddings")
    items = {str((r.get("meta") or {}).get("item")) for r in ordered}
    try:
        data = read_ensemble_records(ordered, embeddings=read_embeddings(embeddings) if embeddings else None,
                                     require_embeddings=bool(embeddings))
        report = ensemble_report(
            data, validation=settings["validation"], clusters=settings["clusters"] if embeddings else 1,
            seeds=settings["seeds"], alpha=settings["alpha"], procedure=settings["procedure"],
        )
    except InputError as exc:
        excluded = Exclusions()
        for r in ordered:
            if r.get("exclude"):
                excluded.add(f"{r['exclude']} (item left out)", r.get("id"))
        report = {"error": str(exc), "n_items": len(items), "n_prompts": len({r.get("prompt") for r in ordered}),
                  "excluded": excluded.to_json(), "methods": {}, "selection": {}}
        logger.warning("judgecp: %s: metrics undefined: %s", task or "task", exc)
    report["n_excluded"] = sum(e["count"] for e in report["excluded"])
    if report["n_excluded"]:
        reasons = ", ".join(f"{e['reason']} {e['count']}" for e in report["excluded"])
        logger.warning("judgecp: %s: %d excluded: %s", task or "task", report["n_excluded"], reasons)
    _CACHE[key] = report
    while len(_CACHE) > 8:
        _CACHE.popitem(last=False)
    return report


class PromptEnsembleTask(JudgeReportTask):
    """Every item under every prompt of a prompt set; the prompt-ensemble study over the whole task.

    The records name the model (``judge``) from ``--metadata '{"model": ...}'``
    or the judgecp model's ``pretrained`` name.
    """

    KIND = "ensemble"

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        # Not JudgeReportTask.__init__: the ensemble's settings are its own, not a conformal Protocol.
        config = dict(config or {})
        config.pop("class", None)
        ConfigurableTask.__init__(self, config=config, **kwargs)
        try:
            self.settings = task_settings(self.config.metadata or {})
            self.check_output_type()
        except InputError as exc:
            raise InputError(f"task {self.config.task}: {exc}") from None
        metrics = self.metrics()
        self._judgecp_metrics = metrics
        self._judgecp_records: dict[str, Mapping[str, Any]] = {}
        self._judgecp_aggregations = aggregations(metrics, self.report_of_values)

    # A task of this family has items x prompts documents: the samples file keeps each record once, under
    # the first metric (``n_items``), and only its id under the others (a record under each of the ~40
    # metrics made the samples file ~23 KB a document). lm-eval aggregates the metrics in the order
    # process_results returns them, so the first aggregation sees (and stores) every record, gathered on
    # rank 0 under accelerate; the others find theirs by id. A record not found is never guessed: the
    # metric is NaN and the log says why.

    def process_results(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        record = self.record(doc, results)
        self._judgecp_records[record["id"]] = record
        first, *rest = (m.name for m in self._judgecp_metrics)
        return {first: record, **{name: record["id"] for name in rest}}

    def report_of_values(self, values: Sequence[Any]) -> dict[str, Any]:
        """The report of a metric's values: records (the first metric) or record ids (the others)."""
        records, missing = [], 0
        for value in values:
            if isinstance(value, Mapping):
                self._judgecp_records[str(value.get("id"))] = value
                records.append(value)
            elif str(value) in self._judgecp_records:
                records.append(self._judgecp_records[str(value)])
            else:
                missing += 1
        if missing:
            message = (f"{missing} record(s) of this metric were not among the task's records "
                       "(lm-eval aggregated it before n_items?); recompute with judgecp evaluate --kind ensemble")
            logger.warning("judgecp: %s: %s", self.config.task, message)
            return {"error": message, "n_items": 0, "n_prompts": 0, "excluded": [], "n_excluded": 0}
        return self.report(records)

    def metrics(self) -> list[Metric]:
        return ensemble_metrics(with_mixture=bool(self.settings.get("embeddings")))

    def report(self, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return records_report(records, self.settings, task=str(self.config.task))

    def record(self, doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
        glyphs = list(doc["glyphs"])
        logprobs = self.choice_logprobs(glyphs, results)
        model = (self.config.metadata or {}).get("model")
        return pair_record(
            doc["id"], pair_id=doc["item"], order=doc["order"], label=doc.get("label"), logprobs=logprobs,
            prediction=self.argmax_label(logprobs), judge=str(model) if model else model_name(),
            prompt=doc["prompt_id"], task=doc.get("dataset"), exclude=self.document_exclusion(doc),
            meta={"item": doc["item"], "answer_key": json.loads(doc["answer_key"])},
        )


def metric_values(report: dict[str, Any], with_mixture: bool) -> dict[str, float]:
    """Every metric of a task read from a report (as the task's aggregations read them)."""
    return {m.name: read_metric(report, m) for m in ensemble_metrics(with_mixture)}


__all__ = [
    "PromptEnsembleTask", "doc_to_choice", "doc_to_image", "doc_to_target", "doc_to_text", "ensemble_dataset",
    "item_documents", "metric_values", "records_report", "sample_items", "select_prompts", "task_settings",
]

