"""The nightly loop's figures: a comparison's difference with its three intervals (``judgecp compare --json``),
and the interval width against the number of labels (``judgecp plan --json``).

Each builder takes the JSON the command wrote (as a dict) and returns a
:class:`~judgecp.present.figures.Plot`, or a
:class:`~judgecp.present.figures.Missing` naming the section it lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgecp.present.figures import (
    TARGET_STYLE,
    WIDTH,
    Missing,
    Plot,
    Result,
    colors,
    new_figure,
)

#: The intervals of a comparison, in drawing order, with their legend labels.
INTERVALS = (("ppi", "PPI++ (judge + labels)"), ("labeled_only", "labels only"), ("judge_only", "judge only"))


def difference_intervals(compare: Mapping[str, Any]) -> Result:
    """B - A pooled and per group: one row each, the PPI++, labeled-only and judge-only intervals side by side."""
    fid, title = "difference_intervals", "Difference B - A with its three intervals"
    if "difference" not in compare:
        return Missing(fid, title, "no `difference` in the file (is it `judgecp compare --json`?)")
    rows: list[tuple[str, Mapping[str, Any]]] = [("pooled", compare["difference"])]
    skipped = []
    for name, res in (compare.get("by_group") or {}).items():
        if "difference" in res:
            rows.append((f"{compare.get('group')}={name}", res["difference"]))
        else:
            skipped.append(name)
    fig = new_figure(WIDTH + 1.0, 1.2 + 0.45 * len(rows) * 1.6)
    ax = fig.subplots()
    palette = colors(len(INTERVALS))
    for j, ((key, label), color) in enumerate(zip(INTERVALS, palette, strict=True)):
        ys: list[float] = []
        means: list[float] = []
        errs: list[list[float]] = [[], []]
        for i, (_, diff) in enumerate(rows):
            e = diff.get(key)
            if not e:
                continue
            ys.append(-i + (1 - j) * 0.22)
            means.append(e["mean"])
            errs[0].append(e["mean"] - e["lower"])
            errs[1].append(e["upper"] - e["mean"])
        ax.errorbar(means, ys, xerr=errs, fmt="o", ms=4, capsize=3, color=color, label=label)
    ax.axvline(0.0, label="no difference", **TARGET_STYLE)
    ax.set_yticks([-i for i in range(len(rows))], [name for name, _ in rows], fontsize=8)
    level = 1 - float(compare.get("alpha", 0.1))
    ax.set(xlabel=f"{compare.get('target', 'difference')}, {level:.0%} intervals", title=title)
    ax.grid(alpha=0.3, axis="x")
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    cap = (f"{compare.get('design', '')} comparison. PPI++ removes the judge's bias with the labels; the judge-only "
           "interval ignores it (it moves when the judge favours one run), the labels-only interval ignores the judge."
           + (f" No interval (too few labels or only in one run): {', '.join(skipped)}." if skipped else ""))
    return Plot(fid, title, cap, fig)


def width_against_labels(plan: Mapping[str, Any]) -> Result:
    """The expected half-width against the number of labels, PPI++ and labels alone, with the plan's counts."""
    fid, title = "width_against_labels", "Interval half-width against the number of labels"
    curve = plan.get("curve")
    if not curve:
        return Missing(fid, title, "no `curve` in the file (is it `judgecp plan --json`?)")
    fig = new_figure(WIDTH, 4.2)
    ax = fig.subplots()
    palette = colors(2)
    for (key, label), color in zip((("ppi", "PPI++"), ("labeled_only", "labels only")), palette, strict=True):
        ax.plot(curve["labels"], curve[key], color=color, lw=1.6, label=label)
        n = (plan.get("labels") or {}).get(key)
        if n:
            ax.axvline(n, color=color, lw=0.9, linestyle=":", label=f"{label}: {n} labels")
    half = plan.get("half_width")
    if half:
        ax.axhline(half, label=f"asked: ±{half:g}", **TARGET_STYLE)
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FormatStrFormatter

    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.set(xlabel="labels", ylabel="half-width", title=title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, frameon=False)
    rel = plan.get("assumed", {})
    cap = (f"Planned at the pilot's confidence bounds (correlation >= {rel.get('correlation_lower', float('nan')):.3f}, "
           f"label sd <= {rel.get('sd_label_upper', float('nan')):.3f}); unlabeled items "
           f"{rel.get('n_unlabeled') or 'unbounded'}.")
    return Plot(fid, title, cap, fig)


def martingale_over_nights(summary: Mapping[str, Any]) -> Result:
    """The evidence of drift across nights (``judgecp apply --history``): the change detector's evidence by
    night, the alarm line at its threshold, the night it crossed (an apply summary written before issue 32:
    its test martingale's capital and 1/level)."""
    fid, title = "martingale_over_nights", "Evidence of drift across nights"
    history = summary.get("history") or {}
    evidence = history.get("evidence_by_night") or history.get("capital_by_night")
    if not evidence:
        return Missing(fid, title, "no `history` in the summary (run `judgecp apply ... --history H.jsonl`)")
    detector = "evidence_by_night" in history
    level = float(history.get("level") or 0.01)
    threshold = float(history["threshold"]) if detector else 1.0 / level
    nights = list(range(1, len(evidence) + 1))
    fig = new_figure(WIDTH, 4.0)
    ax = fig.subplots()
    ax.plot(nights, [max(c, 1e-6) for c in evidence], color=colors(1)[0], marker="o", ms=3, lw=1.4,
            label="evidence of the detector" if detector else "capital of the test")
    ax.axhline(threshold, label=f"alarm at {threshold:g}" if detector else f"alarm at 1/level = {threshold:g}",
               **TARGET_STYLE)
    first = history.get("first_alarm")
    if first:
        ax.axvline(first, color="0.4", lw=0.9, linestyle=":", label=f"first alarm: night {first}")
    ax.set_yscale("log")
    ax.set(xlabel="night", ylabel="evidence (log scale)" if detector else "capital (log scale)", title=title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, frameon=False)
    if detector:
        cap = (f"{history.get('test', 'change detector')}: {history.get('guarantee', '')}; "
               f"the change most likely began on night {history.get('since_night')}.")
    else:
        cap = (f"{history.get('test', 'test martingale')}: under exchangeability the chance it ever reaches "
               f"1/level, over any number of nights, is at most the level ({level:g}).")
    return Plot(fid, title, cap, fig)
