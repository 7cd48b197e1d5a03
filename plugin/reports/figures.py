"""The report's figures, drawn from ``judgecp evaluate --json`` reports with headless matplotlib.

Every builder takes the runs of one kind (:class:`judgecp.reports.load.Run`)
and returns a :class:`Plot` (a matplotlib ``Figure`` with its id, title and
caption) or a :class:`Missing` that says which part of the report it would
need: nothing is drawn that the reports do not contain. With one report a
figure has one line per method (or controller, or signal); with several, one
line per report (judge) for the ``focus`` method.

Conventions: coverage and width of Likert methods are those of the label
sets (every method has them; for interval methods the coverage equals the
interval's), widths in scale points (``max - min`` of the set); the target
line is ``1 - alpha`` (coverage) or ``alpha`` (risk), dashed black and
labelled ``target ...``. Figures are built with ``matplotlib.figure.Figure``
on the Agg canvas (no pyplot, no display, no global state).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from judgecp.errors import require
from judgecp.reports.load import Run

TARGET_STYLE = {"color": "black", "linestyle": "--", "linewidth": 1.2, "zorder": 3}
WIDTH = 7.6  # inches: readable at 100% in the HTML page and on a paper column pair


def _matplotlib() -> Any:
    return require("matplotlib", "report", "judgecp report (figures)")


def new_figure(width: float = WIDTH, height: float = 4.2) -> Any:
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained", dpi=100)
    FigureCanvasAgg(fig)
    return fig


@dataclass
class Plot:
    id: str
    title: str
    caption: str
    figure: Any


@dataclass
class Missing:
    id: str
    title: str
    reason: str


Result = Plot | Missing


def colors(n: int) -> list[Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p", "d", "8", "H", "1")


def _legend(ax: Any, n_entries: int) -> None:
    if n_entries > 6:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    else:
        ax.legend(fontsize=8, frameon=False)


def _fig_legend(fig: Any, axes: Sequence[Any]) -> None:
    """One legend for all panels (entries of the first panel, the target line last), right of the panels."""
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="outside right upper", fontsize=7 if len(labels) > 6 else 8, frameon=False)


def absent(runs: Sequence[Run], have: Sequence[Run], what: str) -> str:
    """A caption sentence naming the reports a figure had to leave out."""
    names = [r.name for r in runs if r not in have]
    return f" Not shown ({what} missing): {', '.join(names)}." if names else ""


def key(alpha: float) -> str:
    return f"{alpha:g}"


def common_methods(runs: Sequence[Run], section: str = "methods") -> list[str]:
    """Methods (or controllers) every run has, in the first run's order."""
    first = list(runs[0].report.get(section, {}))
    return [m for m in first if all(m in r.report.get(section, {}) for r in runs[1:])]


def likert_entry(method: dict[str, Any]) -> dict[str, Any]:
    """The label-set summary of a Likert method entry (present for every method)."""
    return dict(method["labels"])


# -- Likert -----------------------------------------------------------------------------------------


def _alpha_sweep(
    runs: Sequence[Run], focus: str, fid: str, title: str, entry: Callable[[Any], Mapping[str, Any]], *,
    size: str, labels: tuple[str, str, str], extra_width: tuple[float, float], what_is_shown: str = "",
) -> Result:
    """Coverage and a size against alpha (``alpha_sweep``), with the 1 - alpha target.

    ``entry(level_report)`` gives ``coverage`` and ``size``; ``labels``: the
    coverage axis, the size axis, the size panel's title; ``extra_width``:
    inches added to the figure for one report and for several;
    ``what_is_shown`` goes after "Mean over the splits" in the caption.
    """
    swept = [r for r in runs if r.report.get("alpha_sweep")]
    if not swept:
        return Missing(fid, title, "no `alpha_sweep` in the report: run `judgecp evaluate` with `--alphas 0.05,0.1,0.2`")
    fig = new_figure(WIDTH + extra_width[0 if len(runs) == 1 else 1], 3.8)
    ax_cov, ax_s = fig.subplots(1, 2)
    if len(runs) == 1:
        series = list(swept[0].report["alpha_sweep"]["methods"].items())
        what = "one line per method"
    else:
        series = [(r.name, r.report["alpha_sweep"]["methods"][focus]) for r in swept
                  if focus in r.report["alpha_sweep"]["methods"]]
        what = f"one line per report, method {focus}"
    all_alphas: set[float] = set()
    for i, ((label, per), c) in enumerate(zip(series, colors(len(series)), strict=True)):
        alphas = sorted(float(a) for a in per)
        all_alphas.update(alphas)
        style = {"marker": MARKERS[i % len(MARKERS)], "color": c, "label": label, "ms": 4, "lw": 1.2}
        ax_cov.plot(alphas, [entry(per[key(a)])["coverage"] for a in alphas], **style)
        ax_s.plot(alphas, [entry(per[key(a)])[size] for a in alphas], **style)
    grid = np.asarray(sorted(all_alphas))
    ax_cov.plot(grid, 1 - grid, label="target 1 − α", **TARGET_STYLE)
    ax_cov.set(xlabel="α (miscoverage level)", ylabel=labels[0], title="coverage")
    ax_s.set(xlabel="α (miscoverage level)", ylabel=labels[1], title=labels[2])
    for ax in (ax_cov, ax_s):
        ax.grid(alpha=0.3)
    _fig_legend(fig, [ax_cov, ax_s])
    fig.suptitle(title, fontsize=11)
    cap = (f"Mean over the splits{what_is_shown} ({what}); dashed: the promised coverage 1 − α."
           + absent(runs, swept, "alpha_sweep"))
    return Plot(fid, title, cap, fig)


