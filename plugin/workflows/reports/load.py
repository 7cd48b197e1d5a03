"""Reading ``judgecp evaluate --json`` reports for the figures: one :class:`Run` per file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.present.runs import NIGHTLY_SCHEMAS, Run
from judgecp.workflows.reports.collect import collect
from judgecp.workflows.results import read_json_file, verified
from judgecp.workflows.results.study import infer_kind, other_file, report_kinds

#: What ``judgecp report`` takes, for the messages that refuse anything else.
TAKES = ("judgecp report takes `judgecp evaluate --json` reports, harness output files or folders, and the "
         "results of compare, plan and apply --history")


def read_report(path: Path) -> dict[str, Any]:
    """A report file, checked: a JSON object that is a judgecp report (its ``kind`` filled in) whose digest
    matches its content (:func:`verified`)."""
    if not path.is_file():
        raise InputError(f"{path}: no such file or folder")
    # not JSON, not UTF-8, an integer of 5000 digits, nested too deep; a JSON-lines file of judgecp's is named
    report = read_json_file(path, "not a JSON report")
    if not isinstance(report, dict):
        raise InputError(f"{path}: not a judgecp report (a JSON object is expected)")
    if report.get("schema") in NIGHTLY_SCHEMAS and (report.get("history") or report["schema"] != "judgecp.apply/1"):
        return verified(report, path)  # an apply summary is drawn for its history across nights; without one, nothing
    what = other_file(report)
    if what is not None:
        raise InputError(f"{path}: {what}, not a report; {TAKES}")
    if infer_kind(report) is None:
        if isinstance(report.get("kind"), str):
            raise InputError(
                f"{path}: a {report['kind']} report; judgecp report draws {', '.join(report_kinds())} reports"
            )
        raise InputError(f"{path}: not a judgecp evaluate report (no kind, methods or controllers)")
    return verified(report, path)



def load_runs(paths: Sequence[str | Path], names: Sequence[str] | None = None,
              alphas: Sequence[float] | None = None) -> list[Run]:
    """The reports, in the order given (folders and harness files as :mod:`judgecp.workflows.reports.collect` finds
    them).

    A name per report: ``names``, else the file's stem (lm-eval samples: the task).
    """

    if not paths:
        raise InputError("give at least one REPORT.json")
    found = collect(paths, alphas)
    if names is not None and len(names) != len(found):
        raise InputError(f"--names gives {len(names)} names for {len(found)} reports")
    runs: list[Run] = []
    for i, (name, path, report) in enumerate(found):
        report = report or read_report(path)
        if report.get("schema") in NIGHTLY_SCHEMAS:
            runs.append(Run(names[i] if names is not None else name, str(path), report))
            continue
        kind = infer_kind(report)
        if kind is None:
            raise InputError(f"{path}: not a judgecp evaluate report (no kind, methods or controllers)")
        runs.append(Run(names[i] if names is not None else name, str(path), {**report, "kind": kind}))
    seen: set[str] = set()
    for r in runs:
        if r.name in seen:
            raise InputError(f"two reports are named {r.name!r}; give --names")
        seen.add(r.name)
    return runs
