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
from typing import Any

from judgecp.errors import InputError
from judgecp.evaluation.metrics import headline_entry
from judgecp.kinds import get_kind
from judgecp.outputs import building_directory
from judgecp.report import fmt as text_cell
from judgecp.reports.figures import Missing, Plot
from judgecp.reports.load import Run, load_runs, report_kinds
from judgecp.reports.render import Document, Table, to_html, to_markdown, write_figures
from judgecp.results import load_result


@dataclass
class Written:
    markdown: Path
    html: Path
    figures: list[Path]
    missing: list[Missing]


def fmt(value: Any, digits: int = 3) -> str:
    """A report cell: the text table's, with an en dash for a missing value."""
    return text_cell(value, digits, missing="–")


def choose_focus(runs: Sequence[Run], focus: str | None, section: str = "methods") -> str:
    names = [list(r.report.get(section, {})) for r in runs]
    if focus is not None:
        if not all(focus in n for n in names):
            raise InputError(f"--method {focus!r} is not in every {runs[0].kind} report ({', '.join(names[0])})")
        return focus
    common = [m for m in names[0] if all(m in n for n in names[1:])]
    return common[0] if common else (names[0][0] if names[0] else "")


def _runs_table(runs: Sequence[Run]) -> Table:
    rows = []
    for r in runs:
        src = r.report.get("input", {}).get("source") if isinstance(r.report.get("input"), dict) else None
        src = src or r.report.get("source") or "–"
        alpha = r.report.get("alpha")
        alpha = f"{alpha:g}" if isinstance(alpha, (int, float)) else ", ".join(f"{a:g}" for a in r.report.get("alphas", []))
        rows.append([r.name, r.kind, str(src), fmt(r.report.get("n")), fmt(alpha), Path(r.path).name])
    return Table(["report", "kind", "input", "n", "alpha", "file"], rows)


def likert_tables(runs: Sequence[Run]) -> list[Table]:
    tables = []
    if len(runs) == 1:
        r = runs[0].report
        rows = []
        for m, e in r["methods"].items():
            iv = e.get("interval") or {}
            lab = e["labels"] or {}  # continuous labels: no label set
            rows.append([m, fmt(iv.get("coverage")), fmt(iv.get("width"), 2), fmt(lab.get("coverage")),
                         fmt(lab.get("width"), 2), fmt(lab.get("size"), 2), fmt(lab.get("empty")), fmt(e.get("full_range"))])
        own = r.get("label_scale") or {}
        note = (f" Continuous labels ({own['map']}): no label set holds them, so coverage and width are the "
                "intervals' (also in the figures), and the by-label and by-error strata bin each label to its "
                "nearest scale point." if own.get("continuous") else "")
        tables.append(Table(["method", "interval cov.", "interval width", "label-set cov.", "label-set width",
                             "set size", "empty sets", "full range"], rows,
                            f"Methods at α = {r['alpha']:g} (mean over {len(r['protocol']['seeds'])} splits; widths in scale points)."
                            + note))
    else:
        methods = [m for m in runs[0].report["methods"] if all(m in x.report["methods"] for x in runs[1:])]
        rows = [[r.name] + [f"{fmt(headline_entry(r.report['methods'][m])['coverage'])} / "
                            f"{fmt(headline_entry(r.report['methods'][m])['width'], 2)}" for m in methods] for r in runs]
        tables.append(Table(["judge", *methods], rows,
                            "Label-set coverage / width (scale points) at each report's α, judges as rows."))
    keys = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae", "bias", "max_softmax_mean")
    rows = [[r.name] + [fmt(r.report.get("point", {}).get(k)) for k in keys] for r in runs if r.report.get("point")]
    if rows:
        tables.append(Table(["judge", *keys], rows, "The judge's point metrics (its own score against the human label)."))
    return tables


def pairwise_tables(runs: Sequence[Run]) -> list[Table]:
    ctrls = [c for c in runs[0].report.get("controllers", {}) if all(c in r.report.get("controllers", {}) for r in runs)]
    rows = []
    for r in runs:
        a = f"{r.alpha:g}"
        rows.append([r.name, a] + [f"{fmt(r.report['controllers'][c].get(a, {}).get('risk'))} / "
                                   f"{fmt(r.report['controllers'][c].get(a, {}).get('coverage'))}" for c in ctrls])
    tables = [Table(["judge", "α", *ctrls], rows, "Test risk / accepted share at the headline α, judges as rows.")]
    rows = []
    for r in runs:
        for sig, q in r.report.get("uncertainty", {}).items():
            rows.append([r.name, sig] + [fmt(q.get(k)) for k in ("accuracy", "ece", "auroc", "auprc")])
    if rows:
        tables.append(Table(["judge", "signal", "accuracy", "ECE", "AUROC", "AUPRC"], rows,
                            "Quality of each uncertainty signal (ECE with 10 bins)."))
    return tables


def mcq_tables(runs: Sequence[Run]) -> list[Table]:
    methods = [m for m in runs[0].report["methods"] if all(m in r.report["methods"] for r in runs)]
    rows = [[r.name, fmt(r.report.get("accuracy"))] + [
        f"{fmt(r.report['methods'][m]['coverage'])} / {fmt(r.report['methods'][m]['set_size'], 2)}" for m in methods]
        for r in runs]
    return [Table(["judge", "accuracy", *methods], rows, "Coverage / mean set size at each report's α, judges as rows.")]


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
                vals = [c["reliability"]["calibrated"] if isinstance(c.get("reliability"), dict) else c.get("reliability")
                        for k, c in cells.items() if k.split("|")[1] == d]
                vals = [v for v in vals if v is not None]
                row.append(fmt(sum(vals) / len(vals)) if vals else "–")
            rows.append(row)
    return [Table(["judge", *datasets], rows, "Calibrated reliability, mean over the prompt variations, judges as rows.")]


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
        for t in kind.report_tables(group):
            doc.add("table", t)
        section = kind.report_focus
        f = choose_focus(group, focus, section) if section is not None else ""
        if len(group) > 1 and f:
            doc.add("p", f"Figures with one line per report show {section.rstrip('s') if section else ''} "
                    f"`{f}` (`--method` picks another).")
        kind_missing: list[Missing] = []
        for builder in kind.report_figures():
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
    from judgecp.reports.figures import nightly

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

    ``paths``: report files, harness output files or folders (:mod:`judgecp.reports.collect`);
    ``alphas``: the levels a harness file is evaluated at.
    """
    from judgecp.reports.figures import _matplotlib

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
