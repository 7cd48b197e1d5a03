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

Every result file carries a ``digest`` (:func:`with_digest`, as a
calibrator does: ``sha256:<hex>`` of the canonical JSON of the object without
it); the readers of files (:func:`read_result`, ``judgecp gate``, ``judgecp
report``) refuse, in one line, a result whose digest does not match its
content (an edited or corrupted file) and one that carries none (written
before results were digested, or by hand: re-run the command that wrote it).

The schemas are documented in docs/results.md; ``results.schema.json``
(package data) is their JSON Schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError, clip, short_repr
from judgecp.base.schemas import describe, describe_file, describe_lines
from judgecp.kinds.metrics import MetricError, scalar
from judgecp.workflows.results.base import (
    FrozenDict,
    FrozenList,
    Result,
    check_digest,
    freeze,
    thaw,
    with_digest,
)
from judgecp.workflows.results.calibrated import (
    INTERVALS,
    MIN_EFFECTIVE_LABELS,
    ApplyResult,
    EstimateResult,
    apply_metrics,
    calibrated_metrics,
    degenerate_reasons,
    estimate_metrics,
    history_metrics,
    with_degenerate,
)
from judgecp.workflows.results.nightly import (
    CompareResult,
    PlanResult,
    SelectResult,
    compare_degenerate,
)
from judgecp.workflows.results.study import StudyResult, infer_kind, other_file, report_kinds

#: Every result type by its schema name.
SCHEMAS: dict[str, type[Result]] = {cls.schema: cls for cls in (
    StudyResult, ApplyResult, EstimateResult, CompareResult, PlanResult, SelectResult)}


def load_result(obj: Any, source: str = "result", *, require_digest: bool = False) -> Result:
    """The result a JSON object holds, whatever its schema (a report without one: ``judgecp.report/1``).

    A ``digest`` that does not match the content is refused; ``require_digest`` (a file) refuses one
    without a digest too.
    """
    if not isinstance(obj, Mapping):
        raise InputError(f"{source}: not a judgecp result (a JSON object is expected)")
    schema = obj.get("schema")
    if schema is None:
        return StudyResult.from_json(obj, source, require_digest=require_digest)
    if not isinstance(schema, str) or schema not in SCHEMAS:
        known = ", ".join(sorted(SCHEMAS))
        what = describe(obj)
        raise InputError(f"{source}: " + (f"{what}, not" if what else f"schema {short_repr(schema)} is not")
                         + f" a judgecp result ({known})")
    return SCHEMAS[str(schema)].from_json(obj, source, require_digest=require_digest)


def read_result(path: str | Path) -> Result:
    """The result in a JSON file, its digest verified (one-line errors for a missing, unreadable, foreign,
    edited or undigested file)."""
    p = Path(path)
    return load_result(read_json_file(p, "not a JSON file"), str(p), require_digest=True)


def read_json_file(path: Path, what: str) -> Any:
    """The JSON document of ``path`` (bare NaN read as null); a missing or unreadable file, or one that is not
    JSON, is one line (``what``: "not a JSON file"); a JSON-lines file of judgecp's is named."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=lambda name: None)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        lines = describe_lines(path)
        if lines is not None:
            raise InputError(f"{path}: {lines}, not a judgecp result") from None
        raise InputError(f"{path}: {what} ({type(exc).__name__})") from None

def verified(report: Mapping[str, Any], path: str | Path) -> dict[str, Any]:
    """The report of a file, its digest checked and every metric read (an edited, undigested or malformed
    result is one line), as plain JSON values."""
    result: dict[str, Any] = load_result(report, str(path), require_digest=True).to_json()
    return result


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
    "check_digest",
    "clip",
    "compare_degenerate",
    "degenerate_reasons",
    "describe",
    "describe_file",
    "describe_lines",
    "estimate_metrics",
    "freeze",
    "history_metrics",
    "infer_kind",
    "load_result",
    "other_file",
    "read_json_file",
    "read_result",
    "report_kinds",
    "scalar",
    "short_repr",
    "thaw",
    "verified",
    "with_degenerate",
    "with_digest",
]
