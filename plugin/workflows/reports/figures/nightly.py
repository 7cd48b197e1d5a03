"""The nightly loop's figures: a comparison's difference with its three intervals (``judgecp compare --json``),
and the interval width against the number of labels (``judgecp plan --json``).

Each builder takes the JSON the command wrote (as a dict) and returns a
:class:`~judgecp.present.figures.Plot`, or a
:class:`~judgecp.present.figures.Missing` naming the section it lacks.
"""

from __future__ import annotations

import math
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


def _section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """A section of a result (``{}`` when absent or not an object)."""
    found = obj.get(key)
    return found if isinstance(found, Mapping) else {}


def _number(value: Any) -> float | None:
    """A finite number of a result (``None`` for null, text, a bool, NaN or an infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _interval(entry: Any) -> tuple[float, float, float] | str:
    """``(mean, lower, upper)`` of an interval entry, or why it cannot be drawn."""
    if not isinstance(entry, Mapping):
        return "missing"
    mean, lower, upper = (_number(entry.get(k)) for k in ("mean", "lower", "upper"))
    if mean is None or lower is None or upper is None:
        return "undefined (a null bound)"
    if lower > upper:
        return "reversed (lower above upper)"
    if not lower <= mean <= upper:
        return "its mean is outside it"
    return mean, lower, upper


def difference_intervals(compare: Mapping[str, Any]) -> Result:
    """B - A pooled and per group: one row each, the PPI++, labeled-only and judge-only intervals side by side.
    An interval that is undefined (a null bound), reversed, or whose mean is outside it is not drawn, and the
    caption says which."""
    fid, title = "difference_intervals", "Difference B - A with its three intervals"
    if not isinstance(compare.get("difference"), Mapping):
        return Missing(fid, title, "no `difference` in the file (is it `judgecp compare --json`?)")
    rows: list[tuple[str, Mapping[str, Any]]] = [("pooled", compare["difference"])]
    skipped = []
    groups = compare.get("by_group")
    for name, res in (groups.items() if isinstance(groups, Mapping) else ()):
        if isinstance(res, Mapping) and isinstance(res.get("difference"), Mapping):
            rows.append((f"{compare.get('group')}={name}", res["difference"]))
        else:
            skipped.append(str(name))
    not_drawn = [f"{row} {label}: {why}" for row, diff in rows for key, label in INTERVALS
                 if key in diff and isinstance(why := _interval(diff[key]), str)]
    if not any(not isinstance(_interval(diff.get(key)), str) for _, diff in rows for key, _ in INTERVALS):
        return Missing(fid, title, "no interval of the file can be drawn (" + "; ".join(not_drawn or ["none"]) + ")")
    fig = new_figure(WIDTH + 1.0, 1.2 + 0.45 * len(rows) * 1.6)
    ax = fig.subplots()
    palette = colors(len(INTERVALS))
    for j, ((key, label), color) in enumerate(zip(INTERVALS, palette, strict=True)):
        ys: list[float] = []
        means: list[float] = []
        errs: list[list[float]] = [[], []]
        for i, (_, diff) in enumerate(rows):
            found = _interval(diff.get(key))
            if isinstance(found, str):
                continue
            mean, lower, upper = found
            ys.append(-i + (1 - j) * 0.22)
            means.append(mean)
            errs[0].append(mean - lower)
            errs[1].append(upper - mean)
        ax.errorbar(means, ys, xerr=errs, fmt="o", ms=4, capsize=3, color=color, label=label)
    ax.axvline(0.0, label="no difference", **TARGET_STYLE)
    ax.set_yticks([-i for i in range(len(rows))], [name for name, _ in rows], fontsize=8)
    alpha = _number(compare.get("alpha"))
    level = 1 - (alpha if alpha is not None and 0 < alpha < 1 else 0.1)
    ax.set(xlabel=f"{compare.get('target', 'difference')}, {level:.0%} intervals", title=title)
    ax.grid(alpha=0.3, axis="x")
    fig.legend(loc="outside right upper", fontsize=8, frameon=False)
    cap = (f"{compare.get('design', '')} comparison. PPI++ removes the judge's bias with the labels; the judge-only "
           "interval ignores it (it moves when the judge favours one run), the labels-only interval ignores the judge."
           + (f" No interval (too few labels or only in one run): {', '.join(skipped)}." if skipped else "")
           + (f" Not drawn: {'; '.join(not_drawn)}." if not_drawn else ""))
    return Plot(fid, title, cap, fig)


def _curve(plan: Mapping[str, Any]) -> tuple[list[float], dict[str, list[float]]] | str:
    """The plan's curve as numbers (a null width: NaN, not drawn), or what is wrong with it."""
    curve = plan.get("curve")
    if not isinstance(curve, Mapping):
        return "no `curve` in the file (is it `judgecp plan --json`?)" if not curve else "its `curve` is not an object"
    labels = curve.get("labels")
    if not isinstance(labels, list) or not labels:
        return "its `curve.labels` is not a list of label counts"
    counts = [_number(v) for v in labels]
    if any(v is None or v <= 0 for v in counts):
        return "its `curve.labels` holds a value that is not a positive number"
    widths: dict[str, list[float]] = {}
    for key in ("ppi", "labeled_only"):
        values = curve.get(key)
        if not isinstance(values, list) or len(values) != len(labels):
            return f"its `curve.{key}` is not a list of {len(labels)} widths"
        if any(v is not None and (_number(v) is None or v <= 0) for v in values):
            return f"its `curve.{key}` holds a value that is not a positive number"
        widths[key] = [math.nan if v is None else float(v) for v in values]
    if all(math.isnan(v) for key in widths for v in widths[key]):
        return "every width of its `curve` is undefined"
    return [float(v) for v in counts if v is not None], widths


