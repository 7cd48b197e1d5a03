"""Console cells and the first lines every kind's table starts with (the tables themselves: each kind's presenter)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO


def fmt(value: Any, digits: int = 3, missing: str = "-") -> str:
    """A table cell: ``missing`` for None, a float to ``digits`` places, anything else as text."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def pm_cell(entry: Mapping[str, Any] | None, key: str, digits: int = 3) -> str:
    if not entry:
        return "-"
    return f"{entry[key]:.{digits}f}±{entry[key + '_std']:.{digits}f}"


def write_head(report: Mapping[str, Any], out: TextIO, title: str) -> None:
    """The first lines of a non-Likert kind's table: the input, what was used and excluded, the flags."""
    out.write(f"judgecp evaluate --kind {report['kind']}: {report['source']}\n")
    excl = ", ".join(f"{e['reason']} {e['count']}" for e in report["excluded"]) or "none"
    out.write(f"  {title} used {report['n']} (read {report['n_read']}); excluded: {excl}\n")
    if report["flags"]:
        out.write("  flags (kept): " + ", ".join(f"{e['flag']} {e['count']}" for e in report["flags"]) + "\n")
