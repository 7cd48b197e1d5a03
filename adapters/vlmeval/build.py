"""Build VLMEvalKit TSVs for the judge datasets from the public releases, offline.

None of the benchmarks ships a VLMEvalKit TSV with the human label as
``answer`` (nor each pair in both orders, nor PARC's variations), so these
builders read the public files from a local directory and write
``<out>/<name>.tsv`` (VLMEvalKit's format: ``index``, ``image`` as base64,
``question``, ``answer`` = the human label, ``category``, ...) and a manifest
``<out>/<name>.judgecp.json`` with what was read, written and left out.
Nothing is downloaded here; see ``docs/vlmeval.md`` for where to get the
sources. Rows that cannot be judged are counted in the manifest with a
reason (``image_missing``, ``label_missing``, ``label_off_scale``,
``label_not_numeric``, ``field_missing``, ``duplicate_id``,
``malformed_json_line``; pairwise: ``tie_label``, ``label_unknown``; PARC:
``options_invalid``, ``answer_not_an_option``, ``variation_unknown``) and the
dataset's ``evaluate()`` reports them.

An image used by several rows is stored once; later rows hold the first
row's index in ``image`` (VLMEvalKit's own space-saving convention).

Only the standard library is used, so the builders run without VLMEvalKit.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.specs import (
    KIND_COLUMN,
    LETTERS,
    MLLM_JUDGE,
    MLLM_JUDGE_PAIR,
    PARC,
    POLARIS,
    SCALE_COLUMN,
)
from judgecp.errors import InputError
from judgecp.exclusions import Exclusions
from judgecp.scale import LikertScale
from judgecp.tables import read_jsonl

#: Manifest format version (bump when its fields change meaning).
MANIFEST_VERSION = 1

MLLM_SCORE_FILES = (
    "Benchmark/score.jsonl",
    "Dataset/Benchmark/score.jsonl",
    "score.jsonl",
)
MLLM_LITE_FILES = (
    "Benchmark_Lite/score_lite.jsonl",
    "Dataset/Benchmark_Lite/score_lite.jsonl",
    "score_lite.jsonl",
)
MLLM_IMAGE_DIRS = ("image", "Dataset/image", "images")
MLLM_PAIR_FILES = (
    "Benchmark/pair.jsonl",
    "Dataset/Benchmark/pair.jsonl",
    "Benchmark/Pair.jsonl",
    "Dataset/Benchmark/Pair.jsonl",
    "pair.jsonl",
    "Pair.jsonl",
)
MLLM_PAIR_LITE_FILES = (
    "Benchmark_Lite/pair_lite.jsonl",
    "Dataset/Benchmark_Lite/pair_lite.jsonl",
    "pair_lite.jsonl",
)
POLARIS_FILES = ("polaris_test.csv",)
POLARIS_IMAGE_DIRS = ("images", "image")


@dataclass
class BuildResult:
    """What a builder wrote and what it left out."""

    name: str
    tsv: Path
    manifest: Path
    rows_read: int
    rows_written: int
    excluded: Exclusions = field(default_factory=Exclusions)
    images: int = 0

    def summary(self) -> str:
        excl = ", ".join(f"{e['reason']} {e['count']}" for e in self.excluded.to_json()) or "none"
        return (
            f"{self.name}: read {self.rows_read} rows, wrote {self.rows_written} "
            f"({self.images} distinct images) to {self.tsv}; left out: {excl}"
        )


def manifest_path(tsv: Path) -> Path:
    return tsv.with_name(tsv.stem + ".judgecp.json")


def read_manifest(tsv: str | Path) -> dict[str, Any] | None:
    """The build manifest beside a TSV, or ``None`` if there is none (or it is unreadable)."""
    path = manifest_path(Path(tsv))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _find(source: Path, candidates: Sequence[str], what: str, explicit: str | Path | None) -> Path:
    if explicit is not None:
        path = Path(explicit)
        if not path.exists():
            raise InputError(f"{what} {path} does not exist")
        return path
    for rel in candidates:
        path = source / rel
        if path.exists():
            return path
    raise InputError(
        f"no {what} under {source} (looked for {', '.join(candidates)}); pass it explicitly"
    )


def _label(value: Any, scale: LikertScale) -> tuple[int | None, str | None]:
    """An integer label of the scale, or ``(None, reason)``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, "label_missing"
    if isinstance(value, bool):
        return None, "label_not_numeric"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None, "label_not_numeric"
    if math.isnan(number):
        return None, "label_missing"
    if number != round(number) or int(number) not in set(scale.labels.tolist()):
        return None, "label_off_scale"
    return int(number), None


