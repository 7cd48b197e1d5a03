"""Pairwise image-preference items from HPSv2 (HPD v2) and MJ-Bench.

Each reader returns :class:`PreferenceItem` objects: an id, the generation
prompt (caption), the two candidate images (paths, or PIL images from the
hub), and the human preference in that order ("A": the first is preferred).
The harness tasks render every prompt of a prompt set over these items.

**HPSv2 / HPD v2** (Wu et al. 2023, arXiv:2306.09341; hub dataset
``ymhao/HPDv2``, Apache-2.0, https://huggingface.co/datasets/ymhao/HPDv2).
Its test annotations ``test.json`` list, per caption, ``image_path`` (a list
of images, relative to the ``test/`` folder of ``test.tar.gz``) and ``rank``
(the averaged human ranking; lower is better). Every pair of images with
different ranks becomes an item, the better-ranked one preferred. Local
layout: ``ROOT/test.json`` with images under ``ROOT/test/`` (or ``ROOT/``).
The train annotations (``train.json``: ``human_preference`` 1 marks the
chosen image of ``file_path``) are read the same way with ``split="train"``.
From the hub, :func:`read_hpdv2` downloads ``test.json`` and ``test.tar.gz``
with ``huggingface_hub`` (the ``lm-eval`` extra) and unpacks them.

**MJ-Bench** (Chen et al. 2024, arXiv:2407.04842; gated hub dataset
``MJ-Bench/MJ-Bench``, https://huggingface.co/datasets/MJ-Bench/MJ-Bench;
request access first). Splits ``alignment``, ``safety``, ``quality``,
``bias``; columns ``caption``, ``image0``, ``image1``, ``label`` (0: image0
is preferred, 1: image1) and ``info``. The hub version is read with
``datasets.load_dataset``; a local directory holds ``<split>.jsonl`` with the
same columns and image paths relative to the directory.

MJ-Bench stores the preferred image first in most rows; :func:`balance_order`
swaps the candidates of a seeded random half of the items (re-keying the
preference) so that "A" is not always the answer.
"""

from __future__ import annotations

import itertools
import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from judgecp.base.errors import InputError, require
from judgecp.base.exclusions import Exclusions

HPDV2_HUB_ID = "ymhao/HPDv2"
MJBENCH_HUB_ID = "MJ-Bench/MJ-Bench"
MJBENCH_SPLITS = ("alignment", "safety", "quality", "bias")


@dataclass(frozen=True)
class PreferenceItem:
    """Two candidate images for one caption and the human preference between them."""

    id: str
    caption: str
    images: tuple[Any, Any]  #: paths (str) or PIL images
    preferred: Literal["A", "B"]  #: "A": the first image is preferred
    source: str
    meta: dict[str, Any] = field(default_factory=dict)


def balance_order(items: Sequence[PreferenceItem], random_state: int | None = 0) -> list[PreferenceItem]:
    """Swap the candidates of a seeded random half of the items (preference re-keyed)."""
    rng = np.random.default_rng(random_state)
    swap = rng.permutation(len(items)) < len(items) // 2
    out = []
    for item, flip in zip(items, swap, strict=True):
        if flip:
            other: Literal["A", "B"] = "B" if item.preferred == "A" else "A"
            item = replace(
                item,
                images=(item.images[1], item.images[0]),
                preferred=other,
                meta={**item.meta, "swapped": True},
            )
        out.append(item)
    return out


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read the annotations ({exc})") from exc


def _image_path(root: Path, split: str, name: str) -> str:
    for base in (root / split, root):
        if (base / name).exists():
            return str(base / name)
    return str(root / split / name)


def _download_hpdv2(split: str, cache_dir: str | None) -> Path:
    hub: Any = require("huggingface_hub", "lm-eval", f"downloading {HPDV2_HUB_ID}")
    root = Path(
        hub.snapshot_download(
            HPDV2_HUB_ID, repo_type="dataset", allow_patterns=[f"{split}.json", f"{split}.tar.gz"],
            cache_dir=cache_dir,
        )
    )
    archive = root / f"{split}.tar.gz"
    if archive.exists() and not (root / split).exists():
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4
                tar.extractall(root, filter="data")
            else:  # pragma: no cover - older interpreters
                tar.extractall(root)
    return root


