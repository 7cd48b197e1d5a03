"""How Likert reports look: the console table (with one method's detail), the report's tables and figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import judgecp.kinds.likert.figures as figures
from judgecp.base.errors import InputError
from judgecp.kinds.kind import Presenter
from judgecp.present.console import fmt, pm_cell
from judgecp.present.render import Table, report_cell
from judgecp.present.runs import Run
from judgecp.stats.coverage import headline_entry


class LikertPresenter(Presenter):
    title = "Likert judges: conformal label sets and intervals"
    noun = "rows"

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        write_table(body, out)
        if detail is not None:
            write_detail(body, detail, out)

    def console_detail(self, body: Mapping[str, Any], requested: str | None, kind: str) -> str | None:
        methods = list(body["methods"])
        detail = requested or (methods[0] if methods else None)
        if detail is not None and detail not in body["methods"]:
            raise InputError(f"--detail {detail!r} is not among the methods run: {', '.join(methods)}")
        return detail

    def report_tables(self, runs: Any) -> list[Any]:
        return likert_tables(runs)

    def report_figures(self) -> tuple[Any, ...]:
        f = figures
        return (f.reliability_map, f.likert_methods, f.likert_sweep, f.group_coverage, f.coverage_by_label,
                f.coverage_by_error, f.width_distribution, f.confusion, f.judge_reliability, f.rsg)


def stratum_count(n: float) -> str:
    """A stratum's test rows per split (a mean over splits), rounded, but never to "0" for a
    stratum that has rows (0.5 rows per split is 5 rows over 10 splits: "0.5")."""
    text = f"{n:.0f}"
    return f"{n:.1g}" if text == "0" and n > 0 else text


def bucket_cell(bucket: Mapping[str, Any], kind: str) -> str:
    """A bucket's "coverage/width", or "-" where it has no test rows (nothing was covered or missed there)."""
    cell = bucket.get(kind) or {}
    if not bucket.get("n") or cell.get("coverage") is None or cell.get("width") is None:
        return "-"
    return f"{cell['coverage']:.3f}/{cell['width']:.2f}"


def write_detail(report: Mapping[str, Any], name: str, out: TextIO) -> None:
    """Coverage by ground-truth level and by judge error, informativeness, midpoints for one method."""
    m = report["methods"][name]
    kind = "interval" if m["interval"] is not None else "labels"
    continuous = m["labels"] is None  # continuous labels: interval widths, labels binned in the tables
    w = out.write
    w(f"\nDiagnostics for {name} ({kind}; pooled over seeds)\n")
    for title, key in (
        ("by ground-truth label", "coverage_by_label"),
        ("by judge error |parsed - label|", "coverage_by_error"),
    ):
        cells = "  ".join(f"{k}: {bucket_cell(v, kind)} (n {stratum_count(v['n'])})" for k, v in m[key].items())
        w(f"  coverage/width {title}:  {cells}\n")
    inf = m["informativeness"]
    w(
        f"  {'intervals' if continuous else 'label sets'} decisive (width<=1) {inf['decisive']:.3f}, "
        f"moderate (1-3] {inf['moderate']:.3f}, "
        f"uninformative (>3) {inf['uninformative']:.3f}\n"
    )
    mid = m["midpoint"]
    w(
        "  point estimate  raw score: pearson {} MAE {}   interval midpoint: pearson {} MAE {}\n".format(
            fmt(mid["raw"]["pearson"]),
            fmt(mid["raw"]["mae"]),
            fmt(mid["midpoint"]["pearson"]),
            fmt(mid["midpoint"]["mae"]),
        )
    )


