"""The Likert study's repeated calibration/test splits: every method on every split, in worker processes
when ``jobs`` asks for them (each split's rows and seed given, so the result does not depend on the workers)."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.base.progress import progress
from judgecp.data.score import ScoreData
from judgecp.kinds.protocol import Protocol, split_indices
from judgecp.kinds.registry import build_method
from judgecp.stats.conformal import Prediction
from judgecp.stats.coverage import (
    RowMetrics,
)
from judgecp.stats.features import log_softmax_once
from judgecp.stats.methods.mondrian import Mondrian
from judgecp.stats.methods.variants import is_group_conditional

#: Thread-pool variables set to 1 in worker processes: one process per core,
#: or OpenMP's spinning threads (scikit-learn, torch) oversubscribe the cores.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass
class SplitResult:
    seed: int
    test: NDArray[np.signedinteger[Any]]  # int32 below 2**31 rows
    metrics: dict[str, RowMetrics]  # each method's coverage and width on the test rows
    seconds: dict[str, float]
    insufficient_groups: dict[str, list[str]] = field(default_factory=dict)


def run_split(data: ScoreData, protocol: Protocol, specs: Sequence[str], seed: int) -> SplitResult:
    """Calibrate every method on one split's calibration rows and predict its test rows."""
    cal, test = split_indices(data.n, seed, protocol.cal_fraction)
    X, y = data.X, data.labels
    X_cal, y_cal, X_test, y_test = X[cal], y[cal], X[test], y[test]
    continuous = data.continuous_labels
    alpha = protocol.level
    metrics: dict[str, RowMetrics] = {}
    seconds: dict[str, float] = {}
    insufficient: dict[str, list[str]] = {}
    with log_softmax_once(X_cal, X_test):  # every method reads the judge's distribution of the same rows
        for spec in specs:
            t0 = time.perf_counter()
            if is_group_conditional(spec):  # one pooled fit, a threshold per group (judgecp.stats.methods.variants)
                groups = data.field(protocol.mondrian or protocol.group or "", "mondrian field")
                grouped: Any = build_method(spec, alpha=alpha, scale=data.scale, random_state=seed)
                pred: Prediction = grouped.calibrate(X_cal, y_cal, groups=groups[cal]).predict(
                    X_test, groups=groups[test]
                )
                insufficient[spec] = list(grouped.pooled_groups_)
            elif protocol.mondrian:
                groups = data.field(protocol.mondrian, "mondrian field")

                def make(i: int, spec: str = spec) -> Any:
                    state = int(np.random.SeedSequence([seed, i]).generate_state(1)[0])
                    return build_method(spec, alpha=alpha, scale=data.scale, random_state=state)

                mondrian = Mondrian(make).calibrate(X_cal, y_cal, groups[cal])
                pred = mondrian.predict(X_test, groups[test])
                insufficient[spec] = mondrian.insufficient_groups_
            else:
                method = build_method(spec, alpha=alpha, scale=data.scale, random_state=seed)
                pred = method.calibrate(X_cal, y_cal).predict(X_test)
            seconds[spec] = time.perf_counter() - t0
            # Keep the row metrics, not the prediction: a fraction of the memory at a million rows.
            metrics[spec] = RowMetrics.of(pred, y_test, continuous=continuous)
    # The test rows as a small copy: ``test`` is a view that would keep the whole permutation alive.
    kept = test.astype(np.int32) if data.n < 2**31 else test.copy()
    return SplitResult(seed, kept, metrics, seconds, insufficient)


#: Why ``jobs > 1`` failed in a worker: the calling script started the work at import time.
SCRIPT_NEEDS_MAIN_GUARD = (
    "jobs > 1 runs the splits in new Python processes, and each imports the calling script again: "
    "put the script's work under `if __name__ == \"__main__\":` (or use jobs=1)"
)

_HELD: tuple[ScoreData, Protocol, Sequence[str]] | None = None


