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
from judgecp.workflows.reports.figures import Missing, Plot, _matplotlib, nightly
from judgecp.workflows.reports.load import load_runs
from judgecp.workflows.results import load_result
from judgecp.workflows.results.study import report_kinds


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
        alpha = r.report.get("alpha")
        alpha = f"{alpha:g}" if isinstance(alpha, (int, float)) else ", ".join(f"{a:g}" for a in r.report.get("alphas", []))
        rows.append([r.name, r.kind, str(src), fmt(r.report.get("n")), fmt(alpha), Path(r.path).name])
    return Table(["report", "kind", "input", "n", "alpha", "file"], rows)


def build_document(runs: Sequence[Run], focus: str | None = None) -> tuple[Document, list[Missing]]:
    doc = Document()
    doc.add("h1", "judgecp report")
    doc.add("p", "Reliability of model judges from `judgecp evaluate --json` reports. Coverage is the share of test "
            "items whose human label is in the judge's conformal set; the promise is coverage ≥ 1 − α on average "
            "over exchangeable items. Widths are in scale points.")
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


def _nightly_section(doc: Document, runs: Sequence[Run]) -> list[Missing]:
    """compare, plan and apply --history results: the difference with its three intervals, the width against
    labels, the evidence of drift across nights."""

    doc.add("h2", "The nightly loop: comparisons, label plans, drift across nights")
    builders = {"judgecp.compare/1": nightly.difference_intervals, "judgecp.plan/1": nightly.width_against_labels,
                "judgecp.apply/1": nightly.martingale_over_nights}
    missing: list[Missing] = []
    for run in runs:
        untrusted = load_result(run.report, run.path).untrusted()
        for why in dict.fromkeys(untrusted.values()):
            names = [name for name, reason in untrusted.items() if reason == why]
            doc.add("p", f"{run.name}: untrusted, and `judgecp gate` fails {len(names)} metric(s) of it "
                    f"({', '.join(names[:4])}{' ...' if len(names) > 4 else ''}): {why}.")
        result = builders[run.report["schema"]](run.report)
        if isinstance(result, Plot):
            result = Plot(f"{result.id}_{len(doc.blocks)}", f"{result.title}: {run.name}", result.caption, result.figure)
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
    return Written(md, page, [outdir / "figures" / f"{i}.{e}" for i in pngs for e in ("png", "svg")] or figures, missing)


__all__ = ["Run", "Written", "build_document", "load_runs", "write_report"]
