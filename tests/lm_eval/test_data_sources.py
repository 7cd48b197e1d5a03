"""Where the shipped tasks' documents come from: local directories and the hub datasets they name."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.lm_eval.helpers import skip_without_lm_eval

skip_without_lm_eval()

from judgecp.adapters.lm_eval import pairwise_task, tasks_path  # noqa: E402
from judgecp.adapters.lm_eval.fixtures import build_mllm_judge_dir  # noqa: E402
from judgecp.base.errors import InputError  # noqa: E402
from judgecp.data import images  # noqa: E402
from judgecp.data.tables import read_jsonl  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


def task_utils(folder: str) -> ModuleType:
    """A task folder's utils.py, loaded by path as lm-eval loads it."""
    spec = importlib.util.spec_from_file_location(f"judgecp_test_{folder}_utils", tasks_path() / folder / "utils.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mllm_judge_downloads_the_named_hub_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    local = build_mllm_judge_dir(tmp_path / "hub_copy", per_category=1, categories=14, bad=False)
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda **kw: calls.append(kw) or str(local))
    monkeypatch.delenv("JUDGECP_MLLM_JUDGE_DIR", raising=False)
    utils = task_utils("mllm_judge_cp")
    docs = utils.load_docs(category="mm_vet")["test"]
    assert calls == [
        {
            "repo_id": "ONE-Lab/MLLM-as-a-Judge",
            "repo_type": "dataset",
            "allow_patterns": ["Benchmark/score.jsonl", "image/*"],
        }
    ]
    assert [d["group"] for d in docs] == ["mm-vet"]
    yaml_text = (tasks_path() / "mllm_judge_cp" / "_template_direct_yaml").read_text()
    assert "dataset_path: ONE-Lab/MLLM-as-a-Judge" in yaml_text


def test_mllm_judge_local_directory_errors_name_the_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    utils = task_utils("mllm_judge_cp")
    with pytest.raises(InputError, match="is not a directory"):
        utils.load_docs(data_dir=str(tmp_path / "missing"))
    root = build_mllm_judge_dir(tmp_path / "two", per_category=1, categories=2, bad=False)
    with pytest.raises(InputError, match="no documents for category 'WIT'"):
        utils.load_docs(data_dir=str(root), category="wit")
    with (root / "Benchmark" / "score.jsonl").open("a") as f:
        f.write("{cut off\n")
    utils._all_docs.cache_clear()
    docs = utils.load_docs(data_dir=str(root))["test"]
    assert docs[-1]["exclude"] == "malformed_json_line"


def test_polaris_hub_split_and_parquet_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets
    from PIL import Image

    image = tmp_path / "a.png"
    Image.new("RGB", (8, 8), (10, 20, 30)).save(image)
    table = datasets.Dataset.from_dict(
        {
            "refs": [["r"], ["s"], ["t"]],
            "cand": ["x", "y", "z"],
            "img": [str(image)] * 3,
            "human_score": [0.0, 0.625, None],
        }
    ).cast_column("img", datasets.Image())
    (tmp_path / "copy" / "data").mkdir(parents=True)
    table.to_parquet(tmp_path / "copy" / "data" / "test-00000-of-00001.parquet")
    utils = task_utils("polaris_cp")
    docs = utils.load_docs(data_dir=str(tmp_path / "copy"))["test"]
    assert [d["label"] for d in docs] == ["1", "3", None]  # round(2.5) = 2 (half to even) + 1; missing stays missing
    assert docs[0]["image"].size == (8, 8) and utils.doc_to_image(docs[0])[0].mode == "RGB"
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: calls.append((a, kw)) or table)
    monkeypatch.delenv("JUDGECP_POLARIS_DIR", raising=False)
    assert len(utils.load_docs()["test"]) == 3
    assert calls == [(("yuwd/Polaris",), {"split": "test"})]


# -- pairwise, multiple-choice and PARC tasks ------------------------------------------------

HUB_LOADS = {
    # folder: (fixture builder, the load_dataset call it makes without a local copy)
    "mt_bench_human_cp": ("build_mt_bench_human_dir", (("lmsys/mt_bench_human_judgments",), {"split": "human"})),
    "rewardbench_cp": ("build_rewardbench_dir", (("allenai/reward-bench",), {"split": "filtered"})),
    "chatbot_arena_cp": ("build_chatbot_arena_dir", (("lmsys/chatbot_arena_conversations",), {"split": "train"})),
    "scienceqa_img_cp": ("build_scienceqa_dir", (("lmms-lab/ScienceQA", "ScienceQA-IMG"), {"split": "test"})),
    "ai2d_cp": ("build_ai2d_dir", (("lmms-lab/ai2d",), {"split": "test"})),
    "mmmu_val_cp": ("build_mmmu_dir", (("lmms-lab/MMMU",), {"split": "validation"})),
}


