"""Session fixtures for the lmms-eval integration: a tiny local judge and fixture data (built, never downloaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgecp.adapters.lm_eval.fixtures import build_mllm_judge_dir
from tests.lm_eval.fixtures import build_ai2d_dir
from tests.lm_eval.scripted import tiny_llava  # noqa: F401  (a fixture: lm-eval's scripted LLaVA)
from tests.lmms_eval.helpers import skip_without_lmms_eval


@pytest.fixture(scope="session")
def harness_ready() -> None:
    """Skips a test that needs lmms-eval's integration where it is not installed (fails in CI)."""
    skip_without_lmms_eval()


@pytest.fixture(scope="session")
def mllm_dir(tmp_path_factory: pytest.TempPathFactory, harness_ready: None) -> Path:
    """Two MLLM-as-a-Judge categories, four documents each: a corrupt image, a 0 label and a string label among them."""
    return build_mllm_judge_dir(tmp_path_factory.mktemp("mllm"), per_category=4, categories=2)


@pytest.fixture(scope="session")
def ai2d_dir(tmp_path_factory: pytest.TempPathFactory, harness_ready: None) -> Path:
    """Ten AI2D questions in the hub's parquet layout (four options, images in the table)."""
    return build_ai2d_dir(tmp_path_factory.mktemp("ai2d"), n=10)
