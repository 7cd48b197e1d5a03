"""Pairwise image preference under every prompt of a prompt set, as a VLMEvalKit dataset (prompt ensembles).

The VLMEvalKit twin of the lm-eval family ``image_pref_ensemble_cp``
(:mod:`judgecp.adapters.lm_eval.ensemble_task`): one TSV row per (item,
prompt) of an HPSv2 (HPD v2) or MJ-Bench source, the two candidate images in
the prompt's displayed order, the prompt text with the caption filled in.
Nothing here imports VLMEvalKit except :func:`dataset_class`.

* **Build** (offline): ``python -m judgecp.adapters.vlmeval.ensemble --source
  hpdv2 --root DIR --out $LMUData`` writes ``ImagePrefEnsemble_HPDv2.tsv``
  (``--name`` to choose; any ``ImagePrefEnsemble_<name>`` is registered).
  Columns: ``index``, ``image`` (the first row of an item in each display
  order holds both images as base64; the others name that row's index, as
  VLMEvalKit saves space), ``image_path`` (one file per candidate image),
  ``question``, ``answer`` (the glyph of the preferred image as displayed),
  ``item``, ``prompt_id``, ``glyphs``, ``answer_key``, ``preference`` (in
  the original order), ``order``, ``category`` (the source), ``judgecp_kind``.
  A ``<name>_build.json`` beside it counts every source row left out.
* **Capture**: the dataset registers each built prompt with the glyphs as
  its letters and marks itself a multiple-choice dataset, so a ``-lp`` model
  writes a letter record per row into its logprob sidecar (no change to the
  capture). VLMEvalKit's capture reads single capital letters, so prompts
  must use single-letter glyphs (``A``/``B``, not ``I``/``II``): the builder
  refuses the others.
* **Evaluate**: ``evaluate()`` reads the prediction file and its sidecar
  (:func:`judgecp.adapters.vlmeval.predictions.read_predictions`), turns each
  row into the ``pair`` record the ensemble reads (``prompt``,
  ``meta.item``, ``meta.answer_key``), runs
  :func:`judgecp.kinds.ensemble.evaluate.ensemble_report` and writes
  ``<model>_<dataset>_ensemble.json`` beside the prediction file; the
  headline ``<method>|<score>`` floats land in ``status.json``, with the
  primary metrics ``bpe|accuracy|overall`` and ``bpe|nll|overall`` (not an
  ECE: a judge that says 50/50 everywhere is perfectly calibrated).
  ``judgecp evaluate --kind ensemble RECORDS`` takes the records written by
  ``--records`` of this module's ``evaluate`` command.
"""

from __future__ import annotations

import argparse
import base64
import csv
import io
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from judgecp.adapters.vlmeval.predictions import read_predictions
from judgecp.adapters.vlmeval.runtime import PROMPTS, mark_mcq
from judgecp.adapters.vlmeval.specs import DATASET_TYPE, ENSEMBLE_PREFIX
from judgecp.adapters.vlmeval.summary import primary_keys, with_overall
from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.base.outputs import atomic_write_text, atomic_writer
from judgecp.data.ensemble.prompts import CANDIDATES, JudgePrompt, build_prompt_set, read_prompt_set
from judgecp.data.ensemble.sources import PreferenceItem, balance_order, read_hpdv2, read_mjbench
from judgecp.kinds.ensemble.study import (
    STUDY_SETTINGS,
    displayed,
    sample_items,
    select_prompts,
    single_letter,
    study_record,
    study_report,
    study_settings,
)
from judgecp.kinds.metrics import flatten
from judgecp.workflows.headline import report_headline
from judgecp.workflows.results import with_digest

DATASET_PREFIX = ENSEMBLE_PREFIX
KIND = "ensemble"
METRIC_SUFFIX = "_ensemble"
IMAGE_TOKEN = "<image>"
COLUMNS = ("index", "image", "image_path", "question", "answer", "item", "prompt_id", "glyphs", "answer_key",
           "preference", "order", "category", "judgecp_kind")


# -- building the TSV ----------------------------------------------------------------------------


def check_glyphs(prompts: Sequence[JudgePrompt]) -> None:
    """Every prompt answers with single capital letters (what VLMEvalKit's capture reads)."""
    for prompt in prompts:
        if not single_letter(prompt):
            bad = next(g for g in prompt.glyphs if not re.fullmatch(r"[A-Z]", g))
            raise InputError(
                f"prompt {prompt.id!r} answers with {bad!r}: VLMEvalKit's logprob capture reads single capital "
                "letters; choose prompts with glyphs A/B (e.g. build the set with the A/B glyph set only)"
            )


