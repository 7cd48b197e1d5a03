"""The layout's rules (README, "Layout"), checked on the source: the core imports no harness, and no
core module grows past about 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO

CORE = REPO / "plugin"
#: "About 400 lines" (issue 9): the largest core module today is extraction.py, 417.
MAX_CORE_LINES = 420


def harness_imports(path: Path) -> list[str]:
    """Every import of lm_eval, vlmeval, lmms_eval or judgecp.adapters in a file, top level or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{path.name}:{node.lineno} {name}" for name in names
                  if name.split(".")[0] in ("lm_eval", "vlmeval", "lmms_eval") or name.startswith("judgecp.adapters")]
    return found


def test_the_core_imports_no_harness_and_no_adapter() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 50
    assert [hit for f in files for hit in harness_imports(f)] == []


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import numpy\n\ndef f():\n    from judgecp.adapters.lm_eval import task\n    import vlmeval.smp\n"
                     "    from judgecp.data import load\n")
    assert harness_imports(probe) == ["probe.py:4 judgecp.adapters.lm_eval", "probe.py:5 vlmeval.smp"]


def test_no_core_module_is_over_about_400_lines() -> None:
    sizes = {str(f.relative_to(REPO)): len(f.read_text(encoding="utf-8").splitlines()) for f in CORE.rglob("*.py")}
    assert {f: n for f, n in sizes.items() if n > MAX_CORE_LINES} == {}
