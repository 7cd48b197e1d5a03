"""Every command block of README.md and docs/*.md runs verbatim (issue 29: a doc cannot go stale again).

Each file's ```bash and ```python blocks run in order, as a reader would paste
them, in a scratch folder laid out like a checkout (``.venv``, ``scripts``,
``docs``, ``tests`` link to this one; ``../shared`` to the real data beside
it), with ``.venv/bin`` first on ``PATH``. A block must exit 0. A block may be
left out only for a stated reason a CI machine cannot meet, written on the line
above its fence::

    <!-- doc-test: skip (VLMEvalKit) the launcher needs a VLMEvalKit checkout -->

with one of :data:`SKIP_REASONS`. A block marked ``<!-- doc-test: output -->``
is output to read, not a command. Blocks of other languages (text, json, yaml)
are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import REPO

#: Why a block may be left out: what a CI machine here does not have.
SKIP_REASONS = {
    "hub": "downloads models or data sets from a hub (no internet)",
    "GPU": "needs a GPU",
    "VLMEvalKit": "needs a VLMEvalKit checkout (docs/vlmeval.md runs these against one)",
    "recursive": "is the README's own set-up or test command, which CI runs itself",
    "install": "installs packages into the environment (what `make install` does; tests/lm_eval/test_install.py "
               "installs the wheel)",
    "bench": "a benchmark that runs for minutes (docs/benchmarks.md has its figures; tests run it at a smoke size)",
}
FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!--\s*doc-test:\s*(skip\s*\((?P<why>[^)]+)\)|output)(?P<rest>.*?)-->\s*$")
RUN = ("bash", "python")
#: A hang guard, not a timing: seconds after which a block is taken to hang (a block's speed is a benchmark's
#: business; CI runs on a busy machine, where the slowest block here takes a few minutes).
BLOCK_TIMEOUT = 3600
#: ``make test-full`` runs the blocks marked ``skip (bench)`` too (the full-size benchmarks).
RUN_BENCH_BLOCKS = os.environ.get("JUDGECP_DOC_BENCH") == "1"
#: What a scratch checkout links to.
LINKED = (".venv", "scripts", "docs", "tests", "Makefile", "pyproject.toml", "plugin", "adapters", "tasks", "configs")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    text: str
    skip: str | None  # the reason key, or None to run
    output: bool


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with their markers (a bad marker fails here)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        language, start = match.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        mark = MARK.match(lines[start - 1]) if start else None
        if start and lines[start - 1].startswith("<!-- doc-test") and mark is None:
            raise AssertionError(f"{path.name}:{start}: unreadable doc-test marker {lines[start - 1]!r}")
        skip = mark.group("why").strip() if mark and mark.group("why") else None
        if skip is not None and skip not in SKIP_REASONS:
            raise AssertionError(f"{path.name}:{start}: skip reason {skip!r} is not one of {sorted(SKIP_REASONS)}")
        out.append(Block(path, start + 1, language, "\n".join(lines[start + 1 : j]), skip,
                         bool(mark and not mark.group("why"))))
        i = j + 1
    return out


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def runnable_blocks(path: Path) -> list[Block]:
    """A page's command blocks (bash and python, not output)."""
    return [b for b in blocks(path) if b.language in RUN and not b.output]


def command_pages() -> list[Path]:
    """The pages with a command block: a test each (a page of prose and tables has nothing to run, and a test
    that can only skip is not a test)."""
    return [path for path in documents() if runnable_blocks(path)]


def scratch_checkout(tmp: Path) -> Path:
    """A folder laid out like a checkout beside the real ``shared`` folder; returns its root."""
    (tmp / "shared").symlink_to(REPO.parent / "shared")
    root = tmp / "checkout"
    root.mkdir()
    for name in LINKED:
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)
    return root


def run_block(block: Block, root: Path, env: dict[str, str], namespace: dict[str, object]) -> None:
    """A bash block in its own shell; a python block in the document's one namespace (a page's python blocks
    build on each other, as a reader pasting them into one session would)."""
    where = f"{block.path.relative_to(REPO)}:{block.line}"
    if block.language == "python":
        try:
            exec(compile(block.text, where, "exec"), namespace)
        except BaseException as exc:  # a failing block, whatever it raised: the page is wrong
            pytest.fail(f"{where}: {type(exc).__name__}: {exc}\n--- block ---\n{block.text}")
        return
    try:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.text], cwd=root, env=env,
                              capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{where}: the block did not end in {BLOCK_TIMEOUT} s (a hang?)")
    if done.returncode != 0:
        tail = (done.stdout[-1500:] + "\n" + done.stderr[-2500:]).strip()
        pytest.fail(f"{where}: exit {done.returncode}\n--- block ---\n{block.text}\n--- output (tail) ---\n{tail}")


@pytest.mark.parametrize("path", command_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_block_runs_verbatim(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runnable = runnable_blocks(path)
    root = scratch_checkout(tmp_path)
    env = {**os.environ, "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0",
           "MPLBACKEND": "Agg", "JUDGECP_DISABLE_PLUGIN_AUTOLOAD": "1"}
    monkeypatch.chdir(root)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "MPLBACKEND"):
        monkeypatch.setenv(name, env[name])
    namespace: dict[str, object] = {"__name__": "__doc_block__"}
    ran = 0
    for block in runnable:
        if block.skip is None or (block.skip == "bench" and RUN_BENCH_BLOCKS):
            run_block(block, root, env, namespace)
            ran += 1
    if path.name == "README.md":  # a new user's first commands leave the checkout's `git status` clean
        left = [p.name + "/" * p.is_dir() for p in root.iterdir() if not p.is_symlink()]  # out/: a folder
        untracked = [name for name in left if subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", name],
                                                             check=False).returncode != 0]
        assert not untracked, f"README's blocks leave files git would show as untracked: {untracked}"
    skipped = [f"line {b.line}: {SKIP_REASONS[b.skip]}" for b in runnable
               if b.skip is not None and not (b.skip == "bench" and RUN_BENCH_BLOCKS)]
    if skipped and not ran:
        pytest.skip("; ".join(skipped))


def test_markers_are_well_formed() -> None:
    """Every marker parses and names an allowed reason (blocks() raises on a bad one)."""
    found = [b for path in documents() for b in blocks(path)]
    assert found, "no blocks found"
    assert sys.version_info >= (3, 10)
