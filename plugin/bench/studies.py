"""``judgecp bench protocol`` and ``judgecp bench scope``: wall time of the core's studies."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TextIO

import numpy as np

from judgecp.data import ScoreData
from judgecp.kinds.likert.splits import run_split
from judgecp.kinds.likert.study import method_specs
from judgecp.kinds.pairwise.study import Splits, make_controller, run_controllers
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.reading import load
from judgecp.stats.signals import signals
from judgecp.synthetic.judges import simulate_likert_judge, simulate_pairwise_judge
from judgecp.workflows.study import evaluate

DEFAULT_DATA = Path("../shared/data/mllm_judge/llava_critic_7b_features.csv")


def bench_data(path: str | None) -> ScoreData:
    if path or DEFAULT_DATA.exists():
        data = load(path or DEFAULT_DATA, "likert")
        assert isinstance(data, ScoreData)
        return data
    return simulate_likert_judge(n=5717, seed=0)


def bench_protocol(path: str | None, protocol: Protocol, out: TextIO) -> None:
    data = bench_data(path)
    specs = method_specs(protocol)
    seeds = protocol.split_seeds("likert")
    out.write(f"bench protocol: {data.source} ({data.n} rows), {len(seeds)} splits, {len(specs)} methods\n")
    # Warm-up: import torch, scikit-learn's estimators etc. once, outside the timings.
    t0 = time.perf_counter()
    run_split(data.take(np.arange(min(data.n, 200))), protocol, specs, 0)
    out.write(f"  imports and warm-up (once per process): {time.perf_counter() - t0:.2f} s\n")
    totals = dict.fromkeys(specs, 0.0)
    t0 = time.perf_counter()
    for seed in seeds:
        split = run_split(data, protocol, specs, seed)
        for spec, s in split.seconds.items():
            totals[spec] += s
    sequential = time.perf_counter() - t0
    out.write(f"  {'method':34s} {'seconds':>8s} {'per split':>9s}\n")
    for spec, s in totals.items():
        out.write(f"  {spec:34s} {s:8.2f} {s / len(seeds):9.3f}\n")
    out.write(f"  {'all methods, fits and predictions':34s} {sequential:8.2f}\n")
    t0 = time.perf_counter()
    evaluate(data, protocol)
    out.write(
        f"  full `evaluate` (metrics and diagnostics included, jobs={protocol.jobs}): {time.perf_counter() - t0:.2f} "
        "s\n"
    )


def bench_scope(n_pairs: int, protocol: Protocol, out: TextIO) -> None:
    """SCOPE (and every controller) over splits x levels on a simulated pool, as the study runs them."""
    data = simulate_pairwise_judge(n_pairs, seed=0)
    sig = signals(data)["bpe"]
    alphas = protocol.levels("pairwise")
    n_splits = protocol.n_splits("pairwise")
    out.write(
        f"bench scope: {n_pairs} pairs, {n_splits} splits x {len(alphas)} levels (synthetic position-biased judge)\n"
    )
    t0 = time.perf_counter()
    sp = Splits.of(sig, data.labels, n_splits, protocol.cal_fraction, protocol.random_state)
    out.write(f"  splits and per-split sorting: {time.perf_counter() - t0:.3f} s\n")
    for name in protocol.controller_names():
        ctrl = make_controller(name, protocol.delta)
        t0 = time.perf_counter()
        for thresholds in ctrl.thresholds_at_levels(sp.u_sorted, sp.e_sorted, alphas, sig):
            sp.test_risk(thresholds)
        out.write(f"  {name:16s} {time.perf_counter() - t0:7.3f} s (thresholds + test risk, all levels)\n")
    t0 = time.perf_counter()
    run_controllers(sig, data.labels, protocol.with_(controllers=("scope",)))
    out.write(f"  SCOPE end to end (splits, sorting, {len(alphas)} levels): {time.perf_counter() - t0:.3f} s\n")