def _hold(path: str) -> None:
    """A worker's initializer: the data, protocol and methods, read once from the file the caller wrote.

    Ctrl-C is the caller's to handle (it stops the workers: :func:`_stop`): a worker ignores SIGINT, so a
    terminal's Ctrl-C, which reaches every process of the group, prints no traceback per worker.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _HELD
    with open(path, "rb") as handle:
        _HELD = pickle.load(handle)


def _run_held(seed: int) -> SplitResult:
    assert _HELD is not None, "worker started without its data"
    return run_split(*_HELD, seed)


def run_splits(data: ScoreData, protocol: Protocol, specs: Sequence[str]) -> list[SplitResult]:
    """Every split, in processes when ``protocol.jobs > 1`` (same results either way)."""
    seeds = protocol.split_seeds("likert")
    bar = progress(len(seeds), f"likert splits (alpha {protocol.level:g})")
    if protocol.jobs <= 1 or len(seeds) <= 1:
        results = []
        for s in seeds:
            results.append(run_split(data, protocol, specs, s))
            bar.update()
        bar.close()
        return results
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # A worker re-running the caller's script (spawn imports ``__main__`` again) came here:
        # starting a pool now would leave the caller waiting forever on this worker.
        raise InputError(SCRIPT_NEEDS_MAIN_GUARD)
    # spawn, not fork: a forked child of a process that already started
    # torch's (or OpenMP's) thread pool can deadlock. Children copy the
    # environment at start, so the thread limits are set around the pool.
    saved = {k: os.environ.get(k) for k in THREAD_ENV}
    os.environ.update(dict.fromkeys(THREAD_ENV, "1"))
    try:
        ctx = multiprocessing.get_context("spawn")
        # The data goes to each worker once (the initializer), not once per split, and through a file,
        # not the pipe that starts the worker: CPython's spawn writes that pipe while holding its read
        # end, so a worker that dies before reading a large payload would leave this process waiting forever.
        with tempfile.TemporaryDirectory(prefix="judgecp-splits-") as tmp:
            held = os.path.join(tmp, "held.pickle")
            with open(held, "wb") as handle:
                pickle.dump((data, protocol, specs), handle, protocol=pickle.HIGHEST_PROTOCOL)
            with ProcessPoolExecutor(max_workers=min(protocol.jobs, len(seeds)), mp_context=ctx,
                                     initializer=_hold, initargs=(held,)) as pool:
                try:
                    futures = [pool.submit(_run_held, s) for s in seeds]
                    results = []
                    for f in futures:
                        results.append(f.result())
                        bar.update()
                except BrokenProcessPool as exc:
                    raise InputError(f"a worker process of jobs={protocol.jobs} stopped ({exc}). From a script: "
                                     f"{SCRIPT_NEEDS_MAIN_GUARD}. Otherwise it may have run out of memory: "
                                     "try fewer jobs") from exc
                except BaseException:  # Ctrl-C, SIGTERM: stop now, not after every split still queued
                    _stop(pool)
                    raise
                bar.close()
                return results
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the splits not started and end the workers at once (leaving the pool's ``with`` block would
    otherwise wait for every queued split: 23 s for ``--jobs 2`` on the example).

    A worker ended while it was writing a split's result leaves part of a message in the results pipe, and
    the pool's own thread waiting for the rest of it; at exit Python joins that thread, so the command hung
    (3 of 12 Ctrl-Cs on a loaded machine). Once the workers are gone, this process holds the pipe's only
    write end: closing it ends that wait (end of file: the pool marks itself broken and its thread stops).
    Python 3.14's ``terminate_workers`` does not close it either, so one path serves every version.
    """
    # Private attributes (no public way to reach the workers before 3.14), taken before shutdown() forgets them.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    results = getattr(pool, "_result_queue", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(5.0)
        if process.is_alive():  # SIGTERM caught (a handler a caller's script installed): SIGKILL is not
            process.kill()
            process.join()
    writer = getattr(results, "_writer", None)
    if writer is not None:
        writer.close()
