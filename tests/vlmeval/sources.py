"""Small stand-ins for the public releases, in their real layouts (no download, no PIL).

* :func:`mllm_judge_source`: ``Dataset/Benchmark/score.jsonl`` + ``Dataset/image/<id>.png``
  with the fields of github.com/Dongping-Chen/MLLM-Judge's scoring split;
* :func:`polaris_source`: ``polaris_test.csv`` (``imgid, mt, refs, score``,
  one row per human judgment) + ``images/``, the layout of
  huggingface.co/datasets/yuwd/Polaris.

Each has deliberately bad rows (missing image, invalid label, ...) whose
counts the tests check.
"""

from __future__ import annotations

import csv
import json
import struct
import zlib
from pathlib import Path

CATEGORIES = ["coco", "ChartQA", "WIT", "mathvista"]


def png_bytes(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid solid-colour RGB PNG."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def mllm_judge_source(root: Path, n: int = 12, bad_rows: bool = True) -> Path:
    """``n`` good rows (two per image, labels cycling 1..5) plus, with ``bad_rows``, one of each bad kind.

    Bad rows: human score 0 (``label_off_scale``), ``"N/A"`` (``label_not_numeric``),
    an image that does not exist (``image_missing``), a repeated score_id
    (``duplicate_id``), a line cut in the middle (``malformed_json_line``).
    """
    bench = root / "Dataset" / "Benchmark"
    images = root / "Dataset" / "image"
    bench.mkdir(parents=True, exist_ok=True)
    images.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        image_id = 100 + i // 2
        (images / f"{image_id}.png").write_bytes(png_bytes(8 + i, 6 + i // 2, (20 * i % 256, 90, 160)))
        lines.append(json.dumps({
            "score_id": i * 3, "name": ["llava", "gpt4", "gemini"][i % 3],
            "answer": f"The figure shows item {i}.\tIt has \"quotes\",\nnewlines and {{braces}}.",
            "id": image_id, "instruction": f"Please analyse this figure: what is item {i}?",
            "image_path": f"{image_id}.png", "original_dataset": CATEGORIES[i % len(CATEGORIES)],
            "human": (i % 5) + 1 if i % 2 == 0 else str((i % 5) + 1),
        }))
    if bad_rows:
        (images / "900.png").write_bytes(png_bytes(5, 5, (1, 2, 3)))
        base = {"name": "llava", "answer": "a", "id": 900, "instruction": "q", "image_path": "900.png",
                "original_dataset": "coco"}
        lines.append(json.dumps({**base, "score_id": 1001, "human": 0}))
        lines.append(json.dumps({**base, "score_id": 1002, "human": "N/A"}))
        lines.append(json.dumps({**base, "score_id": 1003, "human": 3, "image_path": "missing.png"}))
        lines.append(json.dumps({**base, "score_id": 0, "human": 2}))
        lines.append('{"score_id": 1005, "name": "llava", "answer": "cut')
    (bench / "score.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def polaris_source(root: Path, n_pairs: int = 8, bad_rows: bool = True) -> Path:
    """``n_pairs`` (image, caption) pairs with 1-3 judgments each; means chosen to hit the halves.

    Pair ``k`` gets scores whose mean is ``(k mod 9) / 8`` (so 4 * mean runs
    through 0, 0.5, 1, ..., 4: the round-half-even rule is exercised), split
    over two judgments for k not a multiple of 3.
    """
    images = root / "images"
    images.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(n_pairs):
        imgid = f"img{k // 2}.png"
        (images / imgid).write_bytes(png_bytes(7, 7, (30 * k % 256, 0, 0)))
        mean = (k % 9) / 8
        scores = [mean] if k % 3 == 0 or mean in (0.0, 1.0) else [mean - 0.125, mean + 0.125]
        for s in scores:
            rows.append({"imgid": imgid, "mt": f"caption {k}: a red square", "refs": "['a red square']", "score": s})
    if bad_rows:
        rows.append({"imgid": "absent.png", "mt": "caption of a missing image", "refs": "[]", "score": 0.5})
        rows.append({"imgid": "img0.png", "mt": "caption with a bad score", "refs": "[]", "score": 1.5})
        rows.append({"imgid": "img0.png", "mt": "caption with no score", "refs": "[]", "score": ""})
    with (root / "polaris_test.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["imgid", "mt", "refs", "score"])
        writer.writeheader()
        writer.writerows(rows)
    return root
