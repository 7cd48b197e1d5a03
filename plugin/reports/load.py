"""Reading ``judgecp evaluate --json`` reports for the figures: one :class:`Run` per file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgecp.calibrators.results import ApplyResult, EstimateResult
from judgecp.errors import InputError
from judgecp.results import StudyResult, describe, load_result, read_json_file


def report_kinds() -> list[str]:
    """The kinds ``judgecp report`` shows: those that name figures or tables (:meth:`judgecp.kinds.Kind.report_figures`)."""
    from judgecp.kinds import Kind, get_kind, kind_names

    return [name for name in kind_names()
            if get_kind(name).report_figures() or type(get_kind(name)).report_tables is not Kind.report_tables]


@dataclass(frozen=True)
class Run:
    """One report: its display name (a judge, a data set, a setting), the file and its contents."""

    name: str
    path: str
    report: dict[str, Any]

    @property
    def kind(self) -> str:
        """The judge kind of an evaluate report; ``nightly`` for compare, plan and apply results."""
        return "nightly" if self.report.get("schema") in NIGHTLY_SCHEMAS else str(self.report["kind"])

    @property
    def calibration(self) -> str:
        """Likert group tables: ``Mondrian`` (calibrated per group) or ``pooled`` (one calibration)."""
        protocol = self.report.get("protocol") or {}
        return "Mondrian" if protocol.get("mondrian") else "pooled"

    @property
    def alpha(self) -> float:
        """The headline level (pairwise: ``alpha`` when present, else 0.1 if swept, else the first level)."""
        if "alpha" in self.report:
            return float(self.report["alpha"])
        alphas = [float(a) for a in self.report.get("alphas", [])]
        return 0.1 if 0.1 in alphas or not alphas else alphas[0]


#: The nightly loop's results ``judgecp report`` draws beside the studies (their figures: reports.figures.nightly).
NIGHTLY_SCHEMAS = ("judgecp.compare/1", "judgecp.plan/1", "judgecp.apply/1")

#: What ``judgecp report`` takes, for the messages that refuse anything else.
TAKES = ("judgecp report takes `judgecp evaluate --json` reports, harness output files or folders, and the "
         "results of compare, plan and apply --history")


def other_file(obj: dict[str, Any]) -> str | None:
    """What a judgecp JSON that is not an evaluate report is (a calibrator, an apply summary, ...), else ``None``."""
    if obj.get("schema") != StudyResult.schema and (what := describe(obj)) is not None:
        return what
    # Files of the nightly commands written before results carried their schema.
    if "n_applied" in obj and "drift" in obj:
        return ApplyResult.description
    if "n_labeled" in obj and "estimate" in obj:
        return EstimateResult.description
    if "results" in obj and "configs" in obj:
        return "an lm-eval results file"
    return None


def infer_kind(report: dict[str, Any]) -> str | None:
    if other_file(report) is not None:
        return None
    kind = report.get("kind")
    if isinstance(kind, str) and kind in report_kinds():
        return str(kind)
    if isinstance(kind, str):  # a kind with no figures yet (e.g. ensemble)
        return None
    if "controllers" in report:
        return "pairwise"
    if "cells" in report.get("reliability", {}) or "reliability" in report:
        return "parc"
    if "confusion" in report:
        return "likert"
    if "methods" in report:
        return "mcq"
    return None


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
            raise InputError(f"{path}: a {report['kind']} report; judgecp report draws {', '.join(report_kinds())} reports")
        raise InputError(f"{path}: not a judgecp evaluate report (no kind, methods or controllers)")
    return verified(report, path)


def verified(report: dict[str, Any], path: Path) -> dict[str, Any]:
    """The report of a file, its digest checked and every metric read (an edited, undigested or malformed
    result is one line), as plain JSON values."""
    result: dict[str, Any] = load_result(report, str(path), require_digest=True).to_json()
    return result


def load_runs(paths: Sequence[str | Path], names: Sequence[str] | None = None,
              alphas: Sequence[float] | None = None) -> list[Run]:
    """The reports, in the order given (folders and harness files as :mod:`judgecp.reports.collect` finds them).

    A name per report: ``names``, else the file's stem (lm-eval samples: the task).
    """
    from judgecp.reports.collect import collect

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
