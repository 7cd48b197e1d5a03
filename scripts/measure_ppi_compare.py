"""Issue 32 (parts 3, 5, 6): compare with every label, small samples, clustered data: the rates, measured.

Each experiment is a seeded Monte-Carlo run over ``draws`` draws (seeds
``0 .. draws - 1``, a fixed offset per experiment); the tests run the same
functions at a smaller size (tests/test_compare.py, tests/test_clusters.py,
tests/test_ppi_proxies.py), this script at full size for docs/benchmarks.md,
docs/nightly.md and docs/calibrators.md. alpha 0.1 throughout.

1. ``overlap``: two runs over the same items (a synthetic judge, 5,000 items,
   run B better by 0.25 in quality and judged 0.2 kinder), each labeling its
   own 150 random items (about 4 labeled in both): coverage of the true
   difference, zero-width intervals, labels used.
2. ``overlap_llava``: the same on LLaVA-Critic's 5,716 items, both runs the
   same judge outputs (true difference 0), each with its own 150 labels.
3. ``designs``: the same synthetic runs with the same 300 items labeled in
   both (full overlap), and two runs on different items (two samples).
4. ``clusters``: 8 answers to each of 400 prompts sharing the prompt's
   difficulty, 40 prompts labeled whole in each run: the iid interval and the
   cluster-robust one (``--cluster``), for ``estimate`` and a paired
   ``compare``; ``plan_clusters``: plans from such pilots, with and without
   their design effect, and the half-width runs labeled by prompts reach;
   ``check_clusters``: ``plan --run``'s check of such a pilot's judge scores
   against a run of the same population (its false alarms at level 0.01)
   and against run B (its power), plain and counting the clusters.
5. ``small``: 6 and 12 labels: the small-sample conventions (ddof 1, t)
   against ppi-python's (ddof 0, normal).
6. ``llava_estimate``: LLaVA-Critic, 300 random labels, ``estimate --group
   orig_dataset`` (strata chosen by the counts): coverage, and the width
   against the plain labeled mean and against the same-design (stratified)
   labeled-only interval; unstratified PPI++ too.
7. ``llava_groups``: LLaVA-Critic split into two groups of 7 tasks, 150 labels
   each, ``compare`` (two samples, stratified by task).
8. ``llava_stratum_lambda``: LLaVA-Critic, 14 task strata with about 21
   labels each (drawn in proportion): one common ``lam`` against each
   stratum's own.

    python scripts/measure_ppi_compare.py [--data ../shared/data] [--scale 1.0] [--only NAME ...]

``--scale`` multiplies every experiment's number of draws (the defaults are
the figures of docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from judgecp import Fields, load
from judgecp.data import ScoreData
from judgecp.stats.plan import plan, proxy_check
from judgecp.stats.ppi import ppi_mean
from judgecp.stats.proxies import choose_strata
from judgecp.workflows.nightly.compare import compare
from judgecp.workflows.nightly.runs import proxy_and_target

ALPHA = 0.1
LEVELS = np.arange(1, 6, dtype=np.float64)
REPO = Path(__file__).resolve().parents[1]


# -- synthetic judges ----------------------------------------------------------------------------


def likert_run(rng: np.random.Generator, quality: np.ndarray, ids: list[str], *, judge_bias: float = 0.4,
               labeled: np.ndarray | None = None, noise: float = 0.6,
               fields: dict[str, Any] | None = None) -> tuple[ScoreData, np.ndarray]:
    """Human scores of answers of a given quality (1..5), and a judge that sees it through noise, compressed and
    biased (its expected score correlates with the human score at about 0.6). Returns the run (labels NaN where
    not ``labeled``) and every item's human score."""
    n = quality.size
    human = np.clip(np.round(3.0 + 1.1 * quality + rng.normal(0, 0.6, n)), 1, 5)
    perceived = 3.0 + judge_bias + 0.7 * quality + rng.normal(0, noise, n)
    logprobs = -((LEVELS[None, :] - perceived[:, None]) ** 2) / (2 * 0.7**2)
    labels = human if labeled is None else np.where(labeled, human, np.nan)
    return ScoreData.from_arrays(logprobs, labels, ids=ids, fields=fields), human


