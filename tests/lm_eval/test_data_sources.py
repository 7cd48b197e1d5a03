"""Where the shipped tasks' documents come from: local directories and the hub datasets they name."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.lm_eval.helpers import skip_without_lm_eval

skip_without_lm_eval()

from judgecp.adapters.lm_eval import tasks_path  # noqa: E402
from judgecp.adapters.lm_eval.fixtures import build_mllm_judge_dir  # noqa: E402
from judgecp.errors import InputError  # noqa: E402

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
    assert calls == [{"repo_id": "ONE-Lab/MLLM-as-a-Judge", "repo_type": "dataset", "allow_patterns": ["Benchmark/score.jsonl", "image/*"]}]
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
        {"refs": [["r"], ["s"], ["t"]], "cand": ["x", "y", "z"], "img": [str(image)] * 3, "human_score": [0.0, 0.625, None]}
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
