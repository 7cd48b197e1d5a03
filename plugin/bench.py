"""``judgecp bench protocol``: wall time of every method over the seeds."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from judgecp.data import LikertData, load_likert
from judgecp.protocol import Protocol, _run_split, evaluate
from judgecp.simulate import simulate_likert_judge

DEFAULT_DATA = Path("../shared/data/mllm_judge/llava_critic_7b_features.csv")


def bench_data(path: str | None) -> LikertData:
    if path:
        return load_likert(path)
    if DEFAULT_DATA.exists():
        return load_likert(DEFAULT_DATA)
    return simulate_likert_judge(n=5717, seed=0)


def bench_protocol(path: str | None, specs: Sequence[str], seeds: Sequence[int], jobs: int, out: TextIO) -> None:
    data = bench_data(path)
    out.write(f"bench protocol: {data.source} ({data.n} rows), {len(seeds)} seeds, {len(specs)} methods\n")
    protocol = Protocol(methods=tuple(specs), seeds=tuple(seeds))
    # Warm-up: import torch, scikit-learn's estimators etc. once, outside the timings.
    t0 = time.perf_counter()
    _run_split(data.take(np.arange(min(data.n, 200))), protocol, specs, 0)
    out.write(f"  imports and warm-up (once per process): {time.perf_counter() - t0:.2f} s\n")
    totals = dict.fromkeys(specs, 0.0)
    t0 = time.perf_counter()
    for seed in seeds:
        split = _run_split(data, protocol, specs, seed)
        for spec, s in split.seconds.items():
            totals[spec] += s
    sequential = time.perf_counter() - t0
    out.write(f"  {'method':34s} {'seconds':>8s} {'per seed':>9s}\n")
    for spec, s in totals.items():
        out.write(f"  {spec:34s} {s:8.2f} {s / len(seeds):9.3f}\n")
    out.write(f"  {'all methods, fits and predictions':34s} {sequential:8.2f}\n")
    t0 = time.perf_counter()
    evaluate(data, Protocol(methods=tuple(specs), seeds=tuple(seeds), jobs=jobs))
    out.write(f"  full `evaluate` (metrics and diagnostics included, jobs={jobs}): {time.perf_counter() - t0:.2f} s\n")
