"""HPSv2 (HPD v2) and MJ-Bench readers on small local files; the hub paths with patched clients."""

from __future__ import annotations

import json
import sys
import tarfile
import types

import numpy as np
import pytest

from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.data.ensemble.sources import (
    HPDV2_HUB_ID,
    MJBENCH_HUB_ID,
    balance_order,
    read_hpdv2,
    read_mjbench,
)


def png(path, value):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((4, 4, 3), value, dtype=np.uint8)).save(path)


def hpdv2_dir(root):
    annotations = [
        {"prompt": "a cat", "image_path": ["0/a.png", "0/b.png", "0/c.png"], "rank": [2, 1, 2],
         "raw_annotations": []},
        {"prompt": "a dog", "image_path": ["1/a.png", "1/missing.png"], "rank": [1, 2]},
        {"prompt": "broken"},
    ]
    (root / "test.json").write_text(json.dumps(annotations))
    for name in ("0/a.png", "0/b.png", "0/c.png", "1/a.png"):
        png(root / "test" / name, 100)
    return root


def test_hpdv2_local_pairs_follow_the_ranks(tmp_path):
    exclusions = Exclusions()
    items = read_hpdv2(hpdv2_dir(tmp_path), exclusions=exclusions)
    # from "a cat": (a, b) B better, (a, c) tie -> left out, (b, c) A better
    assert [(i.id, i.preferred) for i in items] == [("hpdv2-test-0-0-1", "B"), ("hpdv2-test-0-1-2", "A")]
    assert items[0].caption == "a cat" and items[0].images[0].endswith("test/0/a.png")
    assert items[0].source == HPDV2_HUB_ID
    assert exclusions.counts["tied human rank"] == 1
    assert exclusions.counts["image file missing"] == 1
    assert sum(v for k, v in exclusions.counts.items() if k.startswith("malformed")) == 1
    assert len(read_hpdv2(tmp_path, limit=1)) == 1


def test_hpdv2_train_annotations(tmp_path):
    (tmp_path / "train.json").write_text(
        json.dumps([{"prompt": "p", "file_path": ["x.png", "y.png"], "human_preference": [0, 1]}])
    )
    png(tmp_path / "train" / "x.png", 1)
    png(tmp_path / "train" / "y.png", 2)
    (item,) = read_hpdv2(tmp_path, split="train")
    assert item.preferred == "B"


def test_hpdv2_hub_path_downloads_and_unpacks(tmp_path, monkeypatch):
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    (tmp_path / "src").mkdir()
    source = hpdv2_dir(tmp_path / "src")
    (snapshot / "test.json").write_text((source / "test.json").read_text())
    with tarfile.open(snapshot / "test.tar.gz", "w:gz") as tar:
        tar.add(source / "test", arcname="test")
    calls = {}

    def snapshot_download(repo_id, repo_type=None, allow_patterns=None, cache_dir=None):
        calls.update(repo_id=repo_id, repo_type=repo_type, allow_patterns=allow_patterns)
        return str(snapshot)

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(snapshot_download=snapshot_download))
    items = read_hpdv2()
    assert calls == {"repo_id": "ymhao/HPDv2", "repo_type": "dataset", "allow_patterns": ["test.json", "test.tar.gz"]}
    assert len(items) == 2 and (snapshot / "test" / "0" / "a.png").exists()


def mjbench_dir(root):
    rows = [
        {"caption": "c0", "image0": "i/0a.png", "image1": "i/0b.png", "label": 0, "info": "blur"},
        {"caption": "c1", "image0": "i/1a.png", "image1": "i/1b.png", "label": 1, "info": "face"},
        {"caption": "c2", "image0": "i/nope.png", "image1": "i/1b.png", "label": 0},
        {"caption": "c3", "image0": "i/0a.png", "image1": "i/1b.png", "label": 3},
    ]
    (root / "quality.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n{oops\n")
    for name in ("0a", "0b", "1a", "1b"):
        png(root / "i" / f"{name}.png", 50)
    return root


def test_mjbench_local_rows(tmp_path):
    exclusions = Exclusions()
    items = read_mjbench(mjbench_dir(tmp_path), split="quality", exclusions=exclusions)
    assert [(i.caption, i.preferred, i.meta["info"]) for i in items] == [("c0", "A", "blur"), ("c1", "B", "face")]
    assert exclusions.counts["image file missing"] == 1
    assert exclusions.counts["malformed JSON line"] == 1
    assert sum(v for k, v in exclusions.counts.items() if k.startswith("malformed MJ-Bench")) == 1
    with pytest.raises(InputError, match="split must be one of"):
        read_mjbench(tmp_path, split="speed")
    with pytest.raises(InputError, match="bias.jsonl: no such file"):
        read_mjbench(tmp_path, split="bias")


def test_mjbench_hub_path(monkeypatch):
    calls = {}

    def load_dataset(name, split=None):
        calls.update(name=name, split=split)
        return [{"caption": "c", "image0": "PIL-0", "image1": "PIL-1", "label": 1, "info": None}]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    (item,) = read_mjbench(split="bias")
    assert calls == {"name": MJBENCH_HUB_ID, "split": "bias"} and MJBENCH_HUB_ID == "MJ-Bench/MJ-Bench"
    assert item.images == ("PIL-0", "PIL-1") and item.preferred == "B"


def test_balance_order_swaps_half_and_rekeys(tmp_path):
    items = read_mjbench(mjbench_dir(tmp_path)) * 5
    balanced = balance_order(items, random_state=0)
    swapped = [b for b in balanced if b.meta.get("swapped")]
    assert len(swapped) == len(items) // 2
    for before, after in zip(items, balanced, strict=True):
        if after.meta.get("swapped"):
            assert after.images == before.images[::-1] and after.preferred != before.preferred
        else:
            assert after == before
