"""The ``judgecp`` console script: Ctrl-C or SIGTERM in its first second is one line too.

Python imports the command before :func:`judgecp.cli.main` runs, and numpy
and scipy take a second or two to import; a signal then used to end the
command with a ``KeyboardInterrupt`` traceback (exit -2). This module
installs its handlers first, before importing anything of judgecp's but the
(lazy) package: a signal before :func:`judgecp.cli.main` has started is the
line ``judgecp: interrupted`` and exit status 130 (143 for SIGTERM), at once,
as nothing has been written yet; once ``main`` runs, SIGINT is its
``KeyboardInterrupt`` again (outputs cleaned up, the same line, 130).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def _early(signum: int, frame: FrameType | None) -> None:
    cli = sys.modules.get("judgecp.cli")
    if signum == signal.SIGINT and cli is not None and getattr(cli, "running", 0) > 0:
        raise KeyboardInterrupt  # main() is running: its own handling cleans up and says so
    os.write(2, b"judgecp: interrupted\n")
    os._exit(130 if signum == signal.SIGINT else 143)


def _spawned() -> bool:
    """Whether this is a worker process multiprocessing spawned (it imports the parent's script again)."""
    process = sys.modules.get("multiprocessing.process")  # a plain start has not imported it yet
    return process is not None and bool(getattr(process.current_process(), "_inheriting", False))


if not _spawned():  # a worker's signals are its pool's to handle (evaluate --jobs ends its workers)
    signal.signal(signal.SIGINT, _early)
    signal.signal(signal.SIGTERM, _early)

from judgecp.cli import main as _main  # noqa: E402 - after the handlers, which is the point of this module


def main() -> int:
    """``judgecp ...``: :func:`judgecp.cli.main` with the process's arguments."""
    return _main()


__all__ = ["main"]
