"""Imports run one way (issue 34): no import cycle in the package counting every import, function-local
imports of judgecp's own modules only where they are lazy on purpose, and the layers' order as
docs/architecture.md draws it. import-linter checks the layers contracts in ``make lint``
(pyproject.toml, ``[tool.importlinter]``); this test counts what it does not: cycles that stay within
one layer, and the local imports that would hide one."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader reads pyproject.toml")

ROOTS = {"judgecp": REPO / "plugin", "judgecp.adapters": REPO / "adapters"}
#: Function-local imports of judgecp's own modules: at most this many, each for a heavy or optional
#: dependency (a harness, torch, matplotlib) or a module loaded at interpreter start (issue 34: <= 40).
MAX_LOCAL_IMPORTS = 40
#: The core's layers, bottom to top (plugin/ shows them as folders).
LAYERS = ("base", "stats", "present", "data", "synthetic", "kinds", "workflows", "bench", "cli")


def modules() -> dict[str, Path]:
    found = {}
    for package, root in ROOTS.items():
        for path in root.rglob("*.py"):
            parts = [p for p in path.relative_to(root).with_suffix("").parts if p != "__init__"]
            found[".".join([package, *parts]) if parts else package] = path
    return found


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[str, bool]]:
    """``(imported judgecp module, inside a function)`` of every import outside ``if TYPE_CHECKING``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(x) for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
                   for x in ast.walk(n)}
    inner = {id(x) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
             for x in ast.walk(n) if x is not n}
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (path.name == "__init__.py")]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] + [f"{target}.{a.name}" for a in node.names]
        else:
            names = [a.name for a in node.names]
        resolved = set()
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                resolved.add(name)
        out += [(name, id(node) in inner) for name in sorted(resolved)]
    return out


def graph() -> tuple[dict[str, set[str]], list[str]]:
    known = modules()
    edges: dict[str, set[str]] = {m: set() for m in known}
    local = []
    for module, path in known.items():
        for target, inside in imports(module, path, known):
            edges[module].add(target)
            if inside:
                local.append(f"{module} -> {target}")
    local = sorted(set(local))
    return edges, local


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    sys.setrecursionlimit(10_000)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_counting_every_import() -> None:
    edges, _ = graph()
    assert cycles(edges) == []


def test_local_imports_are_few_and_lazy_on_purpose() -> None:
    _, local = graph()
    assert len(local) <= MAX_LOCAL_IMPORTS, "\n".join(local)


def test_the_checks_see_a_cycle_and_a_local_import(tmp_path: Path) -> None:
    """Negative control: a cycle closed by a function-local import is found, and counted as local."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import judgecp.b\n")
    b.write_text("def f():\n    from judgecp.a import x\n")
    known = {"judgecp.a": a, "judgecp.b": b}
    edges = {m: {t for t, _ in imports(m, p, known)} for m, p in known.items()}
    assert cycles(edges) == [["judgecp.a", "judgecp.b"]]
    assert imports("judgecp.b", b, known) == [("judgecp.a", True)]


def test_plugin_shows_the_layers() -> None:
    """``ls plugin`` is the layers (and the package's own files): at most 20 entries (issue 34)."""
    entries = sorted(p.name for p in (REPO / "plugin").iterdir() if p.name != "__pycache__")
    assert len(entries) <= 20, entries
    assert set(LAYERS) <= set(entries)
    # the package, its type marker and the console script (its signal handlers come before any layer)
    assert all(e in LAYERS or e in ("__init__.py", "py.typed", "_console.py") for e in entries), entries


def test_import_linter_checks_the_same_layers() -> None:
    """The layers contract of ``make lint`` lists these layers in this order, the adapters on top."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    assert contract["layers"] == ["judgecp.adapters", *(f"judgecp.{layer}" for layer in reversed(LAYERS))]


def test_the_packages_pyproject_lists_are_the_folders() -> None:
    """Every folder of code or package data is in pyproject's ``packages`` (a new one left out would be
    missing from the wheel), and every listed package exists."""
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    roots = {
        "plugin": "judgecp",
        "adapters": "judgecp.adapters",
        "tasks": "judgecp.tasks",
        "configs": "judgecp.configs",
    }
    folders = set()
    for root, package in roots.items():
        for init in (REPO / root).rglob("__init__.py"):
            folders.add(".".join([package, *init.parent.relative_to(REPO / root).parts]))
    for task_root in ("tasks", "adapters/lmms_eval/tasks"):
        for folder in (REPO / task_root).iterdir():
            if folder.is_dir() and folder.name != "__pycache__":
                prefix = "judgecp.tasks" if task_root == "tasks" else "judgecp.adapters.lmms_eval.tasks"
                folders.add(f"{prefix}.{folder.name}")
    assert folders == listed
