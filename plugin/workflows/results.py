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
from typing import Any, ClassVar

from judgecp.base.errors import InputError
from judgecp.kinds.metrics import MetricError, scalar


class FrozenDict(dict[str, Any]):
    """A dict that refuses changes (a result's nested objects); JSON-serialisable as a dict."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a judgecp result is read-only; build a new one")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __reduce__(self) -> Any:  # pickling (process pools) rebuilds a frozen copy
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A list that refuses changes (a result's nested arrays)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a judgecp result is read-only; build a new one")

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> Any:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """A read-only deep copy of a JSON-like value (dicts, lists and tuples frozen; scalars as they are)."""
    if isinstance(value, Mapping):
        return FrozenDict({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return FrozenList(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a (frozen) JSON-like value."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


# -- results -----------------------------------------------------------------------------------


class Result(FrozenDict):
    """A judgecp result: a frozen JSON object (``schema`` first), read as a mapping and as flat scalars.

    A ``dict`` that refuses changes, so ``json.dumps(result)`` writes it and
    every reader that takes a report dict takes it. Subclasses set
    :attr:`schema` and implement :meth:`scalars`; :func:`register_schema`
    registers them by their schema name.
    """

    schema: ClassVar[str] = ""
    #: What a file of this schema is, for messages ("an apply summary").
    description: ClassVar[str] = "a judgecp result"

    def __init__(self, body: Mapping[str, Any]) -> None:
        frozen = freeze({k: v for k, v in body.items() if k != "schema"})
        dict.__init__(self, {"schema": self.schema, **frozen})

    def __reduce__(self) -> Any:
        return (type(self), (dict(self),))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(kind={self.get('kind')!r}, keys={list(self)[:8]})"

    @property
    def body(self) -> Mapping[str, Any]:
        """The result itself (a read-only mapping); kept for readers that want the name."""
        return self

    @property
    def kind(self) -> str:
        return str(self.get("kind", ""))

    def with_(self, **changes: Any) -> Result:
        """A copy with top-level keys added or replaced (the original is unchanged)."""
        return type(self)({**thaw(self), **changes})

    # -- JSON ------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The JSON object as plain, mutable Python values (``schema`` first)."""
        out: dict[str, Any] = thaw(self)
        return out

    def dumps(self) -> str:
        """Strict JSON text (no NaN or Infinity: undefined values are ``null``)."""
        from judgecp.base.jsonio import dumps

        return dumps(self.to_json())

    @classmethod
    def from_json(cls, obj: Any, source: str = "result") -> Result:
        """The result a JSON object holds, checked: its schema is this class's, and every scalar reads."""
        if not isinstance(obj, Mapping):
            raise InputError(f"{source}: not {cls.description} (a JSON object is expected)")
        found = obj.get("schema")
        if found is not None and found != cls.schema:
            raise InputError(f"{source}: schema {found!r}, expected {cls.schema!r} ({cls.description})")
        result = cls(obj)
        result.check(source)
        return result

    def check(self, source: str = "result") -> None:
        """Refuse a body whose metrics cannot all be read (a missing key names itself)."""
        try:
            self.scalars()
        except MetricError as exc:
            raise MetricError(f"{source}: {exc}") from None

    # -- scalars --------------------------------------------------------------------------------
    def scalars(self) -> dict[str, float | None]:
        """Every flat metric by name: a number, or ``None`` where the body says it is undefined."""
        return {}

    def untrusted(self) -> dict[str, str]:
        """Metrics a gate must fail whatever their value, with why (degenerate or withheld estimates)."""
        return {}


class StudyResult(Result):
    """The repeated-split study of ``judgecp evaluate`` (any kind): ``judgecp.report/1``."""

    schema = "judgecp.report/1"
    description = "a judgecp evaluate report"

    def metric_list(self) -> list[Any]:
        from judgecp.kinds.protocol import Protocol

        if not self.kind:
            raise MetricError("the report names no kind; a judgecp evaluate report has one")
        return get_kind(self.kind, flag="report kind").study.metrics(Protocol(), self)

    def scalars(self) -> dict[str, float | None]:
        from judgecp.kinds.metrics import metric_value

        return {m.name: metric_value(self, m) for m in self.metric_list()}

    @classmethod
    def from_json(cls, obj: Any, source: str = "report") -> Result:
        if isinstance(obj, Mapping) and obj.get("schema") is None and "kind" not in obj:
            from judgecp.workflows.reports.load import infer_kind

            kind = infer_kind(dict(obj))
            if kind is None:
                raise InputError(f"{source}: not a judgecp evaluate report (no schema, kind, methods or controllers)")
            obj = {**obj, "kind": kind}
        return super().from_json(obj, source)


#: Result classes by schema name (``judgecp.report/1`` ...); other modules register theirs.
SCHEMAS: dict[str, type[Result]] = {StudyResult.schema: StudyResult}


def register_schema(cls: type[Result]) -> type[Result]:
    """Register a result class by its schema (a class decorator)."""
    SCHEMAS[cls.schema] = cls
    return cls


def _ensure_registered() -> None:
    # The result classes of the calibrator commands live with them; importing registers them.
    import judgecp.workflows.calibrators.results  # noqa: F401


def load_result(obj: Any, source: str = "result") -> Result:
    """The result a JSON object holds, whatever its schema (a report without one: ``judgecp.report/1``)."""
    _ensure_registered()
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


#: judgecp files that are not results, for messages naming what a misplaced file is.
OTHER_FILES = {"judgecp.calibrator": "a calibrator (judgecp calibrate -o)",
               "judgecp.history": "a drift history (judgecp apply --history)",
               "judgecp.prompt-set": "a prompt set (python -m judgecp.data.ensemble.prompts)",
               "judgecp.record": "a judgecp record"}
#: Files judgecp names only when they are small enough to read whole in an error path.
_DESCRIBE_MAX_BYTES = 64 << 20


def describe(obj: Any) -> str | None:
    """What a judgecp JSON object is by its schema ("a calibrator (judgecp calibrate -o)", "an estimate
    (judgecp estimate --json)"), else ``None``: for the errors given when a command gets the wrong judgecp file."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("schema"), str):
        return None
    schema = str(obj["schema"])
    _ensure_registered()
    if schema in SCHEMAS:
        return SCHEMAS[schema].description
    return next((what for prefix, what in OTHER_FILES.items() if schema.startswith(prefix + "/")), None)


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


__all__ = ["FrozenDict", "FrozenList", "MetricError", "Result", "StudyResult", "describe", "describe_file", "freeze", "load_result", "read_result",
           "register_schema", "scalar", "thaw"]
