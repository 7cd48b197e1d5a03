"""The documentation's examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import REPO


def python_blocks(doc: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)


def test_api_examples_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/api.md, block by block in one namespace, in an empty folder (its asserts check the results)."""
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(REPO / "docs" / "api.md")
    assert len(blocks) >= 8
    namespace: dict[str, object] = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/api.md, python block {i + 1}", "exec"), namespace)
