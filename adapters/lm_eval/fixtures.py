"""MLLM-as-a-Judge's layout, built on the spot from generated images (``judgecp bench capture``, tests).

The other datasets' fixture builders are test code: tests/lm_eval/fixtures.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

#: The 14 ``original_dataset`` values of the real score.jsonl (the subtasks' categories).
CATEGORY_VALUES = (
    "coco", "ChartQA", "AesBench", "Concept Caption", "diffusiondb", "infographicsVQA", "llava_bench",
    "mathvista", "mind2web", "mm-vet", "ScienceQA", "textVQA", "VisitBench", "WIT",
)

COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (220, 220, 40), (120, 120, 120)]


def write_image(path: Path, i: int) -> None:
    from PIL import Image

    Image.new("RGB", (24 + i % 9, 20 + i % 7), COLOURS[i % len(COLOURS)]).save(path)


def build_mllm_judge_dir(root: Path, *, per_category: int = 3, categories: int = 2, bad: bool = True) -> Path:
    """``root/Benchmark/score.jsonl`` + ``root/image/*.jpg`` in MLLM-as-a-Judge's schema.

    With ``bad``: one document whose image is corrupt, one whose human score
    is 0 (off the 1-5 scale) and one string label (``"4"``, valid).
    """
    (root / "Benchmark").mkdir(parents=True, exist_ok=True)
    (root / "image").mkdir(exist_ok=True)
    rng = random.Random(0)
    rows = []
    names = list(CATEGORY_VALUES)[:categories]
    for c, category in enumerate(names):
        for k in range(per_category):
            i = c * per_category + k
            write_image(root / "image" / f"{i}.jpg", i)
            rows.append({
                "score_id": i, "name": rng.choice(["gpt4", "llava", "gemini"]),
                "answer": f"The picture shows colour {i % 5} and a shape.", "id": 100 + i,
                "instruction": f"Please describe figure {i}.", "image_path": f"{i}.jpg",
                "original_dataset": category, "human": 1 + (i * 7) % 5,
            })
    if bad:
        (root / "image" / "broken.jpg").write_bytes(b"not an image")
        rows[0]["image_path"] = "broken.jpg"
        rows[1]["human"] = 0
        rows[2]["human"] = "4"
    with (root / "Benchmark" / "score.jsonl").open("w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return root