class _ImageStore:
    """base64 of each image (or list of images) once; later rows refer to the first row's index.

    A list of images (two-image comparative items) is VLMEvalKit's
    ``str(list)`` of base64 strings, stored once per distinct list.
    """

    def __init__(self) -> None:
        self.first_index: dict[Path | tuple[Path, ...], str] = {}

    def cell(self, path: Path, index: str) -> str:
        resolved = path.resolve()
        if resolved in self.first_index:
            return self.first_index[resolved]
        self.first_index[resolved] = index
        return base64.b64encode(resolved.read_bytes()).decode("ascii")

    def cells(self, paths: Sequence[Path], index: str) -> str:
        if len(paths) == 1:
            return self.cell(paths[0], index)
        key = tuple(p.resolve() for p in paths)
        if key in self.first_index:
            return self.first_index[key]
        self.first_index[key] = index
        return repr([base64.b64encode(p.read_bytes()).decode("ascii") for p in key])


def _write(
    out_dir: Path,
    name: str,
    columns: Sequence[str],
    rows: Iterable[dict[str, Any]],
    result_fields: dict[str, Any],
    source_info: dict[str, Any],
) -> BuildResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    tsv = out_dir / f"{name}.tsv"
    tmp = tsv.with_suffix(".tsv.tmp")
    written = 0
    digest = hashlib.md5()
    with tmp.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), delimiter="\t", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
            written += 1
    if written == 0:
        tmp.unlink()
        excluded: Exclusions = result_fields["excluded"]
        reasons = ", ".join(f"{e['reason']} {e['count']}" for e in excluded.to_json()) or "none"
        raise InputError(f"{name}: no row could be built (left out: {reasons})")
    tmp.replace(tsv)
    with tsv.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    result = BuildResult(name=name, tsv=tsv, manifest=manifest_path(tsv), rows_written=written, **result_fields)
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "dataset": name,
        "kind": source_info.get("kind", "likert"),
        "tsv": tsv.name,
        "tsv_md5": digest.hexdigest(),
        "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": source_info,
        "rows_read": result.rows_read,
        "rows_written": written,
        "distinct_images": result.images,
        "excluded": result.excluded.to_json(),
    }
    result.manifest.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


