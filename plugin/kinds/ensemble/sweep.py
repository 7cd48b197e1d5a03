"""The supplement's Table 5 factors as a sweep, printed in the layout of its Table 6.

Factors (Table 5): the number of prompts (5, 10, 20: a random subset of the
judge's prompts, drawn with the data seed), the validation samples (5, 10,
20, 50: drawn from the labeled items with the data seed), the clusters K
(4, 8, 16, 32, 64: spherical k-means on every item, with the cluster seed),
and the seeds (Table 5: 50 data seeds, 5 cluster seeds; the defaults here are
3 and 1 so the simulated sweep runs in seconds). Each cell is the mean over
seeds of the mixture's metric on the labeled items outside the validation
set.

Table 6's layout, which :func:`format_table` reproduces (one row per
(prompts, samples), one column block per metric, one column per K)::

    prompts samples  Expected Calibration Error (↓)  Max Calibration Error (↓)    AUC Precision-Recall (↑)
                     4    8    16   32   64           4    8    16   32   64      4    8    16   32   64
    5       5        .113 .113 .113 .113 .113         .245 .244 .245 .245 .246    .834 .835 .835 .835 .836
            10       .107 .107 .108 .108 .108         ...

A second, smaller table gives the uniform average and the one-cluster BPE
for the same rows (they do not depend on K).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.base.outputs import atomic_write_text
from judgecp.kinds.ensemble.evaluate import add_input_arguments, load_input
from judgecp.stats.ensemble.clustering import Membership, SphericalKMeans
from judgecp.stats.ensemble.estimator import PromptEnsemble, uniform_proba
from judgecp.stats.ensemble.metrics import calibration_summary
from judgecp.stats.ensemble.objective import Solver
from judgecp.synthetic.judges import simulate_prompt_judge

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
TABLE_METRICS = (("ece", "Expected Calibration Error (↓)"), ("mce", "Max Calibration Error (↓)"),
                 ("auprc", "AUC Precision-Recall (↑)"))


@dataclass(frozen=True)
class SweepFactors:
    """Levels of Table 5 (defaults: its levels, with fewer seeds)."""

    prompts: tuple[int, ...] = (5, 10, 20)
    samples: tuple[int, ...] = (5, 10, 20, 50)
    clusters: tuple[int, ...] = (4, 8, 16, 32, 64)
    data_seeds: tuple[int, ...] = (0, 1, 2)
    cluster_seeds: tuple[int, ...] = (0,)


def run_sweep(
    log_probs: FloatArray,
    labels: IntArray,
    embeddings: FloatArray,
    factors: SweepFactors = SweepFactors(),
    *,
    membership: Membership = "hard",
    concentration: float = 20.0,
    solver: Solver = "closed-form",
) -> list[dict[str, Any]]:
    """One row per (method, prompts, samples, clusters), metrics averaged over seeds.

    Parameters
    ----------
    log_probs : ndarray of shape (n_items, n_prompts, n_classes)
    labels : ndarray of shape (n_items,)
        Class index, -1 for unlabeled items (clustered, never scored).
    embeddings : ndarray of shape (n_items, dim)
    factors : SweepFactors
    membership, concentration, solver
        As in :class:`~judgecp.stats.ensemble.estimator.PromptEnsemble`; the sweep
        defaults to the closed-form maximiser of eq. (11) (the optimum L-BFGS
        converges to, without its iterations).

    Returns
    -------
    list of dict
        ``{"method", "prompts", "samples", "clusters", "ece", "mce", "auprc",
        "nll", "accuracy", "aurc", "runs"}``; ``clusters`` is 1 for BPE and 0
        for uniform averaging.
    """
    labeled = np.flatnonzero(np.asarray(labels) >= 0)
    n_prompts = log_probs.shape[1]
    too_many = [p for p in factors.prompts if p > n_prompts]
    if too_many:
        raise InputError(f"the judge has {n_prompts} prompts, the sweep asks for {too_many[0]}")
    if max(factors.samples) >= labeled.size:
        raise InputError(f"{labeled.size} labeled items: too few for {max(factors.samples)} validation samples")
    clusterings = {
        (k, s): SphericalKMeans(k, random_state=s).fit(embeddings)
        for k in factors.clusters for s in factors.cluster_seeds
    }
    cells: dict[tuple[str, int, int, int], list[dict[str, float]]] = {}
    for data_seed in factors.data_seeds:
        rng = np.random.default_rng(data_seed)
        order = rng.permutation(labeled)
        for n_chosen in factors.prompts:
            chosen = np.sort(np.random.default_rng([data_seed, n_chosen]).choice(n_prompts, n_chosen, replace=False))
            lp = log_probs[:, chosen]
            for n_val in factors.samples:
                fit_idx, held = order[:n_val], order[n_val:]
                y_fit, y_held = labels[fit_idx], labels[held]
                runs = [("uniform", 0, uniform_proba(lp[held]))]
                bpe = PromptEnsemble(1, solver=solver).fit(lp[fit_idx], y_fit)
                runs.append(("bpe", 1, bpe.predict_proba(lp[held])))
                for (k, _), clustering in clusterings.items():
                    mixture = PromptEnsemble(
                        k, membership=membership, concentration=concentration,
                        clustering=clustering, solver=solver,
                    ).fit(lp[fit_idx], y_fit, embeddings[fit_idx])
                    runs.append(("mixture", k, mixture.predict_proba(lp[held], embeddings[held])))
                for method, k, proba in runs:
                    cells.setdefault((method, n_chosen, n_val, k), []).append(
                        calibration_summary(proba, y_held)
                    )
    rows = []
    for (method, n_chosen, n_val, k), results in sorted(cells.items()):
        row: dict[str, Any] = {"method": method, "prompts": n_chosen, "samples": n_val, "clusters": k}
        for metric in results[0]:
            values = np.array([r[metric] for r in results], dtype=float)
            finite = values[np.isfinite(values)]
            row[metric] = float(finite.mean()) if finite.size else float("nan")
        row["runs"] = len(results)
        rows.append(row)
    return rows


def _cell(value: float) -> str:
    if not np.isfinite(value):
        return "  nan"
    text = f"{value:.3f}"
    return (text[1:] if text.startswith("0") else text).rjust(5)


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """The mixture rows in Table 6's layout, then the baselines (module docstring)."""
    mixture = [r for r in rows if r["method"] == "mixture"]
    ks = sorted({r["clusters"] for r in mixture})
    grid = {(r["prompts"], r["samples"], r["clusters"]): r for r in mixture}
    width = 6 * len(ks)
    header1 = "prompts samples  " + "  ".join(title.ljust(width) for _, title in TABLE_METRICS)
    header2 = " " * 17 + "  ".join("".join(str(k).rjust(5) + " " for k in ks) for _ in TABLE_METRICS)
    lines = [header1.rstrip(), header2.rstrip()]
    last_prompts = None
    for n_chosen, n_val in sorted({(r["prompts"], r["samples"]) for r in mixture}):
        label = str(n_chosen) if n_chosen != last_prompts else ""
        last_prompts = n_chosen
        blocks = [
            "".join(_cell(grid[(n_chosen, n_val, k)][metric]) + " " for k in ks)
            for metric, _ in TABLE_METRICS
        ]
        lines.append(f"{label:<8}{n_val:<9}" + "  ".join(blocks).rstrip())
    base = [r for r in rows if r["method"] in ("uniform", "bpe")]
    if base:
        lines += ["", "baselines     prompts samples   ECE   MCE AUPRC   NLL"]
        for r in sorted(base, key=lambda r: (r["method"] != "uniform", r["prompts"], r["samples"])):
            lines.append(
                f"{r['method']:<14}{r['prompts']:<8}{r['samples']:<8}"
                + " ".join(_cell(r[m]) for m in ("ece", "mce", "auprc", "nll"))
            )
    return "\n".join(lines)


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(t) for t in text.split(","))
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m judgecp.kinds.ensemble.sweep (--example | RECORDS --embeddings FILE) [factors]``."""
    parser = argparse.ArgumentParser(prog="python -m judgecp.kinds.ensemble.sweep", description=__doc__.split("\n")[0])
    add_input_arguments(parser, example="sweep the seeded simulated judge")
    parser.add_argument("--prompts", default="5,10,20", help="numbers of prompts (5,10,20)")
    parser.add_argument("--samples", default="5,10,20,50", help="validation samples (5,10,20,50)")
    parser.add_argument("--clusters", default="4,8,16,32,64", help="K values (4,8,16,32,64)")
    parser.add_argument("--data-seeds", type=int, default=3, help="data seeds 0..N-1 (3; Table 5: 50)")
    parser.add_argument("--cluster-seeds", type=int, default=1, help="cluster seeds 0..N-1 (1; Table 5: 5)")
    parser.add_argument("--membership", choices=("hard", "soft"), default="hard")
    parser.add_argument("--solver", choices=("closed-form", "lbfgs"), default="closed-form",
                        help="eq. (11) maximiser (closed-form; lbfgs: Table 5's optimiser, slower)")
    parser.add_argument("--json", help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    try:
        factors = SweepFactors(
            prompts=_ints(args.prompts), samples=_ints(args.samples), clusters=_ints(args.clusters),
            data_seeds=tuple(range(args.data_seeds)), cluster_seeds=tuple(range(args.cluster_seeds)),
        )
        if args.example:
            sim = simulate_prompt_judge(4000, 20, 8, random_state=0)
            log_probs, labels, embeddings = sim.log_probs, sim.labels, sim.embeddings
        else:
            if not args.records or not args.embeddings:
                raise InputError("give RECORDS and --embeddings FILE, or --example")
            data = load_input(args)
            assert data.embeddings is not None
            if data.exclusions:
                print(f"excluded: {data.exclusions.total} ({', '.join(data.exclusions.counts)})", file=sys.stderr)
            log_probs, labels, embeddings = data.log_probs, data.labels, data.embeddings
        rows = run_sweep(
            log_probs, labels, embeddings, factors, membership=args.membership, solver=args.solver
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_table(rows))
    if args.json:

        atomic_write_text(args.json, json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