def vlmeval_prompts(prompt_set: str | None = None, prompts: Sequence[str] | None = None) -> list[JudgePrompt]:
    """The prompts of a build: ids from the set (default: every single-letter prompt of the shipped parts)."""
    if prompts:
        chosen = select_prompts(prompt_set, list(prompts), where="build")
    else:
        chosen = [p for p in (read_prompt_set(prompt_set) if prompt_set else build_prompt_set()) if single_letter(p)]
    check_glyphs(chosen)
    return chosen


def encode_image(image: Any) -> str:
    """An image (a path or a PIL image) as base64 PNG."""
    from PIL import Image

    img = Image.open(image) if isinstance(image, (str, Path)) else image
    buffer = io.BytesIO()
    img.convert("RGB").save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def tsv_rows(
    items: Sequence[PreferenceItem],
    prompts: Sequence[JudgePrompt],
    *,
    category: str,
    encode: Callable[[Any], str] = encode_image,
    exclusions: Exclusions | None = None,
) -> list[dict[str, Any]]:
    """One row per (item, prompt) (module docstring); an item whose images do not encode is left out and counted."""
    check_glyphs(prompts)
    exclusions = exclusions if exclusions is not None else Exclusions()
    rows: list[dict[str, Any]] = []
    for item in items:
        try:
            encoded = [encode(image) for image in item.images]
        except Exception as exc:  # a file PIL cannot read: counted, never fatal
            exclusions.add(f"image unreadable ({type(exc).__name__})", item.id)
            continue
        full_row: dict[str, str] = {}
        for prompt in prompts:
            shown, order, answer = displayed(prompt, item.preferred)
            index = str(len(rows))
            image = full_row.get(order)
            if image is None:
                image = str([encoded[k] for k in shown])
                full_row[order] = index
            rows.append({
                "index": index, "image": image,
                "image_path": str([f"{_safe(item.id)}_{CANDIDATES[k]}.png" for k in shown]),
                "question": prompt.render(item.caption, (IMAGE_TOKEN, IMAGE_TOKEN)), "answer": answer,
                "item": item.id, "prompt_id": prompt.id, "glyphs": ",".join(prompt.glyphs),
                "answer_key": json.dumps(prompt.answer_key), "preference": item.preferred, "order": order,
                "category": category, "judgecp_kind": KIND,
            })
    return rows


