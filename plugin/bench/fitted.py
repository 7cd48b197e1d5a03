"""``judgecp bench fitted``: every fitted method at 10k rows, as a ratio to plain split conformal.

One split of a synthetic exchangeable judge (:func:`judgecp.synthetic.judges.simulate_likert_judge`,
``rows`` records, 50/50 calibration/test), each method calibrated and
predicted ``repeats`` times after one untimed warm-up (imports, torch's first
call), the methods that take milliseconds five times as often. For each, the
median CPU seconds (``time.process_time``: the work done, which a busy
machine changes far less than wall time; run with ``OMP_NUM_THREADS=1``) and
wall seconds of calibrate + predict, and two ratios measured in the same run:
to ``naive`` (plain split conformal on the judge's expected score: a softmax,
a sort and a quantile) and to ``naive(predictor=regressor)`` (split conformal
around a fitted gradient-boosted mean: the cheapest method that fits a
model). Timings go to the terminal, never to tests.

The module imports only the public method registry, so the same file run
with another checkout's interpreter times that checkout's methods
(``python plugin/bench/fitted.py``): a before/after comparison in one sitting.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from judgecp.kinds.protocol import split_indices
from judgecp.kinds.registry import build_method
from judgecp.stats.methods.spec import split_method_list
from judgecp.synthetic.judges import simulate_likert_judge

#: The fitted methods (issue 14's list), then their CV+ versions.
FITTED = ("naive(predictor=regressor)", "cqr", "cqr_asym", "chr", "lvd", "boosted_cqr", "boosted_lcp", "r2ccp")
DEFAULT = ("naive", *FITTED, *(f"{s[:-1]}, cv=5)" if s.endswith(")") else f"{s}(cv=5)" for s in FITTED))
#: Methods timed five times as often (each takes milliseconds).
CHEAP = {"naive", "lac", "ordinal_set", "naive(conditional=label)", "lac(conditional=label)"}


def time_method(spec: str, X: Any, y: Any, cal: Any, test: Any, scale: Any, repeats: int) -> tuple[float, float]:
    """Median (CPU seconds, wall seconds) of ``repeats`` calibrate + predict runs, after one warm-up."""

    def once(seed: int) -> tuple[float, float]:
        c0, w0 = time.process_time(), time.perf_counter()
        build_method(spec, alpha=0.1, scale=scale, random_state=seed).calibrate(X[cal], y[cal]).predict(X[test])
        return time.process_time() - c0, time.perf_counter() - w0

    once(0)
    runs = [once(r) for r in range(repeats)]
    return statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)


def bench_fitted(out: TextIO, rows: int = 10_000, repeats: int = 3, methods: Sequence[str] = DEFAULT) -> dict[str, Any]:
    """Time ``methods`` (plus ``naive``) at ``rows`` records; write the table to ``out``; return the figures."""

    data = simulate_likert_judge(rows, seed=0)
    cal, test = split_indices(data.n, 0, 0.5)
    X, y = data.X, data.labels
    specs = list(dict.fromkeys(["naive", *methods]))
    cpu: dict[str, float] = {}
    wall: dict[str, float] = {}
    for spec in specs:
        cpu[spec], wall[spec] = time_method(
            spec, X, y, cal, test, data.scale, 5 * repeats if spec in CHEAP else repeats
        )
        print(f"  {spec}: {cpu[spec]:.4f} s CPU, {wall[spec]:.4f} s wall", file=sys.stderr, flush=True)
    base = cpu["naive"]
    fitted = cpu.get("naive(predictor=regressor)")
    out.write(f"{rows} rows ({cal.size} calibration / {test.size} test), one split, median of {repeats} "
              "after a warm-up, one run\n\n")
    head = f"| method | CPU s | wall s | x plain split conformal (naive, {base * 1000:.2f} ms CPU) |"
    if fitted:
        head += f" x split conformal around a fitted regressor ({fitted:.3f} s) |"
    out.write(head + "\n|---|---|---|---|" + ("---|" if fitted else "") + "\n")
    for spec in specs:
        line = f"| {spec} | {cpu[spec]:.3f} | {wall[spec]:.3f} | {cpu[spec] / base:,.0f} |"
        if fitted:
            line += f" {cpu[spec] / fitted:.1f} |"
        out.write(line + "\n")
    return {"rows": rows, "repeats": repeats, "cpu_seconds": cpu, "wall_seconds": wall}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--methods", default=None, help="comma-separated method specs (default: the fitted methods and cv=5)"
    )


def run(args: argparse.Namespace) -> int:

    methods = split_method_list(args.methods) if args.methods else list(DEFAULT)
    bench_fitted(sys.stdout, rows=args.rows, repeats=args.repeats, methods=methods)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