def build_mllm_judge(
    source: str | Path,
    out_dir: str | Path,
    *,
    lite: bool = False,
    name: str | None = None,
    score_file: str | Path | None = None,
    image_dir: str | Path | None = None,
    limit: int | None = None,
) -> BuildResult:
    """``MLLMJudge_CP.tsv`` (or ``MLLMJudge_CP_Lite.tsv``) from the MLLM-as-a-Judge release.

    ``source`` is a checkout of github.com/Dongping-Chen/MLLM-Judge (or a
    download of huggingface.co/datasets/shuaishuaicdp/MLLM-Judge): the scoring
    split ``score.jsonl`` (``score_lite.jsonl`` with ``lite``) and the image
    folder. Each JSON line has ``score_id, name, answer, id, instruction,
    image_path, original_dataset, human``; the TSV keeps them as ``index``
    (= score_id), ``actor``, ``response``, ``image_id``, ``question``,
    ``category`` and ``answer`` (= the human score 1-5). ``limit`` keeps the
    first N usable rows (small test sets).
    """
    spec = MLLM_JUDGE
    src = Path(source)
    name = name or ("MLLMJudge_CP_Lite" if lite else "MLLMJudge_CP")
    scores = _find(src, MLLM_LITE_FILES if lite else MLLM_SCORE_FILES, "scoring file", score_file)
    images = _find(src, MLLM_IMAGE_DIRS, "image folder", image_dir)
    excluded = Exclusions()
    store = _ImageStore()
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    read = 0
    for lineno, item in read_jsonl(scores):
        read += 1
        if item is None:
            excluded.add("malformed_json_line", f"line {lineno}")
            continue
        index = str(item.get("score_id", "")).strip()
        if not index:
            excluded.add("field_missing", f"line {lineno}: score_id")
            continue
        if index in seen:
            excluded.add("duplicate_id", index)
            continue
        seen.add(index)
        absent = [k for k in ("instruction", "answer", "image_path") if not str(item.get(k) or "").strip()]
        if absent:
            excluded.add("field_missing", f"{index}: {', '.join(absent)}")
            continue
        label, reason = _label(item.get("human"), spec.scale)
        if label is None:
            excluded.add(reason or "label_missing", index)
            continue
        image_path = images / str(item["image_path"])
        if not image_path.is_file():
            excluded.add("image_missing", f"{index}: {item['image_path']}")
            continue
        if limit is not None and len(rows) >= limit:
            continue
        rows.append(
            {
                "index": index,
                "image": store.cell(image_path, index),
                "question": item["instruction"],
                "response": item["answer"],
                "answer": label,
                "category": str(item.get("original_dataset") or "").strip(),
                "actor": str(item.get("name") or "").strip(),
                "image_id": str(item.get("id") or "").strip(),
                KIND_COLUMN: spec.kind,
                SCALE_COLUMN: f"{spec.scale.minimum}:{spec.scale.maximum}",
            }
        )
    columns = ["index", "image", "question", "response", "answer", "category", "actor", "image_id",
               KIND_COLUMN, SCALE_COLUMN]
    return _write(
        Path(out_dir), name, columns, rows,
        {"rows_read": read, "excluded": excluded, "images": len(store.first_index)},
        {"benchmark": spec.title, "from": spec.source, "scores": str(scores), "images": str(images),
         "limit": limit},
    )


def polaris_label(mean_score: float) -> int:
    """Polaris mean score on [0, 1] to the 1-5 scale: ``round(4 * mean) + 1``, halves to even.

    This reproduces the labels of the paper's released features
    (``../shared/data/polaris``: 4c = 0.5 -> 1, 1.5 -> 3, 2.5 -> 3); the
    paper's text ("[1.5, 2.5) maps to 2") rounds halves up instead, which
    differs only for means exactly on a half.
    """
    if not 0.0 <= mean_score <= 1.0:
        raise ValueError(f"Polaris score {mean_score!r} is outside [0, 1]")
    return round(4.0 * mean_score) + 1