def read_hpdv2(
    root: str | Path | None = None,
    *,
    split: Literal["test", "train"] = "test",
    limit: int | None = None,
    exclusions: Exclusions | None = None,
    cache_dir: str | None = None,
) -> list[PreferenceItem]:
    """HPD v2 preference pairs from a local directory or (``root=None``) the hub.

    Parameters
    ----------
    root : path or None
        Directory with ``<split>.json`` and the images; None downloads
        ``ymhao/HPDv2``.
    split : {"test", "train"}
    limit : int, optional
        Stop after this many items.
    exclusions : Exclusions, optional
        Receives the counted left-outs (ties, malformed entries, missing images).
    """
    exclusions = exclusions if exclusions is not None else Exclusions()
    base = _download_hpdv2(split, cache_dir) if root is None else Path(root)
    annotations = _load_json(base / f"{split}.json")
    if not isinstance(annotations, list):
        raise InputError(f"{base / f'{split}.json'}: expected a list of annotation objects")
    items: list[PreferenceItem] = []
    for index, entry in enumerate(annotations):
        try:
            caption = str(entry["prompt"])
            if split == "test":
                paths, ranks = list(entry["image_path"]), [float(r) for r in entry["rank"]]
            else:
                paths = list(entry["file_path"])
                ranks = [0.0 if int(h) == 1 else 1.0 for h in entry["human_preference"]]
            if len(paths) != len(ranks) or len(paths) < 2:
                raise ValueError("image and rank lists differ or hold fewer than two images")
        except (KeyError, TypeError, ValueError) as exc:
            exclusions.add(f"malformed HPD v2 entry ({exc})", index)
            continue
        for i, k in itertools.combinations(range(len(paths)), 2):
            if ranks[i] == ranks[k]:
                exclusions.add("tied human rank", f"{index}:{i}-{k}")
                continue
            first, second = _image_path(base, split, paths[i]), _image_path(base, split, paths[k])
            missing = [p for p in (first, second) if not Path(p).exists()]
            if missing:
                exclusions.add("image file missing", missing[0])
                continue
            items.append(
                PreferenceItem(
                    id=f"hpdv2-{split}-{index}-{i}-{k}",
                    caption=caption,
                    images=(first, second),
                    preferred="A" if ranks[i] < ranks[k] else "B",
                    source=HPDV2_HUB_ID,
                    meta={"annotation": index, "ranks": [ranks[i], ranks[k]]},
                )
            )
            if limit is not None and len(items) >= limit:
                return items
    return items


def mjbench_item(row: dict[str, Any], index: int, split: str, base: Path | None = None) -> PreferenceItem:
    """One MJ-Bench row as an item; ``base``: the local directory image paths are relative to (None: kept as given)."""
    label = int(row["label"])
    if label not in (0, 1):
        raise ValueError(f"label {label} is neither 0 nor 1")
    images = (row["image0"], row["image1"])
    if base is not None:
        images = tuple(str(base / str(im)) for im in images)  # type: ignore[assignment]
        for im in images:
            if not Path(im).exists():
                raise FileNotFoundError(im)
    return PreferenceItem(
        id=f"mjbench-{split}-{index}",
        caption=str(row["caption"]),
        images=images,
        preferred="A" if label == 0 else "B",
        source=MJBENCH_HUB_ID,
        meta={"split": split, "info": row.get("info")},
    )


def read_mjbench(
    root: str | Path | None = None,
    *,
    split: str = "quality",
    limit: int | None = None,
    exclusions: Exclusions | None = None,
) -> list[PreferenceItem]:
    """MJ-Bench preference pairs from a local directory or (``root=None``) the hub.

    Parameters
    ----------
    root : path or None
        Directory with ``<split>.jsonl``; None loads ``MJ-Bench/MJ-Bench``
        with ``datasets`` (gated: accept its terms on the hub first).
    split : str
        One of ``alignment``, ``safety``, ``quality``, ``bias``.
    limit : int, optional
    exclusions : Exclusions, optional
        Receives malformed rows and missing images.
    """
    if split not in MJBENCH_SPLITS:
        raise InputError(f"MJ-Bench split must be one of {', '.join(MJBENCH_SPLITS)}, got {split!r}")
    exclusions = exclusions if exclusions is not None else Exclusions()
    rows: Any
    if root is None:
        datasets: Any = require("datasets", "lm-eval", f"loading {MJBENCH_HUB_ID}")
        rows, base = datasets.load_dataset(MJBENCH_HUB_ID, split=split), None
    else:
        base = Path(root)
        path = base / f"{split}.jsonl"
        if not path.exists():
            raise InputError(f"{path}: no such file (a local MJ-Bench directory holds <split>.jsonl)")
        rows = []
        for line_no, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                exclusions.add("malformed JSON line", f"{path}:{line_no}")
                rows.append(None)
    items: list[PreferenceItem] = []
    for index, row in enumerate(rows):
        if row is None:
            continue
        try:
            items.append(mjbench_item(dict(row), index, split, base))
        except FileNotFoundError as exc:
            exclusions.add("image file missing", str(exc))
        except (KeyError, TypeError, ValueError) as exc:
            exclusions.add(f"malformed MJ-Bench row ({exc})", index)
        if limit is not None and len(items) >= limit:
            break
    return items
