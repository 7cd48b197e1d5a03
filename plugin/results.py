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
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from judgecp.digest import DIGEST_FIELD, content_digest
from judgecp.errors import InputError
from judgecp.report import to_strict


class MetricError(InputError):
    """A metric a result should have is not in its body (a renamed or missing key)."""


# -- frozen JSON values ------------------------------------------------------------------------


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
    #: The command that writes it, for the hint of a refused file.
    command: ClassVar[str] = "the judgecp command that wrote it"

    def __init__(self, body: Mapping[str, Any]) -> None:
        # The digest belongs to a file, not to the result: checked when read (from_json), written by dumps().
        frozen = freeze({k: v for k, v in body.items() if k not in ("schema", DIGEST_FIELD)})
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
        """Strict JSON text (no NaN or Infinity: undefined values are ``null``), with its ``digest``."""
        return json.dumps(with_digest(self), indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, obj: Any, source: str = "result", *, require_digest: bool = False) -> Result:
        """The result a JSON object holds, checked: its digest (when it has one, or ``require_digest``)
        matches its content, its schema is this class's, and every scalar reads."""
        if not isinstance(obj, Mapping):
            raise InputError(f"{source}: not {cls.description} (a JSON object is expected)")
        check_digest(obj, source, required=require_digest, command=cls.command)
        return cls._from_checked(obj, source)

    @classmethod
    def _from_checked(cls, obj: Mapping[str, Any], source: str) -> Result:
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
            self.untrusted()
        except MetricError as exc:
            raise MetricError(f"{source}: {exc}") from None
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:  # a value of the wrong type
            raise MetricError(f"{source}: malformed {self.description} ({type(exc).__name__}: "
                              f"{clip(str(exc), 200)})") from None

    # -- scalars --------------------------------------------------------------------------------
    def scalars(self) -> dict[str, float | None]:
        """Every flat metric by name: a number, or ``None`` where the body says it is undefined."""
        return {}

    def untrusted(self) -> dict[str, str]:
        """Metrics a gate must fail whatever their value, with why (degenerate or withheld estimates)."""
        return {}


def scalar(value: Any, name: str) -> float | None:
    """A metric's value as a float (``None`` for null, NaN or an infinite value the body could not hold)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, (int, float)):
        raise MetricError(f"metric {name!r} is not a number ({short_repr(value)})")
    number = float(value)
    return number if math.isfinite(number) else None


class StudyResult(Result):
    """The repeated-split study of ``judgecp evaluate`` (any kind): ``judgecp.report/1``."""

    schema = "judgecp.report/1"
    description = "a judgecp evaluate report"
    command = "judgecp evaluate --json"

    def metric_list(self) -> list[Any]:
        from judgecp.kinds import get_kind
        from judgecp.protocol import Protocol

        return get_kind(self.kind or "likert", flag="report kind").metrics(Protocol(), self)

    def scalars(self) -> dict[str, float | None]:
        from judgecp.scalars import metric_value

        return {m.name: metric_value(self, m) for m in self.metric_list()}

    @classmethod
    def _from_checked(cls, obj: Mapping[str, Any], source: str) -> Result:
        if obj.get("schema") is None and "kind" not in obj:
            from judgecp.reports.load import infer_kind

            kind = infer_kind(dict(obj))
            if kind is None:
                raise InputError(f"{source}: not a judgecp evaluate report (no schema, kind, methods or controllers)")
            obj = {**obj, "kind": kind}
        return super()._from_checked(obj, source)


#: Result classes by schema name (``judgecp.report/1`` ...); other modules register theirs.
SCHEMAS: dict[str, type[Result]] = {StudyResult.schema: StudyResult}


def register_schema(cls: type[Result]) -> type[Result]:
    """Register a result class by its schema (a class decorator)."""
    SCHEMAS[cls.schema] = cls
    return cls


def _ensure_registered() -> None:
    # The result classes of the calibrator commands live with them; importing registers them.
    import judgecp.calibrators.results  # noqa: F401


def load_result(obj: Any, source: str = "result", *, require_digest: bool = False) -> Result:
    """The result a JSON object holds, whatever its schema (a report without one: ``judgecp.report/1``).

    A ``digest`` that does not match the content is refused; ``require_digest`` (a file) refuses one
    without a digest too.
    """
    _ensure_registered()
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


# -- digests -----------------------------------------------------------------------------------


def with_digest(result: Mapping[str, Any]) -> dict[str, Any]:
    """The strict JSON object of a result as its file holds it: ``schema`` first (when it has one), then
    ``digest`` (:func:`judgecp.digest.content_digest` of the rest), then the body."""
    body: dict[str, Any] = to_strict(result.to_json() if isinstance(result, Result) else result)
    body.pop(DIGEST_FIELD, None)
    head = {"schema": body.pop("schema")} if "schema" in body else {}
    out = {**head, DIGEST_FIELD: ""}
    out.update(body)
    out[DIGEST_FIELD] = content_digest(out)
    return out


def check_digest(obj: Mapping[str, Any], source: str, *, required: bool, command: str) -> None:
    """Refuse an object whose ``digest`` does not match its content, or (``required``: a file) that has none."""
    found = obj.get(DIGEST_FIELD)
    if found is None and DIGEST_FIELD not in obj:
        if required:
            raise InputError(f"{source}: no digest, so its numbers cannot be verified (a result written before "
                             f"judgecp digested them, or by hand); re-run `{command}` to write it again")
        return
    if not isinstance(found, str) or found != content_digest(obj):
        raise InputError(f"{source}: the digest does not match the content: the file was edited or corrupted "
                         f"(re-run `{command}` to write it again)")


# -- reading files -----------------------------------------------------------------------------


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


#: judgecp files that are not results, for messages naming what a misplaced file is.
OTHER_FILES = {"judgecp.calibrator": "a calibrator (judgecp calibrate -o)",
               "judgecp.history": "a drift history (judgecp apply --history)",
               "judgecp.prompt-set": "a prompt set (python -m judgecp.ensemble.prompts)",
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


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr`` of a value for a message, numpy scalars as Python's, cut to ``limit`` characters."""
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        try:
            value = item()
        except (TypeError, ValueError):
            pass
    return clip(repr(value), limit)


def clip(text: str, limit: int = 200) -> str:
    """``text`` for a one-line message: whitespace folded, cut to about ``limit`` characters (its length said)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: max(limit - 30, 10)]}... ({len(text)} characters)"


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


__all__ = ["FrozenDict", "FrozenList", "MetricError", "Result", "StudyResult", "check_digest", "clip", "describe",
           "describe_file", "describe_lines", "freeze", "load_result", "read_json_file", "read_result",
           "register_schema", "scalar", "short_repr", "thaw", "with_digest"]
