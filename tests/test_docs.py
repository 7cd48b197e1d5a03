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


def test_readme_complexity_table_is_what_the_methods_state() -> None:
    from judgecp.plugins import method_classes

    text = (REPO / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| (.+ \| .+) \|$", text.split("| method | time | memory |")[1].split("\n\n")[0], re.M))
    assert rows == {name: " | ".join(cls.complexity) for name, cls in method_classes().items()}
