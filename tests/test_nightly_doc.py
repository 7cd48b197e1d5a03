"""docs/nightly.md runs verbatim: its Python blocks in one namespace and its judgecp command lines, in order."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from judgecp.cli import main
from tests.helpers import REPO, SHARED_DATA

DOC = REPO / "docs" / "nightly.md"
SHARED_PART = "## On ../shared/data"


def blocks(text: str) -> list[tuple[str, str]]:
    """The page's ```python and ```bash blocks, in order."""
    return re.findall(r"```(python|bash)\n(.*?)```", text, re.S)


def run_blocks(found: list[tuple[str, str]], namespace: dict[str, object], where: str) -> None:
    for i, (lang, body) in enumerate(found):
        if lang == "python":
            exec(compile(body, f"docs/nightly.md ({where}), block {i + 1}", "exec"), namespace)
            continue
        for line in body.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if not argv:
                continue
            assert argv[0] == "judgecp", f"docs/nightly.md runs judgecp only, not {argv[0]!r}"
            assert main(argv[1:]) == 0, line


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty checkout-like folder whose ../shared/data is the real data (as beside a checkout)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "shared").symlink_to(SHARED_DATA.parent, target_is_directory=True)
    monkeypatch.chdir(repo)
    return repo


def test_nightly_walkthrough_on_the_embedded_example(workdir: Path) -> None:
    pytest.importorskip("matplotlib", reason="the page draws its figures: pip install 'judgecp[report]'")
    example = DOC.read_text().split(SHARED_PART)[0]
    run_blocks(blocks(example), {}, "the embedded example")
    for name in ("compare.json", "plan.json", "night_b.active.json", "compare.png", "plan.png"):
        assert (workdir / name).is_file(), name


@pytest.mark.slow
def test_nightly_walkthrough_on_shared_data(workdir: Path) -> None:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent: the real-data part needs ../shared/data beside the checkout")
    text = DOC.read_text()
    namespace: dict[str, object] = {}
    run_blocks(blocks(text.split(SHARED_PART)[0])[:1], namespace, "set-up")  # the first block's imports
    run_blocks(blocks(text.split(SHARED_PART)[1]), namespace, "on ../shared/data")
    assert (workdir / "polaris.active.json").is_file()
