"""The nightly loop across nights: one figure and one table from a drift history or several apply summaries.

``judgecp report H.jsonl`` (the history ``apply --history`` keeps) or
``judgecp report night1.apply.json night2.apply.json ...`` (apply summaries
of one history) gives one :class:`Nights`: per night, the change detector's
evidence, the mean set size (pairwise: the abstention rate) and the PPI++
estimate with its interval, or why it was withheld. :func:`across_nights`
draws the three panels over one integer night axis; :func:`nights_table`
is the same per night as a table.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Any

from judgecp.present.figures import TARGET_STYLE, WIDTH, Missing, Plot, Result, colors, new_figure
from judgecp.present.render import Table
from judgecp.present.runs import Run

HISTORY_SCHEMA = "judgecp.history/2"
APPLY_SCHEMA = "judgecp.apply/1"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Night:
    """One night as the report shows it (``None``: not known for this night)."""

    night: int
    source: str
    n: int | None
    evidence: float | None
    set_size: float | None = None  #: mean set size (Likert, multiple choice)
    abstention: float | None = None  #: abstention rate (pairwise)
    estimate: tuple[float, float, float] | None = None  #: PPI++ (mean, lower, upper)
    judge_only: float | None = None
    labels: str = ""  #: how many labels, from where
    withheld: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Nights:
    """The nights of one history: the detector's threshold, the first alarm, the night the change began."""

    name: str
    threshold: float
    nights: tuple[Night, ...]
    first_alarm: int | None
    since_night: int | None
    target: str
    alpha: float | None
    level: float | None = None  #: the detector's level: P(a false alarm within the horizon) at most this
    horizon: int | None = None
    unreadable: str | None = None  #: why the evidence cannot be drawn (a malformed apply summary)


def _applied(info: Mapping[str, Any]) -> dict[str, Any]:
    """The per-night fields of an apply summary or of the ``applied`` a history line keeps."""
    out: dict[str, Any] = {"n": info.get("n"), "set_size": _number(info.get("mean_set_size")),
                           "abstention": _number(info.get("abstention_rate"))}
    est = info.get("estimate")
    if isinstance(est, Mapping) and isinstance(est.get("estimate"), Mapping):  # an apply summary's estimate
        ppi, judge = est["estimate"].get("ppi") or {}, est["estimate"].get("judge_only") or {}
        est = {"mean": ppi.get("mean"), "lower": ppi.get("lower"), "upper": ppi.get("upper"),
               "judge_only": judge.get("mean"), **{k: est.get(k) for k in ("n_labeled", "labeled_from", "alpha",
                                                                               "target")}}
    if isinstance(est, Mapping):
        mean, lower, upper = (_number(est.get(k)) for k in ("mean", "lower", "upper"))
        if mean is not None and lower is not None and upper is not None and lower <= mean <= upper:
            out["estimate"] = (mean, lower, upper)
        out["judge_only"] = _number(est.get("judge_only"))
        out["labels"] = f"{est.get('n_labeled')} ({est.get('labeled_from')})"
        out["target"], out["alpha"] = est.get("target"), _number(est.get("alpha"))
    withheld = info.get("estimate_withheld")
    reason = withheld.get("reason") if isinstance(withheld, Mapping) else withheld
    if isinstance(reason, str) and reason != "no_unlabeled":
        out["withheld"] = reason
    kinds = info.get("warnings") or []
    out["warnings"] = tuple(str(w.get("kind") if isinstance(w, Mapping) else w) for w in kinds)
    return out


def _nights(name: str, threshold: float, evidence: Sequence[float | None], per_night: Mapping[int, dict[str, Any]],
            sources: Mapping[int, str], since: int | None, level: float | None, horizon: Any) -> Nights:
    rows = []
    target, alpha = "mean human score", None
    for i, value in enumerate(evidence, start=1):
        info = dict(per_night.get(i, {}))
        target = info.pop("target", None) or target
        alpha = info.pop("alpha", None) or alpha
        n = info.pop("n", None)
        rows.append(Night(i, sources.get(i, ""), n if isinstance(n, int) else None, value, **info))
    first = next((r.night for r in rows if r.evidence is not None and r.evidence >= threshold), None)
    return Nights(name, threshold, tuple(rows), first, since, target, alpha, level,
                  horizon if isinstance(horizon, int) else None)


