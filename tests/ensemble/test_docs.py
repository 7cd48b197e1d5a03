"""docs/ensembles.md: its quoted outputs are what the commands print."""

from __future__ import annotations

import re

from judgecp.data.ensemble.prompts import main as prompts_main
from judgecp.data.ensemble.prompts import read_prompt_set
from judgecp.kinds.ensemble.evaluate import main as evaluate_main
from tests.helpers import REPO

DOC = (REPO / "docs" / "ensembles.md").read_text("utf-8")


def code_blocks() -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", DOC, flags=re.S)


def test_quick_start_output_is_quoted_exactly(capsys):
    assert evaluate_main(["--example"]) == 0
    printed = capsys.readouterr().out.strip()
    quoted = next(b for b in code_blocks() if b.startswith("method"))
    assert printed == quoted.strip()


def test_prompt_commands_work_as_documented(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    block = next(b for b in code_blocks() if "judgecp.data.ensemble.prompts" in b)
    for line in block.strip().splitlines():
        args = line.split("judgecp.data.ensemble.prompts", 1)[1].split()
        assert prompts_main(args) == 0
    assert len(read_prompt_set(tmp_path / "prompt-set.json")) == 145
    assert "145 prompts" in capsys.readouterr().out
