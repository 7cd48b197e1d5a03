"""Pairwise, multiple-choice and PARC tasks through the real lm-eval command line, on CPU.

Two runs, shared by the tests of this module: ``hf-judge`` (tiny Llama) on the
three pairwise tasks, ``hf-multimodal-judge`` (tiny LLaVA) on the three image
multiple-choice tasks and PARC, all from local fixture directories named by
the tasks' environment variables, with bad rows in them.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests.lm_eval.helpers import (
    judge_run,
    metric,
    results_file,
    same,
    samples,
    skip_without_lm_eval,
)

skip_without_lm_eval()

from judgecp.adapters.lm_eval.metrics import task_protocol  # noqa: E402
from judgecp.kinds.choice.parc_study import parc_metrics  # noqa: E402
from judgecp.kinds.choice.study import mcq_metrics  # noqa: E402
from tests.lm_eval.helpers import samples_records  # noqa: E402
from tests.lm_eval.helpers import task_metrics as recomputed  # noqa: E402

PAIRWISE_TASKS = ("mt_bench_human_cp", "rewardbench_cp", "chatbot_arena_cp")
CHOICE_TASKS = ("scienceqa_img_cp", "ai2d_cp", "mmmu_val_cp")
PARC_TASKS = ("parc_cp", "parc_cp_mit_states")
PAIRWISE_METADATA = {"n_splits": 50, "alphas": [0.1, 0.2]}
IMAGE_METADATA = {"seeds": 3, "methods": "lac,aps(randomized=False)"}
ONE_PASS = re.compile(r"judgecp: (\d+) documents scored in (\d+) forward passes \((\d+) needed one pass per choice\)")


def task_metrics(results: dict[str, Any], task: str) -> dict[str, float]:
    """The task's metrics (lm-eval's "N/A" stderr entries for metrics without one left out)."""
    return {k.split(",")[0]: v for k, v in results["results"][task].items() if k.endswith(",none") and v != "N/A"}


def one_pass_per_document(stderr: str) -> None:
    found = ONE_PASS.findall(stderr)
    assert found, stderr[-3000:]
    documents, passes, fallbacks = (int(x) for x in found[-1])
    assert documents == passes and fallbacks == 0 and documents > 0


def checked_results(output: Path, stderr: str, counts: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The run's results, once every document took one pass and every task's ``counts`` are as given."""
    one_pass_per_document(stderr)
    results = results_file(output)
    for task, expected in counts.items():
        got = task_metrics(results, task)
        assert {name: got[name] for name in expected} == expected, task
    return results