def build_polaris(
    source: str | Path,
    out_dir: str | Path,
    *,
    name: str = "Polaris_CP",
    csv_file: str | Path | None = None,
    image_dir: str | Path | None = None,
    limit: int | None = None,
) -> BuildResult:
    """``Polaris_CP.tsv`` from the Polaris release (``polaris_test.csv`` + ``images/``).

    ``polaris_test.csv`` has one row per human judgment (``imgid, mt, refs,
    score`` with score on [0, 1]); rows of the same (image, caption) pair are
    averaged, as in the paper, and the mean is binned with
    :func:`polaris_label`. The TSV keeps ``caption`` (= ``question``),
    ``answer`` (the 1-5 label), ``score_mean``, ``n_annotations``, ``refs``
    and ``imgid``. ``limit`` keeps the first N usable pairs.
    """
    spec = POLARIS
    src = Path(source)
    table = _find(src, POLARIS_FILES, "polaris_test.csv", csv_file)
    images = _find(src, POLARIS_IMAGE_DIRS, "image folder", image_dir)
    excluded = Exclusions()
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    read = 0
    with table.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        need = {"imgid", "mt", "score"}
        if not reader.fieldnames or not need <= set(reader.fieldnames):
            raise InputError(f"{table}: needs columns {sorted(need)}, has {reader.fieldnames}")
        for row in reader:
            read += 1
            imgid, caption = (row.get("imgid") or "").strip(), (row.get("mt") or "").strip()
            if not imgid or not caption:
                excluded.add("field_missing", f"line {reader.line_num}")
                continue
            try:
                score = float(row.get("score") or "nan")
            except ValueError:
                excluded.add("label_not_numeric", f"line {reader.line_num}")
                continue
            if math.isnan(score):
                excluded.add("label_missing", f"line {reader.line_num}")
                continue
            if not 0.0 <= score <= 1.0:
                excluded.add("label_off_scale", f"line {reader.line_num}")
                continue
            entry = pairs.setdefault((imgid, caption), {"scores": [], "refs": row.get("refs", "")})
            entry["scores"].append(score)
    store = _ImageStore()
    rows: list[dict[str, Any]] = []
    for number, ((imgid, caption), entry) in enumerate(pairs.items()):
        index = str(number)
        image_path = images / imgid
        if not image_path.is_file():
            excluded.add("image_missing", f"{index}: {imgid}")
            continue
        if limit is not None and len(rows) >= limit:
            continue
        mean = sum(entry["scores"]) / len(entry["scores"])
        rows.append(
            {
                "index": index,
                "image": store.cell(image_path, index),
                "question": caption,
                "caption": caption,
                "answer": polaris_label(mean),
                "score_mean": repr(mean),
                "n_annotations": len(entry["scores"]),
                "refs": entry["refs"],
                "imgid": imgid,
                KIND_COLUMN: spec.kind,
                SCALE_COLUMN: f"{spec.scale.minimum}:{spec.scale.maximum}",
            }
        )
    columns = ["index", "image", "question", "caption", "answer", "score_mean", "n_annotations", "refs",
               "imgid", KIND_COLUMN, SCALE_COLUMN]
    return _write(
        Path(out_dir), name, columns, rows,
        {"rows_read": read, "excluded": excluded, "images": len(store.first_index)},
        {"benchmark": spec.title, "from": spec.source, "csv": str(table), "images": str(images),
         "pairs": len(pairs), "label_rule": "round_half_even(4 * mean) + 1", "limit": limit},
    )


# -- pairwise judging in both orders ------------------------------------------------

PAIR_LABELS = {"A": "A", "B": "B"}
PAIR_TIES = {"C", "TIE", "TIE (BOTHBAD)", "BOTH", "NONE"}


def _response(item: dict[str, Any], key: str) -> tuple[str, str] | None:
    """``(text, model name)`` of ``answer1``/``answer2`` (``{"name", "answer"}``, or a plain string)."""
    value = item.get(key)
    if isinstance(value, dict):
        text = value.get("answer")
        name = str(value.get("name") or "")
    else:
        text, name = value, ""
    if text is None or not str(text).strip():
        return None
    return str(text), name


