"""Handing freed memory back to the operating system between the phases of a large study.

glibc keeps the pages of freed small objects (a million parsed cells) and of
arrays below its mmap threshold, which it raises to 32 MB once an array of
that size is freed, inside the process: the resident size then counts memory
nothing uses. ``malloc_trim(0)`` gives every free page back. It changes no
value and costs milliseconds, so judgecp calls it where a phase has freed a
lot: after a table is read into arrays, after the repeated splits, and after
each method's per-row results are dropped from a study's report.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or ``None`` (another C library, another platform)."""
    try:  # the process's own symbols, C library included (find_library would start a subprocess)
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):  # TypeError: Windows names no process library
        return None


def release_freed_memory() -> bool:
    """Give the process's free heap pages back to the system; ``True`` where the C library can."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