def from_history(run: Run) -> Nights:
    """A history file's nights (:func:`judgecp.workflows.nightly.history.read_nights`)."""
    lines = run.report["nights"]
    threshold = lines[0]["horizon"] / lines[0]["level"]
    evidence = [math.exp(min(float(line["log_evidence"]), 700.0)) for line in lines]
    per_night = {line["night"]: {**_applied(line.get("applied") or {}), "n": line.get("n")} for line in lines}
    return _nights(run.name, threshold, evidence, per_night, {line["night"]: str(line.get("source") or "")
                                                               for line in lines}, None,
                   float(lines[0]["level"]), lines[0]["horizon"])


def from_applies(runs: Sequence[Run], drawn: Sequence[str] = ()) -> list[Nights]:
    """Apply summaries of the same history (its file and calibrator), one :class:`Nights` per history; a
    summary without a history is left out (nothing across nights to draw), and so is one of a history in
    ``drawn`` (history files the report draws itself: the same nights once)."""
    groups: dict[tuple[str, str], list[Run]] = {}
    known = {_resolved(p) for p in drawn}
    for run in runs:
        history = run.report.get("history")
        if isinstance(history, Mapping) and _resolved(str(history.get("file")), run.path) not in known:
            groups.setdefault((str(history.get("file")), str(history.get("calibrator"))), []).append(run)
    out = []
    for (file, _), members in groups.items():
        latest = max(members, key=lambda r: int(r.report["history"].get("nights") or 0)).report["history"]
        field = "evidence_by_night" if "evidence_by_night" in latest else "capital_by_night"
        evidence = latest.get(field)
        values = [_number(v) for v in evidence] if isinstance(evidence, list) and evidence else [None]
        unreadable = (None if all(v is not None and v >= 0 for v in values) else
                      f"its `history.{field}` is not a list of non-negative numbers")
        level = _number(latest.get("level")) or 0.01
        threshold = _number(latest.get("threshold")) or 1.0 / level
        per_night: dict[int, dict[str, Any]] = {}
        sources: dict[int, str] = {}
        for run in members:
            history = run.report["history"]
            night = history.get("night") if history.get("recorded", True) else history.get("duplicate_of")
            if isinstance(night, int):
                per_night[night] = _applied(run.report)
                sources[night] = run.name
        since = latest.get("since_night")
        name = ", ".join(r.name for r in members) if len(members) <= 3 else f"{len(members)} apply summaries"
        found = _nights(f"{name} (history {PurePath(file).name})", threshold, values if unreadable is None else
                        [None] * max(per_night, default=1), per_night, sources,
                        since if isinstance(since, int) else None, level, latest.get("horizon"))
        out.append(replace(found, unreadable=unreadable))
    return out


def _resolved(path: str, beside: str | None = None) -> str:
    """A history's path as one string whatever the folder it was named from (an apply summary names its
    history as given on the command line: relative to where apply ran, tried as it is and beside the summary)."""
    p = Path(path)
    if beside is not None and not p.is_absolute() and not p.exists():
        p = Path(beside).parent / p.name
    return os.path.realpath(p)


def _night_axis(ax: Any, count: int) -> None:
    """Whole nights on the x axis: every night labelled up to 20 nights, else integer ticks only."""
    from matplotlib.ticker import MaxNLocator

    if count <= 20:
        ax.set_xticks(range(1, count + 1))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0.5, count + 0.5)