@pytest.mark.parametrize("folder", sorted(HUB_LOADS))
def test_choice_tasks_load_the_named_hub_dataset_or_a_local_copy(
    folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same documents from the local copy (data_dir) and from the hub dataset the YAML and README name."""
    import datasets

    from judgecp.data import datasources
    from tests.lm_eval import fixtures

    builder, call = HUB_LOADS[folder]
    local = getattr(fixtures, builder)(tmp_path / "copy")
    utils = task_utils(folder)
    from_dir = utils.load_docs(data_dir=str(local))["test"]
    assert len(from_dir) > 5
    # The hub path: the same rows as a datasets table (JSONL copies are read line by line locally).
    jsonl = sorted(local.glob("*.jsonl"))
    if jsonl:
        rows = [r for _, r in read_jsonl(jsonl[0]) if r is not None]
        table = datasets.Dataset.from_list(rows)
    else:
        table = datasources.load_table(local, hub_id="unused", split=call[1]["split"], config=(call[0] + (None,))[1])
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: calls.append((a, kw)) or table)
    for var in ("JUDGECP_MT_BENCH_HUMAN_DIR", "JUDGECP_REWARDBENCH_DIR", "JUDGECP_CHATBOT_ARENA_DIR",
                "JUDGECP_SCIENCEQA_DIR", "JUDGECP_AI2D_DIR", "JUDGECP_MMMU_DIR"):
        monkeypatch.delenv(var, raising=False)
    from_hub = utils.load_docs()["test"]
    assert calls == [call]
    good = [d["id"] for d in from_dir if not d["exclude"]]
    assert [d["id"] for d in from_hub if not d["exclude"]] == good
    yaml_text = next((tasks_path() / folder).glob("*.yaml")).read_text()
    readme = (tasks_path() / folder / "README.md").read_text()
    assert f"dataset_path: {call[0][0]}" in yaml_text and call[0][0] in readme


def test_pairwise_rows_that_cannot_be_judged_stay_as_counted_documents(tmp_path: Path) -> None:
    from tests.lm_eval import fixtures

    utils = task_utils("mt_bench_human_cp")
    docs = utils.load_docs(data_dir=str(fixtures.build_mt_bench_human_dir(tmp_path / "mt")))["test"]
    left = {d["id"]: d["exclude"] for d in docs if d["exclude"]}
    assert sorted(left.values()) == ["conversation_incomplete", "malformed_json_line", "tie_label"]
    assert all(i.endswith("/fwd") for i in left)  # one placeholder document per row, not two
    assert len(docs) == 2 * 17 + 3  # 16 votes + the model_c one in both orders
    tie = next(d for d in docs if d["exclude"] == "tie_label")
    assert pairwise_task.doc_to_text(tie) == "(left out: tie_label)" and tie["label"] == "tie"
    # max_pairs: a seeded sample of usable pairs, both orders each; the rows that cannot be judged are not eligible
    sample = utils.load_docs(data_dir=str(tmp_path / "mt"), max_pairs=5, data_seed=3)["test"]
    assert len(sample) == 10 and not any(d["exclude"] for d in sample)
    again = utils.load_docs(data_dir=str(tmp_path / "mt"), max_pairs=5, data_seed=3)["test"]
    assert [d["id"] for d in again] == [d["id"] for d in sample]
    with pytest.raises(InputError, match="max_pairs"):
        utils.load_docs(data_dir=str(tmp_path / "mt"), max_pairs="many")


def test_rewardbench_balances_which_response_comes_first(tmp_path: Path) -> None:
    from tests.lm_eval import fixtures

    utils = task_utils("rewardbench_cp")
    docs = utils.load_docs(data_dir=str(fixtures.build_rewardbench_dir(tmp_path / "rb", n=12)))["test"]
    fwd = [d for d in docs if d["order"] == "fwd"]
    assert sorted(d["label"] for d in fwd) == ["A"] * 6 + ["B"] * 6
    for d in fwd:  # the chosen response is where the label says
        chosen = d["answers_a"][0] if d["label"] == "A" else d["answers_b"][0]
        assert chosen.endswith("is a fine thing.")


def test_parc_reads_the_local_variation_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.lm_eval import fixtures

    utils = task_utils("parc_cp")
    monkeypatch.delenv("JUDGECP_PARC_DIR", raising=False)
    with pytest.raises(InputError, match="no hub dataset"):
        utils.load_docs()
    root = fixtures.build_parc_dir(tmp_path / "parc")
    monkeypatch.setenv("JUDGECP_PARC_DIR", str(root))
    docs = utils.load_docs()["test"]
    by_id = {d["id"]: d for d in docs}
    two = by_id["parc/mit_states-00001/VS-S"]
    assert two["letters"] == ["A", "B"] and two["options"] == ["Left", "Right"] and len(two["image_refs"]) == 2
    assert utils.doc_to_text(two).startswith("<image>\n<image>\nWhich object")
    assert [im.size for im in images.load_images(two)] == [(16, 16), (16, 16)]  # parc_cp's doc_to_image
    assert by_id["parc/mmbench-00000/blurry"]["family"] == "VR"
    assert sorted(d["exclude"] for d in docs if d["exclude"]) == ["duplicate_id", "malformed_json_line"]
    only = utils.load_docs(parc_dataset="mit_states")["test"]
    assert {d["dataset"] for d in only} == {"mit_states"} and len(only) == 30
    with pytest.raises(InputError, match="no 'nyu_depth' items"):
        utils.load_docs(parc_dataset="nyu_depth")