def exclusions(output: Path, task: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in samples(output, task):
        reason = s["n" if "n" in s else "n_pairs"]["exclude"]
        if reason:
            counts[reason] = counts.get(reason, 0) + 1
    return counts


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from tests.lm_eval import fixtures

    root = tmp_path_factory.mktemp("choice_data")
    return {
        "JUDGECP_MT_BENCH_HUMAN_DIR": str(fixtures.build_mt_bench_human_dir(root / "mt_bench")),
        "JUDGECP_REWARDBENCH_DIR": str(fixtures.build_rewardbench_dir(root / "rewardbench")),
        "JUDGECP_CHATBOT_ARENA_DIR": str(fixtures.build_chatbot_arena_dir(root / "arena")),
        "JUDGECP_SCIENCEQA_DIR": str(fixtures.build_scienceqa_dir(root / "scienceqa")),
        "JUDGECP_AI2D_DIR": str(fixtures.build_ai2d_dir(root / "ai2d")),
        "JUDGECP_MMMU_DIR": str(fixtures.build_mmmu_dir(root / "mmmu")),
        "JUDGECP_PARC_DIR": str(fixtures.build_parc_dir(root / "parc")),
    }


@pytest.fixture(scope="module")
def pairwise_run(
    tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path, data_dirs: dict[str, str]
) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("pairwise_run")
    proc = judge_run(out, "hf-judge", f"pretrained={tiny_llama},dtype=float32", PAIRWISE_TASKS, out / "results",
                     PAIRWISE_METADATA, env=data_dirs)
    return out / "results", proc.stderr


@pytest.fixture(scope="module")
def image_run(
    tmp_path_factory: pytest.TempPathFactory, tiny_llava: Path, data_dirs: dict[str, str]
) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("image_choice_run")
    proc = judge_run(out, "hf-multimodal-judge", f"pretrained={tiny_llava},dtype=float32,max_length=4096",
                     CHOICE_TASKS + PARC_TASKS, out / "results", IMAGE_METADATA, env=data_dirs)
    return out / "results", proc.stderr


# -- pairwise ---------------------------------------------------------------------------------


def test_pairwise_tasks_report_bpe_and_selective_risk(pairwise_run: tuple[Path, str]) -> None:
    output, stderr = pairwise_run
    expected = {"mt_bench_human_cp": (16, 4), "rewardbench_cp": (12, 0), "chatbot_arena_cp": (8, 4)}
    results = checked_results(
        output,
        stderr,
        {
            task: {"n_pairs": pairs, "excluded": excluded, "single_order": 0}
            for task, (pairs, excluded) in expected.items()
        },
    )
    for task in expected:
        got = task_metrics(results, task)
        assert 0.0 <= got["bpe"] <= math.log(2) + 1e-9
        for controller in ("scope", "clopper_pearson", "naive", "heuristic", "vanilla"):
            for level in ("0.1", "0.2"):
                for base in ("risk", "coverage"):
                    name = f"{base}_{controller}_{level}"
                    if base == "risk" and got[f"coverage_{controller}_{level}"] == 0.0:
                        # nothing accepted in any split: the risk is undefined (NaN), never a perfect 0 (issue 38)
                        assert math.isnan(got[name]), (task, name)
                        continue
                    assert 0.0 <= got[name] <= 1.0 and got[f"{name}_stderr"] >= 0.0, (task, name)
        assert got["coverage_vanilla_0.1"] == 1.0  # accepts everything
        assert "risk_scope_0.05" not in got  # the levels came from --metadata
        assert results["higher_is_better"][task]["risk_scope_0.1"] is False
    # Bad rows are counted with their reasons: tie votes, a winner that is neither model, a
    # conversation without the judged turn, a line that is not JSON.
    assert exclusions(output, "chatbot_arena_cp") == {"tie_label": 4}
    assert exclusions(output, "mt_bench_human_cp") == {
        "tie_label": 1,
        "conversation_incomplete": 1,
        "malformed_json_line": 1,
    }
    assert (
        "mt_bench_human_cp: 4 excluded: conversation_incomplete 1, label_unknown 1, malformed_json_line 1, tie_label 1"
        in stderr
    )


def test_pairwise_documents_are_judged_in_both_orders(pairwise_run: tuple[Path, str]) -> None:
    output, _ = pairwise_run
    docs = {s["doc"]["id"]: s for s in samples(output, "rewardbench_cp")}
    assert len(docs) == 24
    for pair_id in {s["doc"]["pair_id"] for s in docs.values()}:
        fwd, rev = docs[f"{pair_id}/fwd"], docs[f"{pair_id}/rev"]
        assert fwd["doc"]["answers_a"] == rev["doc"]["answers_b"] and fwd["doc"]["answers_b"] == rev["doc"]["answers_a"]
        assert fwd["n_pairs"]["label"] == rev["n_pairs"]["label"] in ("A", "B")  # the original order's label
        assert {fwd["target"], rev["target"]} == {"A", "B"}  # the human's letter in each prompt's order
        assert [a["arg_1"] for a in fwd["arguments"].values()] == [" A", " B"]
    # the multi-turn prompt for a second-turn MT-Bench vote
    second = next(
        s for s in samples(output, "mt_bench_human_cp") if s["doc"]["turn"] == "2" and not s["doc"]["exclude"]
    )
    prompt = second["arguments"]["gen_args_0"]["arg_0"]
    assert "focus on who provides a better answer to the second user question" in prompt
    assert "<|The Start of Assistant A's Conversation with User|>" in prompt


def test_pairwise_samples_file_recomputes_every_metric(pairwise_run: tuple[Path, str], tmp_path: Path) -> None:
    from judgecp.cli import main as judgecp_cli

    output, _ = pairwise_run
    results = results_file(output)
    for task in PAIRWISE_TASKS:
        files = sorted(output.rglob(f"samples_{task}_2*.jsonl"))
        got = recomputed("pairwise", samples_records(files), results["configs"][task]["metadata"])
        expected = task_metrics(results, task)
        assert sorted(got) == sorted(expected)
        for name, value in got.items():
            assert same(value, expected[name]), (task, name)
    # judgecp evaluate on the samples file itself: the same numbers, and the full report
    (samples_file,) = sorted(output.rglob("samples_mt_bench_human_cp_2*.jsonl"))
    assert judgecp_cli(["evaluate", str(samples_file), "--format", "lm-eval", "--splits", "50",
                        "--alphas", "0.1,0.2", "--quiet", "--json", str(tmp_path / "r.json")]) == 0
    offline = json.loads((tmp_path / "r.json").read_text())
    assert offline["bpe_mean"] == metric(results, "mt_bench_human_cp", "bpe")
    scope = offline["controllers"]["scope"]["0.1"]
    # the table's risk is the study's, undefined (NaN) where the controller accepted nothing in any split (issue 38)
    want = math.nan if scope["abstain_all"] == 1.0 else scope["risk"]
    assert same(want, metric(results, "mt_bench_human_cp", "risk_scope_0.1"))
    assert offline["uncertainty"]["bpe"]["ece"] == metric(results, "mt_bench_human_cp", "ece_bpe")


def test_stock_hf_gives_the_same_letter_logprobs(
    pairwise_run: tuple[Path, str], tiny_llama: Path, data_dirs: dict[str, str], tmp_path: Path
) -> None:
    """``--model hf`` (one pass per option) and hf-judge (one pass per document) on the same pairs:
    the same log P(" A"), log P(" B") in every document's record."""
    output, _ = pairwise_run
    judge_run(tmp_path, "hf", f"pretrained={tiny_llama},dtype=float32", "rewardbench_cp", tmp_path, PAIRWISE_METADATA,
              env=data_dirs)
    stock = {s["doc"]["id"]: s["n_pairs"] for s in samples(tmp_path, "rewardbench_cp")}
    ours = {s["doc"]["id"]: s["n_pairs"] for s in samples(output, "rewardbench_cp")}
    assert stock.keys() == ours.keys() and len(ours) == 24
    for doc_id, record in ours.items():
        assert record["logprobs"]["A"] == pytest.approx(stock[doc_id]["logprobs"]["A"], abs=1e-4), doc_id
        assert record["logprobs"]["B"] == pytest.approx(stock[doc_id]["logprobs"]["B"], abs=1e-4), doc_id
    assert metric(results_file(tmp_path), "rewardbench_cp", "bpe") == pytest.approx(
        metric(results_file(output), "rewardbench_cp", "bpe"), abs=1e-4
    )


# -- multiple choice and PARC ------------------------------------------------------------------


def test_image_choice_tasks_report_conformal_sets(image_run: tuple[Path, str]) -> None:
    output, stderr = image_run
    expected = {"scienceqa_img_cp": (9, 3), "ai2d_cp": (10, 0), "mmmu_val_cp": (12, 2)}
    results = checked_results(output, stderr, {
        task: {"n": n, "excluded": excluded} for task, (n, excluded) in expected.items()})
    for task in expected:
        got = task_metrics(results, task)
        for m in ("lac", "aps_randomized_False"):
            assert 0.0 <= got[f"coverage_{m}"] <= 1.0 and got[f"coverage_{m}_stderr"] >= 0.0
            assert 0.0 <= got[f"set_size_{m}"] <= 5.0 and 0.0 <= got[f"empty_{m}"] <= 1.0
        assert "coverage_raps" not in got  # methods came from --metadata
    # per category: ScienceQA's subjects, MMMU's disciplines (first method only)
    sqa = task_metrics(results, "scienceqa_img_cp")
    assert {"accuracy_natural_science", "coverage_lac_social_science", "set_size_lac_language_science"} <= set(sqa)
    assert "coverage_aps_randomized_False_social_science" not in sqa
    assert "accuracy_Tech_and_Engineering" in task_metrics(results, "mmmu_val_cp")
    # bad input is counted with its reason, never fatal
    records = {s["doc"]["id"]: s["n"] for s in samples(output, "scienceqa_img_cp")}
    assert records["scienceqa_img/00000"]["exclude"] == "image_load_failed"
    assert records["scienceqa_img/00001"]["label"] == [
        "H"
    ]  # an answer index past the options: the core's answer_not_an_option
    assert "scienceqa_img_cp: 3 excluded: answer_not_an_option 1, image_load_failed 1, options_missing 1" in stderr
    assert exclusions(output, "mmmu_val_cp") == {"open_question": 1, "multiple_images": 1}
    # a document is scored over its own letters (2 to 5 options), read from one pass
    lengths = {len(s["arguments"]) for s in samples(output, "scienceqa_img_cp")}
    assert lengths == {1, 2, 3, 4, 5}


def test_parc_tasks_report_calibrated_reliability(image_run: tuple[Path, str]) -> None:
    output, stderr = image_run
    results = results_file(output)
    got = task_metrics(results, "parc_cp")
    # 6 mmbench sources x 4 prompts + 6 mit_states sources x 5, the orphan and "blurry"; the broken
    # image is excluded, the orphan (no original prompt) counted but kept for accuracy and certainty.
    assert (got["n"], got["excluded"]) == (55, 4)
    assert exclusions(output, "parc_cp") == {"image_load_failed": 1, "duplicate_id": 1, "malformed_json_line": 1}
    for score in ("reliability", "accuracy", "certainty", "consistency"):
        for suffix in ("", "_LR", "_LS", "_VR", "_VS", "_LR-I", "_VS-S", "_dataset_mmbench", "_dataset_mit_states"):
            value = got[f"{score}{suffix}"]
            assert math.isnan(value) or -1.0 <= value <= 1.0, (score, suffix)
    assert "consistency_O" not in got and "reliability_O" in got
    assert "reliability_VR-blurry" in got  # a variation outside PARC's names, placed by its family field
    single = task_metrics(results, "parc_cp_mit_states")
    assert (single["n"], single["excluded"]) == (30, 0) and "reliability_dataset_mit_states" not in single
    record = samples(output, "parc_cp")[0]["n"]
    assert record["judge"].endswith("llava") and record["variation"] and record["source_id"]
    line = next(ln for ln in stderr.splitlines() if "parc_cp: 4 excluded: " in ln)
    assert set(line.split("parc_cp: 4 excluded: ")[1].split(", ")) == {
        "duplicate_id 1", "image_load_failed 1", "malformed_json_line 1", "no_original_prompt 1"}


def test_choice_samples_files_recompute_every_metric(image_run: tuple[Path, str]) -> None:
    from judgecp.base.exclusions import Exclusions
    from judgecp.data.choice import variation_name
    from judgecp.stats.parc import VARIATIONS as PARC_VARIATIONS
    from judgecp.stats.parc import family_of

    output, _ = image_run
    results = results_file(output)
    for task in CHOICE_TASKS + PARC_TASKS:
        files = sorted(output.rglob(f"samples_{task}_2*.jsonl"))
        records = samples_records(files)
        kept = [r for r in records if not r.get("exclude")]
        meta = results["configs"][task]["metadata"]
        if task.startswith("parc"):
            names = {variation_name(r["variation"], r.get("family"), Exclusions(), "") for r in kept}
            variations = [v for v in PARC_VARIATIONS if v in names] + sorted(names - set(PARC_VARIATIONS))
            families = sorted({family_of(v) for v in variations} - {"O"})
            found = parc_metrics(variations, families, sorted({r["task"] for r in kept}))
            got = recomputed("parc", records, meta, found)
        else:
            found = mcq_metrics(task_protocol(meta, "mcq"), sorted({r["group"] for r in kept if r.get("group")}))
            got = recomputed("mcq", records, meta, found)
        expected = task_metrics(results, task)
        assert sorted(got) == sorted(expected), task
        for name, value in got.items():
            assert same(value, expected[name]), (task, name)
