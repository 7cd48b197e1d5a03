"""Speed of the fitted methods and of the issue-14 variants at 10k rows, as ratios to plain split conformal.

One process, one run: a synthetic exchangeable judge (``simulate_likert_judge``,
10,000 rows by default), one 50/50 calibration/test split, each method
calibrated and predicted ``--repeats`` times (the
methods that take milliseconds 5x as often), after an untimed warm-up; the table gives the median
seconds per calibrate+predict and the ratio to ``naive`` (plain split
conformal on the judge's expected score) measured in the same run. Timings
go to the terminal, never to tests.

    OMP_NUM_THREADS=1 python scripts/bench_beyond.py [--rows 10000] [--repeats 3] [--methods LIST]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from judgecp.kinds.protocol import split_indices
from judgecp.kinds.registry import build_method
from judgecp.stats.methods.spec import split_method_list
from judgecp.synthetic.judges import simulate_likert_judge

CHEAP = {"naive", "lac", "ordinal_set", "raps", "naive(conditional=label)", "lac(conditional=label)"}
DEFAULT = ("naive,lac,ordinal_set,naive(predictor=regressor),cqr,cqr_asym,chr,lvd,boosted_cqr,boosted_lcp,r2ccp,raps,"
           "lac(probabilities=recalibrated),naive(conditional=label),lac(conditional=label),chr(conditional=label),"
           "lvd(cv=5),chr(cv=5),lac(cv=5, probabilities=recalibrated),cqr(cv=5),boosted_lcp(cv=5),r2ccp(cv=5)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--methods", default=DEFAULT)
    args = p.parse_args(argv)
    data = simulate_likert_judge(args.rows, seed=0)
    cal, test = split_indices(data.n, 0, 0.5)
    X, y = data.X, data.labels
    specs = split_method_list(args.methods)
    if "naive" not in specs:
        specs.insert(0, "naive")
    times: dict[str, float] = {}
    for warm in ("naive", "lac(probabilities=recalibrated)"):  # imports and first-call costs, untimed
        build_method(warm, alpha=0.1, scale=data.scale, random_state=0).calibrate(X[cal], y[cal]).predict(X[test])
    for spec in specs:
        runs = []
        for r in range(args.repeats if spec not in CHEAP else 5 * args.repeats):
            t0 = time.perf_counter()
            build_method(spec, alpha=0.1, scale=data.scale, random_state=r).calibrate(X[cal], y[cal]).predict(X[test])
            runs.append(time.perf_counter() - t0)
        times[spec] = statistics.median(runs)
        print(f"  {spec}: {times[spec]:.4f} s", file=sys.stderr, flush=True)
    base = times["naive"]
    fitted = times.get("naive(predictor=regressor)")
    print(f"{args.rows} rows ({cal.size} calibration / {test.size} test), median of {args.repeats}, one run")
    head = f"| method | seconds (calibrate + predict) | x plain split conformal (naive, {base * 1000:.2f} ms) |"
    if fitted:
        head += f" x split conformal with a fitted regressor ({fitted:.3f} s) |"
    print(head)
    print("|---|---|---|" + ("---|" if fitted else ""))
    for spec, t in times.items():
        print(f"| {spec} | {t:.3f} | {t / base:,.0f} |" + (f" {t / fitted:.1f} |" if fitted else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