def write_table(report: Mapping[str, Any], out: TextIO, *, max_group_methods: int = 3) -> None:
    """Human-readable summary of a Likert report."""
    w = out.write
    w(f"judgecp evaluate: {report['input']['source']}\n")
    excl = ", ".join(f"{e['reason']} {e['count']}" for e in report["excluded"]) or "none"
    w(f"  rows read {report['n_read']}, used {report['n']}; excluded: {excl}\n")
    if report["flags"]:
        w("  flags (rows kept): " + ", ".join(f"{e['flag']} {e['count']}" for e in report["flags"]) + "\n")
    cols = report["input"]["columns"]
    if cols:
        lp = cols.get("logprobs")
        lp_text = f"{lp[0]}..{lp[-1]}" if isinstance(lp, list) and lp else str(lp)
        w(
            f"  columns: label={cols.get('label')}, logprobs={lp_text}, id={cols.get('id')}, "
            f"parsed={cols.get('parsed')}\n"
        )
    own = report.get("label_scale")
    if own:
        w(f"  {own['map']}" + ("; continuous: interval methods only, label-set columns '-', labels binned to the "
                                "nearest scale point in the by-label and by-error tables" if own["continuous"] else "")
          + "\n")
    proto = report["protocol"]
    w(
        f"  alpha {report['alpha']} (target coverage {1 - report['alpha']:.2f}), {len(proto['seeds'])} seeds, "
        f"{proto['n_calibration']} calibration / {proto['n_test']} test rows"
        + (f", Mondrian by {proto['mondrian']}" if proto["mondrian"] else "")
        + "\n\n"
    )
    p = report["point"]
    w("Judge vs human (all rows)\n")
    w(
        f"  pearson {fmt(p['pearson'])}  spearman {fmt(p['spearman'])}  kendall {fmt(p['kendall'])}  "
        f"exact {fmt(p['exact_accuracy'])}  within-1 {fmt(p['within1_accuracy'])}  "
        f"MAE {fmt(p['mae'])}  bias {p['bias']:+.3f}\n"
    )
    by = "  ".join(f"{k}:{v:+.2f}" if v is not None else f"{k}:-" for k, v in p["bias_by_label"].items())
    w(f"  bias by label  {by}\n")
    if "overconfident_99" in p:
        w(f"  max softmax > 0.99: {p['overconfident_99']:.3f}   > 0.999: {p['overconfident_999']:.3f}\n")
    w("\nConformal methods (mean±std over seeds; label set = [ceil l, floor u])\n")
    header = (f"  {'method':34s} {'interval cov':>13s} {'width':>11s} {'label cov':>13s} {'width':>11s} {'size':>5s} "
              f"{'expanded cov':>13s} {'width':>11s}\n")
    w(header)
    for name, m in report["methods"].items():
        w(
            f"  {name:34s} {pm_cell(m['interval'], 'coverage'):>13s} {pm_cell(m['interval'], 'width', 2):>11s} "
            f"{pm_cell(m['labels'], 'coverage'):>13s} {pm_cell(m['labels'], 'width', 2):>11s} "
            f"{fmt((m['labels'] or {}).get('size'), 2):>5s} {pm_cell(m['expanded'], 'coverage'):>13s} "
            f"{pm_cell(m['expanded'], 'width', 2):>11s}"
            + ("  (full range on some rows)" if m["full_range"] else "")
            + "\n"
        )
    for s in report.get("skipped", []):
        w(f"  {s['method']:34s} skipped: {s['reason']}\n")
    if own:
        widths = ", ".join(f"{name} {m['interval']['width_label_units']:.3f}"
                           for name, m in report["methods"].items() if m["interval"])
        if widths:
            w(f"  interval width in the labels' units ({own['scale'][0]:g}:{own['scale'][1]:g}): {widths}\n")
    conditional = report.get("conditional_coverage", {})
    if conditional:
        what = "interval coverage, labels binned" if own and own["continuous"] else "label-set coverage"
        w(f"\nWorst conditional cell per method ({what}; by human label, group, |round(E score) - label|)\n")
        for name, c in conditional.items():
            cell = c.get("worst")
            if cell:
                w(
                    f"  {name:34s} {cell['by']}={cell['cell']}: coverage {cell['coverage']:.3f}"
                    f"±{cell['coverage_se']:.3f} (n {cell['n']}), width {cell['width']:.2f}\n"
                )
    if "groups" in report:
        names = list(report["methods"])[:max_group_methods]
        what = "interval" if own and own["continuous"] else "label-set"
        w(f"\nBy {report['protocol']['mondrian'] or report['protocol']['group']} ({what} coverage / width; RSG)\n")
        w(f"  {'group':22s} {'n':>6s} {'pearson':>8s}" + "".join(f" {n[:26]:>26s}" for n in names) + "\n")
        for g, entry in report["groups"].items():
            cells = []
            for n in names:
                m = entry["methods"].get(n)
                if m is None:
                    cells.append(f" {'-':>26s}")
                    continue
                rsg, head = m["rsg"], m["labels"] or m["interval"]
                cells.append(f" {head['coverage']:.3f} / {head['width']:.2f}; {fmt(rsg, 2):>5s}".rjust(27))
            w(f"  {g[:22]:22s} {entry['n']:6d} {fmt(entry['point']['pearson']):>8s}" + "".join(cells) + "\n")
        worst = report.get("worst_group", {})
        for n in names:
            if worst.get(n):
                w(f"  worst group for {n}: {worst[n]['group']} (coverage {worst[n]['coverage']:.3f})\n")
        if len(report["methods"]) > max_group_methods:
            w("  (all methods in the JSON report)\n")


def likert_tables(runs: Sequence[Run]) -> list[Table]:
    tables = []
    if len(runs) == 1:
        r = runs[0].report
        rows = []
        for m, e in r["methods"].items():
            iv = e.get("interval") or {}
            lab = e["labels"] or {}  # continuous labels: no label set
            rows.append(
                [
                    m,
                    report_cell(iv.get("coverage")),
                    report_cell(iv.get("width"), 2),
                    report_cell(lab.get("coverage")),
                    report_cell(lab.get("width"), 2),
                    report_cell(lab.get("size"), 2),
                    report_cell(lab.get("empty")),
                    report_cell(e.get("full_range")),
                ]
            )
        own = r.get("label_scale") or {}
        note = (f" Continuous labels ({own['map']}): no label set holds them, so coverage and width are the "
                "intervals' (also in the figures), and the by-label and by-error strata bin each label to its "
                "nearest scale point." if own.get("continuous") else "")
        tables.append(
            Table(
                [
                    "method",
                    "interval cov.",
                    "interval width",
                    "label-set cov.",
                    "label-set width",
                    "set size",
                    "empty sets",
                    "full range",
                ],
                rows,
                f"Methods at α = {r['alpha']:g} (mean over {len(r['protocol']['seeds'])} splits; widths in scale "
                "points)."
                + note,
            )
        )
    else:
        methods = [m for m in runs[0].report["methods"] if all(m in x.report["methods"] for x in runs[1:])]
        rows = [
            [r.name]
            + [
                f"{report_cell(headline_entry(r.report['methods'][m])['coverage'])} / "
                f"{report_cell(headline_entry(r.report['methods'][m])['width'], 2)}"
                for m in methods
            ]
            for r in runs
        ]
        tables.append(Table(["judge", *methods], rows,
                            "Label-set coverage / width (scale points) at each report's α, judges as rows."))
    keys = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae", "bias", "max_softmax_mean")
    rows = [
        [r.name] + [report_cell(r.report.get("point", {}).get(k)) for k in keys] for r in runs if r.report.get("point")
    ]
    if rows:
        tables.append(
            Table(["judge", *keys], rows, "The judge's point metrics (its own score against the human label).")
        )
    return tables
