"""Exceptions with messages a user can act on."""

from __future__ import annotations


class InputError(ValueError):
    """Input that judgecp cannot evaluate (bad file, column, option or value).

    Raised with a message naming the bad value; the CLI prints it without a
    traceback and exits with status 2.
    """


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
