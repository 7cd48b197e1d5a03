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


def bench_scope(n_pairs: int, n_splits: int, alphas: Sequence[float], out: TextIO) -> None:
    """SCOPE (and every controller) over splits x levels on a simulated pool."""
    from judgecp.pairwise import (
        PairwiseProtocol,
        Splits,
        make_controller,
        signals,
        simulate_pairwise_judge,
    )
    from judgecp.selective import apply

    data = simulate_pairwise_judge(n_pairs, seed=0)
    sig = signals(data)["bpe"]
    protocol = PairwiseProtocol(alphas=tuple(alphas), n_splits=n_splits)
    out.write(f"bench scope: {n_pairs} pairs, {n_splits} splits x {len(alphas)} levels (synthetic position-biased judge)\n")
    t0 = time.perf_counter()
    sp = Splits.of(sig, data.labels, protocol)
    t_split = time.perf_counter() - t0
    out.write(f"  splits and per-split sorting: {t_split:.3f} s\n")
    for name in ("scope", "clopper_pearson", "naive", "heuristic", "vanilla"):
        ctrl = make_controller(name, protocol)
        t0 = time.perf_counter()
        for alpha in alphas:
            apply(ctrl.thresholds(sp.u_sorted, sp.e_sorted, alpha, sig), sp.u_test, sp.e_test)
        out.write(f"  {name:16s} {time.perf_counter() - t0:7.3f} s (thresholds + test risk, all levels)\n")
    t0 = time.perf_counter()
    Splits.of(sig, data.labels, protocol)
    ctrl = make_controller("scope", protocol)
    for alpha in alphas:
        apply(ctrl.thresholds(sp.u_sorted, sp.e_sorted, alpha, sig), sp.u_test, sp.e_test)
    out.write(f"  SCOPE end to end (splits, sorting, {len(alphas)} levels): {time.perf_counter() - t0:.3f} s\n")
