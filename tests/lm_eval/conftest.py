"""Session fixtures for the lm-eval integration: tiny local judges and fixture data (built, never downloaded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lm_eval.helpers import skip_without_lm_eval
from tests.lm_eval.scripted import (
    SCRIPT,
    script_judge,
    tiny_llava,  # noqa: F401  (a fixture)
)

TEXT_TASK_UTILS = '''
from judgecp.adapters.lm_eval.task import LikertJudgeTask


class TextJudgeTask(LikertJudgeTask):
    RECORD_FIELDS = ("actor",)
'''

TEXT_PROMPT = (
    "Judge the answer. [Question] {{question}} [Answer] {{answer}} "
    "Write your verdict as Score: X with X from 1 to 5."
)


def _text_task_yaml(name: str, data: Path, cot: bool) -> str:
    head = (
        f"task: {name}\nclass: !function utils.TextJudgeTask\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {data}\ntest_split: test\n"
        f'doc_to_text: "{TEXT_PROMPT}"\ndoc_to_target: label\n'
    )
    if cot:
        body = "output_type: generate_until\ngeneration_kwargs:\n  until: []\n  max_gen_toks: 12\n  do_sample: false\n"
    else:
        body = ('output_type: multiple_choice\ndoc_to_choice: ["1", "2", "3", "4", "5"]\n'
                'target_delimiter: " "\ngen_prefix: "Score:"\n')
    return head + body + "metadata:\n  version: 1.0\n"


@pytest.fixture(scope="session")
def harness_ready() -> None:
    """Skips a test that needs lm-eval's integration where it is not installed."""
    skip_without_lm_eval()


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory, harness_ready: None) -> Path:
    from judgecp.bench.tiny_models import build_tiny_llama

    return build_tiny_llama(
        tmp_path_factory.mktemp("models") / "llama", prepare=lambda m, t: script_judge(m, t, SCRIPT)
    )


@pytest.fixture(scope="session")
def text_tasks(tmp_path_factory: pytest.TempPathFactory, harness_ready: None) -> Path:
    """A text Likert task folder (``judge_text`` direct, ``judge_text_cot``), 40 documents, one label off the scale."""
    root = tmp_path_factory.mktemp("text_tasks")
    data = root / "docs.jsonl"
    with data.open("w") as f:
        for i in range(40):
            label = "7" if i == 5 else str(1 + (i * 3) % 5)
            f.write(json.dumps({
                "id": f"t{i:02d}", "label": label, "group": "ab"[i % 2], "actor": "m1",
                "question": f"What is shown in case {i}?", "answer": f"Case {i} shows item {i % 7}.",
            }) + "\n")
    folder = root / "judge_text"
    folder.mkdir()
    (folder / "utils.py").write_text(TEXT_TASK_UTILS)
    (folder / "judge_text.yaml").write_text(_text_task_yaml("judge_text", data, cot=False))
    (folder / "judge_text_cot.yaml").write_text(_text_task_yaml("judge_text_cot", data, cot=True))
    return folder


@pytest.fixture(scope="session")
def mllm_dir(tmp_path_factory: pytest.TempPathFactory, harness_ready: None) -> Path:
    """All 14 categories, two documents each, with a corrupt image, a 0 label and a string label."""
    from judgecp.adapters.lm_eval.fixtures import build_mllm_judge_dir

    return build_mllm_judge_dir(tmp_path_factory.mktemp("mllm"), per_category=2, categories=14)


@pytest.fixture(scope="session")
def polaris_dir(tmp_path_factory: pytest.TempPathFactory, harness_ready: None) -> Path:
    from tests.lm_eval.fixtures import build_polaris_dir

    return build_polaris_dir(tmp_path_factory.mktemp("polaris"), n=10)
