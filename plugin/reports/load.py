"""Reading ``judgecp evaluate --json`` reports for the figures: one :class:`Run` per file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgecp.errors import InputError

KINDS = ("likert", "pairwise", "mcq", "parc")


@dataclass(frozen=True)
class Run:
    """One report: its display name (a judge, a data set, a setting), the file and its contents."""

    name: str
    path: str
    report: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.report["kind"])

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


def infer_kind(report: dict[str, Any]) -> str | None:
    kind = report.get("kind")
    if kind in KINDS:
        return str(kind)
    if "controllers" in report:
        return "pairwise"
    if "cells" in report.get("reliability", {}) or "reliability" in report:
        return "parc"
    if "confusion" in report:
        return "likert"
    if "methods" in report:
        return "mcq"
    return None


def default_name(path: Path, report: dict[str, Any]) -> str:
    return path.stem


def load_runs(paths: Sequence[str | Path], names: Sequence[str] | None = None) -> list[Run]:
    """The reports, in the order given; a name per report (default: the file's stem)."""
    if not paths:
        raise InputError("give at least one REPORT.json")
    if names is not None and len(names) != len(paths):
        raise InputError(f"--names gives {len(names)} names for {len(paths)} reports")
    runs: list[Run] = []
    for i, p in enumerate(paths):
        path = Path(p)
        if not path.is_file():
            raise InputError(f"{path}: no such file")
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: not a JSON report ({exc})") from exc
        if not isinstance(report, dict):
            raise InputError(f"{path}: not a judgecp report (a JSON object is expected)")
        kind = infer_kind(report)
        if kind is None:
            raise InputError(f"{path}: not a judgecp evaluate report (no kind, methods or controllers)")
        report = {**report, "kind": kind}
        name = names[i] if names is not None else default_name(path, report)
        runs.append(Run(name, str(path), report))
    seen: set[str] = set()
    for r in runs:
        if r.name in seen:
            raise InputError(f"two reports are named {r.name!r}; give --names")
        seen.add(r.name)
    return runs
