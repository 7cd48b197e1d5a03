"""The pairwise figures: risk against coverage, the controllers against alpha, the signals' reliability."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgecp.present.figures import (
    MARKERS,
    TARGET_STYLE,
    WIDTH,
    Missing,
    Plot,
    Result,
    _reliability,
    colors,
    key,
    new_figure,
    runs_with,
    series_style,
)
from judgecp.present.runs import Run


def risk_coverage(runs: Sequence[Run], focus: str) -> Result:
    fid, title = "risk_coverage", "Risk against coverage"
    have = runs_with(runs, "risk_coverage")
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
            ax.plot(
                [p["coverage"] for p in pts], [p["risk"] for p in pts], color=c, lw=1.4, label=f"{run.name} ({sig})"
            )
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
    have = runs_with(runs, "controllers")
    if not have:
        return Missing(fid, title, "no `controllers` in the report")
    if len(runs) == 1:
        series = list(have[0].report["controllers"].items())
        what = "one line per controller"
    else:
        ctrl = (
            focus if all(focus in r.report["controllers"] for r in have) else next(iter(have[0].report["controllers"]))
        )
        series = [(r.name, r.report["controllers"][ctrl]) for r in have if ctrl in r.report["controllers"]]
        what = f"one line per report, controller {ctrl}"
    fig = new_figure(WIDTH + 1.0, 4.0)
    ax = fig.subplots()
    grid: set[float] = set()
    for i, (label, per) in enumerate(series):
        alphas = sorted(float(a) for a in per)
        grid.update(alphas)
        vals = [per[key(a)][field] for a in alphas]
        stds = [per[key(a)].get(field + "_std", 0.0) for a in alphas]
        ax.errorbar(alphas, vals, yerr=stds, **series_style(i), label=label, ms=4, lw=1.2, capsize=2)
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

