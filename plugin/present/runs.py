"""One report as ``judgecp report`` shows it: :class:`Run`, its display name, file and contents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
NIGHTLY_SCHEMAS = ("judgecp.compare/1", "judgecp.plan/1", "judgecp.apply/1", "judgecp.history/2")

