"""``judgecp bench scale``: time and peak memory at scale, each measurement in a fresh process.

Four measurements, written as a table (docs/benchmarks.md, "Scale"):

1. a million Likert records (a CSV written here from the synthetic judge)
   read, validated and run through ``naive, lac, aps, ordinal_aps, cqr`` over
   10 splits, against a plain pandas + numpy split-conformal pass over the
   same file (read, softmax, expected score, 10 splits of naive split
   conformal: the floor of what any tool must do); the ratio is the number
   to read. A second plain pass runs the same five methods as a user would
   write them with pandas, numpy and scikit-learn (what is the same in every
   split computed once, CQR's models predicting every row), so the study can
   also be read against the methods' own floor;
2. CQR alone on a million rows that never repeat once binned (the synthetic
   judge's logprobs jittered): the worst case of predicting each distinct
   binned row once, which the first measurement's one-latent judge flatters;
3. a million pairs through SCOPE's 1000 splits (every controller, five levels);
4. every method at 100,000 records (one split of the protocol), with its time
   and memory complexity.

Each runs in its own Python process with one thread (OMP/BLAS), so the peak
resident memory (``ru_maxrss``) is the measurement's own, imports included,
and its CPU seconds (``time.process_time``) are the work it did, which a
busy machine changes far less than wall time: the ratio is of CPU seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from judgecp.kinds.registry import method_classes
from judgecp.synthetic.judges import simulate_likert_judge

LIKERT_METHODS = ("naive", "lac", "aps", "ordinal_aps", "cqr")
#: Noise added to each logprob for the distinct-rows measurement (:func:`write_likert_csv`).
JITTER = 0.05
#: Imports happen before the clock starts, as the plain pass's pandas import does.
IMPORTED = "import judgecp, judgecp.workflows.study, judgecp.stats.methods, sklearn.ensemble"

_CHILD = textwrap.dedent('''
    import json, os, resource, sys, time
    t0, c0 = time.perf_counter(), time.process_time()
    result = {body}
    result["seconds"] = time.perf_counter() - t0
    result["cpu_seconds"] = time.process_time() - c0 + sum(os.times()[2:4])
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["worker_peak_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print("JUDGECP_BENCH " + json.dumps(result))
''')


def _child(body: str, setup: str = "") -> dict[str, Any]:
    import os

    code = setup + "\n" + _CHILD.replace("{body}", body)
    # One thread per process for every measurement (OpenMP's spinning threads in scikit-learn's
    # boosting turn a busy machine's minutes into hours), as the protocol's worker processes run.
    env = {**os.environ, **dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"), "1")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("JUDGECP_BENCH ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"benchmark process failed:\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(line[len("JUDGECP_BENCH "):])
    return out


def _study(data: str, protocol: str, pick: str) -> dict[str, Any]:
    """``judgecp.evaluate(<data>, Protocol(<protocol>))<pick>`` in a fresh process, with its cost."""
    return _child(
        f"(lambda d: {{'n': d.n, 'value': __import__('judgecp').evaluate(d, "
        f"__import__('judgecp').Protocol({protocol})){pick}}})"
        f"({data})",
        IMPORTED,
    )


def write_likert_csv(path: Path, n: int, seed: int = 0, jitter: float = 0.0) -> None:
    """The synthetic judge's records as a CSV (ids, five logprob columns, label, group).

    The judge's five logprobs are a function of one latent score, so its rows
    repeat once binned; ``jitter`` adds independent normal noise of that size
    to each logprob, which makes every row distinct.
    """
    import numpy as np

    data = simulate_likert_judge(n=n, seed=seed)
    lp = data.logprobs + (
        np.random.default_rng(seed + 1).normal(scale=jitter, size=data.logprobs.shape) if jitter else 0.0
    )
    lp = np.round(lp, 6)
    with path.open("w", encoding="utf-8") as handle:
        handle.write("id,lp1,lp2,lp3,lp4,lp5,label,group\n")
        block = 100_000
        for start in range(0, n, block):
            stop = min(start + block, n)
            rows = np.column_stack([lp[start:stop], data.labels[start:stop]])
            ids, groups = data.ids[start:stop], data.field("group")[start:stop]
            handle.writelines(f"{ids[i]},{','.join(map(repr, rows[i, :5].tolist()))},{int(rows[i, 5])},{groups[i]}\n"
                              for i in range(stop - start))


#: What both plain passes do alike: read the file (the judge's distribution and expected score), split it,
#: take the split-conformal quantile (the ceil((n + 1)(1 - alpha))-th smallest score), naive's interval width.
_PLAIN_COMMON = textwrap.dedent('''
    import numpy as np, pandas as pd
    def read(path):
        frame = pd.read_csv(path)
        lp = frame[["lp1", "lp2", "lp3", "lp4", "lp5"]].to_numpy()
        p = np.exp(lp - lp.max(axis=1, keepdims=True)); p /= p.sum(axis=1, keepdims=True)
        return p, p @ np.arange(1, 6), frame["label"].to_numpy(dtype=float)
    def q_hat(scores, alpha=0.1):
        s = np.sort(scores); return s[min(int(np.ceil((s.size + 1) * (1 - alpha))) - 1, s.size - 1)]
    def halves(n, seed):  # a split: half the rows calibrate, half test
        perm = np.random.default_rng(seed).permutation(n); return perm[: n // 2], perm[n // 2:]
    def naive_width(score, y, cal, test):
        q = q_hat(np.abs(y[cal] - score[cal]))
        return float(np.mean(np.minimum(score[test] + q, 5) - np.maximum(score[test] - q, 1)))
''')

PLAIN_SETUP = _PLAIN_COMMON + textwrap.dedent('''
    def plain(path):
        p, score, y = read(path); n = y.size; widths = []
        for seed in range(10):
            cal, test = halves(n, seed)
            widths.append(naive_width(score, y, cal, test))
        return {"width": float(np.mean(widths))}
''')

#: The same five methods written plainly (pandas, numpy, scikit-learn; what is the same in every split
#: computed once): the floor of the methods themselves, CQR's two boosted fits a split included.
PLAIN_FIVE_SETUP = _PLAIN_COMMON + textwrap.dedent("""
    from sklearn.ensemble import HistGradientBoostingRegressor
    def set_width(sets):
        return np.where(sets.any(1), 4 - sets[:, ::-1].argmax(1) - sets.argmax(1), 0).mean()
    def grown_mass(p):  # ordinal APS: grow a range from the mode, the mass when each label joins
        n, k = p.shape; rows = np.arange(n); lo = p.argmax(1); hi = lo.copy(); m = p[rows, lo]
        after = np.zeros_like(p); after[rows, lo] = m
        for _ in range(k - 1):
            left = np.where(lo > 0, p[rows, np.maximum(lo - 1, 0)], -1.0)
            right = np.where(hi < k - 1, p[rows, np.minimum(hi + 1, k - 1)], -1.0)
            go = left >= right; lo = np.where(go, lo - 1, lo); hi = np.where(go, hi, hi + 1)
            j = np.where(go, lo, hi); m = m + p[rows, j]; after[rows, j] = m
        return after
    def plain_five(path):
        p, score, y = read(path); n = y.size
        spread = np.sqrt(np.maximum(p @ np.arange(1, 6) ** 2 - score**2, 0))
        F = np.column_stack([np.log(np.maximum(p, 1e-12)), score, spread])
        yi = y.astype(int) - 1
        order = np.argsort(-p, axis=1)
        aps = np.take_along_axis(np.cumsum(np.take_along_axis(p, order, 1), 1), np.argsort(order, 1), 1)
        scores = {"lac": 1 - p, "aps": aps, "ordinal_aps": grown_mass(p)}
        widths = {m: [] for m in ("naive", *scores, "cqr")}
        for seed in range(10):
            cal, test = halves(n, seed)
            widths["naive"].append(naive_width(score, y, cal, test))
            for m, s in scores.items():
                widths[m].append(set_width(s[test] <= q_hat(s[cal, yi[cal]])))
            fit, conf = cal[: cal.size // 2][:20000], cal[cal.size // 2:]
            lo, hi = (HistGradientBoostingRegressor(loss="quantile", quantile=a, max_iter=100, max_depth=3,
                                                    learning_rate=0.05, random_state=seed).fit(F[fit], y[fit])
                      for a in (0.05, 0.95))
            q = q_hat(np.maximum(lo.predict(F[conf]) - y[conf], y[conf] - hi.predict(F[conf])))
            widths["cqr"].append(np.mean(hi.predict(F[test]) - lo.predict(F[test]) + 2 * q))
        return {m: float(np.mean(w)) for m, w in widths.items()}
""")


def bench_scale(
    out: TextIO, *, rows: int = 1_000_000, pairs: int = 1_000_000, pair_splits: int = 1000,
    method_rows: int = 100_000, methods: Sequence[str] | None = None, workdir: str | None = None,
) -> list[dict[str, Any]]:

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        csv = Path(tmp) / "likert.csv"
        write_likert_csv(csv, rows)
        out.write(f"bench scale: {rows:,} Likert records in {csv.stat().st_size / 1e6:.0f} MB of CSV; "
                  f"each measurement in its own process\n")
        plain = _child(f"plain({str(csv)!r})", PLAIN_SETUP)
        results.append({"what": f"plain pandas + numpy split conformal, {rows:,} rows x 10 splits", **plain})
        plain_five = _child(f"plain_five({str(csv)!r})", PLAIN_FIVE_SETUP)
        results.append({"what": f"the same five methods written plainly (+ scikit-learn), {rows:,} rows x 10 splits",
                        **plain_five})
        load = f"__import__('judgecp').load({str(csv)!r})"
        ours = _study(load, f"methods={LIKERT_METHODS!r}, splits=10", "['methods']['naive']['labels']['width']")
        # The ratio of CPU seconds: one thread each, so it holds on a busy machine, where wall time does not.
        ours["ratio"] = ours["cpu_seconds"] / plain["cpu_seconds"]
        ours["ratio_to_plain_five"] = ours["cpu_seconds"] / plain_five["cpu_seconds"]
        results.append({"what": f"judgecp: read + {', '.join(LIKERT_METHODS)} x 10 splits, {rows:,} rows", **ours})
        # The same study on both cores (``--jobs 2``: two worker processes, the data sent once to each);
        # its ratio is of wall seconds to the plain pass's, so it needs a quiet machine.
        both = _study(load, f"methods={LIKERT_METHODS!r}, splits=10, jobs=2", "['methods']['naive']['labels']['width']")
        both["wall_ratio"] = both["seconds"] / plain["seconds"]
        results.append({"what": "  the same with --jobs 2 (CPU s: all processes; peak: main / each worker)", **both})
        pair_run = _study(f"__import__('judgecp').simulate_pairwise_judge({pairs}, seed=0)", f"splits={pair_splits}",
                          "['controllers']['scope']['0.1']['risk']")
        results.append(
            {"what": f"judgecp: {pairs:,} pairs x {pair_splits} splits (5 controllers x 5 levels)", **pair_run}
        )
        # The worst case of predicting each distinct binned row once: CQR on rows that never repeat.
        distinct = Path(tmp) / "likert_distinct.csv"
        write_likert_csv(distinct, rows, jitter=JITTER)
        worst = _study(f"__import__('judgecp').load({str(distinct)!r})", "methods=('cqr',), splits=10",
                       "['methods']['cqr']['labels']['width']")
        results.append(
            {"what": f"judgecp: cqr alone x 10 splits, {rows:,} rows, every row distinct (jitter {JITTER:g})", **worst}
        )
        distinct.unlink()
        names = list(methods) if methods is not None else list(method_classes())
        for name in names:
            run = _study(f"__import__('judgecp').simulate_likert_judge(n={method_rows}, seed=1)",
                         f"methods=({name!r},), splits=1", f"['methods'][{name!r}]['labels']['coverage']")
            time_c, mem_c = method_classes()[name].complexity
            results.append(
                {"what": f"{name} at {method_rows:,} records (one split)", "time": time_c, "memory": mem_c, **run}
            )
    out.write(f"  {'measurement':76s} {'wall s':>8s} {'CPU s':>8s} {'peak MB':>11s} {'ratio':>12s}\n")
    for r in results:
        ratio = (
            f"{r['ratio']:.1f}x CPU" if "ratio" in r else f"{r['wall_ratio']:.1f}x wall" if "wall_ratio" in r else ""
        )
        peak = f"{r['peak_mb']:.0f}" + (f"/{r['worker_peak_mb']:.0f}" if r.get("worker_peak_mb", 0) > 0 else "")
        out.write(f"  {r['what']:76s} {r['seconds']:8.2f} {r['cpu_seconds']:8.2f} {peak:>11s} {ratio:>12s}\n")
    out.write(
        f"  judgecp's study against the same five methods written plainly: {ours['ratio_to_plain_five']:.2f}x CPU\n"
    )
    stated = [r for r in results if "time" in r]
    if stated:
        out.write("  cost of one split of n rows, as each method states it (time; memory):\n")
        out.writelines(f"    {r['what'].split()[0]:14s} {r['time']}; {r['memory']}\n" for r in stated)
    return results
