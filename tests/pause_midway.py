"""Run ``judgecp ARGS...`` so that it pauses midway through writing its output (tests only).

``python -m tests.pause_midway READY_FILE ARGS...``: the first file write pauses
after its bytes are in the temporary file (at its ``fsync``), a folder build
pauses once built, before it is moved into place. At the pause the script
creates READY_FILE and sleeps, so a test can send SIGINT or SIGTERM at a
known point. The command runs through the real ``judgecp.cli.main``; only
these two waits are added, here, so production code has no test hook.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def main() -> int:
    ready = Path(sys.argv[1])
    argv = sys.argv[2:]

    import judgecp.base.outputs as outputs
    from judgecp.cli import main as judgecp_main

    def pause() -> None:
        if not ready.exists():
            ready.write_text("paused\n")
            time.sleep(120)

    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        pause()

    real_held = outputs.signals_held

    @contextmanager
    def held() -> Iterator[None]:
        pause()  # built, not yet moved into place
        with real_held():
            yield

    os.fsync = fsync
    outputs.signals_held = held  # type: ignore[assignment]
    return judgecp_main(argv)


if __name__ == "__main__":
    sys.exit(main())