def build_mllm_judge_pair(
    source: str | Path,
    out_dir: str | Path,
    *,
    lite: bool = False,
    name: str | None = None,
    pair_file: str | Path | None = None,
    image_dir: str | Path | None = None,
    limit: int | None = None,
) -> BuildResult:
    """``MLLMJudgePair_CP.tsv`` (or ``_Lite``): MLLM-as-a-Judge's pair comparisons, each pair in both orders.

    ``source`` is a checkout of github.com/Dongping-Chen/MLLM-Judge (or the
    Hugging Face copy): the pair split ``pair.jsonl`` (``pair_lite.jsonl``
    with ``lite``) and the image folder. Each JSON line has ``id`` (the
    image), ``pair_id``, ``image_path``, ``original_dataset``,
    ``instruction``, ``answer1``/``answer2`` (``{"name", "answer"}``) and
    ``human_answer`` (``A``, ``B``, or ``C`` for a tie).

    Every pair gives two rows (SCOPE's BPE needs both): ``order = fwd`` shows
    ``answer1`` as assistant A, ``order = rev`` swaps the two responses. In
    both, ``preference`` is the human preference in the *original* order
    (the core's pairwise label) and ``answer`` the letter of the preferred
    response in the row's own order (VLMEvalKit's convention). Ties have no
    binary ground truth (SCOPE drops them) and are left out as ``tie_label``;
    other labels as ``label_unknown``. ``limit`` keeps the first N usable
    pairs (2N rows).
    """
    spec = MLLM_JUDGE_PAIR
    src = Path(source)
    name = name or ("MLLMJudgePair_CP_Lite" if lite else "MLLMJudgePair_CP")
    pairs = _find(src, MLLM_PAIR_LITE_FILES if lite else MLLM_PAIR_FILES, "pair-comparison file", pair_file)
    images = _find(src, MLLM_IMAGE_DIRS, "image folder", image_dir)
    excluded = Exclusions()
    store = _ImageStore()
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []
    read = kept = 0
    for lineno, item in read_jsonl(pairs):
        read += 1
        if item is None:
            excluded.add("malformed_json_line", f"line {lineno}")
            continue
        pair_id = str(item.get("pair_id", "")).strip()
        if not pair_id:
            excluded.add("field_missing", f"line {lineno}: pair_id")
            continue
        if pair_id in seen:
            excluded.add("duplicate_id", pair_id)
            continue
        seen.add(pair_id)
        first, second = _response(item, "answer1"), _response(item, "answer2")
        absent = [k for k in ("instruction", "image_path") if not str(item.get(k) or "").strip()]
        absent += [k for k, v in (("answer1", first), ("answer2", second)) if v is None]
        if absent:
            excluded.add("field_missing", f"{pair_id}: {', '.join(absent)}")
            continue
        assert first is not None and second is not None
        raw = str(item.get("human_answer", item.get("human", "")) or "").strip().upper()
        if not raw:
            excluded.add("label_missing", pair_id)
            continue
        if raw in PAIR_TIES:
            excluded.add("tie_label", pair_id)
            continue
        if raw not in PAIR_LABELS:
            excluded.add("label_unknown", f"{pair_id}: {raw}")
            continue
        rel = str(item["image_path"])
        image_path = next((p for p in (images / rel, src / rel, images / Path(rel).name) if p.is_file()), None)
        if image_path is None:
            excluded.add("image_missing", f"{pair_id}: {rel}")
            continue
        if limit is not None and kept >= limit:
            continue
        kept += 1
        preference = PAIR_LABELS[raw]
        for order, (a, b) in (("fwd", (first, second)), ("rev", (second, first))):
            index = str(len(rows))
            rows.append(
                {
                    "index": index,
                    "image": store.cell(image_path, index),
                    "question": item["instruction"],
                    "response_a": a[0],
                    "response_b": b[0],
                    "answer": preference if order == "fwd" else ("B" if preference == "A" else "A"),
                    "preference": preference,
                    "pair_id": pair_id,
                    "order": order,
                    "category": str(item.get("original_dataset") or "").strip(),
                    "model_a": a[1],
                    "model_b": b[1],
                    "image_id": str(item.get("id") or "").strip(),
                    KIND_COLUMN: spec.kind,
                }
            )
    columns = ["index", "image", "question", "response_a", "response_b", "answer", "preference", "pair_id",
               "order", "category", "model_a", "model_b", "image_id", KIND_COLUMN]
    return _write(
        Path(out_dir), name, columns, rows,
        {"rows_read": read, "excluded": excluded, "images": len(store.first_index)},
        {"kind": spec.kind, "benchmark": spec.title, "from": spec.source, "pairs_file": str(pairs),
         "images": str(images), "pairs": kept, "limit": limit},
    )


# -- PARC variation datasets -----------------------------------------------------------

PARC_FILE = "variations.jsonl"


def parc_dataset_name(name: str) -> str:
    if not name.startswith("PARC_") or len(name) <= len("PARC_"):
        raise InputError(f"PARC dataset names start with 'PARC_' (judgecp registers them by that prefix), got {name!r}")
    return name


