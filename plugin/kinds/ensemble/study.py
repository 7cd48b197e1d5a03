"""The prompt-ensemble study as both harnesses run it: settings, prompts, item sample, records -> report.

The lm-eval tasks (``image_pref_ensemble_cp``) and the VLMEvalKit datasets
(``ImagePrefEnsemble_*``) show every sampled item under every chosen prompt
and report :func:`judgecp.kinds.ensemble.evaluate.ensemble_report` over the
records; the settings (:data:`STUDY_SETTINGS`), the prompt choice, the item
sample and the report are the same for both and live here. ``where`` names
how the user spelled a setting (``metadata`` for lm-eval's ``--metadata``,
``dataset argument`` for VLMEvalKit), so an error names what to fix.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.base.records import likeliest, pair_record
from judgecp.data.ensemble.embeddings import read_embeddings
from judgecp.data.ensemble.prompts import CANDIDATES, JudgePrompt, build_prompt_set, read_prompt_set
from judgecp.data.ensemble.records import read_ensemble_records
from judgecp.data.ensemble.sources import PreferenceItem
from judgecp.kinds.ensemble.evaluate import ensemble_report
from judgecp.kinds.kind import Study
from judgecp.kinds.metrics import (
    ENSEMBLE_METHODS,
    ENSEMBLE_SCORES,
    Metric,
    PrimaryMetric,
    excluded_count,
    pick,
)
from judgecp.kinds.protocol import Protocol

#: Settings of the study and their defaults.
STUDY_SETTINGS: dict[str, Any] = {"validation": 50, "clusters": 4, "seeds": 10, "alpha": 0.1, "procedure": "by",
                                  "embeddings": None}
#: How many prompts a task runs when it names none (the supplement's largest set).
DEFAULT_PROMPTS = 20
#: The prompt every default set starts with: the supplement's sample prompt, word for word.
SAMPLE_PROMPT = "supplement-sample"


def study_settings(values: Mapping[str, Any], *, where: str = "metadata", strict: bool = False) -> dict[str, Any]:
    """:data:`STUDY_SETTINGS` with ``values`` (``None``: the default); ``seeds`` a count, ``"0,3"`` or a list.

    ``strict``: a key that is no setting is an error (VLMEvalKit's dataset
    arguments); otherwise other keys are ignored (lm-eval's metadata holds
    the model's and the task's keys too).
    """
    unknown = sorted(set(values) - set(STUDY_SETTINGS))
    if strict and unknown:
        raise InputError(f"{unknown[0]!r} is not a setting of the ensemble datasets ({', '.join(STUDY_SETTINGS)})")
    out = {k: v if values.get(k) is None else values[k] for k, v in STUDY_SETTINGS.items()}
    try:
        out["validation"], out["clusters"], out["alpha"] = (
            int(out["validation"]),
            int(out["clusters"]),
            float(out["alpha"]),
        )
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where} validation, clusters and alpha must be numbers ({exc})") from None
    seeds = out["seeds"]
    try:
        out["seeds"] = [int(s) for s in seeds] if isinstance(seeds, (list, tuple)) else (
            [int(s) for s in str(seeds).split(",")] if "," in str(seeds) else list(range(int(seeds))))
    except (TypeError, ValueError):
        raise InputError(f"{where} seeds must be a count or a list, got {seeds!r}") from None
    if not 0.0 < out["alpha"] < 1.0:
        raise InputError(f"{where} alpha must be in (0, 1), got {out['alpha']}")
    if out["embeddings"] and not Path(str(out["embeddings"])).expanduser().is_file():
        raise InputError(f"{where} embeddings {out['embeddings']!r}: no such file")
    if out["procedure"] not in ("by", "bh"):
        raise InputError(f"{where} procedure must be 'by' or 'bh', got {out['procedure']!r}")
    return out


def _ids(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


def single_letter(prompt: JudgePrompt) -> bool:
    """Whether the prompt answers with single capital letters (what VLMEvalKit's capture reads)."""
    return all(re.fullmatch(r"[A-Z]", g) for g in prompt.glyphs)


def select_prompts(prompt_set: str | None = None, prompts: Any = None, prompt_seed: Any = 0,
                   *, where: str = "metadata") -> list[JudgePrompt]:
    """The prompts a study runs.

    ``prompt_set``: a prompt-set file (default: the shipped parts,
    :func:`~judgecp.data.ensemble.prompts.build_prompt_set`). ``prompts``: ids from
    that set (comma-separated or a list), or a count ``N``: the supplement's
    sample prompt and ``N - 1`` others drawn with ``prompt_seed`` (never a
    prompt with the same text and display order as one already drawn).
    Default: ``N = 20`` for the shipped set, the whole set for a file.
    """
    pool = read_prompt_set(prompt_set) if prompt_set else build_prompt_set()
    if not pool:
        raise InputError(f"{where} prompt_set {prompt_set!r}: no prompts")
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
            raise InputError(f"{where} prompts: unknown prompt {unknown[0]!r} (e.g. {', '.join(list(by_id)[:3])})")
        if len(set(chosen)) != len(chosen):
            raise InputError(f"{where} prompts: a prompt is listed twice")
        return [by_id[i] for i in chosen]
    if count < 1:
        raise InputError(f"{where} prompts must be ids or a positive count, got {prompts!r}")
    try:
        seed = int(prompt_seed)
    except (TypeError, ValueError):
        raise InputError(f"{where} prompt_seed must be an integer, got {prompt_seed!r}") from None
    distinct: dict[tuple[str, tuple[str, ...]], JudgePrompt] = {}
    for p in pool:  # one prompt per (text, display order): the shipped sample prompt is also a composed one
        distinct.setdefault((p.template, tuple(p.order)), p)
    unique = list(distinct.values())
    first = [p for p in unique if p.id == SAMPLE_PROMPT][:1]
    rest = [p for p in unique if p.id != SAMPLE_PROMPT]
    random.Random(seed).shuffle(rest)
    chosen_prompts = (first + rest)[:count]
    if len(chosen_prompts) < count:
        raise InputError(f"{where} prompts: {count} asked, the prompt set has {len(unique)} distinct prompts")
    return chosen_prompts


def sample_items(items: list[PreferenceItem], max_items: Any, data_seed: Any) -> list[PreferenceItem]:
    """A seeded random sample of ``max_items`` items, in their original order (all when 0/None)."""
    if max_items in (None, "", 0, "0"):
        return items
    try:
        k, seed = int(max_items), int(data_seed)
    except (TypeError, ValueError):
        raise InputError(
            f"metadata max_items and data_seed must be integers, got {max_items!r}, {data_seed!r}"
        ) from None
    if k < 0:
        raise InputError(f"metadata max_items must be positive (0: all), got {max_items!r}")
    if k >= len(items):
        return items
    keep = sorted(random.Random(seed).sample(range(len(items)), k))
    return [items[i] for i in keep]


def displayed(prompt: JudgePrompt, preferred: Any) -> tuple[list[int], str, str]:
    """How a prompt shows an item: the stored candidates' indices in displayed order, ``fwd``/``rev``,
    and the glyph naming the ``preferred`` original candidate (``""`` when unlabeled)."""
    by_candidate = {candidate: glyph for glyph, candidate in prompt.answer_key.items()}
    order = "fwd" if tuple(prompt.order) == CANDIDATES else "rev"
    return [CANDIDATES.index(c) for c in prompt.order], order, by_candidate.get(str(preferred), "")


def study_record(item: Any, prompt_id: Any, *, order: str, label: Any, logprobs: Mapping[str, Any], answer_key: Any,
                 judge: Any, task: Any, meta: Mapping[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """The ``pair`` record of one (item, prompt) answer, as :func:`judgecp.data.ensemble.records.read_ensemble_records`
    reads it: ``prompt`` the prompt id, ``meta.item`` and ``meta.answer_key``, the prediction the likeliest glyph."""

    return pair_record(f"{item}/{prompt_id}", pair_id=item, order=order, label=label, logprobs=logprobs,
                       prediction=likeliest(logprobs), judge=judge,
                       prompt=prompt_id, task=task, meta={"item": item, "answer_key": answer_key, **(meta or {})},
                       **fields)


def undefined_study_report(records: Sequence[Mapping[str, Any]], error: str) -> dict[str, Any]:
    """The report of records the study cannot evaluate (``error``): its counts only, no metrics.

    ``n_items`` and ``n_prompts`` as the records name them; records a harness
    left out (``exclude``) are counted as in :func:`study_report`.
    """
    excluded = Exclusions()
    for r in records:
        if r.get("exclude"):
            excluded.add(f"{r['exclude']} (item left out)", r.get("id"))
    return {"error": error, "n_items": len({str((r.get("meta") or {}).get("item")) for r in records}),
            "n_prompts": len({r.get("prompt") for r in records}), "excluded": excluded.to_json(),
            "methods": {}, "selection": {}}


def study_report(records: Sequence[Mapping[str, Any]], settings: Mapping[str, Any],
                 excluded: Exclusions | None = None) -> dict[str, Any]:
    """The ensemble report of a study's ``pair`` records (``excluded``: rows a harness reader left out)."""

    embeddings = settings.get("embeddings")
    data = read_ensemble_records(records, embeddings=read_embeddings(embeddings) if embeddings else None,
                                 require_embeddings=bool(embeddings))
    if excluded is not None:
        data.exclusions.merge(excluded)
    return ensemble_report(data, validation=settings["validation"], clusters=settings["clusters"] if embeddings else 1,
                           seeds=settings["seeds"], alpha=settings["alpha"], procedure=settings["procedure"])


# -- the study part of the ensemble kind: its metric names -----------------------------------------


def ensemble_metrics(with_mixture: bool) -> list[Metric]:
    """``n_items``, ``n_prompts``, ``excluded``; per method ``<score>_<method>`` (+ ``_stderr``: the std
    over seeds), ``fdp_<method>`` and ``selected_<method>`` (the BY selection)."""
    metrics = [
        Metric("n_items", pick("n_items"), None, always=True),
        Metric("n_prompts", pick("n_prompts"), None, always=True),
        Metric("excluded", excluded_count, False, always=True),
    ]
    for method in ENSEMBLE_METHODS if with_mixture else ENSEMBLE_METHODS[:2]:
        for score in ENSEMBLE_SCORES:
            metrics.append(Metric(f"{score}_{method}", pick("methods", method, score), score in ("auprc", "accuracy")))
            metrics.append(Metric(f"{score}_{method}_stderr", pick("methods", method, f"{score}_std"), None))
        metrics.append(Metric(f"fdp_{method}", pick("selection", method, "fdp"), False))
        metrics.append(Metric(f"selected_{method}", pick("selection", method, "selected_share"), True))
    return metrics


#: The scores of each ensemble method a headline shows (VLMEvalKit's ``<method>|<score>``).
HEADLINE_SCORES = ("ece", "mce", "auprc", "nll", "accuracy")


class EnsembleStudy(Study):
    """The ensemble study's metric names (the study itself runs under the kind's command)."""

    settings = frozenset()

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None) -> list[Metric]:
        with_mixture = "mixture" in ((body or {}).get("methods") or {})
        return ensemble_metrics(with_mixture)

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        """Per method (``uniform``, ``bpe``, and ``mixture`` when it had clusters: item
        embeddings) its ECE, MCE, AUPRC, NLL and accuracy on the held-out items, then
        ``n_items`` and ``n_prompts`` (floats, as VLMEvalKit's headline had them)."""
        clustered = int((body.get("settings") or {}).get("clusters") or 1) > 1
        out: dict[str, Any] = {name: {k: entry.get(k) for k in HEADLINE_SCORES}
                               for name, entry in (body.get("methods") or {}).items()
                               if name != "mixture" or clustered}
        out.update({key: float(body.get(key, 0)) for key in ("n_items", "n_prompts")})
        return out

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """The BPE-weighted ensemble's accuracy and NLL. Not its ECE: a judge that says 50/50 on
        every item is perfectly calibrated (ECE 0) and useless; its NLL is log 2, its accuracy a
        coin's."""
        return [PrimaryMetric("bpe|accuracy", True, 1.0, "accuracy_bpe"),
                PrimaryMetric("bpe|nll", False, 0.0, "nll_bpe")]
