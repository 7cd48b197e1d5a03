"""A progress line on stderr for long work (no dependency).

Off by default: library calls print nothing. The command line turns it on
for every command with :func:`enabled` (``--quiet`` turns it off), so a run
that takes more than a few seconds says what it is doing whether or not
stderr is a terminal, and a short one prints nothing:

* nothing is written before :data:`DELAY` seconds of the command have passed
  (``--progress``: from the start);
* on a terminal the line is rewritten in place (``\\r``) at most every
  :data:`TERMINAL_INTERVAL` seconds;
* otherwise (a log, CI, a pipe) a full line is written at most every
  :data:`LOG_INTERVAL` seconds, a few lines a minute, whatever the number of
  steps;
* a line that was started is finished: the last step is always written.

Work reports through :func:`progress`::

    bar = progress(len(seeds), "likert splits")
    for seed in seeds:
        ...
        bar.update()
    bar.close()
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

#: Seconds of work before the first progress line (short commands print none).
DELAY = 3.0
#: Seconds between progress lines in a log (stderr not a terminal).
LOG_INTERVAL = 20.0
#: Seconds between rewrites of the line on a terminal.
TERMINAL_INTERVAL = 0.25


@dataclass
class Session:
    """Where and how often progress lines are written, from :func:`enabled` on; shared by every bar."""

    stream: TextIO
    delay: float = DELAY
    interval: float | None = None  # None: LOG_INTERVAL, or TERMINAL_INTERVAL on a terminal
    clock: Callable[[], float] = time.monotonic
    start: float = field(init=False)
    last_write: float = field(init=False, default=float("-inf"))
    tty: bool = field(init=False)

    def __post_init__(self) -> None:
        self.start = self.clock()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if self.interval is None:
            self.interval = TERMINAL_INTERVAL if self.tty else LOG_INTERVAL


_state: dict[str, Session | None] = {"session": None}


class Progress:
    """``judgecp: label  k/N (p%)  t s, ~r s left`` on the session's stream; does nothing without one."""

    def __init__(self, total: int, label: str, session: Session | None) -> None:
        self.total, self.label, self.session = max(int(total), 0), label, session
        self.done = 0
        self.start = session.clock() if session is not None else 0.0
        self.written = False
        self._write()

    def _line(self, now: float) -> str:
        pct = 100.0 * self.done / self.total if self.total else 100.0
        elapsed = now - self.start
        line = f"judgecp: {self.label} {self.done}/{self.total} ({pct:3.0f}%) {elapsed:6.1f} s"
        if 0 < self.done < self.total:
            line += f", ~{elapsed / self.done * (self.total - self.done):.0f} s left"
        return line

    def _write(self, final: bool = False) -> None:
        s = self.session
        if s is None:
            return
        now = s.clock()
        if final:
            if not self.written:
                return
        elif now - s.start < s.delay or now - s.last_write < (s.interval or 0.0):
            return
        line = self._line(now)
        if s.tty:
            s.stream.write("\r" + line + "\x1b[K" + ("\n" if final else ""))
        else:
            s.stream.write(line + "\n")
        s.stream.flush()
        s.last_write, self.written = now, True

    def update(self, n: int = 1) -> None:
        self.done = min(self.done + n, self.total)
        self._write()

    def close(self) -> None:
        self._write(final=True)
        self.session = None


def progress(total: int, label: str) -> Progress:
    """A progress line for ``total`` steps (silent unless :func:`enabled` is active)."""
    return Progress(total, label, _state["session"])


@contextmanager
def enabled(on: bool = True, stream: TextIO | None = None, *, delay: float = DELAY, interval: float | None = None,
            clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Within the block, :func:`progress` writes to ``stream`` (default stderr) when ``on``.

    ``delay``: seconds from here before the first line; ``interval``: seconds
    between lines (default: :data:`TERMINAL_INTERVAL` on a terminal, else
    :data:`LOG_INTERVAL`); ``clock``: for tests.
    """
    saved = _state["session"]
    _state["session"] = Session(stream or sys.stderr, delay, interval, clock) if on else None
    try:
        yield
    finally:
        _state["session"] = saved
