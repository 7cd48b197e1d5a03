"""A new kind of judge is one module plus its registration (issue 25): tests/toy_kind.py runs through
evaluate, gate, calibrate, apply and report without a line of judgecp changed; and no layer outside the
kinds branches on a kind's name."""

from __future__ import annotations

import ast
import csv
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from judgecp.base.plugins import get_plugin_manager
from judgecp.cli import main
from judgecp.kinds import kind_names
from judgecp.workflows.calibrators.fileformat import content_digest
from tests import toy_kind
from tests.helpers import REPO


@pytest.fixture
def verdict_kind() -> Iterator[None]:
    pm = get_plugin_manager()
    pm.register(toy_kind, name="toy_kind")
    try:
        yield
    finally:
        pm.unregister(name="toy_kind")


def verdict_table(path: Path, n: int, labeled: int, seed: int) -> Path:
    """A calibrated yes/no judge: the human says yes with the judge's probability."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, n)
    y = rng.random(n) < p
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "p_yes", "label"])
        for i in range(n):
            writer.writerow([f"v{seed}-{i}", f"{p[i]:.6f}", ("yes" if y[i] else "no") if i < labeled else ""])
    return path


def test_a_toy_kind_runs_through_every_command(verdict_kind: None, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert "verdict" in kind_names()
    cal_table = verdict_table(tmp_path / "cal.csv", 600, 600, seed=1)
    run_table = verdict_table(tmp_path / "run.csv", 800, 400, seed=2)
    # evaluate: the kind's study, typed result, flat metrics, console line
    report = tmp_path / "verdict.json"
    assert main(["evaluate", str(cal_table), "--kind", "verdict", "--splits", "20", "--json", str(report)]) == 0
    body = json.loads(report.read_text())
    assert body["schema"] == "judgecp.report/1" and body["kind"] == "verdict"
    assert 0.85 <= body["coverage"] <= 0.95 and 1.0 <= body["set_size"] <= 2.0  # LAC at alpha 0.1, 300 cal. items
    assert "coverage 0." in capsys.readouterr().out
    assert main(["gate", str(report), "--min", "coverage=0.85", "--max", "set_size=2"]) == 0
    assert main(["gate", str(report), "--min", "coverage_naive=0.8"]) == 2  # another kind's metric: not in the file
    # calibrate and apply: the kind's estimator, its state saved as numbers and checked on load
    cal = tmp_path / "verdict.cal.json"
    assert main(["calibrate", str(cal_table), "--kind", "verdict", "-o", str(cal)]) == 0
    out, summary = tmp_path / "sets.jsonl", tmp_path / "apply.json"
    assert main(["apply", str(cal), str(run_table), "--kind", "verdict", "-o", str(out), "--json", str(summary)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 800 and all(set(r["set"]) <= {"no", "yes"} for r in rows)
    applied = json.loads(summary.read_text())
    assert applied["schema"] == "judgecp.apply/1" and applied["labeled"]["n"] == 400
    assert abs(applied["labeled"]["coverage"] - 0.9) < 0.06 and applied["drift"]["drift"] is False
    assert applied["estimate"]["target"] == "share of yes"
    assert main(["gate", str(summary), "--min", "coverage_labeled=0.8", "--no-drift"]) == 0
    # a hand-edited threshold is refused even with its digest recomputed
    obj = json.loads(cal.read_text())
    obj["state"]["threshold"] = obj["state"]["threshold"] / 2
    obj["digest"] = content_digest(obj)
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(obj))
    capsys.readouterr()
    assert main(["apply", str(tampered), str(run_table), "--kind", "verdict"]) == 2
    assert "state.threshold" in capsys.readouterr().err
    # report: the kind's title and table
    pytest.importorskip("matplotlib")
    assert main(["report", str(report), "-o", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Yes/no verdicts: conformal sets" in md and "set size" in md


def test_without_its_registration_the_kind_is_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "verdict" not in kind_names()
    table = verdict_table(tmp_path / "v.csv", 50, 50, seed=3)
    assert main(["evaluate", str(table), "--kind", "verdict"]) == 2
    assert "verdict" in capsys.readouterr().err


#: Kind names no module outside judgecp.kinds may compare against (issue 25: no `if kind ==` outside the kinds).
KIND_NAMES = {"likert", "pairwise", "mcq", "parc", "ensemble"}


def _is_kindish(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name in ("kind", "ckind") or name.endswith("_kind")


def _names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def kind_branches(path: Path) -> list[str]:
    """``kind == "likert"``, ``kind in ("mcq", "parc")``, ``{"likert": ...}[kind]``-style dispatch in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                                                 for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(_is_kindish(s) for s in sides) and any(_names(s) & KIND_NAMES for s in sides):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Dict) and _is_kindish(node.slice):
            if {k.value for k in node.value.keys if isinstance(k, ast.Constant)} & KIND_NAMES:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_no_layer_outside_the_kinds_branches_on_a_kind() -> None:
    files = [p for folder in ("plugin", "adapters", "tasks") for p in sorted((REPO / folder).rglob("*.py"))
             if "kinds" not in p.relative_to(REPO).parts]
    found = [hit for p in files for hit in kind_branches(p)]
    assert found == [], f"branches on a kind's name outside judgecp.kinds: {found}"


def test_the_branch_scan_sees_a_branch(tmp_path: Path) -> None:
    sample = REPO / "tests" / "_kind_branch_sample.py"
    sample.write_text('def f(kind, data):\n    if kind == "likert":\n        return 1\n'
                      '    return {"likert": 1, "mcq": 2}[data.kind] if data.kind in ("mcq", "parc") else 0\n')
    try:
        assert len(kind_branches(sample)) == 3
    finally:
        sample.unlink()
