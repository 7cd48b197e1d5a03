"""Timings of judgecp.kinds.ensemble, as ratios measured in one run.

    python scripts/bench_ensemble.py [--repeats 5]

1. Fitting the prompt weights of eq. (11) for K=16 clusters, 20 prompts and
   50 validation items: L-BFGS with BLAS pinned to one thread (what
   ``fit_weights`` does), L-BFGS with the BLAS threads left alone, and the
   closed-form maximiser.
2. The default simulated sweep (``python -m judgecp.kinds.ensemble.sweep
   --example``) with the closed-form solver against ``--solver lbfgs``.

Prints the median wall time of each and the ratios, with the machine's core
count and load average, which these figures depend on.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import time
from collections.abc import Callable
from statistics import median

import numpy as np
from scipy.optimize import minimize

from judgecp.kinds.ensemble.sweep import main as sweep_main
from judgecp.stats.ensemble.objective import (
    closed_form_weights,
    fit_weights,
    objective_and_gradient,
)


def timed(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return median(times)


def unpinned_fit(log_lik: np.ndarray, membership: np.ndarray) -> None:
    """fit_weights without the thread pin: the same minimize call."""
    mass = membership.sum(axis=0)
    active = mass > 0
    scaled = membership[:, active] / mass[active]
    shape = (int(active.sum()), log_lik.shape[1])

    def negative(flat: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = objective_and_gradient(flat.reshape(shape), log_lik, scaled)
        return -value / shape[0], -grad.ravel() / shape[0]

    minimize(negative, np.zeros(shape[0] * shape[1]), jac=True, method="L-BFGS-B",
             options={"maxcor": 50, "maxiter": 100, "ftol": 1e-13, "gtol": 1e-9})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(0)
    log_lik = np.log(rng.uniform(0.01, 1.0, size=(50, 20)))
    membership = np.eye(16)[rng.integers(16, size=50)]
    pinned = timed(lambda: fit_weights(log_lik, membership), args.repeats)
    free = timed(lambda: unpinned_fit(log_lik, membership), args.repeats)
    closed = timed(lambda: closed_form_weights(log_lik, membership), args.repeats)
    print(f"fit, L-BFGS, BLAS pinned to 1 thread: {pinned * 1e3:8.1f} ms")
    print(f"fit, L-BFGS, BLAS threads free:       {free * 1e3:8.1f} ms  ({free / pinned:.1f}x the pinned)")
    print(
        f"fit, closed form:                      {closed * 1e3:8.3f} ms  ({pinned / closed:.0f}x faster than pinned "
        "L-BFGS)"
    )
    quiet = contextlib.redirect_stdout(io.StringIO())
    with quiet:
        fast = timed(lambda: sweep_main(["--example"]), 1)
        slow = timed(lambda: sweep_main(["--example", "--solver", "lbfgs"]), 1)
    print(f"sweep --example, closed form: {fast:6.1f} s; --solver lbfgs: {slow:6.1f} s ({slow / fast:.1f}x)")


if __name__ == "__main__":
    main()