def write_tsv(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    path = Path(path)
    with atomic_writer(path, newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    return path


def source_items(source: str, root: str | None, split: str, exclusions: Exclusions,
                 max_items: int | None, data_seed: int) -> list[PreferenceItem]:
    if source == "hpdv2":
        items = read_hpdv2(root, exclusions=exclusions)
    elif source == "mjbench":
        items = balance_order(read_mjbench(root, split=split, exclusions=exclusions), random_state=data_seed)
    else:
        raise InputError(f"--source must be hpdv2 or mjbench, got {source!r}")
    return sample_items(items, max_items, data_seed)


def build(
    source: str, out: str | Path, *, root: str | None = None, split: str = "quality", name: str | None = None,
    prompt_set: str | None = None, prompts: Sequence[str] | None = None, max_items: int | None = 1000,
    data_seed: int = 0,
) -> Path:
    """Write ``<out>/<name>.tsv`` and ``<name>_build.json``; returns the TSV's path."""
    exclusions = Exclusions()
    chosen = vlmeval_prompts(prompt_set, prompts)
    items = source_items(source, root, split, exclusions, max_items, data_seed)
    default = "HPDv2" if source == "hpdv2" else f"MJBench_{split}"
    dataset = name or f"{DATASET_PREFIX}{default}"
    if not dataset.startswith(DATASET_PREFIX):
        raise InputError(f"--name must start with {DATASET_PREFIX!r}, got {dataset!r}")
    category = "hpdv2" if source == "hpdv2" else f"mjbench_{split}"
    rows = tsv_rows(items, chosen, category=category, exclusions=exclusions)
    if not rows:
        raise InputError(f"no items to write ({', '.join(exclusions.counts) or 'the source is empty'})")
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = write_tsv(rows, out_dir / f"{dataset}.tsv")
    manifest = {"kind": KIND, "source": source, "split": split if source == "mjbench" else "test",
                "items": len({r["item"] for r in rows}),
                "rows": len(rows), "prompts": [p.id for p in chosen], "left_out": exclusions.to_json()}
    atomic_write_text(out_dir / f"{dataset}_build.json", json.dumps(manifest, indent=1) + "\n")
    return path


# -- prompts and records of a run --------------------------------------------------------------------


def messages(question: str, image_paths: Sequence[str]) -> list[dict[str, str]]:
    """VLMEvalKit's message list: the text with each ``<image>`` replaced by the next image, in order."""
    parts = question.split(IMAGE_TOKEN)
    if len(parts) - 1 != len(image_paths):
        raise InputError(f"the prompt has {len(parts) - 1} image slots for {len(image_paths)} images")
    out: list[dict[str, str]] = []
    for k, text in enumerate(parts):
        if text.strip():
            out.append({"type": "text", "value": text.strip()})
        if k < len(image_paths):
            out.append({"type": "image", "value": str(image_paths[k])})
    return out


def row_letters(row: Mapping[str, Any]) -> list[str]:
    return [g for g in str(row.get("glyphs") or "").split(",") if g]


def ensemble_records(table: Any) -> list[dict[str, Any]]:
    """One ``pair`` record per prediction row with a logprob record (the input of the ensemble reader)."""
    records = []
    for row in table.rows:
        if row.record is None:
            continue
        columns = row.columns
        letters = row_letters(columns)
        captured = row.record.get("logprobs") or {}
        logprobs = {g: captured.get(g) for g in letters}
        try:
            answer_key = json.loads(str(columns.get("answer_key")))
        except json.JSONDecodeError:
            answer_key = None
        records.append(study_record(
            columns.get("item"), columns.get("prompt_id"), order=str(columns.get("order") or "fwd"),
            label=columns.get("preference"), logprobs=logprobs, answer_key=answer_key, judge=row.record.get("judge"),
            task=columns.get("category"), flags=[*row.flags, *(row.record.get("flags") or [])],
            meta={"vlmeval_index": row.index},
        ))
    return records


def settings_from(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Dataset keyword arguments (VLMEvalKit's ``--config``) as ensemble settings; a bad one is an error naming it."""
    return study_settings(kwargs, where="dataset argument", strict=True)


def metric_path(prediction_file: str | Path) -> Path:
    p = Path(prediction_file)
    return p.with_name(f"{p.stem}{METRIC_SUFFIX}.json")


def evaluate_file(
    prediction_file: str | Path, *, dataset: str | None = None, settings: Mapping[str, Any] | None = None,
    sidecars: Sequence[str | Path] | None = None, records_out: str | Path | None = None,
) -> dict[str, float]:
    """The ensemble study of a prediction file (module docstring); returns the headline."""

    s = settings_from(settings or {})
    table = read_predictions(prediction_file, dataset=dataset, sidecars=sidecars)
    records = ensemble_records(table)
    if records_out is not None:
        atomic_write_text(records_out, "".join(json.dumps(r) + "\n" for r in records))
    report = study_report(records, s, excluded=table.excluded)
    report["vlmeval"] = table.summary()
    atomic_write_text(metric_path(prediction_file), json.dumps(with_digest(report), indent=1) + "\n")
    # the kind's headline (<method>|<score>, n_items, n_prompts) and its primary metrics again
    # as |overall keys (bpe|accuracy|overall, bpe|nll|overall) for VLMEvalKit's summary
    return flatten(with_overall(report_headline(report), KIND))


# -- the VLMEvalKit class ------------------------------------------------------------------------------

_CLASS: list[type] = []


def dataset_class() -> type:
    """The VLMEvalKit dataset class (built on first use; imports VLMEvalKit)."""
    if _CLASS:
        return _CLASS[0]
    from vlmeval.dataset.image_base import ImageBaseDataset
    from vlmeval.smp import LMUDataRoot, load, toliststr

    class ImagePrefEnsembleCP(ImageBaseDataset):  # type: ignore[misc]
        """Every item under every prompt of a prompt set; the prompt-ensemble study in ``evaluate()``."""

        TYPE = DATASET_TYPE
        MODALITY = "IMAGE"
        DATASET_URL: ClassVar[dict[str, str]] = {}
        DATASET_MD5: ClassVar[dict[str, str]] = {}
        force_use_dataset_prompt = True

        def __init__(self, dataset: str = f"{DATASET_PREFIX}HPDv2", skip_noimg: bool = True, **settings: Any) -> None:
            self.settings = settings_from(settings)
            super().__init__(dataset=dataset, skip_noimg=skip_noimg)
            mark_mcq(dataset)  # the -lp models then capture the row's letters into the sidecar

        @classmethod
        def supported_datasets(cls) -> list[str]:
            return sorted(p.stem for p in Path(LMUDataRoot()).glob(f"{DATASET_PREFIX}*.tsv"))

        def load_data(self, dataset: str) -> Any:
            path = Path(LMUDataRoot()) / f"{dataset}.tsv"
            if not path.exists():
                raise FileNotFoundError(
                    f"{path} does not exist: build it with `python -m judgecp.adapters.vlmeval.ensemble "
                    f"--source hpdv2|mjbench --out {LMUDataRoot()}` (docs/ensembles.md)"
                )
            return load(str(path))

        def build_prompt(self, line: Any) -> list[dict[str, str]]:
            if isinstance(line, int):
                line = self.data.iloc[line]
            paths = toliststr(line["image_path"]) if self.meta_only else self.dump_image(line)
            msgs = messages(str(line["question"]), paths)
            PROMPTS.register(self.dataset_name, msgs, line["index"], {"letters": row_letters(line)})
            return msgs

        def evaluate(self, eval_file: str, **judge_kwargs: Any) -> dict[str, float]:
            return evaluate_file(eval_file, dataset=self.dataset_name, settings=self.settings)

        @classmethod
        def report_primary_metric(cls, metrics: dict[str, Any] | None) -> dict[str, float | int]:
            """The BPE ensemble's accuracy and NLL: the ``...|overall`` keys, by name."""
            if not isinstance(metrics, dict):
                return {}
            return {k: metrics[k] for k in primary_keys(metrics)}

    _CLASS.append(ImagePrefEnsembleCP)
    return ImagePrefEnsembleCP


# -- command line -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m judgecp.adapters.vlmeval.ensemble`` (build a TSV), or ``... evaluate PREDICTIONS`` (post hoc)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["evaluate"]:
            p = argparse.ArgumentParser(prog="python -m judgecp.adapters.vlmeval.ensemble evaluate")
            p.add_argument("predictions", help="a VLMEvalKit prediction file of an ImagePrefEnsemble_* dataset")
            p.add_argument("--sidecar", action="append", default=[], help="a logprob sidecar JSONL (repeatable)")
            p.add_argument(
                "--records", help="also write the ensemble records here (for judgecp evaluate --kind ensemble)"
            )
            for key in ("validation", "clusters", "seeds", "alpha", "procedure", "embeddings"):
                p.add_argument(f"--{key}")
            args = p.parse_args(argv[1:])
            settings = {k: getattr(args, k) for k in STUDY_SETTINGS if getattr(args, k) is not None}
            headline = evaluate_file(
                args.predictions, settings=settings, sidecars=args.sidecar, records_out=args.records
            )
            print(json.dumps(headline, indent=1))
            print(f"full report: {metric_path(args.predictions)}")
            return 0
        p = argparse.ArgumentParser(
            prog="python -m judgecp.adapters.vlmeval.ensemble",
            description="Build an ImagePrefEnsemble_* TSV for VLMEvalKit (one row per item and prompt).",
        )
        p.add_argument("--source", required=True, choices=("hpdv2", "mjbench"))
        p.add_argument("--root", help="local copy (default: the hub dataset)")
        p.add_argument("--split", default="quality", help="MJ-Bench split (default quality)")
        p.add_argument("--out", required=True, help="the folder ($LMUData) to write the TSV into")
        p.add_argument("--name", help=f"dataset name (default {DATASET_PREFIX}HPDv2 / {DATASET_PREFIX}MJBench_<split>)")
        p.add_argument("--prompt-set", help="prompt-set JSON (default: the shipped parts)")
        p.add_argument("--prompt", action="append", help="a prompt id (repeatable; default every A/B prompt)")
        p.add_argument("--max-items", type=int, default=1000, help="seeded sample of items (default 1000; 0: all)")
        p.add_argument("--data-seed", type=int, default=0)
        args = p.parse_args(argv)
        path = build(args.source, args.out, root=args.root, split=args.split, name=args.name,
                     prompt_set=args.prompt_set, prompts=args.prompt, max_items=args.max_items or None,
                     data_seed=args.data_seed)
        print(f"wrote {path}")
        return 0
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