def across_nights(series: Nights, index: int = 0) -> Result:
    """Three panels over the nights: the detector's evidence against its threshold, the PPI++ estimate with
    its interval (and the judge alone), the mean set size (pairwise: abstention rate)."""
    fid, title = f"across_nights_{index}" if index else "across_nights", "The nightly loop across nights"
    nights = series.nights
    if not nights:
        return Missing(fid, title, "no night in the history")
    if series.unreadable:
        return Missing(fid, title, series.unreadable)
    palette = colors(3)
    fig = new_figure(WIDTH, 7.4)
    ax_drift, ax_est, ax_size = fig.subplots(3, 1, sharex=True)
    xs = [r.night for r in nights if r.evidence is not None]
    ax_drift.plot(xs, [max(r.evidence or 0.0, 1e-6) for r in nights if r.evidence is not None], color=palette[0],
                  marker="o", ms=4, lw=1.4, label="evidence of drift (change detector)")
    ax_drift.axhline(series.threshold, label=f"alarm at {series.threshold:g}", **TARGET_STYLE)
    if series.first_alarm is not None:
        ax_drift.axvline(series.first_alarm, color="0.4", lw=0.9, linestyle=":",
                         label=f"first alarm: night {series.first_alarm}")
    ax_drift.set_yscale("log")
    ax_drift.set(ylabel="evidence (log)", title=title)
    ax_drift.legend(fontsize=7, frameon=False, loc="upper left")

    drawn = [r for r in nights if r.estimate is not None]
    level = f", {1 - series.alpha:.0%} intervals" if series.alpha is not None else ""
    if drawn:
        ax_est.errorbar([r.night for r in drawn], [r.estimate[0] for r in drawn if r.estimate],
                        yerr=[[r.estimate[0] - r.estimate[1] for r in drawn if r.estimate],
                              [r.estimate[2] - r.estimate[0] for r in drawn if r.estimate]],
                        fmt="o", ms=4, capsize=3, color=palette[1], label="PPI++ (judge + labels)")
        judged = [r for r in nights if r.judge_only is not None]
        ax_est.plot([r.night for r in judged], [r.judge_only for r in judged], "x", color="0.35", ms=6,
                    label="judge only")
        ax_est.margins(y=0.3)
        ax_est.legend(fontsize=7, frameon=False, loc="best")
    for r in nights:
        if r.estimate is None and r.withheld:
            ax_est.annotate(f"withheld:\n{r.withheld}", (r.night, 0.5), xycoords=("data", "axes fraction"),
                            ha="center", va="center", fontsize=7, color="0.3")
    if not drawn and not any(r.withheld for r in nights):
        ax_est.text(0.5, 0.5, "no PPI++ estimate in these nights", transform=ax_est.transAxes, ha="center",
                    fontsize=8, color="0.3")
    ax_est.set_ylabel(f"{series.target}\n(PPI++{level})", fontsize=8)

    sizes = [r for r in nights if r.set_size is not None]
    rates = [r for r in nights if r.abstention is not None]
    shown, what = (sizes, "mean set size") if sizes else (rates, "abstention rate")
    if shown:
        values = [r.set_size if sizes else r.abstention for r in shown]
        ax_size.plot([r.night for r in shown], values, color=palette[2], marker="s", ms=4, lw=1.2)
        top = max(v for v in values if v is not None)
        ax_size.set_ylim(0.0, 1.0 if not sizes else max(1.0, top) * 1.15)  # from 0: a 0.04 change looks its size
    else:
        ax_size.text(0.5, 0.5, "no set sizes in these nights", transform=ax_size.transAxes, ha="center",
                     fontsize=8, color="0.3")
    ax_size.set(xlabel="night", ylabel=what)
    for ax in (ax_drift, ax_est, ax_size):
        ax.grid(alpha=0.3)
    _night_axis(ax_size, len(nights))
    alarm = (f"The detector alarmed on night {series.first_alarm}"
             + (f" (the change most likely began on night {series.since_night})" if series.since_night else "")
             if series.first_alarm is not None else "No alarm")
    withheld = [r.night for r in nights if r.withheld]
    bound = (f" (without drift, an alarm within {series.horizon} nights has probability at most {series.level:g})"
             if series.horizon is not None and series.level is not None else "")
    cap = (f"{series.name}: {len(nights)} nights. {alarm}{bound}. PPI++ intervals: the night's labels and its "
           "judge scores; x: the judge alone"
           + (f"; withheld on night {', '.join(map(str, withheld))} (a check failed and the night had too few "
              "labels of its own)" if withheld else "") + ".")
    return Plot(fid, title, cap, fig)


def nights_table(series: Nights) -> Table:
    """One row per night: run, items, evidence, PPI++ with its interval, the judge alone, labels, set size."""

    def cell(value: float | None, digits: int = 3) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    rows = []
    for r in series.nights:
        evidence = "–" if r.evidence is None else f"{r.evidence:.3g}" + (" ALARM" if r.evidence >= series.threshold
                                                                        else "")
        est = (f"{r.estimate[0]:.3f} [{r.estimate[1]:.3f}, {r.estimate[2]:.3f}]" if r.estimate else
               f"withheld ({r.withheld})" if r.withheld else "–")
        size = cell(r.set_size) if r.set_size is not None else cell(r.abstention)
        rows.append([str(r.night), r.source or "–", "–" if r.n is None else str(r.n), evidence, est,
                     cell(r.judge_only), r.labels or "–", size,
                     ", ".join(r.warnings) or "–"])
    sized = "abstention rate" if all(r.set_size is None for r in series.nights) and any(
        r.abstention is not None for r in series.nights) else "mean set size"
    return Table(["night", "run", "items", f"evidence (alarm at {series.threshold:g})", f"PPI++ {series.target}",
                  "judge only", "labels", sized, "warnings"], rows)
