"""A progress line on stderr for long evaluations (no dependency).

Off by default: library calls print nothing. The command line turns it on
(``judgecp evaluate --progress``, or by default when stderr is a terminal and
``--quiet`` is not given) with :func:`enabled`. On a terminal the line is
rewritten in place (``\\r``); otherwise a line is printed at each tenth of the
work, so logs stay short. Work reports through :func:`progress`::

    bar = progress(len(seeds), "likert splits")
    for seed in seeds:
        ...
        bar.update()
    bar.close()
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

_state: dict[str, TextIO | None] = {"stream": None}


class Progress:
    """``label  k/N (p%)  t s`` on ``stream``; does nothing without a stream."""

    def __init__(self, total: int, label: str, stream: TextIO | None) -> None:
        self.total, self.label, self.stream = max(int(total), 0), label, stream
        self.done = 0
        self.start = time.perf_counter()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._last_tenth = -1
        self._write()

    def _line(self) -> str:
        pct = 100.0 * self.done / self.total if self.total else 100.0
        return f"judgecp: {self.label} {self.done}/{self.total} ({pct:3.0f}%) {time.perf_counter() - self.start:6.1f} s"

    def _write(self, final: bool = False) -> None:
        if self.stream is None:
            return
        if self.tty:
            self.stream.write("\r" + self._line() + ("\n" if final else ""))
        else:
            tenth = 10 * self.done // self.total if self.total else 10
            if tenth == self._last_tenth and not final:
                return
            if final and tenth == self._last_tenth:
                return
            self._last_tenth = tenth
            self.stream.write(self._line() + "\n")
        self.stream.flush()

    def update(self, n: int = 1) -> None:
        self.done = min(self.done + n, self.total)
        self._write()

    def close(self) -> None:
        self._write(final=True)
        self.stream = None


def progress(total: int, label: str) -> Progress:
    """A progress line for ``total`` steps (silent unless :func:`enabled` is active)."""
    return Progress(total, label, _state["stream"])


@contextmanager
def enabled(on: bool = True, stream: TextIO | None = None) -> Iterator[None]:
    """Within the block, :func:`progress` writes to ``stream`` (default stderr) when ``on``."""
    saved = _state["stream"]
    _state["stream"] = (stream or sys.stderr) if on else None
    try:
        yield
    finally:
        _state["stream"] = saved
