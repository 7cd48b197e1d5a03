"""Warnings on the console: one line per kind with a count (details in the JSON), libraries' warnings in one line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from judgecp.cli import main, warning_origin
from judgecp.workflows.study.warnings import summary_lines
from tests.helpers import shared_file


def under(group: str, method: str, coverage: float, mondrian: bool = False) -> dict[str, Any]:
    return {"warning": "group_under_target", "group": group, "method": method, "coverage": coverage, "target": 0.9,
            "mc_error": 0.03, "mondrian": mondrian, "message": f"group {group!r}: {method} covers {coverage}"}


def test_one_line_per_kind_the_worst_first() -> None:
    share = {"warning": "excluded_share", "message": "40 of 100 rows (40%) were left out"}
    found = [under("a", "naive", 0.85), share, under("b", "lac", 0.70), under("a", "lac", 0.80)]
    lines = summary_lines(found, "r.json")
    assert len(lines) == 2
    assert lines[0].startswith("3 group/method pairs (2 groups, 2 methods) cover below the target 0.90")
    assert "lowest: 'b' lac 0.700, 'a' lac 0.800, 'a' naive 0.850; each one in r.json" in lines[0]
    assert "a marginal method promises nothing per group" in lines[0]
    assert lines[1] == share["message"]  # a single warning keeps its own message
    assert "Mondrian calibration promises" in summary_lines([under("a", "m", 0.8, True), under("b", "m", 0.7, True)])[0]
    assert summary_lines([under("a", "naive", 0.85)]) == ["group 'a': naive covers 0.85"]
    other = summary_lines([{"kind": "drift", "message": "x"}, {"kind": "drift", "message": "y"}], "here")
    assert other == ["2 drift warnings, the first: x; each one in here"]
    assert summary_lines([]) == []


def test_evaluate_prints_one_line_the_json_keeps_every_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real judge per task category: several groups miss the target under pooled calibration."""
    data = shared_file("mllm_judge", "llava_critic_7b_features.csv")
    out = tmp_path / "r.json"
    assert main(["evaluate", str(data), "--join", str(data.parent / "task_labels.csv"), "--group", "orig_dataset",
                 "--methods", "naive,lac", "--splits", "3", "--quiet", "--json", str(out)]) == 0
    err = capsys.readouterr().err
    found = json.loads(out.read_text())["warnings"]
    assert len(found) >= 3 and {w["warning"] for w in found} == {"group_under_target"}
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"judgecp: warning: {len(found)} group/method pairs") and str(out) in lines[0]


def third_party_warning(times: int) -> int:
    """A RuntimeWarning as scipy's ks_2samp raises it, from inside scipy's package."""
    for _ in range(times):
        warnings.warn_explicit("ks_2samp: Exact calculation unsuccessful. Switching to method=asymp.\nmore",
                               RuntimeWarning, "/venv/lib/python3.12/site-packages/scipy/stats/_stats_py.py", 8000,
                               module="scipy.stats._stats_py", registry={})
    return 0


def test_a_librarys_warnings_are_one_line_and_filters_still_hold(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    import judgecp.cli.evaluate as evaluate_cli

    monkeypatch.setattr(evaluate_cli, "run_evaluate", lambda args: third_party_warning(3))
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # a user's Python: warnings shown, not errors
        assert main(["evaluate", "--example"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines() == ["judgecp: note: scipy warned (3 times): RuntimeWarning: ks_2samp: Exact calculation "
                                "unsuccessful. Switching to method=asymp."]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pytest's filterwarnings = error: a test still fails on it
        with pytest.raises(RuntimeWarning, match="ks_2samp"):
            main(["evaluate", "--example"])
    assert warning_origin("/x/dist-packages/sklearn/utils/v.py") == "sklearn" and warning_origin("/w/run.py") == "run"