def likert_sweep(runs: Sequence[Run], focus: str) -> Result:
    return _alpha_sweep(runs, focus, "likert_sweep", "Coverage and width against α", likert_entry, size="width",
                        labels=("coverage of the label sets", "mean label-set width (scale points)", "width"),
                        extra_width=(1.6, 1.2), what_is_shown=" of label-set coverage and width at each α")


def _method_bars(
    runs: Sequence[Run], fid: str, title: str, entry: Callable[[Any], Mapping[str, Any]], *,
    size: tuple[str, str], labels: tuple[str, str, str], height: tuple[float, float],
) -> Result:
    """Coverage and a size per method, one bar series per report, with the 1 - alpha target.

    ``entry(method_report)`` gives ``coverage`` and the ``size`` keys (value, std);
    ``labels``: the coverage axis, the size axis, the size panel's title;
    ``height``: the figure's minimum height and its height per method.
    """
    methods = list(runs[0].report["methods"]) if len(runs) == 1 else common_methods(runs)
    if not methods:
        return Missing(fid, title, "the reports have no method in common")
    fig = new_figure(WIDTH + (1.2 if len(runs) > 1 else 0),
                     max(height[0], height[1] * len(methods) * max(1, len(runs)) ** 0.5 + 1.4))
    ax_cov, ax_s = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(methods))
    bar_h = 0.8 / len(runs)
    for j, (run, c) in enumerate(zip(runs, colors(len(runs)), strict=True)):
        rows = [entry(run.report["methods"][m]) for m in methods]
        off = y - 0.4 + bar_h * (j + 0.5)
        ax_cov.barh(off, [r["coverage"] for r in rows], height=bar_h, color=c, label=run.name)
        ax_s.barh(off, [r[size[0]] for r in rows], height=bar_h, color=c, label=run.name,
                  xerr=[r[size[1]] for r in rows], error_kw={"lw": 0.8})
    alpha = runs[0].alpha
    ax_cov.axvline(1 - alpha, label=f"target 1 − α = {1 - alpha:g}", **TARGET_STYLE)
    lo = min(entry(r.report["methods"][m])["coverage"] for r in runs for m in methods)
    ax_cov.set_xlim(max(0.0, min(lo, 1 - alpha) - 0.05), 1.0)
    ax_cov.set_yticks(y, methods, fontsize=8)
    ax_cov.invert_yaxis()
    ax_cov.set(xlabel=labels[0], title=f"coverage at α = {alpha:g}")
    ax_s.set(xlabel=labels[1], title=labels[2])
    for ax in (ax_cov, ax_s):
        ax.grid(axis="x", alpha=0.3)
    handles, names = ax_cov.get_legend_handles_labels()
    if len(runs) == 1:  # one report: the bars need no legend entry
        keep = [i for i, lab in enumerate(names) if lab.startswith("target")]
        handles, names = [handles[i] for i in keep], [names[i] for i in keep]
    from matplotlib.ticker import MaxNLocator

    ax_cov.xaxis.set_major_locator(MaxNLocator(5))
    fig.legend(handles, names, loc="outside lower center", ncols=min(len(names), 4), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11)
    return Plot(fid, title, f"Headline level α = {alpha:g}, mean over the splits.", fig)


