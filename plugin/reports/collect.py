"""What ``judgecp report`` reads: report files, and harness output folders in one command.

An argument is

* a ``judgecp evaluate --json`` report (any ``.json`` that is a report, e.g.
  VLMEvalKit's ``<model>_<dataset>_cp.json`` / ``_selective.json`` /
  ``_reliability.json``, which are the same reports);
* a harness output file a registered record format recognises (lm-eval's
  ``samples_<task>_<date>.jsonl``, a VLMEvalKit prediction file): it is
  evaluated with the protocol's defaults (and ``alphas``) first;
* a folder: every such file under it (sorted), ``results_*.json`` of lm-eval
  and other JSON that are not reports left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecp.errors import InputError
from judgecp.reports.load import infer_kind

#: lm-eval's samples file name: the task, then the run's date.
SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_\d{4}-\d{2}-\d{2}T[\w.:-]+$")
HARNESS_SUFFIXES = (".jsonl", ".xlsx", ".tsv", ".csv")


def is_report(path: Path) -> dict[str, Any] | None:
    """The report in ``path`` if it is a judgecp report, else ``None``."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # unreadable, not UTF-8 or JSON, nested too deep
        return None
    return obj if isinstance(obj, dict) and infer_kind(obj) is not None else None


def harness_format(path: Path) -> str | None:
    """The registered record format that recognises ``path`` (lm-eval samples, VLMEvalKit predictions)."""
    from judgecp.plugins import sniff_format

    fmt = sniff_format(path)
    return None if fmt == "table" else fmt


def display_name(path: Path, root: Path | None) -> str:
    match = SAMPLES_NAME.match(path.stem)
    stem = match.group("task") if match else path.stem
    if root is None or path.parent == root:
        return stem
    return f"{path.parent.relative_to(root).as_posix()}/{stem}"


def evaluate_file(path: Path, fmt: str, alphas: Sequence[float] | None) -> dict[str, Any]:
    """``judgecp evaluate --format FMT PATH`` with the defaults (and ``alphas`` where the kind sweeps)."""
    from judgecp.data import Fields, from_table
    from judgecp.evaluation import evaluate
    from judgecp.plugins import record_format
    from judgecp.protocol import parse_settings

    table = record_format(fmt).read(path).table()
    data = from_table(table, None, Fields())
    values: dict[str, Any] = {}
    if alphas and data.kind in ("likert", "mcq", "pairwise"):
        values["alphas"] = list(alphas)
    report = evaluate(data, parse_settings(values, kind=data.kind))
    report.update(table.info)
    return report


def collect(paths: Sequence[str | Path], alphas: Sequence[float] | None = None) -> list[tuple[str, Path, dict[str, Any]]]:
    """``(name, path, report)`` for every report found or made from ``paths``, in order."""
    out: list[tuple[str, Path, dict[str, Any]]] = []
    for arg in paths:
        path = Path(arg)
        if path.is_dir():
            found = 0
            for f in sorted(p for p in path.rglob("*") if p.is_file()):
                if f.suffix == ".json" and not f.name.startswith("results_"):
                    report = is_report(f)
                    if report is not None:
                        out.append((display_name(f, path), f, report))
                        found += 1
                elif f.suffix in HARNESS_SUFFIXES and (fmt := harness_format(f)) is not None:
                    out.append((display_name(f, path), f, evaluate_file(f, fmt, alphas)))
                    found += 1
            if not found:
                raise InputError(f"{path}: no judgecp report, lm-eval samples file or VLMEvalKit prediction file in it")
        elif path.is_file() and path.suffix != ".json" and (fmt := harness_format(path)) is not None:
            out.append((display_name(path, None), path, evaluate_file(path, fmt, alphas)))
        else:
            out.append((path.stem, path, {}))  # a report file: load_runs reads and checks it
    return out
