"""What every figure shares: the figure and its result types, colours, markers, legends, and the
coverage-against-alpha, per-method and reliability-diagram builders that several kinds draw."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from judgecp.base.errors import require
from judgecp.present.runs import Run

T = TypeVar("T")

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


#: A qualitative palette: matplotlib's tab10, then six colours far from it and from each other (black, maroon,
#: navy, magenta, brown, olive). Any two differ by at least 26 in CIELAB (Delta E 1976; tab10's own closest
#: pair, purple and pink, 27.7), so 14 methods get 14 colours that cannot be mistaken for one another
#: (tab20, used before, pairs each colour with a pale copy of itself: Delta E 16.6 among its first 14).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#000000", "#800000", "#000075", "#f032e6", "#9a6324", "#808000")
#: Past the palette's 16 colours, lines repeat them with the next line style (and every line has its own marker).
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p", "d", "8", "H", "1")
#: Coverage axes run from 0 to 1: bars start at zero, so a bar's length is its coverage and a difference of a
#: few hundredths looks like one (an axis from 0.86 made 0.88 look half of 0.92); the target line is inside.
COVERAGE_LIMITS = (0.0, 1.0)


def colors(n: int) -> list[str]:
    """``n`` colours of :data:`PALETTE`, in order (repeating past 16: see :func:`series_style`)."""
    return [PALETTE[i % len(PALETTE)] for i in range(n)]


def series_style(i: int) -> dict[str, Any]:
    """The colour, marker and line style of line series ``i``: no two of the first 16 share a colour, no two
    of the first 64 share colour and line style, and each has its own marker."""
    return {"color": PALETTE[i % len(PALETTE)], "marker": MARKERS[i % len(MARKERS)],
            "linestyle": LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)]}


#: Characters of legend text a row below a figure holds at font size 8 (a handle counts as 5).
LEGEND_ROW_CHARACTERS = 110


def legend_columns(labels: Sequence[str], most: int = 4) -> int:
    """Columns of a legend below a figure: as many as ``most``, fewer when long labels (an lm-eval run's judge,
    model, task and date) would run past the figure's edges."""
    longest = max((len(label) for label in labels), default=1) + 5
    return max(1, min(most, LEGEND_ROW_CHARACTERS // longest))


def figure_labels(fig: Any) -> list[str]:
    """The legend labels of a figure's axes, each once, in order."""
    return list(dict.fromkeys(label for ax in fig.axes for label in ax.get_legend_handles_labels()[1]))


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


def runs_with(runs: Sequence[Run], section: str) -> list[Run]:
    """The runs whose report has ``section``, not empty: the ones a figure of that section can draw."""
    return [r for r in runs if r.report.get(section)]


def key(alpha: float) -> str:
    return f"{alpha:g}"


def common_methods(runs: Sequence[Run], section: str = "methods") -> list[str]:
    """Methods (or controllers) every run has, in the first run's order."""
    first = list(runs[0].report.get(section, {}))
    return [m for m in first if all(m in r.report.get(section, {}) for r in runs[1:])]


def series_by_method_or_report(
    runs: Sequence[Run], have: Sequence[Run], focus: str, entries: Callable[[Run], Mapping[str, T]],
) -> list[tuple[str, T]]:
    """A figure's series as the package docstring says: one report, one per entry of ``entries(report)``
    (a method, a controller, ...); several, one per report of ``have`` that has ``focus``, that entry."""
    if len(runs) == 1:
        return list(entries(have[0]).items())
    return [(r.name, entries(r)[focus]) for r in have if focus in entries(r)]


def drawn_per(runs: Sequence[Run], focus: str, mark: str = "line") -> str:
    """What each line (or bar) stands for, for a caption."""
    return f"one {mark} per method" if len(runs) == 1 else f"one {mark} per report, method {focus}"


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
        return Missing(
            fid, title, "no `alpha_sweep` in the report: run `judgecp evaluate` with `--alphas 0.05,0.1,0.2`"
        )
    fig = new_figure(WIDTH + extra_width[0 if len(runs) == 1 else 1], 3.8)
    ax_cov, ax_s = fig.subplots(1, 2)
    series = series_by_method_or_report(runs, swept, focus, lambda r: r.report["alpha_sweep"]["methods"])
    what = drawn_per(runs, focus)
    all_alphas: set[float] = set()
    for i, (label, per) in enumerate(series):
        alphas = sorted(float(a) for a in per)
        all_alphas.update(alphas)
        style = {**series_style(i), "label": label, "ms": 4, "lw": 1.2}
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
    ax_cov.set_xlim(*COVERAGE_LIMITS)
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
    fig.legend(
        handles,
        names,
        loc="outside lower center",
        ncols=legend_columns(names, min(len(names), 4)),
        fontsize=8,
        frameon=False,
    )
    fig.suptitle(title, fontsize=11)
    return Plot(fid, title, f"Headline level α = {alpha:g}, mean over the splits.", fig)


def _reliability(
    runs: Sequence[Run], fid: str, title: str, series_of: Callable[[list[Run]], list[tuple[str, dict[str, Any]]]],
    xlabel: str, ylabel: str, caption: str,
) -> Result:
    """A reliability diagram: one line per ``(label, diagram)`` of ``series_of(runs with a diagram)``."""
    have = runs_with(runs, "reliability_diagram")
    if not have:
        return Missing(
            fid, title, "no `reliability_diagram` in the report (made by judgecp evaluate from this version on)"
        )
    fig = new_figure(WIDTH, 4.2)
    ax = fig.subplots()
    series = series_of(have)
    for i, (label, diag) in enumerate(series):
        pts = [b for b in diag["bins"] if b["n"]]
        ax.plot([b["confidence"] for b in pts], [b["accuracy"] for b in pts], **series_style(i), ms=4, lw=1.2,
                label=f"{label} (ECE {diag['ece']:.3f})")
    ax.plot([0, 1], [0, 1], label="target: accuracy = confidence", **TARGET_STYLE)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    return Plot(fid, title, caption + absent(runs, have, "reliability_diagram"), fig)

