"""Reports: strict JSON (no NaN, no Infinity) and a readable table."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, TextIO

import numpy as np

#: The scalars JSON can hold, Python's or numpy's (what :func:`python_scalar` takes).
SCALAR_TYPES = (bool, np.bool_, int, np.integer, float, np.floating, str, type(None))


def python_scalar(value: Any) -> bool | int | float | str | None:
    """One of :data:`SCALAR_TYPES` as Python's own type (numpy's bool, integers and floats converted)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    out: str | None = value
    return out


def to_strict(obj: Any) -> Any:
    """Plain-Python, strictly JSON-serialisable copy: NaN/inf -> ``None``, numpy -> Python."""
    if isinstance(obj, Mapping):
        return {str(k): to_strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_strict(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_strict(v) for v in obj.tolist()]
    if isinstance(obj, SCALAR_TYPES):
        value = python_scalar(obj)
        return None if isinstance(value, float) and not math.isfinite(value) else value
    return str(obj)


def dumps(report: Mapping[str, Any]) -> str:
    """Strict JSON text (``allow_nan=False``), stable key order as built; a result with its ``schema`` and
    ``digest`` (:func:`judgecp.results.with_digest`)."""
    from judgecp.results import Result, with_digest

    obj = with_digest(report) if isinstance(report, Result) else report
    return json.dumps(to_strict(obj), indent=2, allow_nan=False) + "\n"


def fmt(value: Any, digits: int = 3, missing: str = "-") -> str:
    """A table cell: ``missing`` for None, a float to ``digits`` places, anything else as text."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _pm(entry: Mapping[str, Any] | None, key: str, digits: int = 3) -> str:
    if not entry:
        return "-"
    return f"{entry[key]:.{digits}f}±{entry[key + '_std']:.{digits}f}"


def stratum_count(n: float) -> str:
    """A stratum's test rows per split (a mean over splits), rounded, but never to "0" for a
    stratum that has rows (0.5 rows per split is 5 rows over 10 splits: "0.5")."""
    text = f"{n:.0f}"
    return f"{n:.1g}" if text == "0" and n > 0 else text


def write_detail(report: Mapping[str, Any], name: str, out: TextIO) -> None:
    """Coverage by ground-truth level and by judge error, informativeness, midpoints for one method."""
    m = report["methods"][name]
    kind = "interval" if m["interval"] is not None else "labels"
    continuous = m["labels"] is None  # continuous labels: interval widths, labels binned in the tables
    w = out.write
    w(f"\nDiagnostics for {name} ({kind}; pooled over seeds)\n")
    for title, key in (("by ground-truth label", "coverage_by_label"), ("by judge error |parsed - label|", "coverage_by_error")):
        cells = "  ".join(
            f"{k}: {v[kind]['coverage']:.3f}/{v[kind]['width']:.2f} (n {stratum_count(v['n'])})"
            for k, v in m[key].items()
        )
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
            fmt(mid["raw"]["pearson"]), fmt(mid["raw"]["mae"]), fmt(mid["midpoint"]["pearson"]), fmt(mid["midpoint"]["mae"])
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
        w(f"  columns: label={cols.get('label')}, logprobs={lp_text}, id={cols.get('id')}, parsed={cols.get('parsed')}\n")
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
    header = f"  {'method':34s} {'interval cov':>13s} {'width':>11s} {'label cov':>13s} {'width':>11s} {'size':>5s} {'expanded cov':>13s} {'width':>11s}\n"
    w(header)
    for name, m in report["methods"].items():
        w(
            f"  {name:34s} {_pm(m['interval'], 'coverage'):>13s} {_pm(m['interval'], 'width', 2):>11s} "
            f"{_pm(m['labels'], 'coverage'):>13s} {_pm(m['labels'], 'width', 2):>11s} "
            f"{fmt((m['labels'] or {}).get('size'), 2):>5s} {_pm(m['expanded'], 'coverage'):>13s} "
            f"{_pm(m['expanded'], 'width', 2):>11s}"
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


def write_report(report: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
    """The console table of any kind's report (Likert: with the detail of one method)."""
    from judgecp.kinds import get_kind

    get_kind(str(report.get("kind", "likert"))).write_console(report, out, detail=detail)


def write_head(report: Mapping[str, Any], out: TextIO, title: str) -> None:
    """The first lines of a non-Likert kind's table: the input, what was used and excluded, the flags."""
    out.write(f"judgecp evaluate --kind {report['kind']}: {report['source']}\n")
    excl = ", ".join(f"{e['reason']} {e['count']}" for e in report["excluded"]) or "none"
    out.write(f"  {title} used {report['n']} (read {report['n_read']}); excluded: {excl}\n")
    if report["flags"]:
        out.write("  flags (kept): " + ", ".join(f"{e['flag']} {e['count']}" for e in report["flags"]) + "\n")


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


def write_mcq_table(report: Mapping[str, Any], out: TextIO) -> None:
    """Coverage and set sizes per method (below the head)."""
    w = out.write
    w(f"  alpha {report['alpha']}, {len(report['protocol']['seeds'])} seeds; model accuracy {report['accuracy']:.3f}; "
      f"options per item {report['options']['mean']:.2f}\n\n")
    w(f"  {'method':24s} {'coverage':>14s} {'set size':>14s} {'size|correct':>13s} {'size|wrong':>11s} {'empty':>6s}\n")
    for name, m in report["methods"].items():
        w(f"  {name:24s} {_pm(m, 'coverage'):>14s} {_pm(m, 'set_size', 2):>14s} {fmt(m['set_size_correct'], 2):>13s} "
          f"{fmt(m['set_size_incorrect'], 2):>11s} {m['empty']:6.3f}\n")


def write_parc_table(report: Mapping[str, Any], out: TextIO) -> None:
    """PARC's calibrated scores by variation (below the head)."""
    w = out.write
    p = report["protocol"]
    w(f"  certainty from {1 - p['alpha']:.0%} LAC sets, threshold from the {p['reference']} prompts, {len(p['seeds'])} seeds\n\n")
    w(f"  {'variation':10s} {'reliability':>12s} {'accuracy':>9s} {'certainty':>10s} {'consistency':>12s}   (calibrated)\n")
    for v in report["reliability"]["variation"]:
        cells = []
        for score in ("reliability", "accuracy", "certainty", "consistency"):
            entry = report[score]["variation"].get(v)
            cells.append(fmt(entry.get("calibrated")) if entry else "-")
        w(f"  {v:10s} {cells[0]:>12s} {cells[1]:>9s} {cells[2]:>10s} {cells[3]:>12s}\n")
