"""What a judgecp file is, by its ``schema``: for the errors given when a command gets the wrong judgecp file.

Every JSON file judgecp writes names its schema (``judgecp.report/1``, ``judgecp.calibrator/2``, ...);
:func:`describe` says what such an object is ("a calibrator (judgecp calibrate -o)"), so that a command
given a calibrator as a run, or an apply summary as a history, says so in one line. The result types
(:mod:`judgecp.workflows.results`) take their descriptions from :data:`FILES`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: Schema name (without its version) -> what a file of it is.
FILES: dict[str, str] = {
    "judgecp.report": "a judgecp evaluate report",
    "judgecp.apply": "an apply summary (judgecp apply --json)",
    "judgecp.estimate": "an estimate (judgecp estimate --json)",
    "judgecp.compare": "a comparison (judgecp compare --json)",
    "judgecp.plan": "a label plan (judgecp plan --json)",
    "judgecp.select": "a selection summary (judgecp select --json)",
    "judgecp.calibrator": "a calibrator (judgecp calibrate -o)",
    "judgecp.history": "a drift history (judgecp apply --history)",
    "judgecp.prompt-set": "a prompt set (python -m judgecp.data.ensemble.prompts)",
    "judgecp.record": "a judgecp record",
}
#: Files judgecp names only when they are small enough to read whole in an error path.
_DESCRIBE_MAX_BYTES = 64 << 20


def describe_schema(schema: str) -> str | None:
    """What a file of ``schema`` (``judgecp.apply/1``) is, else ``None``."""
    return FILES.get(schema.rpartition("/")[0] if "/" in schema else schema)


def describe(obj: Any) -> str | None:
    """What a judgecp JSON object is by its schema ("a calibrator (judgecp calibrate -o)", "an estimate
    (judgecp estimate --json)"), else ``None``."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("schema"), str):
        return None
    return describe_schema(str(obj["schema"]))


def describe_file(path: str | Path) -> str | None:
    """:func:`describe` of a file that is one JSON document (a calibrator given as a run, an apply summary
    as a history), else ``None``."""
    p = Path(path)
    try:
        if p.stat().st_size > _DESCRIBE_MAX_BYTES:
            return None
        obj = json.loads(p.read_text(encoding="utf-8"), parse_constant=lambda name: None)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return describe(obj)


#: Bytes of a file's first line :func:`describe_lines` reads at most (a history night holds a run's values).
_FIRST_LINE_MAX_BYTES = 64 << 20


def describe_lines(path: str | Path) -> str | None:
    """What a JSON-lines file of judgecp's is, by its first line ("a drift history (judgecp apply --history),
    JSON lines"; the items ``judgecp select -o`` wrote), else ``None``: for the errors given when a result
    is expected."""
    try:
        with Path(path).open("rb") as handle:
            first = handle.readline(_FIRST_LINE_MAX_BYTES)
            while first and not first.strip():
                first = handle.readline(_FIRST_LINE_MAX_BYTES)
        obj = json.loads(first.decode("utf-8"), parse_constant=lambda name: None)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(obj, Mapping):
        return None
    if "sampling_probability" in obj:
        return "items to label (judgecp select -o; JSON lines)"
    if str(obj.get("schema", "")).startswith("judgecp.record/"):
        return "judgecp records (JSON lines)"
    what = describe(obj)
    return None if what is None else f"{what} (JSON lines)"