def random_labels(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    out = np.zeros(n, bool)
    out[rng.choice(n, k, replace=False)] = True
    return out


def paired_runs(seed: int, *, n: int = 5000, labels: int = 150, shared_labels: bool = False, gain: float = 0.25,
                extra_bias_b: float = 0.2) -> tuple[ScoreData, ScoreData, float]:
    """Two models answering the same ``n`` items (B better by ``gain`` in quality, judged ``extra_bias_b`` kinder);
    each run labels its own ``labels`` random items, or the same ones (``shared_labels``)."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 1, n)
    ids = [f"item{i}" for i in range(n)]
    lab_a = random_labels(rng, n, labels)
    lab_b = lab_a if shared_labels else random_labels(rng, n, labels)
    a, ya = likert_run(rng, difficulty + rng.normal(0, 0.5, n), ids, labeled=lab_a)
    b, yb = likert_run(
        rng, difficulty + gain + rng.normal(0, 0.5, n), ids, labeled=lab_b, judge_bias=0.4 + extra_bias_b
    )
    return a, b, float(np.mean(yb - ya))


def independent_runs(
    seed: int, *, n: int = 2500, labels: int = 200, gain: float = 0.25
) -> tuple[ScoreData, ScoreData, float]:
    """Two runs on different items (two samples); the judge is kinder to B's answers."""
    rng = np.random.default_rng(seed)
    runs, truths = [], []
    for prefix, shift, bias in (("a", 0.0, 0.4), ("b", gain, 0.6)):
        run, human = likert_run(rng, rng.normal(shift, 1, n), [f"{prefix}{i}" for i in range(n)],
                                labeled=random_labels(rng, n, labels), judge_bias=bias)
        runs.append(run)
        truths.append(float(human.mean()))
    return runs[0], runs[1], truths[1] - truths[0]


def clustered_runs(seed: int, *, prompts: int = 400, answers: int = 8, labeled_prompts: int = 40,
                   gain: float = 0.25) -> tuple[ScoreData, ScoreData, float, float]:
    """Two models' ``answers`` answers to each of ``prompts`` prompts; a prompt's answers share its difficulty
    (most of the variance), which the judge sees only in part. Each run labels all answers of its own
    ``labeled_prompts`` random prompts. Returns the runs (field ``prompt``), the true difference and run A's
    true mean."""
    rng = np.random.default_rng(seed)
    n = prompts * answers
    prompt = np.repeat(np.arange(prompts), answers)
    difficulty = rng.normal(0, 1, prompts)[prompt]
    ids = [f"p{p}-{j}" for p, j in zip(prompt, np.tile(np.arange(answers), prompts), strict=True)]
    fields = {"prompt": np.asarray([f"p{p}" for p in prompt])}
    runs, humans = [], []
    for shift, bias in ((0.0, 0.4), (gain, 0.6)):
        labeled = np.isin(prompt, rng.choice(prompts, labeled_prompts, replace=False))
        seen = 0.5 * difficulty + rng.normal(0, 0.4, n)  # the judge sees half the prompt's difficulty
        quality = difficulty + shift + rng.normal(0, 0.35, n)
        human = np.clip(np.round(3.0 + 1.1 * quality + rng.normal(0, 0.4, n)), 1, 5)
        perceived = 3.0 + bias + 0.7 * (seen + shift) + rng.normal(0, 0.3, n)
        logprobs = -((LEVELS[None, :] - perceived[:, None]) ** 2) / (2 * 0.7**2)
        runs.append(ScoreData.from_arrays(logprobs, np.where(labeled, human, np.nan), ids=ids, fields=fields))
        humans.append(human)
    return runs[0], runs[1], float(np.mean(humans[1] - humans[0])), float(humans[0].mean())


# -- the experiments --------------------------------------------------------------------------------


def covers(e: dict[str, float], truth: float) -> bool:
    return bool(e["lower"] <= truth <= e["upper"])


def width(e: dict[str, float]) -> float:
    return float(e["upper"] - e["lower"])


def compare_rates(draw: Callable[[int], tuple[Any, Any, float]], draws: int, offset: int = 0,
                  **options: Any) -> dict[str, float]:
    """Coverage, zero-width share, labels and widths of ``compare`` over ``draws`` seeded draws."""
    cover = {"ppi": 0, "labeled_only": 0, "judge_only": 0}
    zero, both, widths, lab_widths = 0, [], [], []
    for seed in range(offset, offset + draws):
        a, b, truth = draw(seed)[:3]
        out = compare(a, b, alpha=ALPHA, **options)
        d = out["difference"]
        for name in cover:
            cover[name] += covers(d[name], truth)
        zero += width(d["ppi"]) <= 0
        both.append(out.get("n_labeled_pairs", 0))
        widths.append(width(d["ppi"]))
        lab_widths.append(width(d["labeled_only"]))
    return {"draws": draws, **{f"cover_{k}": v / draws for k, v in cover.items()}, "zero_width": zero / draws,
            "labeled_in_both": float(np.median(both)), "labels": float(out["difference"]["n_labels"]),
            "width_ppi": float(np.mean(widths)), "width_ratio": float(np.mean(widths) / np.mean(lab_widths))}


def overlap(draws: int = 2000) -> dict[str, float]:
    return compare_rates(lambda s: paired_runs(s), draws, offset=10_000)


def designs(draws: int = 1000) -> dict[str, Any]:
    return {"full_overlap": compare_rates(lambda s: paired_runs(s, n=3000, labels=300, shared_labels=True), draws,
                                          offset=20_000),
            "two_sample": compare_rates(lambda s: independent_runs(s), draws, offset=30_000)}


def llava(data_dir: Path, joins: bool = True) -> ScoreData:
    folder = data_dir / "mllm_judge"
    fields = Fields(label="gt_score", logprobs="s2_lp*", prediction="parsed_score",
                    joins=(str(folder / "task_labels.csv"),) if joins else ())
    data: ScoreData = load(folder / "llava_critic_7b_features.csv", "likert", fields)
    return data


def overlap_llava(data_dir: Path, draws: int = 2000) -> dict[str, float]:
    data = llava(data_dir, joins=False)
    y = data.labels.copy()

    def draw(seed: int) -> tuple[ScoreData, ScoreData, float]:
        rng = np.random.default_rng(40_000 + seed)
        runs = []
        for _ in range(2):
            run = data.take(np.arange(y.size))
            run.labels = np.where(random_labels(rng, y.size, 150), y, np.nan)
            runs.append(run)
        return runs[0], runs[1], 0.0

    return compare_rates(draw, draws)


def clusters(draws: int = 1000) -> dict[str, Any]:
    """``estimate`` and paired ``compare`` on clustered runs, iid against ``--cluster prompt``."""
    from judgecp.workflows.nightly.estimate import estimate

    est = {"iid": [0, 0.0], "cluster": [0, 0.0]}
    cmp = {"iid": [0, 0.0], "cluster": [0, 0.0]}
    for seed in range(50_000, 50_000 + draws):
        a, b, truth, mean_a = clustered_runs(seed)
        for name, cluster in (("iid", None), ("cluster", "prompt")):
            e = estimate(a, alpha=ALPHA, cluster=cluster)["estimate"]["ppi"]
            est[name][0] += covers(e, mean_a)
            est[name][1] += width(e) / draws
            d = compare(a, b, alpha=ALPHA, cluster=cluster)["difference"]["ppi"]
            cmp[name][0] += covers(d, truth)
            cmp[name][1] += width(d) / draws
    out: dict[str, Any] = {"draws": draws}
    for what, res in (("estimate", est), ("compare", cmp)):
        for name, (c, w) in res.items():
            out[f"{what}_{name}_cover"] = c / draws
            out[f"{what}_{name}_width"] = w
    return out


def plan_clusters(pilots: int = 40, runs: int = 40, half_width: float = 0.1) -> dict[str, float]:
    """Plans from clustered pilots (40 prompts x 8 answers), with and without ``clusters``; each plan's label count,
    drawn as whole prompts, gives the mean half-width measured over ``runs`` runs."""
    from judgecp.workflows.nightly.estimate import estimate

    ratio: dict[str, list[float]] = {"iid": [], "cluster": []}
    for p in range(pilots):
        a, _, _, _ = clustered_runs(60_000 + p)
        f, y, _ = proxy_and_target(a)
        lab = ~np.isnan(y)
        prompts = np.asarray(a.fields["prompt"])
        for name, cl in (("iid", None), ("cluster", prompts[lab])):
            n = plan(y[lab], f[lab], half_width, alpha=ALPHA, n_unlabeled=int((~lab).sum()), clusters=cl)["labels"][
                "ppi"
            ]
            k = max(2, int(np.ceil(n / 8)))  # whole prompts of 8 answers
            widths = []
            for r in range(runs):
                run, _, _, _ = clustered_runs(70_000 + 100 * p + r, labeled_prompts=min(k, 399))
                widths.append(width(estimate(run, alpha=ALPHA, cluster="prompt")["estimate"]["ppi"]) / 2)
            ratio[name].append(float(np.mean(widths)) / half_width)
    return {"pilots": pilots, "runs": runs, **{f"half_width_ratio_{k}": float(np.mean(v)) for k, v in ratio.items()}}


def check_clusters(draws: int = 1000) -> dict[str, float]:
    """``plan --run``'s KS check of a clustered pilot (40 prompts x 8 answers, labeled, of another draw of the
    population) against a run (3,200 items): as if independent, and counting both samples' clusters."""
    alarms = {"iid": 0, "cluster": 0, "iid_run_b": 0, "cluster_run_b": 0}
    for seed in range(90_000, 90_000 + draws):
        a, b, _, _ = clustered_runs(seed)
        pilot = clustered_runs(seed + 5_000)[0]
        fp, yp, _ = proxy_and_target(pilot)
        lab = ~np.isnan(yp)
        for run, suffix in ((a, ""), (b, "_run_b")):
            f, _, _ = proxy_and_target(run)
            alarms["iid" + suffix] += proxy_check(fp[lab], f)["mismatch"]
            alarms["cluster" + suffix] += proxy_check(
                fp[lab],
                f,
                clusters_pairs=np.asarray(pilot.fields["prompt"])[lab],
                clusters_run=np.asarray(run.fields["prompt"]),
            )["mismatch"]
    return {"draws": draws, **{f"refused_{k}": v / draws for k, v in alarms.items()}}


def small(draws: int = 4000) -> dict[str, float]:
    """PPI++ with 6 and 12 labels (and 500 unlabeled items): small-sample conventions against ppi-python's."""
    out: dict[str, float] = {"draws": draws}
    for n in (6, 12):
        cover = {"small-sample": 0, "ppi-python": 0}
        for seed in range(80_000, 80_000 + draws):
            rng = np.random.default_rng(seed)
            y = 3.0 + rng.normal(0, 1.2, n + 500)
            f = 3.4 + 0.6 * (y - 3.0) + rng.normal(0, 0.5, n + 500)
            for conventions in cover:
                e = ppi_mean(y[:n], f[:n], f[n:], alpha=ALPHA, conventions=conventions)["estimate"]["ppi"]
                cover[conventions] += covers(e, 3.0)
        for conventions, c in cover.items():
            out[f"n{n}_{conventions}"] = c / draws
    return out


def llava_estimate(data_dir: Path, draws: int = 2000) -> dict[str, float]:
    """300 random labels, the rest unlabeled: stratified (``estimate --group orig_dataset``) and plain PPI++."""
    from judgecp.workflows.nightly.estimate import estimate

    data = llava(data_dir)
    y = data.labels.copy()
    truth = float(y.mean())
    strata = np.asarray(data.fields["orig_dataset"]).astype(str)
    f, _, _ = proxy_and_target(data)
    rows = {"strat": [], "strat_lab": [], "plain": [], "plain_lab": []}
    cover = {"strat": 0, "plain": 0, "strat_lab": 0, "plain_lab": 0}
    ess = []
    for seed in range(draws):
        labeled = random_labels(np.random.default_rng(seed), y.size, 300)
        data.labels = np.where(labeled, y, np.nan)
        out = estimate(data, alpha=ALPHA, groups="orig_dataset")
        plain = ppi_mean(y[labeled], f[labeled], f[~labeled], alpha=ALPHA)["estimate"]
        for key, e in (("strat", out["estimate"]["ppi"]), ("strat_lab", out["estimate"]["labeled_only"]),
                       ("plain", plain["ppi"]), ("plain_lab", plain["labeled_only"])):
            cover[key] += covers(e, truth)
            rows[key].append(width(e))
        ess.append(out["effective_sample_size"])
        assert choose_strata(strata, labeled)[0] is not None
    data.labels = y
    w = {k: np.asarray(v) for k, v in rows.items()}
    return {"draws": draws, **{f"cover_{k}": v / draws for k, v in cover.items()},
            **{f"width_{k}": float(v.mean()) for k, v in w.items()},
            "ratio_strat_to_plain_labels": float(np.mean(w["strat"] / w["plain_lab"])),
            "ratio_strat_to_strat_labels": float(np.mean(w["strat"] / w["strat_lab"])),
            "ratio_plain_to_plain_labels": float(np.mean(w["plain"] / w["plain_lab"])),
            "effective_sample_size": float(np.mean(ess))}


def llava_groups(data_dir: Path, draws: int = 1200) -> dict[str, float]:
    """Two runs made of 7 tasks each (no shared items), 150 random labels each: the difference of the groups'
    human means."""
    data = llava(data_dir)
    y = data.labels.copy()
    tasks = np.asarray(data.fields["orig_dataset"]).astype(str)
    in_a = np.isin(tasks, np.unique(tasks)[::2])
    truth = float(y[~in_a].mean() - y[in_a].mean())
    parts = [data.take(np.flatnonzero(in_a)), data.take(np.flatnonzero(~in_a))]

    def draw(seed: int) -> tuple[ScoreData, ScoreData, float]:
        rng = np.random.default_rng(seed)
        runs = []
        for part in parts:
            run = part.take(np.arange(part.n))
            run.labels = np.where(random_labels(rng, part.n, 150), part.labels, np.nan)
            runs.append(run)
        return runs[0], runs[1], truth

    return {"truth": truth, **compare_rates(draw, draws, group="orig_dataset")}


def llava_stratum_lambda(data_dir: Path, draws: int = 1000) -> dict[str, float]:
    """14 task strata, labels drawn in proportion (about 21 each, 300 in all): one common lam against each stratum's
    own (``stratum_lambda="per_stratum"``), and the widths."""
    data = llava(data_dir)
    f, y, _ = proxy_and_target(data)
    strata = np.asarray(data.fields["orig_dataset"]).astype(str)
    cats, counts = np.unique(strata, return_counts=True)
    cover = {"common": 0, "per_stratum": 0}
    widths: dict[str, list[float]] = {"common": [], "per_stratum": []}
    for seed in range(draws):
        rng = np.random.default_rng(seed)
        lab = np.concatenate([rng.choice(np.flatnonzero(strata == c), max(2, round(300 * k / y.size)), replace=False)
                              for c, k in zip(cats, counts, strict=True)])
        unl = np.setdiff1d(np.arange(y.size), lab)
        for how in cover:
            e = ppi_mean(y[lab], f[lab], f[unl], alpha=ALPHA, groups_labeled=strata[lab], groups_unlabeled=strata[unl],
                         stratum_lambda=how)["estimate"]["ppi"]
            cover[how] += covers(e, float(y.mean()))
            widths[how].append(width(e))
    return {"draws": draws, **{f"cover_{k}": v / draws for k, v in cover.items()},
            **{f"width_{k}": float(np.mean(v)) for k, v in widths.items()}}


EXPERIMENTS = ("overlap", "overlap_llava", "designs", "clusters", "plan_clusters", "check_clusters", "small",
               "llava_estimate", "llava_groups", "llava_stratum_lambda")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every experiment's draws")
    parser.add_argument("--only", nargs="*", choices=EXPERIMENTS, default=list(EXPERIMENTS))
    args = parser.parse_args()
    data_dir = Path(args.data)

    def n(default: int) -> int:
        return max(2, round(default * args.scale))

    runs: dict[str, Callable[[], dict[str, Any]]] = {
        "overlap": lambda: overlap(n(2000)), "overlap_llava": lambda: overlap_llava(data_dir, n(2000)),
        "designs": lambda: designs(n(1000)), "clusters": lambda: clusters(n(1000)),
        "plan_clusters": lambda: plan_clusters(n(40), n(40)), "check_clusters": lambda: check_clusters(n(1000)),
        "small": lambda: small(n(4000)),
        "llava_estimate": lambda: llava_estimate(data_dir, n(2000)),
        "llava_groups": lambda: llava_groups(data_dir, n(1200)),
        "llava_stratum_lambda": lambda: llava_stratum_lambda(data_dir, n(1000)),
    }
    print(f"# measure_ppi_compare.py, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.node()} ({platform.processor() or platform.machine()}), scale {args.scale:g}")
    for name in args.only:
        start = time.perf_counter()
        res = runs[name]()
        print(f"\n## {name} ({time.perf_counter() - start:.0f} s)")
        for key, value in _flat(res):
            print(f"- {key}: {value:.4f}" if isinstance(value, float) else f"- {key}: {value}")


def _flat(res: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in res.items():
        if isinstance(value, dict):
            out += _flat(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


if __name__ == "__main__":
    main()
