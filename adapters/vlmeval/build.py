"""Build VLMEvalKit TSVs for the judge datasets from the public releases, offline.

Neither benchmark ships a VLMEvalKit TSV with the human score as ``answer``,
so these builders read the public files from a local directory and write
``<out>/<name>.tsv`` (VLMEvalKit's format: ``index``, ``image`` as base64,
``question``, ``answer`` = the human label, ``category``, ...) and a manifest
``<out>/<name>.judgecp.json`` with what was read, written and left out.
Nothing is downloaded here; see ``docs/vlmeval.md`` for where to get the
sources. Rows that cannot be judged are counted in the manifest with a
reason (``image_missing``, ``label_missing``, ``label_off_scale``,
``label_not_numeric``, ``field_missing``, ``duplicate_id``,
``malformed_json_line``) and the dataset's ``evaluate()`` reports them.

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

from judgecp.adapters.vlmeval.specs import KIND_COLUMN, MLLM_JUDGE, POLARIS, SCALE_COLUMN
from judgecp.errors import InputError
from judgecp.exclusions import Exclusions
from judgecp.scale import LikertScale

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
    """base64 of each image file once; later rows refer to the first row's index."""

    def __init__(self) -> None:
        self.first_index: dict[Path, str] = {}

    def cell(self, path: Path, index: str) -> str:
        resolved = path.resolve()
        if resolved in self.first_index:
            return self.first_index[resolved]
        self.first_index[resolved] = index
        return base64.b64encode(resolved.read_bytes()).decode("ascii")


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
    with scores.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            read += 1
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                excluded.add("malformed_json_line", f"line {lineno}")
                continue
            if not isinstance(item, dict):
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
