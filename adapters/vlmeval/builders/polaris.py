"""Polaris caption-quality judgments (Wada et al., CVPR 2024): ``polaris_test.csv`` + ``images/``."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.builders.common import Build, BuildResult, find
from judgecp.adapters.vlmeval.specs import KIND_COLUMN, POLARIS, SCALE_COLUMN
from judgecp.base.errors import InputError

CSV_FILES = ("polaris_test.csv",)
IMAGE_DIRS = ("images", "image")


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


def _score(row: dict[str, Any]) -> tuple[float | None, str | None]:
    try:
        score = float(row.get("score") or "nan")
    except ValueError:
        return None, "label_not_numeric"
    if math.isnan(score):
        return None, "label_missing"
    return (score, None) if 0.0 <= score <= 1.0 else (None, "label_off_scale")


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
    table = find(Path(source), CSV_FILES, "polaris_test.csv", csv_file)
    images = find(Path(source), IMAGE_DIRS, "image folder", image_dir)
    build = Build()
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    with table.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        need = {"imgid", "mt", "score"}
        if not reader.fieldnames or not need <= set(reader.fieldnames):
            raise InputError(f"{table}: needs columns {sorted(need)}, has {reader.fieldnames}")
        for row in reader:
            build.read += 1
            imgid, caption = (row.get("imgid") or "").strip(), (row.get("mt") or "").strip()
            score, reason = _score(row) if imgid and caption else (None, "field_missing")
            if score is None:
                build.excluded.add(reason or "field_missing", f"line {reader.line_num}")
                continue
            entry = pairs.setdefault((imgid, caption), {"scores": [], "refs": row.get("refs", "")})
            entry["scores"].append(score)
    rows: list[dict[str, Any]] = []
    for number, ((imgid, caption), entry) in enumerate(pairs.items()):
        index = str(number)
        if not (images / imgid).is_file():
            build.excluded.add("image_missing", f"{index}: {imgid}")
            continue
        if limit is not None and len(rows) >= limit:
            continue
        mean = sum(entry["scores"]) / len(entry["scores"])
        rows.append({
            "index": index, "image": build.image(images / imgid, index), "question": caption, "caption": caption,
            "answer": polaris_label(mean), "score_mean": repr(mean), "n_annotations": len(entry["scores"]),
            "refs": entry["refs"], "imgid": imgid, KIND_COLUMN: spec.kind,
            SCALE_COLUMN: f"{spec.scale.minimum}:{spec.scale.maximum}",
        })
    return build.write(
        out_dir,
        name,
        rows,
        {
            "kind": spec.kind,
            "benchmark": spec.title,
            "from": spec.source,
            "csv": str(table),
            "images": str(images),
            "pairs": len(pairs),
            "label_rule": "round_half_even(4 * mean) + 1",
            "limit": limit,
        },
    )
