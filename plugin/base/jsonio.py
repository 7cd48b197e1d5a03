"""Strict JSON: no NaN, no Infinity, numpy scalars as Python's; the text every judgecp JSON file is written as."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

#: The scalars JSON can hold, Python's or numpy's (what :func:`python_scalar` takes).
SCALAR_TYPES = (bool, np.bool_, int, np.integer, float, np.floating, str, type(None))


def python_scalar(value: Any) -> bool | int | float | str | None:
    """One of :data:`SCALAR_TYPES` as Python's own type (numpy's bool, integers and floats converted)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    out: str | None = value
    return out


def to_strict(obj: Any) -> Any:
    """Plain-Python, strictly JSON-serialisable copy: NaN/inf -> ``None``, numpy -> Python."""
    if isinstance(obj, Mapping):
        return {str(k): to_strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_strict(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_strict(v) for v in obj.tolist()]
    if isinstance(obj, SCALAR_TYPES):
        value = python_scalar(obj)
        return None if isinstance(value, float) and not math.isfinite(value) else value
    return str(obj)


def dumps(report: Mapping[str, Any]) -> str:
    """Strict JSON text (``allow_nan=False``), stable key order as built; a result with its ``schema``."""
    own = getattr(report, "dumps", None)  # a typed result writes itself, with its schema and digest
    if callable(own) and isinstance(getattr(report, "schema", None), str):
        text: str = own()
        return text
    obj = report
    return json.dumps(to_strict(obj), indent=2, allow_nan=False) + "\n"
