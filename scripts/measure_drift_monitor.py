"""The change detector of ``judgecp apply --history`` at full size: false alarms, and how soon a shift is flagged.

For each judge (LLaVA-Critic on MLLM-as-a-Judge, LLaVA-Critic on Polaris, a
synthetic judge), over seeded sequences: ``--calibration`` items (default
600) and ``--healthy`` nights (25) of ``--night-size`` items (200) drawn at
random from all of the judge's items (with replacement: an iid stream, so
the null holds exactly), then ``--shifted`` nights (5) of one pool only: each
task of MLLM-as-a-Judge, the items humans rated 1, 2-3, >= 4 on Polaris,
simulated shapes for the synthetic judge. Reported, per pool:

* the per-night Kolmogorov-Smirnov test at 0.01 of the first shifted night
  against the calibration sample (what ``drift.p_value`` does), and of a
  healthy night (its size);
* the detector (:func:`judgecp.workflows.nightly.history.monitor`, default level 0.01 and
  horizon 100 nights: alarm at 10,000): the share of sequences flagged by
  the 1st, 2nd, 3rd and 5th shifted night, and the median night of the first
  alarm after the change;
* the monitor it replaced (power bets ``e p^(e-1)`` on both tails, one
  martingale per start night staked ``1/(t(t+1))``, alarm at 1/level), on the
  same p-values;
* false alarms: the share of sequences with an alarm within the healthy
  nights (``--sequences``, default 1,000).

A shifted pool is drawn **fresh first**: its items in a random order, each
used once, refilled with a new order only when all are used (a real
second night of a task holds new items; re-drawing the same few hundred
items makes their exact values a signal of its own, which a fine-grained
detector learns). A task of 300 items fills 1.5 nights: nights 2-5 repeat
items. The pool "random items" (a random subset of all items the size of a
task, drawn the same way) measures what the repetition alone is worth:
without a real shift it should be flagged at the false-alarm rate.

    python scripts/measure_drift_monitor.py [--data ../shared/data] [--sequences 1000] [--shifted-sequences 500]

Prints Markdown (the tables of docs/benchmarks.md) with the command, date and
run time.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.stats import ks_2samp

from judgecp import Fields, load
from judgecp.stats.drift import bet_statistics, log_bets, log_mean_exp, pvalues_after
from judgecp.workflows.calibrators import drift_statistic
from judgecp.workflows.nightly.history import DEFAULT_HORIZON, shiryaev_roberts

FloatArray = NDArray[np.float64]
#: A pool's draw of shifted nights: (rng, number of nights, night size) -> values.
Draw = Callable[[np.random.Generator, int, int], list[FloatArray]]


@dataclass
class World:
    """A judge: the statistic of all its items (the healthy distribution) and the shifted pools."""

    name: str
    healthy: Callable[[np.random.Generator, int], FloatArray]
    pools: dict[str, Draw]
    sizes: dict[str, int]


def fresh(pool: FloatArray) -> Draw:
    """Nights drawn from ``pool`` without repeating an item until every item was used (module docstring)."""
    def draw(rng: np.random.Generator, nights: int, size: int) -> list[FloatArray]:
        need = nights * size
        order = np.concatenate([rng.permutation(pool) for _ in range(math.ceil(need / pool.size))])[:need]
        return [order[i * size:(i + 1) * size] for i in range(nights)]
    return draw


def random_subset(values: FloatArray, size: int) -> Draw:
    """The control pool: a new random subset of all items (``size`` of them) per sequence, drawn as a task."""
    def draw(rng: np.random.Generator, nights: int, night_size: int) -> list[FloatArray]:
        return fresh(rng.choice(values, size, replace=False))(rng, nights, night_size)
    return draw


def bootstrap(values: FloatArray) -> Callable[[np.random.Generator, int], FloatArray]:
    return lambda rng, n: rng.choice(values, n)


def llava(data_dir: Path) -> World:
    folder = data_dir / "mllm_judge"
    fields = Fields(label="gt_score", logprobs="s2_lp*", prediction="parsed_score",
                    joins=(str(folder / "task_labels.csv"),))
    data = load(folder / "llava_critic_7b_features.csv", "likert", fields)
    values = np.asarray(drift_statistic(data)[1], dtype=np.float64)
    task = np.asarray(data.fields["orig_dataset"]).astype(str)
    pools: dict[str, Draw] = {name: fresh(values[task == name]) for name in sorted(set(task))}
    sizes = {name: int((task == name).sum()) for name in pools}
    pools["random items (control)"], sizes["random items (control)"] = random_subset(values, 300), 300
    return World(f"LLaVA-Critic-7B on MLLM-as-a-Judge ({values.size} items)", bootstrap(values), pools, sizes)


def polaris(data_dir: Path) -> World:
    fields = Fields(label="gt_score", logprobs="s2_lp*", prediction="parsed_score")
    data = load(data_dir / "polaris" / "llava_critic_7b_features.csv", "likert", fields)
    values = np.asarray(drift_statistic(data)[1], dtype=np.float64)
    labels = np.asarray(data.labels, dtype=np.float64)
    masks = {"humans rated 1": labels == 1, "humans rated 2-3": (labels >= 2) & (labels <= 3),
             "humans rated >= 4": labels >= 4}
    pools: dict[str, Draw] = {name: fresh(values[m]) for name, m in masks.items()}
    sizes = {name: int(m.sum()) for name, m in masks.items()}
    pools["random items (control)"], sizes["random items (control)"] = random_subset(values, 300), 300
    return World(f"LLaVA-Critic-7B on Polaris ({values.size} items)", bootstrap(values), pools, sizes)


def synthetic() -> World:
    """A judge whose statistic is uniform on (0, 1) (the tests are rank tests: any continuous law is this one)."""
    def shape(sample: Callable[[np.random.Generator, int], FloatArray]) -> Draw:
        return lambda rng, nights, size: [sample(rng, size) for _ in range(nights)]

    def bump(rng: np.random.Generator, n: int) -> FloatArray:
        out = rng.uniform(size=n)
        moved = rng.uniform(size=n) < 0.25
        out[moved] = np.clip(rng.normal(0.5, 0.04, int(moved.sum())), 0.0, 1.0)
        return out

    pools: dict[str, Draw] = {
        "no top decile (U(0, 0.9))": shape(lambda rng, n: rng.uniform(0.0, 0.9, n)),
        "a bump in the middle (25% at N(0.5, 0.04))": shape(bump),
        "fewer extremes (Beta(1.3, 1.3))": shape(lambda rng, n: rng.beta(1.3, 1.3, n)),
        "a shift up (Beta(1.25, 1))": shape(lambda rng, n: rng.beta(1.25, 1.0, n)),
    }
    return World("synthetic judge (uniform statistic)", lambda rng, n: rng.uniform(size=n), pools,
                 dict.fromkeys(pools, 0))


# -- one sequence -----------------------------------------------------------------------------------


def night_pvalues(seen: FloatArray, nights: list[FloatArray], rng: np.random.Generator
                  ) -> tuple[list[FloatArray], FloatArray]:
    """The smoothed online p-values of each night after ``seen`` (sorted), and everything seen after them."""
    out = []
    for v in nights:
        out.append(pvalues_after(seen, v, rng.uniform(size=v.size)))
        seen = np.sort(np.concatenate([seen, v]))
    return out, seen


def old_monitor(pvalues: list[FloatArray], level: float) -> FloatArray:
    """``log K_T`` of the monitor before issue 32 (power bets on p and 1 - p, stakes 1/(t(t+1))), per night."""
    per_night = np.asarray([np.concatenate([log_bets(p).sum(axis=0), log_bets(1.0 - p).sum(axis=0)])
                            for p in pvalues])
    cumulative = np.concatenate([np.zeros((1, per_night.shape[1])), np.cumsum(per_night, axis=0)])
    out = np.empty(len(pvalues))
    for t in range(1, len(pvalues) + 1):
        log_m = log_mean_exp(cumulative[t][None, :] - cumulative[:t], axis=1)
        starts = np.arange(1, t + 1)
        parts = np.append(-np.log(starts * (starts + 1.0)) + log_m, -math.log(t + 1.0))
        out[t - 1] = float(log_mean_exp(parts) + math.log(parts.size))
    return out


@dataclass
class Tally:
    ks_shifted: list[bool]
    alarm_night: list[float]  # first alarm counted from the change (1 = the first shifted night); inf: none
    old_alarm_night: list[float]


def run_world(world: World, args: argparse.Namespace, out: list[str]) -> None:
    started = time.process_time()
    log_threshold = math.log(args.horizon / args.level)
    healthy_ks, false_alarms, old_false_alarms = [], [], []
    tallies = {name: Tally([], [], []) for name in world.pools}
    for seed in range(args.sequences):
        rng = np.random.default_rng([args.seed, seed])
        cal = world.healthy(rng, args.calibration)
        nights = [world.healthy(rng, args.night_size) for _ in range(args.healthy)]
        prefix, seen = night_pvalues(np.sort(cal), nights, rng)
        prefix_counts = np.asarray([bet_statistics(p) for p in prefix])
        log_r, _ = shiryaev_roberts(prefix_counts)
        false_alarms.append(bool((log_r >= log_threshold).any()))
        old_false_alarms.append(bool((old_monitor(prefix, args.level) >= math.log(1 / args.level)).any()))
        healthy_ks.append(ks_2samp(cal, nights[0]).pvalue < 0.01)
        if seed >= args.shifted_sequences:
            continue
        for name, draw in world.pools.items():
            shifted = draw(rng, args.shifted, args.night_size)
            after, _ = night_pvalues(seen, shifted, rng)
            counts = np.concatenate([prefix_counts, [bet_statistics(p) for p in after]])
            log_r, _ = shiryaev_roberts(counts)
            tally = tallies[name]
            tally.ks_shifted.append(ks_2samp(cal, shifted[0]).pvalue < 0.01)
            crossed = np.flatnonzero(log_r >= log_threshold)
            tally.alarm_night.append(float(crossed[0] + 1 - args.healthy) if crossed.size else math.inf)
            old = np.flatnonzero(old_monitor(prefix + after, args.level) >= math.log(1 / args.level))
            tally.old_alarm_night.append(float(old[0] + 1 - args.healthy) if old.size else math.inf)
    seconds = time.process_time() - started
    n, m = args.sequences, min(args.shifted_sequences, args.sequences)
    out.append(f"### {world.name}\n")
    out.append(f"False alarms over {args.healthy} healthy nights ({n} sequences): detector "
               f"{np.mean(false_alarms):.4f} ({int(np.sum(false_alarms))}; guarantee <= {args.healthy} / "
               f"{args.horizon / args.level:g} = {args.healthy * args.level / args.horizon:.4f}), old monitor "
               f"{np.mean(old_false_alarms):.4f}; per-night KS at 0.01 on a healthy night: {np.mean(healthy_ks):.3f}."
               f" CPU {seconds:.0f} s.\n")
    out.append(f"| shifted nights of ({m} sequences) | items | KS power, one night | flagged by shifted night "
               "1 / 2 / 3 / 5 | median night of first alarm | old monitor by night 5 |")
    out.append("|---|---:|---:|---|---:|---:|")
    for name, tally in tallies.items():
        nights = np.asarray(tally.alarm_night)
        by = " / ".join(f"{np.mean(nights <= k):.3f}" for k in (1, 2, 3, 5))
        median = float(np.median(nights))
        size = world.sizes[name] or "∞"
        out.append(f"| {name} | {size} | {np.mean(tally.ks_shifted):.3f} | {by} | "
                   f"{'> ' + str(args.shifted) if math.isinf(median) else f'{median:g}'} | "
                   f"{np.mean(np.asarray(tally.old_alarm_night) <= args.shifted):.3f} |")
    out.append("")


def main() -> None:
    repo = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(repo.parent / "shared" / "data"))
    parser.add_argument("--judges", default="llava,polaris,synthetic")
    parser.add_argument("--sequences", type=int, default=1000, help="sequences for the false-alarm rate")
    parser.add_argument("--shifted-sequences", dest="shifted_sequences", type=int, default=500,
                        help="of those, how many continue into each shifted pool")
    parser.add_argument("--calibration", type=int, default=600)
    parser.add_argument("--healthy", type=int, default=25)
    parser.add_argument("--shifted", type=int, default=5)
    parser.add_argument("--night-size", dest="night_size", type=int, default=200)
    parser.add_argument("--level", type=float, default=0.01)
    parser.add_argument("--horizon", type=int, default=DEFAULT_HORIZON)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    worlds = {"llava": lambda: llava(Path(args.data)), "polaris": lambda: polaris(Path(args.data)),
              "synthetic": synthetic}
    started, wall = datetime.now(timezone.utc), time.time()
    out = [f"`python scripts/measure_drift_monitor.py {' '.join(sys.argv[1:])}`".replace(" `", "`"),
           f"({started:%Y-%m-%d %H:%M} UTC, {platform.node() or 'this machine'}, Python {platform.python_version()}; "
           f"level {args.level:g}, horizon {args.horizon} nights: alarm at {args.horizon / args.level:g}; "
           f"{args.calibration} calibration items, {args.healthy} healthy nights, then {args.shifted} shifted, "
           f"{args.night_size} items a night)\n"]
    for name in args.judges.split(","):
        run_world(worlds[name.strip()](), args, out)
        print("\n".join(out), flush=True)
        out = []
    print(f"Run time {time.time() - wall:.0f} s.")


if __name__ == "__main__":
    main()
