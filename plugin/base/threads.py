"""Thread pools pinned for the numeric work of a command: one BLAS/OpenMP thread per process by default.

judgecp's numeric work is many small fits and predictions (five logprob
columns, a few thousand rows). Left at their defaults, OpenBLAS, MKL and
OpenMP (scikit-learn's gradient boosting, torch) start one spinning thread
per core in every call; on a shared or small machine those threads fight
each other and the other jobs, and a study costs several times the CPU
seconds of the same study on one thread (222 CPU s against 30 on a 2-core
machine, issue 29). Process parallelism is ``--jobs`` (worker processes,
one thread each), which scales; thread pools inside tiny fits do not.

:func:`pinned` limits every thread pool to ``threads`` (default 1) within a
block: the pools already loaded through threadpoolctl, the ones loaded
later and child processes through the variables of :data:`THREAD_ENV`.
A variable of :data:`USER_ENV` set by the user is their choice and is kept:
then nothing is pinned. ``judgecp`` commands run pinned, except those that
run a model (:data:`UNPINNED_COMMANDS`: a harness, a local rewriter, the
capture benchmark), whose libraries keep their own pools.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

#: Variables the user sets to choose the threads of numeric libraries (kept when set).
USER_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: Variables set while pinned, for libraries loaded later in the process and for child processes.
THREAD_ENV = (*USER_ENV, "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
#: ``judgecp`` commands (and sub-commands) that run a model and so keep the libraries' thread pools.
UNPINNED_COMMANDS = (("lm-eval",), ("vlmeval",), ("parc",), ("bench", "capture"))


def user_threads(environ: os._Environ[str] | dict[str, str] | None = None) -> dict[str, str]:
    """The thread variables of :data:`USER_ENV` the user set (non-empty), by name."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in USER_ENV if env.get(name, "").strip()}


def runs_a_model(command: Sequence[str | None]) -> bool:
    """Whether a command (``("bench", "capture")``, ``("evaluate",)``) is one of :data:`UNPINNED_COMMANDS`."""
    words = tuple(w for w in command if w)
    return any(words[: len(c)] == c for c in UNPINNED_COMMANDS)


@contextmanager
def pinned(threads: int = 1) -> Iterator[bool]:
    """Within the block every BLAS/OpenMP pool runs ``threads`` threads; yields whether it pinned.

    Nothing changes when the user set a variable of :data:`USER_ENV` (their
    setting holds). Otherwise the pools loaded now are limited with
    threadpoolctl and the variables of :data:`THREAD_ENV` are set for the
    ones loaded inside the block and for worker processes; both are
    restored on exit.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if user_threads():
        yield False
        return
    from threadpoolctl import threadpool_limits

    saved = {name: os.environ.get(name) for name in THREAD_ENV}
    os.environ.update(dict.fromkeys(THREAD_ENV, str(threads)))
    try:
        with threadpool_limits(limits=threads):
            yield True
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
