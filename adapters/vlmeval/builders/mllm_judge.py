"""MLLM-as-a-Judge (Chen et al., ICML 2024): the scoring split (Likert) and the pair comparisons (both orders).

``source`` is a checkout of github.com/Dongping-Chen/MLLM-Judge (or a
download of huggingface.co/datasets/shuaishuaicdp/MLLM-Judge): a split's
JSONL (``score.jsonl`` / ``pair.jsonl``, or the ``_lite`` files with
``lite``) and the image folder. ``limit`` keeps the first N usable rows
(pairs for the pair split): small test sets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.builders.common import Build, BuildResult, find, scale_label
from judgecp.adapters.vlmeval.specs import KIND_COLUMN, MLLM_JUDGE, MLLM_JUDGE_PAIR, SCALE_COLUMN

SCORE_FILES = ("Benchmark/score.jsonl", "Dataset/Benchmark/score.jsonl", "score.jsonl")
LITE_FILES = ("Benchmark_Lite/score_lite.jsonl", "Dataset/Benchmark_Lite/score_lite.jsonl", "score_lite.jsonl")
IMAGE_DIRS = ("image", "Dataset/image", "images")
PAIR_FILES = ("Benchmark/pair.jsonl", "Dataset/Benchmark/pair.jsonl", "Benchmark/Pair.jsonl",
              "Dataset/Benchmark/Pair.jsonl", "pair.jsonl", "Pair.jsonl")
PAIR_LITE_FILES = ("Benchmark_Lite/pair_lite.jsonl", "Dataset/Benchmark_Lite/pair_lite.jsonl", "pair_lite.jsonl")
PAIR_LABELS = {"A": "A", "B": "B"}
PAIR_TIES = {"C", "TIE", "TIE (BOTHBAD)", "BOTH", "NONE"}


def _text(item: dict[str, Any], key: str) -> str:
    return str(item.get(key) or "").strip()


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
    """``MLLMJudge_CP.tsv`` (or ``MLLMJudge_CP_Lite.tsv``) from the scoring split.

    Each JSON line has ``score_id, name, answer, id, instruction,
    image_path, original_dataset, human``; the TSV keeps them as ``index``
    (= score_id), ``actor``, ``response``, ``image_id``, ``question``,
    ``category`` and ``answer`` (= the human score 1-5).
    """
    spec = MLLM_JUDGE
    src = Path(source)
    scores = find(src, LITE_FILES if lite else SCORE_FILES, "scoring file", score_file)
    images = find(src, IMAGE_DIRS, "image folder", image_dir)
    build = Build()
    rows: list[dict[str, Any]] = []
    for index, item in build.items(scores, "score_id"):
        if build.missing(index, item, ("instruction", "answer", "image_path")):
            continue
        label, reason = scale_label(item.get("human"), spec.scale)
        if label is None:
            build.excluded.add(reason or "label_missing", index)
            continue
        image_path = images / str(item["image_path"])
        if not image_path.is_file():
            build.excluded.add("image_missing", f"{index}: {item['image_path']}")
            continue
        if limit is not None and len(rows) >= limit:
            continue
        rows.append({
            "index": index, "image": build.image(image_path, index), "question": item["instruction"],
            "response": item["answer"], "answer": label, "category": _text(item, "original_dataset"),
            "actor": _text(item, "name"), "image_id": _text(item, "id"), KIND_COLUMN: spec.kind,
            SCALE_COLUMN: f"{spec.scale.minimum}:{spec.scale.maximum}",
        })
    return build.write(
        out_dir,
        name or ("MLLMJudge_CP_Lite" if lite else "MLLMJudge_CP"),
        rows,
        {
            "kind": spec.kind,
            "benchmark": spec.title,
            "from": spec.source,
            "scores": str(scores),
            "images": str(images),
            "limit": limit,
        },
    )


def _response(item: dict[str, Any], key: str) -> tuple[str, str] | None:
    """``(text, model name)`` of ``answer1``/``answer2`` (``{"name", "answer"}``, or a plain string)."""
    value = item.get(key)
    text, name = (value.get("answer"), str(value.get("name") or "")) if isinstance(value, dict) else (value, "")
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
    """``MLLMJudgePair_CP.tsv`` (or ``_Lite``): the pair comparisons, each pair in both orders.

    Each JSON line has ``id`` (the image), ``pair_id``, ``image_path``,
    ``original_dataset``, ``instruction``, ``answer1``/``answer2``
    (``{"name", "answer"}``) and ``human_answer`` (``A``, ``B``, or ``C``
    for a tie).

    Every pair gives two rows (SCOPE's BPE needs both): ``order = fwd`` shows
    ``answer1`` as assistant A, ``order = rev`` swaps the two responses. In
    both, ``preference`` is the human preference in the *original* order
    (the core's pairwise label) and ``answer`` the letter of the preferred
    response in the row's own order (VLMEvalKit's convention). Ties have no
    binary ground truth (SCOPE drops them) and are left out as ``tie_label``;
    other labels as ``label_unknown``.
    """
    spec = MLLM_JUDGE_PAIR
    src = Path(source)
    pairs = find(src, PAIR_LITE_FILES if lite else PAIR_FILES, "pair-comparison file", pair_file)
    images = find(src, IMAGE_DIRS, "image folder", image_dir)
    build = Build()
    rows: list[dict[str, Any]] = []
    kept = 0
    for pair_id, item in build.items(pairs, "pair_id"):
        first, second = _response(item, "answer1"), _response(item, "answer2")
        answers = [k for k, v in (("answer1", first), ("answer2", second)) if v is None]
        if build.missing(pair_id, item, ("instruction", "image_path"), also=answers):
            continue
        assert first is not None and second is not None
        raw = str(item.get("human_answer", item.get("human", "")) or "").strip().upper()
        if not raw or raw in PAIR_TIES or raw not in PAIR_LABELS:
            reason = "label_missing" if not raw else "tie_label" if raw in PAIR_TIES else "label_unknown"
            build.excluded.add(reason, pair_id if reason != "label_unknown" else f"{pair_id}: {raw}")
            continue
        rel = str(item["image_path"])
        image_path = next((p for p in (images / rel, src / rel, images / Path(rel).name) if p.is_file()), None)
        if image_path is None:
            build.excluded.add("image_missing", f"{pair_id}: {rel}")
            continue
        if limit is not None and kept >= limit:
            continue
        kept += 1
        preference = PAIR_LABELS[raw]
        for order, (a, b) in (("fwd", (first, second)), ("rev", (second, first))):
            index = str(len(rows))
            rows.append({
                "index": index, "image": build.image(image_path, index), "question": item["instruction"],
                "response_a": a[0], "response_b": b[0],
                "answer": preference if order == "fwd" else ("B" if preference == "A" else "A"),
                "preference": preference, "pair_id": pair_id, "order": order,
                "category": _text(item, "original_dataset"), "model_a": a[1], "model_b": b[1],
                "image_id": _text(item, "id"), KIND_COLUMN: spec.kind,
            })
    return build.write(out_dir, name or ("MLLMJudgePair_CP_Lite" if lite else "MLLMJudgePair_CP"), rows,
                       {"kind": spec.kind, "benchmark": spec.title, "from": spec.source, "pairs_file": str(pairs),
                        "images": str(images), "pairs": kept, "limit": limit}, pairs=kept)
