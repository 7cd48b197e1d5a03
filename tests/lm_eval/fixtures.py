"""Small local data in the public judge datasets' schemas, built on the spot for the tests.

MLLM-as-a-Judge's builder ships with the package (``judgecp bench capture``
uses it): :mod:`judgecp.adapters.lm_eval.fixtures`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from judgecp.adapters.lm_eval.fixtures import COLOURS, write_image


def build_polaris_dir(root: Path, *, n: int = 12) -> Path:
    """``root/test.jsonl`` + ``root/images/*.jpg`` in Polaris' schema (human_score on [0, 1])."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    with (root / "test.jsonl").open("w") as f:
        for i in range(n):
            write_image(root / "images" / f"{i}.jpg", i)
            f.write(json.dumps({
                "cand": f"a picture of colour {i % 5}", "refs": [f"colour {i % 5}"],
                "human_score": (i % 5) / 4, "img": f"images/{i}.jpg",
            }) + "\n")
    return root


# -- pairwise judge datasets ------------------------------------------------------------

def _conversation(questions: list[str], answers: list[str]) -> list[dict[str, str]]:
    out = []
    for q, a in zip(questions, answers, strict=True):
        out += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return out


def build_mt_bench_human_dir(root: Path, *, n: int = 16, bad: bool = True) -> Path:
    """``root/human.jsonl`` in lmsys/mt_bench_human_judgments' schema (two-turn conversations).

    With ``bad``: a tie vote, a winner that is neither model (``model_c``), a
    conversation without answers, and a line that is not JSON.
    """
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1)
    lines = []
    for i in range(n):
        qs = [f"Question {i}: name a colour.", f"Follow-up {i}: and a shape?"]
        lines.append(json.dumps({
            "question_id": 81 + (i * 7) % 80, "model_a": "gpt-4", "model_b": "vicuna-13b-v1.2",
            "winner": rng.choice(["model_a", "model_b"]), "judge": f"author_{i % 3}",
            "conversation_a": _conversation(qs, [f"Red {i}.", f"A circle {i}."]),
            "conversation_b": _conversation(qs, [f"Blue {i % 4}.", f"A square {i % 3}."]),
            "turn": 1 + i % 2,
        }))
    if bad:
        first = json.loads(lines[0])
        lines.append(json.dumps({**first, "winner": "tie"}))
        lines.append(json.dumps({**first, "winner": "model_c"}))
        lines.append(json.dumps({**first, "conversation_b": [{"role": "user", "content": "?"}]}))
        lines.append("{not json")
    (root / "human.jsonl").write_text("\n".join(lines) + "\n")
    return root


def build_rewardbench_dir(root: Path, *, n: int = 12) -> Path:
    """``root/filtered.jsonl`` in allenai/reward-bench's schema."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / "filtered.jsonl").open("w") as f:
        for i in range(n):
            f.write(json.dumps({
                "prompt": f"Write a line about item {i}.", "chosen": f"Item {i} is a fine thing.",
                "chosen_model": "gpt-4", "rejected": f"No {i % 3}.", "rejected_model": "llama-2",
                "subset": ["alpacaeval-easy", "llmbar-natural", "math-prm"][i % 3], "id": 1000 + i,
            }) + "\n")
    return root


def build_chatbot_arena_dir(root: Path, *, n: int = 12) -> Path:
    """``root/train.jsonl`` in lmsys/chatbot_arena_conversations' schema, a third of the votes ties."""
    root.mkdir(parents=True, exist_ok=True)
    winners = ["model_a", "model_b", "tie", "model_b", "model_a", "tie (bothbad)"]
    with (root / "train.jsonl").open("w") as f:
        for i in range(n):
            turns = 1 + (i % 3 == 0)
            qs = [f"Hello {i}, what is {i} plus one?", "Thanks. Now times two?"][:turns]
            f.write(json.dumps({
                "question_id": f"{i:032x}", "model_a": "koala-13b", "model_b": "vicuna-13b",
                "winner": winners[i % len(winners)], "judge": f"arena_user_{i}",
                "conversation_a": _conversation(qs, [f"It is {i + 1}.", f"It is {2 * (i + 1)}."][:turns]),
                "conversation_b": _conversation(qs, ["Not sure.", "Still not sure."][:turns]),
                "turn": turns, "anony": True, "language": "English", "tstamp": 1682351591.0 + i,
            }) + "\n")
    return root


# -- multiple-choice image datasets (parquet in the hub layout) ------------------------

def _png(i: int, size: tuple[int, int] | None = None) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size or (24 + i % 9, 20 + i % 7), COLOURS[i % len(COLOURS)]).save(buffer, format="PNG")
    return buffer.getvalue()


def _write_parquet(path: Path, columns: dict[str, list[object]], image_columns: list[str]) -> None:
    import datasets

    table = datasets.Dataset.from_dict(columns)
    for column in image_columns:
        table = table.cast_column(column, datasets.Image())
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(str(path))


BROKEN_IMAGE = {"bytes": b"not an image", "path": None}


def build_scienceqa_dir(root: Path, *, n: int = 12, bad: bool = True) -> Path:
    """``root/ScienceQA-IMG/test-00000-of-00001.parquet`` in lmms-lab/ScienceQA's schema (2-5 choices).

    With ``bad``: item 0's image does not decode, item 1's answer index names
    a choice it does not have, item 2 has a single choice.
    """
    subjects = ["natural science", "social science", "language science"]
    cols: dict[str, list[object]] = {k: [] for k in (
        "image", "question", "choices", "answer", "hint", "task", "grade", "subject", "topic", "category", "skill",
        "lecture", "solution")}
    for i in range(n):
        k = 2 + i % 4
        cols["image"].append({"bytes": _png(i), "path": None})
        cols["question"].append(f"Which colour is shown in picture {i}?")
        cols["choices"].append([f"colour {j}" for j in range(k)])
        cols["answer"].append(i % k)
        cols["hint"].append("Look at the picture." if i % 2 else "")
        cols["subject"].append(subjects[i % 3])
        for field in ("task", "grade", "topic", "category", "skill", "lecture", "solution"):
            cols[field].append(f"{field} {i % 2}")
    if bad:
        cols["image"][0] = BROKEN_IMAGE
        cols["answer"][1] = 7
        cols["choices"][2] = ["only one"]
        cols["answer"][2] = 0
    _write_parquet(root / "ScienceQA-IMG" / "test-00000-of-00001.parquet", cols, ["image"])
    return root


def build_ai2d_dir(root: Path, *, n: int = 10) -> Path:
    """``root/data/test-00000-of-00001.parquet`` in lmms-lab/ai2d's schema (4 options, answer "0".."3")."""
    cols: dict[str, list[object]] = {"question": [], "options": [], "answer": [], "image": []}
    for i in range(n):
        cols["question"].append(f"What does arrow {i} point to?")
        cols["options"].append(["leaf", "root", "stem", "flower"])
        cols["answer"].append(str(i % 4))
        cols["image"].append({"bytes": _png(i), "path": None})
    _write_parquet(root / "data" / "test-00000-of-00001.parquet", cols, ["image"])
    return root


def build_mmmu_dir(root: Path, *, n: int = 12) -> Path:
    """``root/data/validation-00000-of-00001.parquet`` in lmms-lab/MMMU's schema.

    Besides ``n`` single-image multiple-choice questions over several
    subjects: one open question and one with two images (both left out, as in
    the seed benchmark, and counted).
    """
    subjects = ["Art_Theory", "Accounting", "Physics", "Clinical_Medicine", "History", "Computer_Science"]
    image_columns = [f"image_{k}" for k in range(1, 8)]
    cols: dict[str, list[object]] = {k: [] for k in (
        "id", "question", "options", "explanation", *image_columns, "img_type", "answer", "topic_difficulty",
        "question_type", "subfield")}

    def add(item_id: str, question: str, options: list[str], answer: str, kind: str, n_images: int, i: int) -> None:
        cols["id"].append(item_id)
        cols["question"].append(question)
        cols["options"].append(str(options))
        cols["explanation"].append("")
        for k, column in enumerate(image_columns):
            cols[column].append({"bytes": _png(i + k), "path": None} if k < n_images else None)
        cols["img_type"].append("['Diagrams']")
        cols["answer"].append(answer)
        cols["topic_difficulty"].append("Easy")
        cols["question_type"].append(kind)
        cols["subfield"].append("subfield")

    for i in range(n):
        k = 3 + i % 3
        add(f"validation_{subjects[i % len(subjects)]}_{i + 1}", f"<image 1> What is shown in figure {i}?",
            [f"thing {j}" for j in range(k)], "ABCDE"[i % k], "multiple-choice", 1, i)
    add("validation_Math_90", "<image 1> Compute the area.", [], "12", "open", 1, 0)
    add("validation_Math_91", "Compare <image 1> and <image 2>.", ["first", "second"], "A", "multiple-choice", 2, 1)
    _write_parquet(root / "data" / "validation-00000-of-00001.parquet", cols, image_columns)
    return root


# -- PARC variation directories (docs/parc_format.md) ---------------------------------------

def build_parc_dir(root: Path, *, sources: int = 6, bad: bool = True) -> Path:
    """``root/variations.jsonl`` + ``root/images/`` in the local PARC format.

    Two datasets: ``mmbench`` (one image, four options; O, LR-I, LS-N, VR-B)
    and ``mit_states`` (two images, Left/Right; O, LR-I, LS-N, VR-B, VS-S).
    Semantic changes (LS-N, VS-S) change the correct answer(s). With ``bad``:
    a variation whose original prompt is missing, a variation outside PARC's
    names given a ``family`` (``blurry``, VR), an unreadable image, a
    duplicated id and a line that is not JSON.
    """
    (root / "images").mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def image(name: str, i: int) -> str:
        (root / "images" / name).write_bytes(_png(i, (16, 16)))
        return f"images/{name}"

    for s in range(sources):
        src = f"mmbench-{s:05d}"
        options = {"A": "cat", "B": "dog", "C": "bird", "D": "fish"}
        key = "ABCD"[s % 4]
        for v, question, correct in (
            ("O", "Which animal is shown?", [key]),
            ("LR-I", "State which animal is shown.", [key]),
            ("LS-N", "Which animal is not shown?", [c for c in "ABCD" if c != key]),
            ("VR-B", "Which animal is shown?", [key]),
        ):
            shade = s + (7 if v.startswith("VR") else 0)  # a vision variation changes the image
            lines.append(json.dumps({"id": f"{src}/{v}", "source_id": src, "dataset": "mmbench", "variation": v,
                                     "question": question, "options": options, "correct": correct,
                                     "image": image(f"{src}_{v}.png", shade)}))
    for s in range(sources):
        src = f"mit_states-{s:05d}"
        key = "AB"[s % 2]
        other = "B" if key == "A" else "A"
        for v, correct in (("O", key), ("LR-I", key), ("LS-N", other), ("VR-B", key), ("VS-S", other)):
            question = {"LR-I": "State which object is more sliced.", "LS-N": "Which object is not more sliced?"}
            left, right = (s + 1, s) if v == "VS-S" else (s + 7, s + 8) if v == "VR-B" else (s, s + 1)
            lines.append(json.dumps({
                "id": f"{src}/{v}", "source_id": src, "dataset": "mit_states", "variation": v,
                "question": question.get(v, "Which object is more sliced?"),
                "options": {"A": "Left", "B": "Right"}, "correct": [correct],
                "image": [image(f"{src}_{v}_l.png", left), image(f"{src}_{v}_r.png", right)],
            }))
    if bad:
        lines.append(json.dumps({"id": "mmbench-09999/LR-I", "source_id": "mmbench-09999", "dataset": "mmbench",
                                 "variation": "LR-I", "question": "Which animal?", "options": {"A": "cat", "B": "dog"},
                                 "correct": ["A"], "image": image("orphan.png", 3)}))
        lines.append(json.dumps({"id": "mmbench-00000/blurry", "source_id": "mmbench-00000", "dataset": "mmbench",
                                 "variation": "blurry", "family": "VR", "question": "Which animal is shown?",
                                 "options": {"A": "cat", "B": "dog", "C": "bird", "D": "fish"}, "correct": ["A"],
                                 "image": image("blurry.png", 4)}))
        (root / "images" / "broken.png").write_bytes(b"not an image")
        broken = json.loads(lines[1])
        broken["image"] = "images/broken.png"
        lines[1] = json.dumps(broken)
        lines.append(lines[2])  # the same id twice
        lines.append("{not json")
    (root / "variations.jsonl").write_text("\n".join(lines) + "\n")
    return root
