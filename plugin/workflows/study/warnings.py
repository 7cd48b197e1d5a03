"""What a script should act on, as data: a report's ``warnings``.

* ``excluded_share``: more than a tenth of the rows read were left out (a
  wrong ``--label`` column, a scale that does not fit, a broken capture);
  when most of them are ``label_off_scale``, the message says so and points
  to ``--label-scale LO:HI`` (labels on another scale than the judge's);
* ``group_under_target``: a group's coverage is below the target by more
  than its Monte-Carlo error, ``2 sqrt(t (1 - t) / m)`` with ``t`` the
  target coverage and ``m`` the group's test rows per split (a marginal
  method promises nothing per group; Mondrian calibration does).

Each warning is ``{"warning": kind, "message": one line, ...numbers}``. The
report keeps every one; the command line and the harness glue print
:func:`summary_lines`: one line per kind, with a count and the worst cases
when a kind fired more than once (14 groups x 14 methods would otherwise be
a wall of text).
"""

from __future__ import annotations

import math
from typing import Any

from judgecp.base.scale import LikertScale, label_scale_hint
from judgecp.kinds.registry import get_kind

#: Share of rows read that may be excluded before a report warns.
EXCLUDED_SHARE = 0.10


def excluded_share(report: dict[str, Any]) -> list[dict[str, Any]]:
    n_read = int(report.get("n_read") or 0)
    excluded = sum(int(e["count"]) for e in report.get("excluded", []))
    if not n_read or excluded / n_read <= EXCLUDED_SHARE:
        return []
    top = ", ".join(f"{e['reason']} {e['count']}" for e in report["excluded"][:3])
    off_scale = sum(int(e["count"]) for e in report["excluded"] if e["reason"] == "label_off_scale")
    hint = "check the columns and the scale"
    if report.get("scale") is not None and 2 * off_scale > excluded:  # a rating scale: labels may sit off it
        scale = LikertScale(*(report.get("scale") or (1, 5)))
        hint = (f"{off_scale} labels ({off_scale / n_read:.0%} of the rows) are not integers of the judge's scale "
                f"{scale}; {label_scale_hint(scale)}")
    warning = {"warning": "excluded_share", "excluded": excluded, "n_read": n_read, "share": excluded / n_read,
               "message": f"{excluded} of {n_read} rows ({excluded / n_read:.0%}) were left out ({top}): {hint}"}
    if hint.startswith(f"{off_scale} labels"):
        warning["label_off_scale"] = off_scale
    return [warning]


def _under(group: str, method: str, coverage: float | None, target: float, n_test: float,
           mondrian: bool) -> dict[str, Any] | None:
    if coverage is None or n_test <= 0:
        return None
    error = 2.0 * math.sqrt(target * (1.0 - target) / n_test)
    if coverage >= target - error:
        return None
    promise = "its Mondrian calibration promises it" if mondrian else "a marginal method promises nothing per group"
    return {"warning": "group_under_target", "group": group, "method": method, "coverage": coverage,
            "target": target, "mc_error": error, "mondrian": mondrian,
            "message": f"group {group!r}: {method} covers {coverage:.3f}, below the target {target:.2f} by more "
                       f"than its Monte-Carlo error {error:.3f} ({promise})"}


def group_warnings(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Groups whose coverage misses the target (Likert ``groups``; multiple choice ``by_*`` tables)."""
    target = 1.0 - float(report.get("alpha", 0.1))
    protocol = report.get("protocol") or {}
    test_share = 1.0 - float(protocol.get("cal_fraction", 0.5))
    out = []
    for g, method, coverage, n, mondrian in get_kind(
        str(report["kind"]), flag="the report's kind"
    ).study.group_coverages(report):
        found = _under(g, method, coverage, target, n * test_share, mondrian)
        if found:
            out.append(found)
    return out


def add_warnings(report: dict[str, Any]) -> dict[str, Any]:
    report["warnings"] = excluded_share(report) + group_warnings(report)
    return report


def _groups_summary(found: list[dict[str, Any]], where: str) -> str:
    worst = sorted(found, key=lambda w: (w["coverage"] - w["target"], w["group"], w["method"]))
    groups = {w["group"] for w in found}
    methods = {w["method"] for w in found}
    promise = ("their Mondrian calibration promises the target in each group" if found[0].get("mondrian")
               else "a marginal method promises nothing per group; --mondrian FIELD does")
    lowest = ", ".join(f"{w['group']!r} {w['method']} {w['coverage']:.3f}" for w in worst[:3])
    counts = f"{len(groups)} group{'s' * (len(groups) != 1)}, {len(methods)} method{'s' * (len(methods) != 1)}"
    return (f"{len(found)} group/method pairs ({counts}) cover below the target "
            f"{found[0]['target']:.2f} by more than their Monte-Carlo error ({promise}); lowest: {lowest}; "
            f"each one in {where}")


#: How several warnings of one kind are said in one line (kind -> ``summary(warnings, where)``).
SUMMARIES = {"group_under_target": _groups_summary}


def summary_lines(warnings: list[dict[str, Any]], where: str = "the report's `warnings`") -> list[str]:
    """One line per warning kind, in the order the kinds first appear: the message itself for a single
    warning, else a count and the worst cases; ``where`` says where every warning is listed."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for w in warnings:
        by_kind.setdefault(str(w.get("warning") or w.get("kind") or "warning"), []).append(w)
    lines = []
    for kind, found in by_kind.items():
        if len(found) == 1:
            lines.append(str(found[0]["message"]))
        elif kind in SUMMARIES:
            lines.append(SUMMARIES[kind](found, where))
        else:
            lines.append(f"{len(found)} {kind} warnings, the first: {found[0]['message']}; each one in {where}")
    return lines