def likert_methods(runs: Sequence[Run], focus: str) -> Result:
    return _method_bars(runs, "likert_methods", "Coverage and width by method", likert_entry,
                        size=("width", "width_std"),
                        labels=("coverage of the label sets", "mean label-set width (scale points)",
                                "width (± std over splits)"),
                        height=(3.0, 0.28))


def group_coverage(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "group_coverage", "Coverage per group: pooled and Mondrian calibration"
    have = [r for r in runs if r.report.get("groups") and any(focus in g["methods"] for g in r.report["groups"].values())]
    if not have:
        return Missing(fid, title, "no per-group table (`groups`): run `judgecp evaluate` with `--group FIELD` "
                       "(pooled calibration) or `--mondrian FIELD` (per-group calibration)")
    modes = {r.calibration for r in have}
    if len(modes) == 1:
        title = f"Coverage per group ({next(iter(modes))} calibration)"
    groups = sorted({g for r in have for g in r.report["groups"]}, key=lambda g: (
        have[0].report["groups"].get(g, {}).get("methods", {}).get(focus, {}).get("labels", {}).get("coverage", 2.0), g))
    fig = new_figure(max(WIDTH, 0.42 * len(groups) * max(1, len(have)) ** 0.5 + 2), 4.4)
    ax = fig.subplots()
    x = np.arange(len(groups))
    w = 0.8 / len(have)
    for j, (run, c) in enumerate(zip(have, colors(len(have)), strict=True)):
        vals = [run.report["groups"].get(g, {}).get("methods", {}).get(focus, {}).get("labels", {}).get("coverage", np.nan)
                for g in groups]
        label = _series_label(run, focus, len(have))
        ax.bar(x - 0.4 + w * (j + 0.5), vals, width=w, color=c, label=label)
    alpha = have[0].alpha
    ax.axhline(1 - alpha, label=f"target 1 − α = {1 - alpha:g}", **TARGET_STYLE)
    ax.set_xticks(x, groups, rotation=40, ha="right", fontsize=8)
    lo = np.nanmin([run.report["groups"][g]["methods"][focus]["labels"]["coverage"]
                    for run in have for g in run.report["groups"] if focus in run.report["groups"][g]["methods"]])
    ax.set_ylim(max(0.0, min(lo, 1 - alpha) - 0.05), 1.0)
    ax.set(xlabel=f"group ({have[0].report['protocol'].get('mondrian') or have[0].report['protocol'].get('group')})",
           ylabel="coverage of the label sets", title=title)
    ax.grid(axis="y", alpha=0.3)
    fig.legend(loc="outside lower center", ncols=min(len(have) + 1, 4), fontsize=8, frameon=False)
    cap = (f"Method {focus}, α = {alpha:g}, test rows of every split pooled per group. Pooled calibration "
           "promises 1 − α on average over groups only; Mondrian calibration promises it in each group."
           + absent(runs, have, "per-group table"))
    return Plot(fid, title, cap, fig)


def _series_label(run: Run, focus: str, n_runs: int) -> str:
    """A bar series: the report's name (one report: the method) and its calibration, unless the name says it."""
    name = run.name if n_runs > 1 else focus
    return name if run.calibration.lower() in name.lower() else f"{name} ({run.calibration} calibration)"


def _by_stratum(runs: Sequence[Run], focus: str, section: str, fid: str, title: str, xlabel: str) -> Result:
    have = [r for r in runs if r.report.get("methods") and any(section in m for m in r.report["methods"].values())]
    if not have:
        return Missing(fid, title, f"no `{section}` in the report's methods")
    if len(runs) == 1:
        series = [(m, e[section]) for m, e in have[0].report["methods"].items()]
        what = "one line per method"
    else:
        series = [(r.name, r.report["methods"][focus][section]) for r in have if focus in r.report["methods"]]
        what = f"one line per report, method {focus}"
    strata = sorted({s for _, per in series for s in per}, key=lambda s: float(s))
    fig = new_figure(WIDTH + (1.4 if len(series) > 6 else 0), 4.0)
    ax = fig.subplots()
    for i, ((label, per), c) in enumerate(zip(series, colors(len(series)), strict=True)):
        xs = [float(s) for s in strata if s in per]
        ys = [per[s]["labels"]["coverage"] for s in strata if s in per]
        ax.plot(xs, ys, marker=MARKERS[i % len(MARKERS)], color=c, label=label, ms=4, lw=1.2)
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
    if len(runs) == 1:
        rows = [(m, e["informativeness"]) for m, e in have[0].report["methods"].items()]
    else:
        rows = [(r.name, r.report["methods"][focus]["informativeness"]) for r in have if focus in r.report["methods"]]
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
    have = [r for r in runs if r.report.get("confusion")]
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
    groups = sorted({g for r in have for g in r.report["groups"]},
                    key=lambda g: (have[0].report["groups"].get(g, {}).get("methods", {}).get(focus, {}).get("rsg") or 0.0, g))
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
    fig.legend(loc="outside lower center", ncols=min(len(have), 4), fontsize=8, frameon=False)
    cap = ("Positive: the judge ranks the group's items better than its intervals are narrow (ρ: Pearson correlation "
           f"of judge and human scores in the group; w: mean width of {focus}'s sets; K: number of labels)."
           + absent(runs, have, "per-group table"))
    return Plot(fid, title, cap, fig)


# -- pairwise ---------------------------------------------------------------------------------------


def risk_coverage(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "risk_coverage", "Risk against coverage"
    have = [r for r in runs if r.report.get("risk_coverage")]
    if not have:
        return Missing(fid, title, "no `risk_coverage` in the report")
    fig = new_figure(WIDTH + 1.4, 4.4)
    ax = fig.subplots()
    alpha = have[0].alpha
    if len(runs) == 1:
        report = have[0].report
        curves = list(report["risk_coverage"].items())
        for (sig, pts), c in zip(curves, colors(len(curves)), strict=True):
            ax.plot([p["coverage"] for p in pts], [p["risk"] for p in pts], color=c, lw=1.4, label=f"signal {sig}")
        ctrls = report.get("controllers", {})
        for i, (name, per) in enumerate(ctrls.items()):
            if key(alpha) in per:
                e = per[key(alpha)]
                ax.plot([e["coverage"]], [e["risk"]], linestyle="none", marker=MARKERS[i % len(MARKERS)], ms=7,
                        markeredgecolor="black", color=colors(len(ctrls))[i],
                        label=f"{name} at α = {alpha:g} ({report['protocol'].get('signal', 'bpe')})")
        what = "curves: every signal; markers: the controllers' mean test coverage and risk"
    else:
        for run, c in zip(have, colors(len(have)), strict=True):
            sig = run.report.get("protocol", {}).get("signal", "bpe")
            pts = run.report["risk_coverage"].get(sig, [])
            ax.plot([p["coverage"] for p in pts], [p["risk"] for p in pts], color=c, lw=1.4, label=f"{run.name} ({sig})")
        what = "one curve per report, on its controllers' signal"
    ax.axhline(alpha, label=f"target risk α = {alpha:g}", **TARGET_STYLE)
    ax.set(xlabel="coverage (share of judgments accepted)", ylabel="risk (error rate among accepted)", title=title)
    ax.set_xlim(0, 1.01)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    fig.legend(loc="outside right upper", fontsize=7, frameon=False)
    cap = (f"Accepting the judgments least uncertain first ({what}). Dashed: the risk level α.")
    return Plot(fid, title, cap, fig)


def _controllers_vs_alpha(runs: Sequence[Run], focus: str, field: str, fid: str, title: str, ylabel: str) -> Result:
    have = [r for r in runs if r.report.get("controllers")]
    if not have:
        return Missing(fid, title, "no `controllers` in the report")
    if len(runs) == 1:
        series = list(have[0].report["controllers"].items())
        what = "one line per controller"
    else:
        ctrl = focus if all(focus in r.report["controllers"] for r in have) else next(iter(have[0].report["controllers"]))
        series = [(r.name, r.report["controllers"][ctrl]) for r in have if ctrl in r.report["controllers"]]
        what = f"one line per report, controller {ctrl}"
    fig = new_figure(WIDTH + 1.0, 4.0)
    ax = fig.subplots()
    grid: set[float] = set()
    for i, ((label, per), c) in enumerate(zip(series, colors(len(series)), strict=True)):
        alphas = sorted(float(a) for a in per)
        grid.update(alphas)
        vals = [per[key(a)][field] for a in alphas]
        stds = [per[key(a)].get(field + "_std", 0.0) for a in alphas]
        ax.errorbar(alphas, vals, yerr=stds, marker=MARKERS[i % len(MARKERS)], color=c, label=label, ms=4, lw=1.2,
                    capsize=2)
    g = np.asarray(sorted(grid))
    if field == "risk":
        ax.plot(g, g, label="target risk = α", **TARGET_STYLE)
    ax.set(xlabel="α (target risk level)", ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    cap = f"Mean over the splits (bars: ± std), {what}."
    return Plot(fid, title, cap, fig)


def risk_vs_alpha(runs: Sequence[Run], focus: str) -> Result:
    return _controllers_vs_alpha(runs, focus, "risk", "risk_vs_alpha", "Test risk against α",
                                 "test risk (error rate among accepted)")


def accepted_share(runs: Sequence[Run], focus: str) -> Result:
    return _controllers_vs_alpha(runs, focus, "coverage", "accepted_share", "Accepted share against α",
                                 "accepted share of test judgments")


# -- multiple choice --------------------------------------------------------------------------------


def mcq_sweep(runs: Sequence[Run], focus: str) -> Result:
    return _alpha_sweep(runs, focus, "mcq_sweep", "Coverage and set size against α", lambda e: e, size="set_size",
                        labels=("coverage of the option sets", "mean set size (options)", "set size"),
                        extra_width=(1.6, 1.6))


def mcq_methods(runs: Sequence[Run], focus: str) -> Result:
    return _method_bars(runs, "mcq_methods", "Coverage and set size by method", lambda e: e,
                        size=("set_size", "set_size_std"),
                        labels=("coverage of the option sets", "mean set size (options)", "set size (± std over splits)"),
                        height=(2.8, 0.35))


def mcq_groups(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "mcq_groups", "Coverage per data set and category"
    sections = [k for k in ("by_dataset", "by_category") if any(r.report.get(k) for r in runs)]
    if not sections:
        return Missing(fid, title, "no `by_dataset` or `by_category` in the report (records without task or group fields)")
    fig = new_figure(WIDTH + 1.2, 3.8)
    axes = np.atleast_1d(fig.subplots(1, len(sections), squeeze=False)[0])
    alpha = runs[0].alpha
    for ax, sec in zip(axes, sections, strict=True):
        have = [r for r in runs if r.report.get(sec)]
        if len(runs) == 1:
            table = have[0].report[sec]
            series = [(m, {g: e["methods"].get(m, {}).get("coverage") for g, e in table.items()})
                      for m in have[0].report["methods"]]
        else:
            series = [(r.name, {g: e["methods"].get(focus, {}).get("coverage") for g, e in r.report[sec].items()})
                      for r in have]
        groups = sorted({g for _, d in series for g in d})
        x = np.arange(len(groups))
        w = 0.8 / len(series)
        for j, ((label, cov), c) in enumerate(zip(series, colors(len(series)), strict=True)):
            vals = [np.nan if cov.get(g) is None else cov[g] for g in groups]
            ax.bar(x - 0.4 + w * (j + 0.5), vals, width=w, color=c, label=label)
        ax.axhline(1 - alpha, label=f"target 1 − α = {1 - alpha:g}", **TARGET_STYLE)
        ax.set_xticks(x, groups, rotation=30 if len(groups) > 4 else 0, ha="right" if len(groups) > 4 else "center")
        lo = np.nanmin([v for _, d in series for v in d.values() if v is not None] + [1 - alpha])
        ax.set_ylim(max(0.0, lo - 0.05), 1.0)
        ax.set(xlabel=sec.removeprefix("by_").replace("_", " "), ylabel="coverage of the option sets")
        ax.grid(axis="y", alpha=0.3)
    _fig_legend(fig, list(axes))
    fig.suptitle(title, fontsize=11)
    what = "one bar per method" if len(runs) == 1 else f"one bar per report, method {focus}"
    cap = (f"α = {alpha:g}, test rows of every split pooled per group ({what}); the guarantee is marginal, "
           "groups can fall below the target.")
    return Plot(fid, title, cap, fig)


# -- PARC -------------------------------------------------------------------------------------------

#: PARC's variation families in the seed's order (others follow, by name).
FAMILY_ORDER = ("O", "LR", "LS", "VR", "VS")


def parc_heatmaps(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "parc_heatmaps", "Calibrated reliability and consistency by variation and data set"
    have = [r for r in runs if r.report.get("cells")]
    if not have:
        return Missing(fid, title, "no `cells` in the PARC report")
    panels: list[tuple[str, dict[str, Any]]] = []
    for run in have:
        models = sorted({c.split("|")[0] for c in run.report["cells"]})
        for model in models:
            cells = {k: v for k, v in run.report["cells"].items() if k.split("|")[0] == model}
            label = run.name if len(models) == 1 else f"{run.name}: {model}"
            panels.append((label, cells))
    metrics = (("reliability", "calibrated reliability"), ("consistency", "calibrated consistency"))
    n_rows = len(panels)
    first_cells = panels[0][1]
    variations = _variation_order(first_cells)
    datasets = sorted({k.split("|")[1] for _, cells in panels for k in cells})
    fig = new_figure(max(WIDTH, 2 * (1.3 + 0.9 * len(datasets)) + 1.2), n_rows * (0.32 * len(variations) + 1.6) + 0.6)
    axes = np.asarray(fig.subplots(n_rows, 2, squeeze=False))
    import matplotlib

    cmap = matplotlib.colormaps["RdBu"]
    im = None
    for r, (label, cells) in enumerate(panels):
        variations = _variation_order(cells)
        for c, (metric, name) in enumerate(metrics):
            ax = axes[r, c]
            mat = np.full((len(variations), len(datasets)), np.nan)
            for i, (var, _fam) in enumerate(variations):
                for j, ds in enumerate(datasets):
                    cell = next((v for k, v in cells.items() if k.split("|")[1] == ds and k.split("|")[2] == var), None)
                    value = _cell_value(cell, metric)
                    if value is not None:
                        mat[i, j] = value
            im = ax.imshow(mat, cmap=cmap, vmin=-1, vmax=1, aspect="auto")
            for i in range(mat.shape[0]):
                for j in range(mat.shape[1]):
                    if np.isfinite(mat[i, j]):
                        ax.text(j, i, f"{mat[i, j]:.2f}", ha="center", va="center", fontsize=7,
                                color="white" if abs(mat[i, j]) > 0.6 else "black")
                    else:
                        ax.text(j, i, "–", ha="center", va="center", fontsize=7, color="gray")
            ax.set_xticks(range(len(datasets)), datasets, rotation=30, ha="right", fontsize=8)
            ax.set_yticks(range(len(variations)), [f"{v} ({f})" if f and f != v else v for v, f in variations], fontsize=8)
            fams = [f for _, f in variations]
            for i in range(1, len(fams)):
                if fams[i] != fams[i - 1]:
                    ax.axhline(i - 0.5, color="black", lw=1.0)
            ax.set(xlabel="data set", title=f"{name}" + (f"\n{label}" if len(panels) > 1 else ""))
            if c == 0:
                ax.set_ylabel("prompt variation (family)")
    if im is not None:
        fig.colorbar(im, ax=list(axes.ravel()), label="calibrated score (0 = random, 1 = perfect)", shrink=0.7)
    fig.suptitle(title, fontsize=11)
    cap = ("Rows: prompt variations grouped by family (lines between families); columns: data sets. "
           "Calibrated relative to random performance: 0 is chance, 1 perfect, negative worse than chance; "
           "– : not defined for that cell (e.g. consistency of the original prompt).")
    return Plot(fid, title, cap, fig)


def _variation_order(cells: dict[str, Any]) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for k, v in cells.items():
        var = k.split("|")[2]
        seen.setdefault(var, str(v.get("family", "") or ""))

    def order(item: tuple[str, str]) -> tuple[int, str, str]:
        var, fam = item
        rank = 0 if var == "O" else (FAMILY_ORDER.index(fam) if fam in FAMILY_ORDER else len(FAMILY_ORDER))
        return (rank, fam, var)

    return sorted(seen.items(), key=order)


def _cell_value(cell: dict[str, Any] | None, metric: str) -> float | None:
    if not cell:
        return None
    v = cell.get(metric)
    if isinstance(v, dict):
        v = v.get("calibrated")
    return None if v is None else float(v)


# -- reliability diagrams and set-size histograms -----------------------------------------------------


def _reliability(
    runs: Sequence[Run], fid: str, title: str, series_of: Callable[[list[Run]], list[tuple[str, dict[str, Any]]]],
    xlabel: str, ylabel: str, caption: str,
) -> Result:
    """A reliability diagram: one line per ``(label, diagram)`` of ``series_of(runs with a diagram)``."""
    have = [r for r in runs if r.report.get("reliability_diagram")]
    if not have:
        return Missing(fid, title, "no `reliability_diagram` in the report (made by judgecp evaluate from this version on)")
    fig = new_figure(WIDTH, 4.2)
    ax = fig.subplots()
    series = series_of(have)
    for i, ((label, diag), c) in enumerate(zip(series, colors(len(series)), strict=True)):
        pts = [b for b in diag["bins"] if b["n"]]
        ax.plot([b["confidence"] for b in pts], [b["accuracy"] for b in pts], marker=MARKERS[i % len(MARKERS)],
                color=c, ms=4, lw=1.2, label=f"{label} (ECE {diag['ece']:.3f})")
    ax.plot([0, 1], [0, 1], label="target: accuracy = confidence", **TARGET_STYLE)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    return Plot(fid, title, caption + absent(runs, have, "reliability_diagram"), fig)


def judge_reliability(runs: Sequence[Run], focus: str) -> Result:
    return _reliability(
        runs, "judge_reliability", "Reliability diagram of the judge",
        lambda have: [(r.name, r.report["reliability_diagram"]) for r in have],
        "confidence: largest score-token probability", "accuracy: most probable label = human label",
        "Ten equal-width confidence bins (empty bins left out); points below the diagonal: the judge is "
        "over-confident. ECE: the bins' count-weighted mean gap.",
    )


def signal_reliability(runs: Sequence[Run], focus: str) -> Result:
    def series_of(have: list[Run]) -> list[tuple[str, dict[str, Any]]]:
        if len(runs) == 1:
            return list(have[0].report["reliability_diagram"].items())
        return [(r.name, r.report["reliability_diagram"][sig]) for r in have
                if (sig := r.report.get("protocol", {}).get("signal", "bpe")) in r.report["reliability_diagram"]]

    what = "one line per signal" if len(runs) == 1 else "one line per report, on its controllers' signal"
    return _reliability(
        runs, "signal_reliability", "Reliability diagram of the uncertainty signals", series_of,
        "confidence in the verdict", "accuracy of the verdict",
        f"Ten equal-width confidence bins, empty bins left out ({what}); ECE in the legend.",
    )


def set_size_hist(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "set_size_hist", "Set-size distribution"
    have = [r for r in runs if r.report.get("set_size_distribution")]
    if not have:
        return Missing(fid, title, "no `set_size_distribution` in the report (made by judgecp evaluate from this version on)")
    if len(runs) == 1:
        series = list(have[0].report["set_size_distribution"].items())
    else:
        series = [(r.name, r.report["set_size_distribution"][focus]) for r in have if focus in r.report["set_size_distribution"]]
    sizes = sorted({int(k) for _, d in series for k in d})
    fig = new_figure(WIDTH + (1.0 if len(series) > 4 else 0), 3.8)
    ax = fig.subplots()
    x = np.arange(len(sizes))
    w = 0.8 / len(series)
    for j, ((label, dist), c) in enumerate(zip(series, colors(len(series)), strict=True)):
        ax.bar(x - 0.4 + w * (j + 0.5), [dist.get(str(k), 0.0) for k in sizes], width=w, color=c, label=label)
    ax.set_xticks(x, [str(k) for k in sizes])
    ax.set(xlabel="set size (options)", ylabel="share of test items", title=title + ("" if len(runs) == 1 else f" ({focus})"))
    ax.grid(axis="y", alpha=0.3)
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    alpha = have[0].alpha
    cap = (f"At α = {alpha:g}, test rows of every split pooled; size 0 is an empty set (counted, never covering)."
           + absent(runs, have, "set_size_distribution"))
    return Plot(fid, title, cap, fig)


#: The figures of each kind, in the report's order.
BUILDERS: dict[str, tuple[Callable[[Sequence[Run], str], Result], ...]] = {
    "likert": (likert_methods, likert_sweep, group_coverage, coverage_by_label, coverage_by_error,
               width_distribution, confusion, judge_reliability, rsg),
    "pairwise": (risk_coverage, risk_vs_alpha, accepted_share, signal_reliability),
    "mcq": (mcq_methods, mcq_sweep, mcq_groups, set_size_hist),
    "parc": (parc_heatmaps,),
}
