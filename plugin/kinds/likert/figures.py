"""The Likert figures: coverage and width by method and against alpha, the reliability map (width per group),
coverage per group and stratum, widths, confusion, RSG."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgecp.present.figures import (
    COVERAGE_LIMITS,
    TARGET_STYLE,
    WIDTH,
    Missing,
    Plot,
    Result,
    _alpha_sweep,
    _legend,
    _method_bars,
    _reliability,
    absent,
    colors,
    drawn_per,
    figure_labels,
    legend_columns,
    new_figure,
    runs_with,
    series_by_method_or_report,
    series_style,
)
from judgecp.present.runs import Run


def likert_entry(method: dict[str, Any]) -> dict[str, Any]:
    """The label-set summary of a Likert method entry (continuous labels: the interval's, they have no label set)."""
    return dict(method.get("labels") or method["interval"])


def _group_coverage(run: Run, group: str, focus: str, default: float) -> float:
    """``focus``'s coverage in ``group`` of a report's per-group table (``default`` when absent)."""
    method = run.report["groups"].get(group, {}).get("methods", {}).get(focus)
    return default if method is None else float(likert_entry(method)["coverage"])


def likert_sweep(runs: Sequence[Run], focus: str) -> Result:
    return _alpha_sweep(runs, focus, "likert_sweep", "Coverage and width against α", likert_entry, size="width",
                        labels=("coverage of the label sets", "mean label-set width (scale points)", "width"),
                        extra_width=(1.6, 1.2), what_is_shown=" of label-set coverage and width at each α")


def likert_methods(runs: Sequence[Run], focus: str) -> Result:
    return _method_bars(runs, "likert_methods", "Coverage and width by method", likert_entry,
                        size=("width", "width_std"),
                        labels=("coverage of the label sets", "mean label-set width (scale points)",
                                "width (± std over splits)"),
                        height=(3.0, 0.28))


def _group_widths(run: Run, focus: str, variant: str) -> dict[str, float]:
    """Mean width of ``focus``'s ``labels`` (or ``interval``) per group of a report (groups without it left out)."""
    out = {}
    for g, entry in (run.report.get("groups") or {}).items():
        m = entry.get("methods", {}).get(focus) or {}
        width = (m.get(variant) or {}).get("width")
        if width is not None and np.isfinite(width):
            out[g] = float(width)
    return out


def reliability_map(runs: Sequence[Run], focus: str) -> Result:
    """The seed paper's headline figure: interval or label-set width per task category, judges side by side."""
    fid, title = "reliability_map", "Reliability map: set width per group"
    have = [r for r in runs if _group_widths(r, focus, "labels")]
    if not have:
        return Missing(fid, title, "no per-group table (`groups`): run `judgecp evaluate` with `--group FIELD` "
                       "(e.g. the task category) or `--mondrian FIELD`")
    widths = [_group_widths(r, focus, "labels") for r in have]
    intervals = [_group_widths(r, focus, "interval") for r in have]
    groups = sorted({g for w in widths for g in w}, key=lambda g: (widths[0].get(g, np.inf), g))
    fig = new_figure(max(WIDTH, 0.45 * len(groups) * max(1, len(have)) ** 0.5 + 2.4), 4.6)
    ax = fig.subplots()
    x = np.arange(len(groups))
    w = 0.8 / len(have)
    for j, (run, c) in enumerate(zip(have, colors(len(have)), strict=True)):
        pos = x - 0.4 + w * (j + 0.5)
        ax.bar(
            pos,
            [widths[j].get(g, np.nan) for g in groups],
            width=w,
            color=c,
            label=_series_label(run, focus, len(have)),
        )
        if intervals[j]:
            ax.plot(pos, [intervals[j].get(g, np.nan) for g in groups], linestyle="none", marker="D", ms=3.5,
                    color="black", label="interval width (continuous)" if j == 0 else "_nolegend_")
    lo, hi = have[0].report.get("scale") or (None, None)
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
        ax.axhline(hi - lo, color="grey", linestyle=":", lw=1.2, label=f"the whole scale ({lo:g} to {hi:g})")
    ax.set_xticks(x, groups, rotation=40, ha="right", fontsize=8)
    ax.set_ylim(bottom=0)
    field = have[0].report["protocol"].get("mondrian") or have[0].report["protocol"].get("group")
    ax.set(xlabel=f"group ({field})", ylabel="mean width (scale points)", title=title)
    ax.grid(axis="y", alpha=0.3)
    fig.legend(
        loc="outside lower center",
        ncols=legend_columns(figure_labels(fig), min(len(have) + 2, 4)),
        fontsize=8,
        frameon=False,
    )
    alpha = have[0].alpha
    cap = (f"Method {focus}, α = {alpha:g}: mean label-set width per group, test rows of every split pooled"
           + ("; diamonds: the continuous interval's width" if any(intervals) else "")
           + f"; groups sorted by {have[0].name if len(have) > 1 else 'width'}. A wide group is one whose scores the "
           "judge cannot pin down: the seed paper's reliability map (figure 1 of \"VLM Judges Can Rank but Cannot "
           "Score\"). Widths are comparable across groups only at the same coverage: see the per-group coverage."
           + _rank_agreement(have, widths) + absent(runs, have, "per-group table"))
    return Plot(fid, title, cap, fig)


def _rank_agreement(have: Sequence[Run], widths: Sequence[dict[str, float]]) -> str:
    """A caption sentence: Spearman's rho of each judge's per-group widths with the first judge's (as the paper)."""
    from scipy.stats import spearmanr

    parts = []
    for run, other in zip(have[1:], widths[1:], strict=True):
        common = [g for g in widths[0] if g in other]
        if len(common) >= 3 and len({widths[0][g] for g in common}) > 1 and len({other[g] for g in common}) > 1:
            rho = float(spearmanr([widths[0][g] for g in common], [other[g] for g in common]).statistic)
            parts.append(f"{run.name} ρ = {rho:.2f}")
    return (
        f" Spearman rank correlation of the groups' widths with {have[0].name}'s: {', '.join(parts)}." if parts else ""
    )


def group_coverage(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "group_coverage", "Coverage per group: pooled and Mondrian calibration"
    have = [
        r for r in runs if r.report.get("groups") and any(focus in g["methods"] for g in r.report["groups"].values())
    ]
    if not have:
        return Missing(fid, title, "no per-group table (`groups`): run `judgecp evaluate` with `--group FIELD` "
                       "(pooled calibration) or `--mondrian FIELD` (per-group calibration)")
    modes = {r.calibration for r in have}
    if len(modes) == 1:
        title = f"Coverage per group ({next(iter(modes))} calibration)"
    groups = sorted(
        {g for r in have for g in r.report["groups"]}, key=lambda g: (_group_coverage(have[0], g, focus, 2.0), g)
    )
    fig = new_figure(max(WIDTH, 0.42 * len(groups) * max(1, len(have)) ** 0.5 + 2), 4.4)
    ax = fig.subplots()
    x = np.arange(len(groups))
    w = 0.8 / len(have)
    for j, (run, c) in enumerate(zip(have, colors(len(have)), strict=True)):
        vals = [_group_coverage(run, g, focus, np.nan) for g in groups]
        label = _series_label(run, focus, len(have))
        ax.bar(x - 0.4 + w * (j + 0.5), vals, width=w, color=c, label=label)
    alpha = have[0].alpha
    ax.axhline(1 - alpha, label=f"target 1 − α = {1 - alpha:g}", **TARGET_STYLE)
    ax.set_xticks(x, groups, rotation=40, ha="right", fontsize=8)
    ax.set_ylim(*COVERAGE_LIMITS)
    ax.set(xlabel=f"group ({have[0].report['protocol'].get('mondrian') or have[0].report['protocol'].get('group')})",
           ylabel="coverage of the label sets", title=title)
    ax.grid(axis="y", alpha=0.3)
    fig.legend(
        loc="outside lower center",
        ncols=legend_columns(figure_labels(fig), min(len(have) + 1, 4)),
        fontsize=8,
        frameon=False,
    )
    cap = (f"Method {focus}, α = {alpha:g}, test rows of every split pooled per group. Pooled calibration "
           "promises 1 − α on average over groups only; Mondrian calibration promises it in each group."
           + absent(runs, have, "per-group table"))
    return Plot(fid, title, cap, fig)


def _series_label(run: Run, focus: str, n_runs: int) -> str:
    """A bar series: the report's name (one report: the method) and its calibration, unless the name says it."""
    name = run.name if n_runs > 1 else focus
    return name if run.calibration.lower() in name.lower() else f"{name} ({run.calibration} calibration)"


def _method_sections(run: Run, section: str) -> dict[str, Any]:
    """``section`` of each of the report's methods that has one."""
    return {m: e[section] for m, e in run.report["methods"].items() if section in e}


def _by_stratum(runs: Sequence[Run], focus: str, section: str, fid: str, title: str, xlabel: str) -> Result:
    have = [r for r in runs if r.report.get("methods") and any(section in m for m in r.report["methods"].values())]
    if not have:
        return Missing(fid, title, f"no `{section}` in the report's methods")
    series = series_by_method_or_report(runs, have, focus, lambda r: _method_sections(r, section))
    what = drawn_per(runs, focus)
    strata = sorted({s for _, per in series for s in per}, key=lambda s: float(s))
    fig = new_figure(WIDTH + (1.4 if len(series) > 6 else 0), 4.0)
    ax = fig.subplots()
    for i, (label, per) in enumerate(series):
        xs = [float(s) for s in strata if s in per]
        ys = [likert_entry(per[s])["coverage"] for s in strata if s in per]
        ax.plot(xs, ys, **series_style(i), label=label, ms=4, lw=1.2)
    alpha = have[0].alpha
    ax.axhline(1 - alpha, label=f"target 1 − α = {1 - alpha:g}", **TARGET_STYLE)
    first = series[0][1]
    ax.set_xticks([float(s) for s in strata],
                  [f"{s}\nn≈{first[s]['n']:.0f}" if s in first else s for s in strata], fontsize=8)
    ax.set(xlabel=xlabel, ylabel="coverage of the label sets", title=title)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    _legend(ax, len(series) + 1)
    cap = (f"Coverage within each stratum, test rows of every split pooled ({what}); n≈ is the mean number "
           f"of test rows per split in the stratum{' of the first line' if len(series) > 1 else ''}. "
           "The guarantee is marginal: strata can fall below the target.")
    return Plot(fid, title, cap, fig)


def coverage_by_label(runs: Sequence[Run], focus: str) -> Result:
    return _by_stratum(runs, focus, "coverage_by_label", "coverage_by_label", "Coverage by human label", "human label")


def coverage_by_error(runs: Sequence[Run], focus: str) -> Result:
    return _by_stratum(runs, focus, "coverage_by_error", "coverage_by_error", "Coverage by judge error",
                       "judge error |judge score − human label| (scale points)")


def width_distribution(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "width_distribution", "Label-set width distribution"
    have = [r for r in runs if any("informativeness" in m for m in r.report.get("methods", {}).values())]
    if not have:
        return Missing(fid, title, "no `informativeness` in the report's methods")
    rows = series_by_method_or_report(runs, have, focus, lambda r: _method_sections(r, "informativeness"))
    bins = (("decisive", "decisive (width ≤ 1)"), ("moderate", "moderate (1 < width ≤ 3)"),
            ("uninformative", "uninformative (width > 3)"))
    fig = new_figure(WIDTH + 1.0, max(2.6, 0.3 * len(rows) + 1.5))
    ax = fig.subplots()
    y = np.arange(len(rows))
    left = np.zeros(len(rows))
    for (b, label), c in zip(bins, ("#2a9d8f", "#e9c46a", "#e76f51"), strict=True):
        vals = np.asarray([inf[b] for _, inf in rows])
        ax.barh(y, vals, left=left, color=c, label=label, height=0.7)
        for yi, (lv, v) in enumerate(zip(left, vals, strict=True)):
            if v >= 0.08:
                ax.text(lv + v / 2, yi, f"{v:.2f}", ha="center", va="center", fontsize=7)
        left += vals
    ax.set_yticks(y, [name for name, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set(xlabel="share of test items", title=title + ("" if len(runs) == 1 else f" ({focus})"))
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    cap = ("Share of label sets by width in scale points, test rows of every split pooled "
           "(the seed paper's bins: decisive, moderate, uninformative).")
    return Plot(fid, title, cap, fig)


def confusion(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "confusion", "Judge against human: confusion matrix"
    have = runs_with(runs, "confusion")
    if not have:
        return Missing(fid, title, "no `confusion` in the report")
    n = len(have)
    cols = min(n, 3)
    rows_ = (n + cols - 1) // cols
    fig = new_figure(min(WIDTH + 1, 3.4 * cols + 1.2), 3.2 * rows_ + 0.6)
    axes = np.atleast_1d(fig.subplots(rows_, cols)).ravel()
    im = None
    for ax, run in zip(axes, have, strict=False):
        conf = run.report["confusion"]
        pct = np.asarray([[np.nan if v is None else v for v in row] for row in conf["row_percent"]], dtype=float)
        labels = [str(v) for v in conf["labels"]]
        im = ax.imshow(pct, cmap="Blues", vmin=0, vmax=100)
        for i in range(pct.shape[0]):
            for j in range(pct.shape[1]):
                if np.isfinite(pct[i, j]):
                    ax.text(j, i, f"{pct[i, j]:.0f}", ha="center", va="center", fontsize=7,
                            color="white" if pct[i, j] > 60 else "black")
        ax.set_xticks(range(len(labels)), labels)
        ax.set_yticks(range(len(labels)), labels)
        ax.set(xlabel="judge score", ylabel="human label", title=run.name if n > 1 else "row % of each human label")
    for ax in axes[len(have):]:
        ax.set_axis_off()
    if im is not None:
        fig.colorbar(im, ax=list(axes[: len(have)]), label="% of the human label's items", shrink=0.8)
    fig.suptitle(title, fontsize=11)
    return Plot(fid, title, "Each row: how the judge scored the items humans gave that label (row percent).", fig)


def rsg(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "rsg", "Ranking-scoring gap per group"
    have = [r for r in runs if r.report.get("groups")
            and any(focus in g["methods"] and "rsg" in g["methods"][focus] for g in r.report["groups"].values())]
    if not have:
        return Missing(fid, title, "no per-group `rsg` (needs `--group` or `--mondrian`)")
    groups = sorted(
        {g for r in have for g in r.report["groups"]},
        key=lambda g: (have[0].report["groups"].get(g, {}).get("methods", {}).get(focus, {}).get("rsg") or 0.0, g),
    )
    fig = new_figure(max(WIDTH, 0.42 * len(groups) + 2), 4.4)
    ax = fig.subplots()
    x = np.arange(len(groups))
    w = 0.8 / len(have)
    for j, (run, c) in enumerate(zip(have, colors(len(have)), strict=True)):
        vals = [run.report["groups"].get(g, {}).get("methods", {}).get(focus, {}).get("rsg") for g in groups]
        vals = [np.nan if v is None else v for v in vals]
        ax.bar(x - 0.4 + w * (j + 0.5), vals, width=w, color=c,
               label=_series_label(run, focus, len(have)))
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(x, groups, rotation=40, ha="right", fontsize=8)
    ax.set(xlabel="group", ylabel="RSG = |ρ| − (1 − w / (K − 1))", title=title)
    ax.grid(axis="y", alpha=0.3)
    fig.legend(
        loc="outside lower center",
        ncols=legend_columns(figure_labels(fig), min(len(have), 4)),
        fontsize=8,
        frameon=False,
    )
    cap = ("Positive: the judge ranks the group's items better than its intervals are narrow (ρ: Pearson correlation "
           f"of judge and human scores in the group; w: mean width of {focus}'s sets; K: number of labels)."
           + absent(runs, have, "per-group table"))
    return Plot(fid, title, cap, fig)


def judge_reliability(runs: Sequence[Run], focus: str) -> Result:
    return _reliability(
        runs, "judge_reliability", "Reliability diagram of the judge",
        lambda have: [(r.name, r.report["reliability_diagram"]) for r in have],
        "confidence: largest score-token probability", "accuracy: most probable label = human label",
        "Ten equal-width confidence bins (empty bins left out); points below the diagonal: the judge is "
        "over-confident. ECE: the bins' count-weighted mean gap.",
    )

