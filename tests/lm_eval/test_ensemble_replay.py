"""A planted judge replayed through lm-eval: the harness records keep what the ensemble needs to find it.

The judge (``judgecp-replay`` serving a recording, no model) answers 360
HPD v2 pairs from a local directory under four prompts: two (one with the
original order and glyphs A/B, one flipped with glyphs I/II) are reliable on
the red cluster of images and a coin toss on the blue one, the other two the
other way round. Every answer is written in the prompt's own glyphs and
order, so the ensemble only finds the planted structure if the task's records
re-key them correctly. Checked: the mixture beats uniform averaging and the
one-cluster ensemble inside lm-eval, and ``judgecp evaluate --kind ensemble``
on the samples file puts each cluster's weight on its two reliable prompts.
A negative control (the same answers with the flipped prompts' glyphs not
re-keyed) shows the check can fail.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.lm_eval.helpers import results_file, run_lm_eval, skip_without_lm_eval

skip_without_lm_eval()

from judgecp.data.ensemble.prompts import build_prompt_set  # noqa: E402

TASK = "image_pref_ensemble_cp_hpdv2"
#: prompt -> the cluster it is reliable on
RELIABLE = {
    "supplement-sample": 0,
    "photographer.supplement-sample.quality-artifacts.flip.III": 0,
    "art-historian.caption-first.alignment.orig.AB": 1,
    "graphic-designer.caption-first.aesthetics.flip.III": 1,
}
CAPTIONS = 120


def build(root: Path) -> tuple[Path, Path, Path]:
    """The HPD v2 directory, the recording and the embeddings."""
    from PIL import Image

    from judgecp.data.ensemble.embeddings import write_embeddings
    from judgecp.data.ensemble.sources import read_hpdv2

    rng = np.random.default_rng(7)
    annotations = []
    for c in range(CAPTIONS):
        colour = (200, 40, 40) if c % 2 == 0 else (40, 40, 200)
        names = [f"{c}/{k}.png" for k in range(3)]
        for name in names:
            (root / "hpdv2" / "test" / str(c)).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (4, 4), colour).save(root / "hpdv2" / "test" / name)
        annotations.append(
            {"prompt": f"object {c}", "image_path": names, "rank": [int(r) for r in rng.permutation(3) + 1]}
        )
    (root / "hpdv2" / "test.json").write_text(json.dumps(annotations))
    items = read_hpdv2(root / "hpdv2")
    prompts = {p.id: p for p in build_prompt_set()}
    recording, raw = [], []
    vectors = {}
    for item in items:
        cluster = int(item.caption.split()[1]) % 2
        centre = np.array([1.0, 0.0, 0.0]) if cluster == 0 else np.array([0.0, 0.0, 1.0])
        vectors[item.id] = (centre + rng.normal(0, 0.05, 3)).tolist()
        for prompt_id, home in RELIABLE.items():
            prompt = prompts[prompt_id]
            right = rng.random() < (0.9 if home == cluster else 0.5)
            p_truth = 0.9 if right else 0.1
            other = "B" if item.preferred == "A" else "A"
            p_candidate = {item.preferred: p_truth, other: 1 - p_truth}
            logprobs = {glyph: math.log(p_candidate[candidate]) for glyph, candidate in prompt.answer_key.items()}
            recording.append({"id": f"{item.id}/{prompt_id}", "logprobs": logprobs})
            # the negative control: the displayed glyphs read as if they named the original candidates in order
            raw.append((item.id, prompt_id, item.preferred, dict(zip("AB", logprobs.values(), strict=True))))
    with (root / "recording.jsonl").open("w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in recording)
    (root / "unkeyed.json").write_text(json.dumps(raw))
    write_embeddings(vectors, root / "emb.npz")
    return root / "hpdv2", root / "recording.jsonl", root / "emb.npz"


@pytest.fixture(scope="module")
def replay_run(tmp_path_factory: pytest.TempPathFactory, harness_ready: None) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("ensemble_replay")
    hpdv2, recording, embeddings = build(root)
    metadata = {"prompts": ",".join(RELIABLE), "embeddings": str(embeddings), "validation": 80, "clusters": 2,
                "seeds": 5, "max_items": 0}
    run_lm_eval(root, "--model", "judgecp-replay", "--model_args", f"recording={recording}", "--tasks", TASK,
                "--output_path", str(root / "results"), "--log_samples", "--metadata", json.dumps(metadata),
                env={"JUDGECP_HPDV2_DIR": str(hpdv2)}, timeout=600)
    return root / "results", embeddings, root


def test_the_mixture_beats_uniform_and_bpe_inside_lm_eval(replay_run: tuple[Path, Path, Path]) -> None:
    results = results_file(replay_run[0])["results"][TASK]
    got = {k.split(",")[0]: v for k, v in results.items() if k.endswith(",none")}
    assert (got["n_items"], got["n_prompts"], got["excluded"]) == (360, 4, 0)
    assert got["nll_mixture"] < got["nll_bpe"] - 0.05 and got["nll_mixture"] < got["nll_uniform"] - 0.05
    assert got["auprc_mixture"] > max(got["auprc_uniform"], got["auprc_bpe"]) + 0.02
    assert got["accuracy_mixture"] > max(got["accuracy_uniform"], got["accuracy_bpe"])
    # ECE is not asserted: eq. (11)'s weights stay soft (a softmax of mean log-likelihoods), and on this
    # judge the mixture's ECE is about the average's (.167 vs .162 here) while NLL and AUPRC improve.


def test_the_post_hoc_weights_find_each_clusters_reliable_prompts(
    replay_run: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    from judgecp.cli import main

    output, embeddings, _ = replay_run
    samples_file = sorted(output.rglob(f"samples_{TASK}_2*.jsonl"))[-1]
    out = tmp_path / "report.json"
    assert main(["evaluate", "--kind", "ensemble", str(samples_file), "--embeddings", str(embeddings),
                 "--validation", "80", "--clusters", "2", "--seeds", "3", "--json", str(out), "--quiet"]) == 0
    weights = json.loads(out.read_text())["mixture_weights"]
    top = [{p["prompt"] for p in cluster["top_prompts"][:2]} for cluster in weights["clusters"]]
    planted = [{p for p, home in RELIABLE.items() if home == z} for z in (0, 1)]
    assert sorted(top, key=sorted) == sorted(planted, key=sorted)
    for cluster in weights["clusters"]:
        best, _, third = (p["weight"] for p in cluster["top_prompts"])
        assert best > 1.5 * third  # the reliable prompts clearly ahead of the others


def test_negative_control_without_rekeying_the_flipped_prompts_look_unreliable(
    replay_run: tuple[Path, Path, Path],
) -> None:
    from judgecp.data.ensemble.records import read_ensemble_records
    from judgecp.kinds.ensemble.evaluate import ensemble_report

    _, embeddings, root = replay_run
    from judgecp.data.ensemble.embeddings import read_embeddings

    records: list[dict[str, Any]] = [
        {"schema": "judgecp.record/1", "shape": "pair", "id": f"{item}/{prompt}", "prompt": prompt, "label": label,
         "logprobs": logprobs, "meta": {"item": item}}
        for item, prompt, label, logprobs in json.loads((root / "unkeyed.json").read_text())
    ]
    data = read_ensemble_records(records, embeddings=read_embeddings(embeddings))
    report = ensemble_report(data, validation=80, clusters=2, seeds=[0, 1, 2])
    top = [{p["prompt"] for p in cluster["top_prompts"][:2]} for cluster in report["mixture_weights"]["clusters"]]
    planted = [{p for p, home in RELIABLE.items() if home == z} for z in (0, 1)]
    assert sorted(top, key=sorted) != sorted(planted, key=sorted)


def test_the_table6_sweep_reads_the_samples_file(
    replay_run: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from judgecp.kinds.ensemble.sweep import main as sweep_main

    output, embeddings, _ = replay_run
    samples_file = sorted(output.rglob(f"samples_{TASK}_2*.jsonl"))[-1]
    assert sweep_main([str(samples_file), "--embeddings", str(embeddings), "--prompts", "2,4", "--samples", "20,80",
                       "--clusters", "1,2", "--data-seeds", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Expected Calibration Error" in lines[0] and "AUC Precision-Recall" in lines[0]
    assert lines[2].split()[:2] == ["2", "20"] and len(lines[2].split()) == 2 + 3 * 2
