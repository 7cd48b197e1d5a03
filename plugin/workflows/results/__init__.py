"""Results: every JSON judgecp writes, typed, frozen, versioned and read one way.

A result is a frozen JSON object (a ``dict`` that refuses changes, nested
values frozen too) with a ``schema`` (``judgecp.report/1`` for the repeated-split
study of ``judgecp evaluate``, ``judgecp.apply/1``, ``judgecp.estimate/1``,
...), one :meth:`Result.to_json` / :meth:`Result.from_json` pair and one flat
:meth:`Result.scalars` naming: the numbers lm-eval's results table shows,
VLMEvalKit's headline logs, ``judgecp gate`` checks and ``judgecp report``
tabulates, by the same names. A metric that is missing from a body (a
renamed key, a truncated file) is a :class:`MetricError` naming the key,
never a NaN; a value the body holds as ``null`` is *undefined* (``None``),
and :meth:`Result.untrusted` names the metrics a gate must not pass (a
degenerate estimate, an estimate withheld after drift) with the reason.

The schemas are documented in docs/results.md; ``results.schema.json``
(package data) is their JSON Schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.schemas import describe, describe_file
from judgecp.kinds.metrics import MetricError, scalar
from judgecp.workflows.results.base import FrozenDict, FrozenList, Result, freeze, thaw
from judgecp.workflows.results.calibrated import (
    INTERVALS,
    MIN_EFFECTIVE_LABELS,
    ApplyResult,
    EstimateResult,
    apply_metrics,
    calibrated_metrics,
    degenerate_reasons,
    estimate_metrics,
    with_degenerate,
)
from judgecp.workflows.results.nightly import CompareResult, PlanResult, SelectResult
from judgecp.workflows.results.study import StudyResult, infer_kind, other_file, report_kinds

#: Every result type by its schema name.
SCHEMAS: dict[str, type[Result]] = {cls.schema: cls for cls in (
    StudyResult, ApplyResult, EstimateResult, CompareResult, PlanResult, SelectResult)}


def load_result(obj: Any, source: str = "result") -> Result:
    """The result a JSON object holds, whatever its schema (a report without one: ``judgecp.report/1``)."""
    if not isinstance(obj, Mapping):
        raise InputError(f"{source}: not a judgecp result (a JSON object is expected)")
    schema = obj.get("schema")
    if schema is None:
        return StudyResult.from_json(obj, source)
    if schema not in SCHEMAS:
        known = ", ".join(sorted(SCHEMAS))
        what = describe(obj)
        raise InputError(f"{source}: " + (f"{what}, not" if what else f"schema {schema!r} is not")
                         + f" a judgecp result ({known})")
    return SCHEMAS[str(schema)].from_json(obj, source)


def read_result(path: str | Path) -> Result:
    """The result in a JSON file (one-line errors for a missing, unreadable or foreign file)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file")
    try:
        obj = json.loads(p.read_text(encoding="utf-8"), parse_constant=lambda name: None)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"{p}: not a JSON file ({type(exc).__name__})") from None
    return load_result(obj, str(p))


__all__ = [
    "INTERVALS",
    "MIN_EFFECTIVE_LABELS",
    "SCHEMAS",
    "ApplyResult",
    "CompareResult",
    "EstimateResult",
    "FrozenDict",
    "FrozenList",
    "MetricError",
    "PlanResult",
    "Result",
    "SelectResult",
    "StudyResult",
    "apply_metrics",
    "calibrated_metrics",
    "degenerate_reasons",
    "describe",
    "describe_file",
    "estimate_metrics",
    "freeze",
    "infer_kind",
    "load_result",
    "other_file",
    "read_result",
    "report_kinds",
    "scalar",
    "thaw",
    "with_degenerate",
]
