"""How multiple-choice and PARC reports look: the console tables, the report's tables and figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import judgecp.kinds.choice.figures as figures
from judgecp.kinds.kind import Presenter
from judgecp.present.console import fmt, pm_cell, write_head
from judgecp.present.render import Table, report_cell
from judgecp.present.runs import Run


class ChoicePresenter(Presenter):
    title = "Multiple choice: conformal option sets"

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        write_head(body, out, self.noun)
        write_mcq_table(body, out)

    def report_tables(self, runs: Any) -> list[Any]:
        return mcq_tables(runs)

    def report_figures(self) -> tuple[Any, ...]:
        f = figures
        return (f.mcq_methods, f.mcq_sweep, f.mcq_groups, f.set_size_hist)


class ParcPresenter(Presenter):
    title = "PARC: reliability across prompt variations"
    noun = "records"
    report_focus = None

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        write_head(kept_apart(body), out, self.noun)
        write_parc_table(body, out)

    def report_tables(self, runs: Any) -> list[Any]:
        return parc_tables(runs)

    def report_figures(self) -> tuple[Any, ...]:
        return (figures.parc_heatmaps,)


def write_mcq_table(report: Mapping[str, Any], out: TextIO) -> None:
    """Coverage and set sizes per method (below the head)."""
    w = out.write
    w(f"  alpha {report['alpha']}, {len(report['protocol']['seeds'])} seeds; model accuracy {report['accuracy']:.3f}; "
      f"options per item {report['options']['mean']:.2f}\n\n")
    w(f"  {'method':24s} {'coverage':>14s} {'set size':>14s} {'size|correct':>13s} {'size|wrong':>11s} {'empty':>6s}\n")
    for name, m in report["methods"].items():
        w(
            f"  {name:24s} {pm_cell(m, 'coverage'):>14s} {pm_cell(m, 'set_size', 2):>14s} "
            f"{fmt(m['set_size_correct'], 2):>13s} "
            f"{fmt(m['set_size_incorrect'], 2):>11s} {m['empty']:6.3f}\n"
        )


def write_parc_table(report: Mapping[str, Any], out: TextIO) -> None:
    """PARC's calibrated scores by variation (below the head)."""
    w = out.write
    p = report["protocol"]
    w(
        f"  certainty from {1 - p['alpha']:.0%} LAC sets, threshold from the {p['reference']} prompts, "
        f"{len(p['seeds'])} seeds\n\n"
    )
    w(
        f"  {'variation':10s} {'reliability':>12s} {'accuracy':>9s} {'certainty':>10s} {'consistency':>12s}   "
        "(calibrated)\n"
    )
    for v in report["reliability"]["variation"]:
        cells = []
        for score in ("reliability", "accuracy", "certainty", "consistency"):
            entry = report[score]["variation"].get(v)
            cells.append(fmt(entry.get("calibrated")) if entry else "-")
        w(f"  {v:10s} {cells[0]:>12s} {cells[1]:>9s} {cells[2]:>10s} {cells[3]:>12s}\n")


def mcq_tables(runs: Sequence[Run]) -> list[Table]:
    methods = [m for m in runs[0].report["methods"] if all(m in r.report["methods"] for r in runs)]
    rows = [
        [r.name, report_cell(r.report.get("accuracy"))]
        + [
            f"{report_cell(r.report['methods'][m]['coverage'])} / {report_cell(r.report['methods'][m]['set_size'], 2)}"
            for m in methods
        ]
        for r in runs
    ]
    return [
        Table(["judge", "accuracy", *methods], rows, "Coverage / mean set size at each report's α, judges as rows.")
    ]


def parc_tables(runs: Sequence[Run]) -> list[Table]:
    datasets = sorted({d for r in runs for d in r.report.get("reliability", {}).get("dataset", {})})
    rows = []
    for r in runs:
        rel = r.report.get("reliability", {})
        per_model = rel.get("model", {})
        for model in per_model or [""]:
            cells = {k: v for k, v in r.report.get("cells", {}).items() if k.split("|")[0] == model}
            row = [r.name + (f": {model}" if model and len(per_model) > 1 else "")]
            for d in datasets:
                vals = [
                    c["reliability"]["calibrated"] if isinstance(c.get("reliability"), dict) else c.get("reliability")
                    for k, c in cells.items()
                    if k.split("|")[1] == d
                ]
                vals = [v for v in vals if v is not None]
                row.append(report_cell(sum(vals) / len(vals)) if vals else "–")
            rows.append(row)
    return [
        Table(["judge", *datasets], rows, "Calibrated reliability, mean over the prompt variations, judges as rows.")
    ]


#: Reasons a PARC report counts among ``excluded`` for records it still uses: a variation whose
#: original prompt is missing keeps its accuracy and certainty, and has no consistency.
KEPT_REASONS = {"no_original_prompt": "no_original_prompt (no consistency)"}


def kept_apart(body: Mapping[str, Any]) -> Mapping[str, Any]:
    """The report's head as the console shows it: records still used are flags (kept), not excluded
    ("records used 34 (read 34); excluded: no_original_prompt 1" read as a contradiction)."""
    excluded = list(body.get("excluded") or [])
    kept = [e for e in excluded if e["reason"] in KEPT_REASONS]
    if not kept:
        return body
    return {**body, "excluded": [e for e in excluded if e["reason"] not in KEPT_REASONS],
            "flags": [*(body.get("flags") or []),
                      *({"flag": KEPT_REASONS[e["reason"]], "count": e["count"]} for e in kept)]}
