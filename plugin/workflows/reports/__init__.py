"""Reports people look at: ``judgecp report REPORT.json [...] -o DIR``.

Reads one or more ``judgecp evaluate --json`` reports (any kind, mixed) and
writes ``DIR/report.md``, a self-contained ``DIR/report.html`` (figures
embedded as base64 PNG) and ``DIR/figures/<id>.png|.svg``. Several reports of
one kind are shown side by side: one table with the reports (judges) as rows
and the methods (controllers, data sets) as columns, and one line per report
in the figures. Only what the reports contain is drawn; the document lists
what it could not draw and which option of ``judgecp evaluate`` would add it.
Needs matplotlib (``pip install judgecp[report]``); figures are drawn headless
(Agg) and the output is byte-for-byte deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from judgecp.base.errors import InputError
from judgecp.base.outputs import building_directory
from judgecp.kinds import get_kind
from judgecp.present.render import (
    Document,
    Table,
    choose_focus,
    to_html,
    to_markdown,
    write_figures,
)
from judgecp.present.render import report_cell as fmt
from judgecp.present.runs import Run
from judgecp.workflows.reports.collect import SUBTASK_FIELD
from judgecp.workflows.reports.figures import Missing, Plot, _matplotlib, nightly, nights
from judgecp.workflows.reports.load import load_runs
from judgecp.workflows.results import load_result
from judgecp.workflows.results.study import report_kinds
from judgecp.workflows.study.warnings import summary_lines


@dataclass
class Written:
    markdown: Path
    html: Path
    figures: list[Path]
    missing: list[Missing]


def _runs_table(runs: Sequence[Run]) -> Table:
    rows = []
    for r in runs:
        src = r.report.get("input", {}).get("source") if isinstance(r.report.get("input"), dict) else None
        src = src or r.report.get("source") or "–"
        if r.report.get("schema") == nights.HISTORY_SCHEMA:  # a history: its nights and their items
            lines = r.report["nights"]
            rows.append([r.name, r.kind, f"{len(lines)} nights of apply --history", fmt(sum(n["n"] for n in lines)),
                         f"{lines[0]['level']:g} (drift)", Path(r.path).name])
            continue
        alpha = r.report.get("alpha")
        alpha = (
            f"{alpha:g}" if isinstance(alpha, (int, float)) else ", ".join(f"{a:g}" for a in r.report.get("alphas", []))
        )
        rows.append([r.name, r.kind, str(src), fmt(r.report.get("n")), fmt(alpha), Path(r.path).name])
    return Table(["report", "kind", "input", "n", "alpha", "file"], rows)


def build_document(runs: Sequence[Run], focus: str | None = None) -> tuple[Document, list[Missing]]:
    doc = Document()
    if all(r.kind == "nightly" for r in runs):  # the nightly loop alone: its own header, not the studies'
        doc.add("h1", "judgecp report: the nightly loop")
        doc.add("p", "What `judgecp apply`, `compare` and `plan` found: across nights, the change detector's "
                "evidence of drift against its alarm threshold, the PPI++ estimate of the human-scale mean with "
                "its interval, and the set sizes; a comparison's difference; a label plan.")
    else:
        doc.add("h1", "judgecp report")
        doc.add("p", "Reliability of model judges from `judgecp evaluate --json` reports. Coverage is the share of "
                "test items whose human label is in the judge's conformal set; the promise is coverage ≥ 1 − α on "
                "average over exchangeable items. Widths are in scale points.")
    doc.add("table", _runs_table(runs))
    missing: list[Missing] = []
    for name in report_kinds():
        group = [r for r in runs if r.kind == name]
        if not group:
            continue
        kind = get_kind(name)
        doc.add("h2", kind.title)
        if len(group) > 1:
            doc.add("p", f"{len(group)} reports side by side: {', '.join(r.name for r in group)}.")
        harness = [r.name for r in group if _calibrated_per_subtask(r)]
        if harness:  # why the report's per-group numbers are those of lm-eval's table, and pooled ones are not
            doc.add("p", f"{', '.join(harness)}: lm-eval's table evaluates each subtask on its own, and so does "
                    "this report (Mondrian calibration by subtask), so their per-group widths and coverages agree "
                    "up to the random splits. Its overall row pools these per-subtask sets, while a subtask of every "
                    "item (`_all`) is calibrated on all items together: that is why the overall widths differ. "
                    "Calibrated together, a noisy subtask borrows the others' thresholds: narrower sets that miss "
                    "its coverage.")
        for r in group:  # what `judgecp evaluate` warned of, as it said it on the console
            for line in summary_lines(r.report.get("warnings") or [], "the report's `warnings`"):
                doc.add("p", f"Warning ({r.name}): {line}")
        for t in kind.presenter.report_tables(group):
            doc.add("table", t)
        section = kind.presenter.report_focus
        f = choose_focus(group, focus, section) if section is not None else ""
        if len(group) > 1 and f:
            doc.add("p", f"Figures with one line per report show {section.rstrip('s') if section else ''} "
                    f"`{f}` (`--method` picks another).")
        kind_missing: list[Missing] = []
        for builder in kind.presenter.report_figures():
            result = builder(group, f)
            if isinstance(result, Plot):
                doc.add("h3", result.title)
                doc.add("figure", result)
            else:
                kind_missing.append(result)
        items = [f"{m.title}: {m.reason}." for m in kind_missing]
        if items:
            doc.add("h3", "Not drawn (missing from the report)")
            doc.add("list", items)
        missing += kind_missing
    nightly = [r for r in runs if r.kind == "nightly"]
    if nightly:
        missing += _nightly_section(doc, nightly)
    return doc, missing


def _calibrated_per_subtask(run: Run) -> bool:
    """An lm-eval group's subtasks evaluated as one judge, each subtask calibrated on its own (:mod:`collect`)."""
    harness, protocol = run.report.get("lm_eval"), run.report.get("protocol")
    return (isinstance(harness, dict) and bool(harness.get("group")) and isinstance(protocol, dict)
            and protocol.get("mondrian") == SUBTASK_FIELD)


