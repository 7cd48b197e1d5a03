"""What a script should act on, as data: a report's ``warnings``.

* ``excluded_share``: more than a tenth of the rows read were left out (a
  wrong ``--label`` column, a scale that does not fit, a broken capture);
  when most of them are ``label_off_scale``, the message says so and points
  to ``--label-scale LO:HI`` (labels on another scale than the judge's);
* ``group_under_target``: a group's coverage is below the target by more
  than its Monte-Carlo error, ``2 sqrt(t (1 - t) / m)`` with ``t`` the
  target coverage and ``m`` the group's test rows per split (a marginal
  method promises nothing per group; Mondrian calibration does).

Each warning is ``{"warning": kind, "message": one line, ...numbers}``; the
command line prints the messages on stderr, the harness glue logs them.
"""

from __future__ import annotations

import math
from typing import Any

from judgecp.evaluation.metrics import headline_entry
from judgecp.scale import LikertScale, label_scale_hint

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
    if report.get("kind") == "likert" and 2 * off_scale > excluded:
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
            "target": target, "mc_error": error,
            "message": f"group {group!r}: {method} covers {coverage:.3f}, below the target {target:.2f} by more "
                       f"than its Monte-Carlo error {error:.3f} ({promise})"}


def group_warnings(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Groups whose coverage misses the target (Likert ``groups``; multiple choice ``by_*`` tables)."""
    target = 1.0 - float(report.get("alpha", 0.1))
    protocol = report.get("protocol") or {}
    test_share = 1.0 - float(protocol.get("cal_fraction", 0.5))
    out = []
    if report.get("kind") == "likert":
        mondrian = bool(protocol.get("mondrian"))
        for g, entry in (report.get("groups") or {}).items():
            for method, m in entry["methods"].items():
                found = _under(g, method, headline_entry(m)["coverage"], target, entry["n"] * test_share, mondrian)
                if found:
                    out.append(found)
    elif report.get("kind") == "mcq":
        for key, table in report.items():
            if key.startswith("by_") and isinstance(table, dict):
                for g, entry in table.items():
                    for method, m in entry.get("methods", {}).items():
                        found = _under(g, method, m["coverage"], target, entry["n"] * test_share, False)
                        if found:
                            out.append(found)
    return out


def add_warnings(report: dict[str, Any]) -> dict[str, Any]:
    report["warnings"] = excluded_share(report) + group_warnings(report)
    return report
