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


def mllm_judge_folders(root: Path) -> tuple[Path, Path]:
    """MLLM-as-a-Judge's ``Dataset/Benchmark`` and ``Dataset/image`` under ``root``, made."""
    bench, images = root / "Dataset" / "Benchmark", root / "Dataset" / "image"
    for folder in (bench, images):
        folder.mkdir(parents=True, exist_ok=True)
    return bench, images


def mllm_judge_source(root: Path, n: int = 12, bad_rows: bool = True) -> Path:
    """``n`` good rows (two per image, labels cycling 1..5) plus, with ``bad_rows``, one of each bad kind.

    Bad rows: human score 0 (``label_off_scale``), ``"N/A"`` (``label_not_numeric``),
    an image that does not exist (``image_missing``), a repeated score_id
    (``duplicate_id``), a line cut in the middle (``malformed_json_line``).
    """
    bench, images = mllm_judge_folders(root)
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


def mllm_judge_pair_source(root: Path, n_pairs: int = 12, bad_rows: bool = True) -> Path:
    """``Dataset/Benchmark/pair.jsonl`` + ``Dataset/image/`` in MLLM-as-a-Judge's pair-comparison layout.

    ``n_pairs`` good pairs (two per image, human preference alternating A/B)
    plus, with ``bad_rows``: a tie (``C``: ``tie_label``), an unknown label
    (``label_unknown``), a missing image (``image_missing``), a repeated
    pair_id (``duplicate_id``), a pair without its second answer
    (``field_missing``) and a cut line (``malformed_json_line``).
    """
    bench, images = mllm_judge_folders(root)
    lines = []
    for i in range(n_pairs):
        image_id = 200 + i // 2
        (images / f"{image_id}.jpg").write_bytes(png_bytes(9 + i, 7, (10 * i % 256, 40, 200)))
        lines.append(json.dumps({
            "id": image_id, "pair_id": 10 * i, "image_path": f"{image_id}.jpg",
            "original_dataset": CATEGORIES[i % len(CATEGORIES)],
            "instruction": f"Please analyse this figure in detail and answer: what is shown in part {i}?",
            "answer1": {"name": ["gpt4", "llava"][i % 2], "answer": f"Part {i} shows a red square.\tClearly."},
            "answer2": {"name": ["gemini", "cogvlm"][i % 2], "answer": f"Part {i} shows {{braces}} and \"quotes\"."},
            "human_answer": "AB"[i % 2],
        }))
    if bad_rows:
        (images / "999.jpg").write_bytes(png_bytes(5, 5, (1, 2, 3)))
        base = {"id": 999, "image_path": "999.jpg", "original_dataset": "coco", "instruction": "q",
                "answer1": {"name": "a", "answer": "x"}, "answer2": {"name": "b", "answer": "y"}}
        lines.append(json.dumps({**base, "pair_id": 9001, "human_answer": "C"}))
        lines.append(json.dumps({**base, "pair_id": 9002, "human_answer": "maybe"}))
        lines.append(json.dumps({**base, "pair_id": 9003, "human_answer": "A", "image_path": "absent.jpg"}))
        lines.append(json.dumps({**base, "pair_id": 0, "human_answer": "B"}))
        lines.append(json.dumps({**base, "pair_id": 9005, "human_answer": "A", "answer2": {"name": "b", "answer": ""}}))
        lines.append('{"id": 999, "pair_id": 9006, "instruction": "cut')
    (bench / "pair.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


PARC_VARIATIONS = ("O", "LR-I", "LS-N", "VR-B")


def parc_source(root: Path, n_items: int = 8, bad_rows: bool = True, dataset: str = "toy") -> Path:
    """A PARC variation folder (``docs/parc_format.md``): ``variations.jsonl`` + ``images/``.

    ``n_items`` source items, each with the variations O, LR-I, LS-N, VR-B.
    Even items are comparative (two images, options Left/Right); odd items
    have one image and three options, and their negation LS-N has the two
    originally wrong options as correct answers. With ``bad_rows``: a
    variation whose image is missing (``image_missing``), an answer key
    naming a missing option (``answer_not_an_option``), a repeated id
    (``duplicate_id``), a variation name outside PARC's without a family
    (``variation_unknown``), one with a family (kept: ``VR-blur2``), and a
    source item without its original prompt (kept; the core counts
    ``no_original_prompt``).
    """
    images = root / "images"
    images.mkdir(parents=True, exist_ok=True)
    records = []

    def image(name: str, shade: int) -> str:
        (images / name).write_bytes(png_bytes(8, 8, (shade % 256, 100, 50)))
        return f"images/{name}"

    for k in range(n_items):
        source = f"{dataset}-{k:03d}"
        comparative = k % 2 == 0
        for v, variation in enumerate(PARC_VARIATIONS):
            rid = f"{source}/{variation}"
            if comparative:
                options = {"A": "Left", "B": "Right"}
                correct = ["A"] if (k // 2) % 2 == 0 else ["B"]
                if variation == "LS-N":
                    correct = ["B"] if correct == ["A"] else ["A"]
                img: object = [
                    image(f"{source}_{variation}_l.png", 30 * k + v),
                    image(f"{source}_{variation}_r.png", 30 * k + v + 7),
                ]
            else:
                options = {"A": "red", "B": "green", "C": "blue"}
                correct = ["ABC"[k % 3]]
                if variation == "LS-N":
                    correct = [x for x in "ABC" if x != correct[0]]
                img = image(f"{source}_{variation}.png", 30 * k + v)
            question = f"Which side shows the brighter square ({k})?" if comparative else f"What colour is square {k}?"
            if variation == "LS-N":
                question = question.replace("Which", "Which does not").replace("What colour is", "What colour is not")
            records.append({"id": rid, "source_id": source, "dataset": dataset, "variation": variation,
                            "question": question, "options": options, "correct": correct, "image": img})
    if bad_rows:
        base = {"source_id": f"{dataset}-000", "dataset": dataset, "question": "q?",
                "options": {"A": "Left", "B": "Right"}, "correct": ["A"], "image": records[0]["image"]}
        records.append({**base, "id": "bad/missing-image", "variation": "LR-C", "image": "images/absent.png"})
        records.append({**base, "id": "bad/answer", "variation": "LR-V", "correct": ["C"]})
        records.append({**base, "id": records[1]["id"], "variation": "LR-I"})
        records.append({**base, "id": "bad/unknown", "variation": "blur2"})
        records.append({**base, "id": f"{dataset}-000/blur2", "variation": "blur2", "family": "VR"})
        records.append({**base, "id": "orphan/LR-I", "source_id": f"{dataset}-orphan", "variation": "LR-I"})
    with (root / "variations.jsonl").open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    return root
