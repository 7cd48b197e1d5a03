"""judgecp's version, as the installed distribution says (``0+unknown`` in a source tree)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("judgecp")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"