def build_parc(
    source: str | Path,
    out_dir: str | Path,
    *,
    name: str | None = None,
    limit: int | None = None,
) -> BuildResult:
    """``PARC_<name>.tsv`` from a folder in the local PARC variation format (``docs/parc_format.md``).

    One TSV row per (source item, prompt variation): ``index`` (a running
    number; the record's ``id`` is kept as ``item_id``), ``image`` (base64,
    or VLMEvalKit's list of base64 strings for two-image items), ``question``,
    the options as columns ``A``, ``B``, ... (letters of the record, in
    order), ``answer`` (the correct letters, comma-separated),
    ``source_id``, ``source_dataset`` (the record's ``dataset``),
    ``variation``, ``family``. The default name is ``PARC_<dataset>`` when all
    records share one dataset. Left out and counted: ``malformed_json_line``,
    ``field_missing``, ``duplicate_id``, ``options_invalid`` (fewer than 2
    options, or keys that are not letters A-Z), ``answer_missing``,
    ``answer_not_an_option``, ``variation_unknown`` (a variation outside
    PARC's names without a ``family`` field), ``image_missing``. A source
    item without its original prompt ``O`` is kept; the core counts
    ``no_original_prompt``. ``limit`` keeps the first N usable records.
    """
    from judgecp.parc import FAMILIES, family_of

    spec = PARC
    src = Path(source)
    path = _find(src, (PARC_FILE,), "variation file", None)
    excluded = Exclusions()
    store = _ImageStore()
    seen: set[str] = set()
    good: list[dict[str, Any]] = []
    read = 0
    for lineno, item in read_jsonl(path):
        read += 1
        if item is None:
            excluded.add("malformed_json_line", f"line {lineno}")
            continue
        rid = str(item.get("id") or "").strip()
        if not rid:
            excluded.add("field_missing", f"line {lineno}: id")
            continue
        if rid in seen:
            excluded.add("duplicate_id", rid)
            continue
        seen.add(rid)
        absent = [k for k in ("source_id", "dataset", "variation", "question", "image")
                  if not item.get(k) or (isinstance(item.get(k), str) and not item[k].strip())]
        if absent:
            excluded.add("field_missing", f"{rid}: {', '.join(absent)}")
            continue
        options = item.get("options")
        if (not isinstance(options, dict) or len(options) < 2
                or any(str(k) not in LETTERS for k in options)
                or any(v is None or not str(v).strip() for v in options.values())):
            excluded.add("options_invalid", rid)
            continue
        correct = item.get("correct")
        answers = [str(c).strip() for c in (correct if isinstance(correct, list) else [correct]) if c is not None]
        answers = [a for a in answers if a]
        if not answers:
            excluded.add("answer_missing", rid)
            continue
        if any(a not in options for a in answers):
            excluded.add("answer_not_an_option", f"{rid}: {','.join(answers)}")
            continue
        variation = str(item["variation"]).strip()
        family = str(item.get("family") or "").strip().upper()
        try:
            known = family_of(variation)
        except InputError:
            known = None
        if known is None and family not in FAMILIES:
            excluded.add("variation_unknown", f"{rid}: {variation}")
            continue
        family = known or family
        rels = item["image"] if isinstance(item["image"], list) else [item["image"]]
        paths = [src / str(r) for r in rels]
        if not rels or not all(p.is_file() for p in paths):
            excluded.add("image_missing", f"{rid}: {', '.join(str(r) for r in rels)}")
            continue
        if limit is not None and len(good) >= limit:
            continue
        good.append({"item": item, "id": rid, "options": options, "answers": answers, "variation": variation,
                     "family": family, "paths": paths})
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
        row = {
            "index": index,
            "image": store.cells(g["paths"], index),
            "question": str(item["question"]),
            "answer": ",".join(g["answers"]),
            "item_id": g["id"],
            "source_id": str(item["source_id"]),
            "source_dataset": str(item["dataset"]),
            "variation": g["variation"],
            "family": g["family"],
            "category": g["variation"],
            KIND_COLUMN: spec.kind,
        }
        for letter in letters:
            row[letter] = str(g["options"][letter]) if letter in g["options"] else ""
        rows.append(row)
    columns = ["index", "image", "question", *letters, "answer", "item_id", "source_id", "source_dataset",
               "variation", "family", "category", KIND_COLUMN]
    return _write(
        Path(out_dir), name, columns, rows,
        {"rows_read": read, "excluded": excluded, "images": len(store.first_index)},
        {"kind": spec.kind, "benchmark": spec.title, "from": str(src), "variations": str(path),
         "datasets": datasets, "limit": limit},
    )
