"""The prompt-ensemble tasks (image_pref_ensemble_cp) through the real lm-eval command line, on CPU.

One run of ``hf-multimodal-judge`` (tiny LLaVA) with three prompts (the
supplement's sample prompt, a flipped one with glyphs I/II, and one of
another persona) over a local HPD v2 directory and a local MJ-Bench
directory of Pillow-made images, with a tied pair, a missing image and a
corrupt image in them. The records are then read post hoc by
``judgecp evaluate --kind ensemble`` from the samples file.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.lm_eval.helpers import judge_run, results_file, samples, skip_without_lm_eval

skip_without_lm_eval()

from judgecp.adapters.lm_eval.ensemble_task import records_report  # noqa: E402
from judgecp.kinds.ensemble.study import ensemble_metrics  # noqa: E402
from judgecp.kinds.metrics import metric_values  # noqa: E402
from tests.lm_eval.helpers import samples_records  # noqa: E402

PROMPTS = [
    "supplement-sample",
    "photographer.supplement-sample.quality-artifacts.flip.III",
    "art-historian.caption-first.alignment.orig.AB",
]
HPDV2 = "image_pref_ensemble_cp_hpdv2"
MJBENCH = "image_pref_ensemble_cp_mjbench_quality"
SETTINGS = {"validation": 4, "clusters": 2, "seeds": 3, "alpha": 0.2}


def write_png(path: Path, colour: tuple[int, int, int], size: int = 16) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (size, size), colour).save(path)


def build_hpdv2_dir(root: Path, captions: int = 6) -> Path:
    """``root/test.json`` + ``root/test/<c>/<k>.png``: 3 images per caption, ranks 1-3.

    Caption 0 has a tie (one pair left out); caption 1 names a missing image
    (two pairs left out); image ``2/2.png`` is not an image file (its pairs
    are judged with a blank image and excluded as ``image_load_failed``).
    """
    annotations = []
    for c in range(captions):
        names = [f"{c}/{k}.png" for k in range(3)]
        ranks = [1, 2, 3] if c % 2 else [3, 1, 2]
        if c == 0:
            ranks = [1, 1, 2]
        for k, name in enumerate(names):
            write_png(root / "test" / name, ((40 * c) % 256, (90 * k) % 256, 128), size=12 + 4 * k)
        if c == 1:
            names[2] = "1/missing.png"
        annotations.append({"prompt": f"a painting of object {c}", "image_path": names, "rank": ranks})
    (root / "test" / "2" / "2.png").write_bytes(b"not an image")
    (root / "test.json").write_text(json.dumps(annotations))
    return root


def build_mjbench_dir(root: Path, n: int = 6) -> Path:
    """``root/quality.jsonl`` + images, the preferred image first (as MJ-Bench stores it)."""
    lines = []
    for i in range(n):
        write_png(root / "images" / f"{i}_good.png", (200, 30 * i % 256, 20), size=16)
        write_png(root / "images" / f"{i}_bad.png", (20, 20, 30 * i % 256), size=12)
        lines.append(json.dumps({"caption": f"a red object {i}", "image0": f"images/{i}_good.png",
                                 "image1": f"images/{i}_bad.png", "label": 0, "info": "sharpness"}))
    lines.append("{not json")
    (root / "quality.jsonl").write_text("\n".join(lines) + "\n")
    return root


def colour_embeddings(hpdv2: Path, mjbench: Path, out: Path) -> Path:
    """Item embeddings of both directories from a small local encoder (mean colour), keyed by item id."""
    from PIL import Image

    from judgecp.data.ensemble.embeddings import embed_pairs, write_embeddings
    from judgecp.data.ensemble.sources import read_hpdv2, read_mjbench

    def encoder(paths: list[str]) -> np.ndarray:
        vectors = []
        for p in paths:
            try:
                with Image.open(p) as img:
                    vectors.append(np.asarray(img.convert("RGB"), dtype=float).mean(axis=(0, 1)) + 1.0)
            except OSError:
                vectors.append(np.ones(3))
        return np.array(vectors)

    items = read_hpdv2(hpdv2) + read_mjbench(mjbench, split="quality")
    vectors = embed_pairs([item.images for item in items], encoder)
    write_embeddings({item.id: v for item, v in zip(items, vectors, strict=True)}, out)
    return out


@pytest.fixture(scope="module")
def ensemble_run(tmp_path_factory: pytest.TempPathFactory, tiny_llava: Path) -> tuple[Path, str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("ensemble_run")
    hpdv2 = build_hpdv2_dir(root / "hpdv2")
    mjbench = build_mjbench_dir(root / "mjbench")
    metadata = {
        **SETTINGS,
        "prompts": ",".join(PROMPTS),
        "embeddings": str(colour_embeddings(hpdv2, mjbench, root / "emb.npz")),
    }
    proc = judge_run(root, "hf-multimodal-judge", f"pretrained={tiny_llava},dtype=float32,max_length=4096",
                     (HPDV2, MJBENCH), root / "results", metadata,
                     env={"JUDGECP_HPDV2_DIR": str(hpdv2), "JUDGECP_MJBENCH_DIR": str(mjbench)}, timeout=600)
    return root / "results", proc.stderr, metadata


def task_metrics(results: dict[str, Any], task: str) -> dict[str, float]:
    return {k.split(",")[0]: v for k, v in results["results"][task].items() if k.endswith(",none") and v != "N/A"}


def test_every_item_is_judged_under_every_prompt(ensemble_run: tuple[Path, str, dict[str, Any]]) -> None:
    output, stderr, _ = ensemble_run
    rows = samples(output, HPDV2)
    # 6 captions x 3 pairs = 18, less the tie and the two pairs with a missing image: 15 items x 3 prompts
    assert len(rows) == 45
    records = [s["n_items"] for s in rows]
    assert {r["prompt"] for r in records} == set(PROMPTS)
    by_item: dict[str, set[str]] = {}
    for r in records:
        by_item.setdefault(r["meta"]["item"], set()).add(r["prompt"])
        assert r["schema"] == "judgecp.record/1" and r["shape"] == "pair" and r["pair_id"] == r["meta"]["item"]
        assert r["judge"].endswith("llava") and r["task"] == "hpdv2"
        assert r["label"] in ("A", "B")
    assert len(by_item) == 15 and all(v == set(PROMPTS) for v in by_item.values())
    # the flipped prompt answers over I/II, the others over A/B, each glyph re-keyed by meta.answer_key
    flipped = [r for r in records if r["prompt"] == PROMPTS[1]]
    assert all(set(r["logprobs"]) == {"I", "II"} and r["meta"]["answer_key"] == {"I": "B", "II": "A"}
               and r["order"] == "rev" for r in flipped)
    assert all(set(r["logprobs"]) == {"A", "B"} for r in records if r["prompt"] != PROMPTS[1])
    # a flipped document shows the second image first, and its target is the glyph of the preferred one
    doc = next(s["doc"] for s in rows if s["doc"]["prompt_id"] == PROMPTS[1])
    fwd = next(s["doc"] for s in rows if s["doc"]["prompt_id"] == PROMPTS[0] and s["doc"]["item"] == doc["item"])
    assert doc["image_refs"] == fwd["image_refs"][::-1]
    sample = next(s for s in rows if s["doc"]["prompt_id"] == PROMPTS[1])
    assert sample["target"] == ("II" if sample["doc"]["label"] == "A" else "I")
    # the prompt text is the prompt set's, with the caption and two image slots
    assert fwd["text"].count("<image>") == 2 and fwd["caption"] in fwd["text"]
    assert fwd["text"].startswith("You are a technical expert at evaluating 'text-to-image' alignment")
    # the corrupt image's pairs are judged with a blank image and excluded, never fatal
    failed = {r["meta"]["item"] for r in records if r["exclude"] == "image_load_failed"}
    assert failed == {"hpdv2-test-2-0-2", "hpdv2-test-2-1-2"}
    assert (
        "2 source row(s) left out: image file missing" in stderr
        and "1 source row(s) left out: tied human rank" in stderr
    )
    # one forward pass per document, for the glyphs A/B and I/II alike
    found = re.findall(
        r"judgecp: (\d+) documents scored in (\d+) forward passes \((\d+) needed one pass per choice\)", stderr
    )
    assert found and found[-1][0] == found[-1][1] and found[-1][2] == "0", stderr[-2000:]


def test_tasks_report_the_ensemble_study(ensemble_run: tuple[Path, str, dict[str, Any]]) -> None:
    output, _, _metadata = ensemble_run
    results = results_file(output)
    got = task_metrics(results, HPDV2)
    assert (got["n_items"], got["n_prompts"]) == (13, 3)
    assert got["excluded"] == 6  # two items x three prompts, image_load_failed
    for method in ("uniform", "bpe", "mixture"):
        assert 0.0 <= got[f"ece_{method}"] <= 1.0 and got[f"ece_{method}_stderr"] >= 0.0
        assert 0.0 <= got[f"accuracy_{method}"] <= 1.0 and got[f"nll_{method}"] > 0.0
        assert 0.0 <= got[f"selected_{method}"] <= 1.0
    mj = task_metrics(results, MJBENCH)
    # 6 MJ-Bench rows (the malformed line is left out by the reader, and logged)
    assert (mj["n_items"], mj["n_prompts"], mj["excluded"]) == (6, 3, 0)
    assert all(math.isfinite(mj[f"{s}_mixture"]) for s in ("ece", "mce", "nll", "accuracy"))
    labels = {s["n_items"]["meta"]["item"]: s["n_items"]["label"] for s in samples(output, MJBENCH)}
    assert sorted(labels.values()).count("B") == 3  # balance_order swapped half of the pairs


def test_samples_file_recomputes_the_task_metrics(ensemble_run: tuple[Path, str, dict[str, Any]]) -> None:
    from judgecp.adapters.lm_eval.ensemble_task import task_settings

    output, _, _metadata = ensemble_run
    results = results_file(output)
    files = sorted(output.rglob(f"samples_{HPDV2}_2*.jsonl"))
    records = samples_records(files)
    settings = task_settings({**results["configs"][HPDV2]["metadata"]})
    got = metric_values(records_report(records, settings), ensemble_metrics(True))
    expected = task_metrics(results, HPDV2)
    assert sorted(got) == sorted(expected)
    for name, value in got.items():
        assert value == pytest.approx(expected[name], abs=1e-9, nan_ok=True), name


def test_judgecp_evaluate_kind_ensemble_reads_the_samples_file(
    ensemble_run: tuple[Path, str, dict[str, Any]], tmp_path: Path
) -> None:
    from judgecp.cli import main

    output, _, metadata = ensemble_run
    samples_file = sorted(output.rglob(f"samples_{HPDV2}_2*.jsonl"))[-1]
    report_path = tmp_path / "report.json"
    status = main(["evaluate", "--kind", "ensemble", str(samples_file), "--embeddings", metadata["embeddings"],
                   "--validation", "4", "--clusters", "2", "--seeds", "3", "--alpha", "0.2",
                   "--json", str(report_path), "--quiet"])
    assert status == 0
    report = json.loads(report_path.read_text())
    assert report["kind"] == "ensemble" and report["n_items"] == 13 and report["n_prompts"] == 3
    assert {e["reason"]: e["count"] for e in report["excluded"]} == {"image_load_failed (item left out)": 6}
    results = task_metrics(results_file(output), HPDV2)
    for method in ("uniform", "bpe", "mixture"):
        for score in ("ece", "mce", "auprc", "nll"):
            assert report["methods"][method][score] == pytest.approx(results[f"{score}_{method}"], abs=1e-9)
