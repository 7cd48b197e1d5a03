"""Exceptions with messages a user can act on."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgecp.base.exclusions import Exclusions


class InputError(ValueError):
    """Input that judgecp cannot evaluate (bad file, column, option or value).

    Raised with a message naming the bad value; the CLI prints it without a
    traceback and exits with status 2.
    """


class NoUsableRecords(InputError):
    """Every record was excluded; :attr:`excluded` counts them by reason.

    The harness glue catches it to report the counts (``n``, ``excluded``)
    next to undefined metrics instead of failing the run.
    """

    def __init__(self, source: str, excluded: Exclusions, n_read: int, hint: str = "") -> None:
        self.source = source
        self.excluded = excluded
        self.n_read = n_read
        reasons = ", ".join(f"{e['reason']}: {e['count']}" for e in excluded.to_json()) or "no rows"
        super().__init__(f"{source}: no usable records ({reasons})" + (f"; {hint}" if hint else ""))


class NotCalibratedError(RuntimeError):
    """A method or estimator was asked to predict (or conformalize) before the earlier stage ran."""


class MissingDependencyError(ImportError):
    """An optional dependency is not installed; the message says how to get it."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{package} is not installed, and {purpose} needs it: "
            f"run `pip install judgecp[{extra}]`"
        )


def require(module: str, extra: str, purpose: str) -> object:
    """Import ``module`` or raise :class:`MissingDependencyError` with an install hint."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(module, extra, purpose) from exc


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` when a candidate is close to ``name``, else ``""``."""
    close = difflib.get_close_matches(str(name), [str(c) for c in candidates], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown(what: str, name: str, candidates: Iterable[str]) -> InputError:
    """``unknown <what> 'name'; did you mean ...? available: a, b, c``."""
    options = sorted(str(c) for c in candidates)
    shown = ", ".join(options[:40]) + (" ..." if len(options) > 40 else "")
    return InputError(f"unknown {what} {name!r}{did_you_mean(name, options)}; available: {shown or 'none'}")


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
