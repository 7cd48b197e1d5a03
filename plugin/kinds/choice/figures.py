"""The multiple-choice and PARC figures: option-set coverage and size, per data set and category; PARC heatmaps."""

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
    _fig_legend,
    _method_bars,
    absent,
    colors,
    drawn_per,
    new_figure,
    runs_with,
    series_by_method_or_report,
)
from judgecp.present.runs import Run


def mcq_sweep(runs: Sequence[Run], focus: str) -> Result:
    return _alpha_sweep(runs, focus, "mcq_sweep", "Coverage and set size against α", lambda e: e, size="set_size",
                        labels=("coverage of the option sets", "mean set size (options)", "set size"),
                        extra_width=(1.6, 1.6))


def mcq_methods(runs: Sequence[Run], focus: str) -> Result:
    return _method_bars(
        runs,
        "mcq_methods",
        "Coverage and set size by method",
        lambda e: e,
        size=("set_size", "set_size_std"),
        labels=("coverage of the option sets", "mean set size (options)", "set size (± std over splits)"),
        height=(2.8, 0.35),
    )


def mcq_groups(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "mcq_groups", "Coverage per data set and category"
    sections = [k for k in ("by_dataset", "by_category") if any(r.report.get(k) for r in runs)]
    if not sections:
        return Missing(
            fid, title, "no `by_dataset` or `by_category` in the report (records without task or group fields)"
        )
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
        ax.set_ylim(*COVERAGE_LIMITS)
        ax.set(xlabel=sec.removeprefix("by_").replace("_", " "), ylabel="coverage of the option sets")
        ax.grid(axis="y", alpha=0.3)
    _fig_legend(fig, list(axes))
    fig.suptitle(title, fontsize=11)
    what = drawn_per(runs, focus, "bar")
    cap = (f"α = {alpha:g}, test rows of every split pooled per group ({what}); the guarantee is marginal, "
           "groups can fall below the target.")
    return Plot(fid, title, cap, fig)


def set_size_hist(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "set_size_hist", "Set-size distribution"
    have = runs_with(runs, "set_size_distribution")
    if not have:
        return Missing(
            fid, title, "no `set_size_distribution` in the report (made by judgecp evaluate from this version on)"
        )
    series = series_by_method_or_report(runs, have, focus, lambda r: r.report["set_size_distribution"])
    sizes = sorted({int(k) for _, d in series for k in d})
    fig = new_figure(WIDTH + (1.0 if len(series) > 4 else 0), 3.8)
    ax = fig.subplots()
    x = np.arange(len(sizes))
    w = 0.8 / len(series)
    for j, ((label, dist), c) in enumerate(zip(series, colors(len(series)), strict=True)):
        ax.bar(x - 0.4 + w * (j + 0.5), [dist.get(str(k), 0.0) for k in sizes], width=w, color=c, label=label)
    ax.set_xticks(x, [str(k) for k in sizes])
    ax.set(
        xlabel="set size (options)",
        ylabel="share of test items",
        title=title + ("" if len(runs) == 1 else f" ({focus})"),
    )
    ax.grid(axis="y", alpha=0.3)
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    alpha = have[0].alpha
    cap = (f"At α = {alpha:g}, test rows of every split pooled; size 0 is an empty set (counted, never covering)."
           + absent(runs, have, "set_size_distribution"))
    return Plot(fid, title, cap, fig)


# -- PARC -------------------------------------------------------------------------------------------

#: PARC's variation families in the seed's order (others follow, by name).
FAMILY_ORDER = ("O", "LR", "LS", "VR", "VS")


def parc_heatmaps(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "parc_heatmaps", "Calibrated reliability and consistency by variation and data set"
    have = runs_with(runs, "cells")
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
            ax.set_yticks(
                range(len(variations)), [f"{v} ({f})" if f and f != v else v for v, f in variations], fontsize=8
            )
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