def _nightly_section(doc: Document, runs: Sequence[Run]) -> list[Missing]:
    """compare, plan and apply --history results: the difference with its three intervals, the width against
    labels, the evidence of drift across nights."""

    doc.add("h2", "The nightly loop: drift and estimates across nights, comparisons, label plans")
    builders = {"judgecp.compare/1": nightly.difference_intervals, "judgecp.plan/1": nightly.width_against_labels}
    missing: list[Missing] = []
    histories = [r for r in runs if r.report["schema"] == nights.HISTORY_SCHEMA]
    series = [nights.from_history(r) for r in histories]
    applies = [r for r in runs if r.report["schema"] == nights.APPLY_SCHEMA]
    series += nights.from_applies(applies, [r.path for r in histories])
    for i, found in enumerate(series):  # the apply summaries of one history: one figure across their nights
        result = nights.across_nights(found, i)
        doc.add("h3", f"{result.title}: {found.name}")
        if isinstance(result, Plot):
            doc.add("figure", result)
        else:
            missing.append(result)
            doc.add("p", f"not drawn: {result.reason}.")
        doc.add("table", nights.nights_table(found))
    for run in [r for r in runs if r.report["schema"] != nights.HISTORY_SCHEMA]:
        untrusted = load_result(run.report, run.path).untrusted()
        for why in dict.fromkeys(untrusted.values()):
            names = [name for name, reason in untrusted.items() if reason == why]
            doc.add("p", f"{run.name}: untrusted, and `judgecp gate` fails {len(names)} metric(s) of it "
                    f"({', '.join(names[:4])}{' ...' if len(names) > 4 else ''}): {why}.")
        if run.report["schema"] == nights.APPLY_SCHEMA:
            continue  # drawn across nights above
        result = builders[run.report["schema"]](run.report)
        if isinstance(result, Plot):
            result = Plot(
                f"{result.id}_{len(doc.blocks)}", f"{result.title}: {run.name}", result.caption, result.figure
            )
            doc.add("h3", result.title)
            doc.add("figure", result)
        else:
            missing.append(result)
            doc.add("p", f"{run.name}: {result.title} not drawn: {result.reason}.")
    return missing


def write_report(paths: Sequence[str | Path], out: str | Path, *, names: Sequence[str] | None = None,
                 focus: str | None = None, alphas: Sequence[float] | None = None) -> Written:
    """Read the reports and write ``report.md``, ``report.html`` and the figures into ``out``.

    ``paths``: report files, harness output files or folders (:mod:`judgecp.workflows.reports.collect`);
    ``alphas``: the levels a harness file is evaluated at.
    """

    _matplotlib()  # the install hint before any work
    runs = load_runs(paths, names, alphas)
    outdir = Path(out)
    if outdir.exists() and not outdir.is_dir():
        raise InputError(f"-o {outdir}: exists and is not a directory")
    doc, missing = build_document(runs, focus)
    md, page = outdir / "report.md", outdir / "report.html"
    # Built aside and moved into place at the end (report.md last): an interrupted run leaves the old report.
    with building_directory(outdir, last=md.name) as build:
        pngs = write_figures(doc, build)
        (build / md.name).write_text(to_markdown(doc), encoding="utf-8")
        (build / page.name).write_text(to_html(doc, pngs, "judgecp report: " + ", ".join(r.name for r in runs)),
                                       encoding="utf-8")
    for _, value in doc.blocks:
        if isinstance(value, Plot):
            value.figure.clear()
    figures = sorted((outdir / "figures").glob("*.*"))
    return Written(
        md, page, [outdir / "figures" / f"{i}.{e}" for i in pngs for e in ("png", "svg")] or figures, missing
    )


__all__ = ["Run", "Written", "build_document", "load_runs", "write_report"]
