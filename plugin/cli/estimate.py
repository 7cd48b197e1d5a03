"""``judgecp estimate``: the mean human score of a night by PPI++, from one file (labeled and unlabeled rows
together) or two (``--labeled``, ``--unlabeled``: labels drawn by ``judgecp select`` weighted by their
``sampling_probability``)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.exclusions import left_out_lines
from judgecp.base.flags import level
from judgecp.cli.calibrators import CLUSTER_HELP, _input_flags, _write_json, read_data
from judgecp.cli.evaluate import check_output
from judgecp.workflows.nightly.estimate import estimate, estimate_drawn, estimate_split
from judgecp.workflows.nightly.runs import sampling_probabilities
from judgecp.workflows.results import EstimateResult

# -- estimate ----------------------------------------------------------------------------------


def add_estimate(sub: Any) -> None:
    p = sub.add_parser(
        "estimate",
        help="prediction-powered (PPI++) mean with a valid interval from a few labels",
        description="Records with a label are the labeled sample, records without one the unlabeled "
        "sample (or give them as two files with --labeled/--unlabeled). Prints the PPI++ estimate of "
        "the human mean (Likert), win rate (pairwise) or accuracy (multiple choice) with its interval, "
        "next to the judge-only and labeled-only intervals. Rows with a label but no judge proxy are "
        "their own stratum; labels drawn by `judgecp select` are weighted by their sampling_probability.",
    )
    p.add_argument("input", nargs="?", help="records, labeled and unlabeled together")
    p.add_argument("--labeled", metavar="FILE", help="labeled records (with --unlabeled, instead of INPUT)")
    p.add_argument("--unlabeled", metavar="FILE", help="unlabeled records (their labels, if any, are ignored); with "
                   "labels from `judgecp select`, the whole run they were drawn from")
    p.add_argument("--json", metavar="OUT", help="write the estimate as JSON")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage of the intervals (default 0.1)")
    p.add_argument("--stratify", choices=("auto", "yes", "no"), default="auto",
                   help="stratify by --group (default: task when present): auto when every stratum has 10 labels "
                   "(smaller ones merged), yes, or no")
    p.add_argument("--proxy", choices=("auto", "judge", "crossfit"), default="auto",
                   help="the judge's own proxy, or one cross-fitted on the labeled items with the row features and "
                   "groups (auto: cross-fitted with --features and 100 labels)")
    p.add_argument("--features", metavar="GLOB", help="extra numeric columns for the cross-fitted proxy")
    p.add_argument("--cluster", metavar="FIELD", help=CLUSTER_HELP)
    _input_flags(p)
    p.set_defaults(func=run_estimate)


def run_estimate(args: argparse.Namespace) -> int:

    check_output(args, {"--json": args.json})
    if bool(args.input) == bool(args.labeled or args.unlabeled):
        raise InputError("give INPUT (labeled and unlabeled records together) or --labeled and --unlabeled")
    if args.input:
        out = estimate(read_data(args, require_label=False), alpha=args.alpha, groups=args.group,
                       stratify=args.stratify, proxy=args.proxy, cluster=args.cluster)
    else:
        if not (args.labeled and args.unlabeled):
            raise InputError("--labeled and --unlabeled go together")
        out = estimate_two_files(args)

    _write_json(args.json, out)
    est = out["estimate"]
    print(f"{out['target']} ({out['kind']}), {out['n_labeled']} labeled + {out['n_unlabeled']} unlabeled items, "
          f"{1 - out['alpha']:.0%} intervals:")
    for name in ("ppi", "labeled_only", "judge_only"):
        e = est[name]
        print(
            f"  {name:<13} {e['mean']:.4f}  [{e['lower']:.4f}, {e['upper']:.4f}]  width {e['upper'] - e['lower']:.4f}"
        )
    ess = out["effective_sample_size"]
    print(f"  effective sample size {ess:.0f} labeled items; judge bias (judge - PPI) {out['judge_bias']:+.4f}"
          if math.isfinite(ess) else "  effective sample size: unbounded")
    lam = out.get("lambda")
    if isinstance(lam, (int, float)) and not args.labeled:  # why `judgecp apply` prints another PPI++ interval
        print(f"  power tuning lambda {lam:.3f} from these labels (judgecp apply takes lambda from the "
              "calibrator's labeled pairs: a slightly different interval, as valid)")
    strata = out.get("stratification") or {}
    if strata.get("stratified") and "strata" in strata:
        print(f"  stratified by {out['groups']} ({len(strata['strata'])} strata)")
    if out.get("clusters"):
        print(f"  cluster-robust: {out['clusters']['n']} clusters of {out['cluster']} "
              f"({out['clusters']['labeled']} with labels)")
    if out.get("estimand"):
        print(f"  estimand: {out['estimand']}")
    for line in left_out_lines(out.get("excluded") or [], {"label_off_scale": out.get("label_hint") or ""}):
        print(f"  {line}")
    for reason in out["degenerate"]:
        print(f"judgecp: warning: degenerate estimate: {reason} (judgecp gate fails it)", file=sys.stderr)
    return 0


def estimate_two_files(args: argparse.Namespace) -> EstimateResult:
    """``judgecp estimate --labeled L --unlabeled U``: PPI++ of L's labels with U's proxies (U: the other items);
    when L's items carry a ``sampling_probability`` (``judgecp select``), the active estimate over U's items."""
    args.input = args.labeled
    lab = read_data(args, require_label=False)
    args.input = args.unlabeled
    unl = read_data(args, require_label=False)
    if lab.kind != unl.kind:
        raise InputError(f"--labeled has {lab.kind} records, --unlabeled {unl.kind} records")
    if sampling_probabilities(lab) is not None:
        return estimate_drawn(lab, unl, alpha=args.alpha, groups=args.group, cluster=args.cluster,
                              names=(f"--labeled {args.labeled}", f"--unlabeled {args.unlabeled}"))
    rows_read = int(lab.n_read or lab.n) + int(unl.n_read or unl.n)
    args.input = args.labeled
    lab = read_data(args, require_label=True)  # rows without a label are left out and counted, as before
    return estimate_split(lab, unl, alpha=args.alpha, groups=args.group, cluster=args.cluster, rows_read=rows_read)


def add_parser(sub: Any) -> None:
    add_estimate(sub)
