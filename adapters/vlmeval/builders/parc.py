"""PARC variation datasets (``PARC_<name>``) from a folder in the local variation format (``docs/parc_format.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.builders.common import Build, BuildResult, find, image_readable
from judgecp.adapters.vlmeval.specs import KIND_COLUMN, PARC
from judgecp.base.errors import InputError
from judgecp.data.choice import LETTERS
from judgecp.stats.parc import FAMILIES, family_of

PARC_FILE = "variations.jsonl"


def parc_dataset_name(name: str) -> str:
    if not name.startswith("PARC_") or len(name) <= len("PARC_"):
        raise InputError(f"PARC dataset names start with 'PARC_' (judgecp registers them by that prefix), got {name!r}")
    return name


def _problem(rid: str, item: dict[str, Any], src: Path) -> tuple[str, str] | dict[str, Any]:
    """The record's options, answers, variation, family and image paths, or ``(reason, detail)``."""

    options = item.get("options")
    if (not isinstance(options, dict) or len(options) < 2
            or any(str(k) not in LETTERS for k in options)
            or any(v is None or not str(v).strip() for v in options.values())):
        return "options_invalid", rid
    correct = item.get("correct")
    answers = [str(c).strip() for c in (correct if isinstance(correct, list) else [correct]) if c is not None]
    answers = [a for a in answers if a]
    if not answers:
        return "answer_missing", rid
    if any(a not in options for a in answers):
        return "answer_not_an_option", f"{rid}: {','.join(answers)}"
    variation = str(item["variation"]).strip()
    family = str(item.get("family") or "").strip().upper()
    try:
        known = family_of(variation)
    except InputError:
        known = None
    if known is None and family not in FAMILIES:
        return "variation_unknown", f"{rid}: {variation}"
    rels = item["image"] if isinstance(item["image"], list) else [item["image"]]
    paths = [src / str(r) for r in rels]
    if not rels or not all(p.is_file() for p in paths):
        return "image_missing", f"{rid}: {', '.join(str(r) for r in rels)}"
    unreadable = [str(r) for r, p in zip(rels, paths, strict=True) if not image_readable(p)]
    if unreadable:  # garbage saved as .png would otherwise be embedded as an image
        return "image_unreadable", f"{rid}: {', '.join(unreadable)}"
    return {"item": item, "id": rid, "options": options, "answers": answers, "variation": variation,
            "family": known or family, "paths": paths}


def build_parc(
    source: str | Path,
    out_dir: str | Path,
    *,
    name: str | None = None,
    limit: int | None = None,
) -> BuildResult:
    """``PARC_<name>.tsv``: one row per (source item, prompt variation).

    Columns: ``index`` (a running number; the record's ``id`` is kept as
    ``item_id``), ``image`` (base64, or VLMEvalKit's list of base64 strings
    for two-image items), ``question``, the options as columns ``A``, ``B``,
    ... (letters of the record, in order), ``answer`` (the correct letters,
    comma-separated), ``source_id``, ``source_dataset`` (the record's
    ``dataset``), ``variation``, ``family``. The default name is
    ``PARC_<dataset>`` when all records share one dataset. Left out and
    counted: ``malformed_json_line``, ``field_missing``, ``duplicate_id``,
    ``options_invalid`` (fewer than 2 options, or keys that are not letters
    A-Z), ``answer_missing``, ``answer_not_an_option``, ``variation_unknown``
    (a variation outside PARC's names without a ``family`` field),
    ``image_missing``, ``image_unreadable`` (a file Pillow cannot decode, when
    Pillow is installed). A source item without its original prompt ``O`` is
    kept; the core counts ``no_original_prompt``. ``limit`` keeps the first
    N usable records.
    """
    spec = PARC
    src = Path(source)
    path = find(src, (PARC_FILE,), "variation file", None)
    build = Build()
    good: list[dict[str, Any]] = []
    for rid, item in build.items(path, "id"):
        absent = [k for k in ("source_id", "dataset", "variation", "question", "image")
                  if not item.get(k) or (isinstance(item.get(k), str) and not item[k].strip())]
        if build.missing(rid, item, (), also=absent):
            continue
        found = _problem(rid, item, src)
        if isinstance(found, tuple):
            build.excluded.add(*found)
            continue
        if limit is None or len(good) < limit:
            good.append(found)
    datasets = sorted({str(g["item"]["dataset"]) for g in good})
    if name is None:
        if len(datasets) != 1:
            raise InputError(f"{path}: records of several datasets ({', '.join(datasets)}); pass --name PARC_<name>")
        name = "PARC_" + "".join(ch if ch.isalnum() else "_" for ch in datasets[0])
    name = parc_dataset_name(name)
    width = max((len(g["options"]) for g in good), default=2)
    letters = [letter for letter in LETTERS if any(letter in g["options"] for g in good)] or list(LETTERS[:width])
    rows: list[dict[str, Any]] = []
    for g in good:
        index = str(len(rows))
        item = g["item"]
        rows.append({
            "index": index, "image": build.image(g["paths"], index), "question": str(item["question"]),
            **{letter: str(g["options"][letter]) if letter in g["options"] else "" for letter in letters},
            "answer": ",".join(g["answers"]), "item_id": g["id"], "source_id": str(item["source_id"]),
            "source_dataset": str(item["dataset"]), "variation": g["variation"], "family": g["family"],
            "category": g["variation"], KIND_COLUMN: spec.kind,
        })
    return build.write(out_dir, name, rows,
                       {"kind": spec.kind, "benchmark": spec.title, "from": str(src), "variations": str(path),
                        "datasets": datasets, "limit": limit})
