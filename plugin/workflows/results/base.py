"""The base of every result type: frozen JSON objects with a schema, a digest and flat scalars (docs/results.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from judgecp.base.digest import DIGEST_FIELD, content_digest, with_digest
from judgecp.base.errors import InputError, clip
from judgecp.kinds.metrics import MetricError


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


# -- digests -----------------------------------------------------------------------------------


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