def width_against_labels(plan: Mapping[str, Any]) -> Result:
    """The expected half-width against the number of labels, PPI++ and labels alone, with the plan's counts."""
    fid, title = "width_against_labels", "Interval half-width against the number of labels"
    found = _curve(plan)
    if isinstance(found, str):
        return Missing(fid, title, found)
    counts, widths = found
    fig = new_figure(WIDTH, 4.2)
    ax = fig.subplots()
    palette = colors(2)
    planned = _section(plan, "labels")
    for (key, label), color in zip((("ppi", "PPI++"), ("labeled_only", "labels only")), palette, strict=True):
        ax.plot(counts, widths[key], color=color, lw=1.6, label=label)
        n = _number(planned.get(key))
        if n is not None and n > 0:
            ax.axvline(n, color=color, lw=0.9, linestyle=":", label=f"{label}: {_whole(n)} labels")
    half = _number(plan.get("half_width"))
    if half is not None and half > 0:
        ax.axhline(half, label=f"asked: ±{half:g}", **TARGET_STYLE)
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FormatStrFormatter

    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.set(xlabel="labels", ylabel="half-width", title=title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, frameon=False)
    rel = _section(plan, "assumed")
    rho, sd = _number(rel.get("correlation_lower")), _number(rel.get("sd_label_upper"))
    unlabeled = _number(rel.get("n_unlabeled"))
    cap = (f"Planned at the pilot's confidence bounds (correlation >= {_three(rho)}, label sd <= {_three(sd)}); "
           f"unlabeled items {_whole(unlabeled) if unlabeled else 'unbounded'}.")
    return Plot(fid, title, cap, fig)


def _whole(value: float) -> str:
    """A count as the JSON held it: ``1565``, not ``1565.0`` or ``1.565e+03``."""
    return str(int(value)) if value == int(value) else f"{value:g}"


def _three(value: float | None) -> str:
    return "nan" if value is None else f"{value:.3f}"


def martingale_over_nights(summary: Mapping[str, Any]) -> Result:
    """The evidence of drift across nights (``judgecp apply --history``): the change detector's evidence by
    night, the alarm line at its threshold, the night it crossed (an apply summary written before issue 32:
    its test martingale's capital and 1/level)."""
    fid, title = "martingale_over_nights", "Evidence of drift across nights"
    history = _section(summary, "history")
    evidence = history.get("evidence_by_night") or history.get("capital_by_night")
    if not evidence:
        return Missing(fid, title, "no `history` in the summary (run `judgecp apply ... --history H.jsonl`)")
    detector = "evidence_by_night" in history
    field = "evidence_by_night" if detector else "capital_by_night"
    values = [_number(c) for c in evidence] if isinstance(evidence, list) else [None]
    if any(v is None or v < 0 for v in values):
        return Missing(fid, title, f"its `history.{field}` is not a list of non-negative numbers")
    level = _number(history.get("level"))
    level = level if level is not None and 0 < level < 1 else 0.01
    stated = _number(history.get("threshold"))
    threshold = stated if detector and stated is not None and stated > 0 else 1.0 / level
    nights = list(range(1, len(values) + 1))
    fig = new_figure(WIDTH, 4.0)
    ax = fig.subplots()
    ax.plot(nights, [max(c or 0.0, 1e-6) for c in values], color=colors(1)[0], marker="o", ms=3, lw=1.4,
            label="evidence of the detector" if detector else "capital of the test")
    ax.axhline(threshold, label=f"alarm at {threshold:g}" if detector else f"alarm at 1/level = {threshold:g}",
               **TARGET_STYLE)
    first = _number(history.get("first_alarm"))
    if first is not None and first >= 1:
        ax.axvline(first, color="0.4", lw=0.9, linestyle=":", label=f"first alarm: night {_whole(first)}")
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
