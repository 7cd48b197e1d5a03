"""How pairwise reports look: signals and controllers on the console, the report's tables and figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import judgecp.kinds.pairwise.figures as figures
from judgecp.kinds.kind import Presenter
from judgecp.present.console import fmt, write_head
from judgecp.present.render import Table, report_cell
from judgecp.present.runs import Run


class PairwisePresenter(Presenter):
    title = "Pairwise judges: selective risk control"
    noun = "pairs"
    report_focus = "controllers"

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        write_head(body, out, self.noun)
        write_pairwise_table(body, out)

    def report_tables(self, runs: Any) -> list[Any]:
        return pairwise_tables(runs)

    def report_figures(self) -> tuple[Any, ...]:
        f = figures
        return (f.risk_coverage, f.risk_vs_alpha, f.accepted_share, f.signal_reliability)


def write_pairwise_table(report: Mapping[str, Any], out: TextIO) -> None:
    """Uncertainty quality per signal and risk/coverage per controller and level (below the head)."""
    w = out.write
    p = report["protocol"]
    w(f"  {p['n_splits']} random splits, {p['cal_fraction']:.0%} calibration; controllers use {p['signal']}\n\n")
    w(f"  {'signal':12s} {'accuracy':>9s} {'ECE':>7s} {'AUROC':>7s} {'AUPRC':>7s}\n")
    for name, q in report["uncertainty"].items():
        w(f"  {name:12s} {q['accuracy']:9.3f} {q['ece']:7.3f} {fmt(q['auroc']):>7s} {fmt(q['auprc']):>7s}\n")
    alphas = list(next(iter(report["controllers"].values())))
    w("\n  risk among accepted (FDR) / coverage, mean over splits\n")
    w(f"  {'controller':16s}" + "".join(f" {'alpha ' + a:>16s}" for a in alphas) + "\n")
    for name, per in report["controllers"].items():
        cells = "".join(f" {per[a]['risk']:7.3f} / {per[a]['coverage']:5.3f}" for a in alphas)
        w(f"  {name:16s}{cells}\n")


def pairwise_tables(runs: Sequence[Run]) -> list[Table]:
    ctrls = [
        c for c in runs[0].report.get("controllers", {}) if all(c in r.report.get("controllers", {}) for r in runs)
    ]
    rows = []
    for r in runs:
        a = f"{r.alpha:g}"
        rows.append(
            [r.name, a]
            + [
                f"{report_cell(r.report['controllers'][c].get(a, {}).get('risk'))} / "
                f"{report_cell(r.report['controllers'][c].get(a, {}).get('coverage'))}"
                for c in ctrls
            ]
        )
    tables = [Table(["judge", "α", *ctrls], rows, "Test risk / accepted share at the headline α, judges as rows.")]
    rows = []
    for r in runs:
        for sig, q in r.report.get("uncertainty", {}).items():
            rows.append([r.name, sig] + [report_cell(q.get(k)) for k in ("accuracy", "ece", "auroc", "auprc")])
    if rows:
        tables.append(Table(["judge", "signal", "accuracy", "ECE", "AUROC", "AUPRC"], rows,
                            "Quality of each uncertainty signal (ECE with 10 bins)."))
    return tables
