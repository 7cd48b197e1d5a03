"""The ``judgecp`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecp.errors import InputError, MissingDependencyError
from judgecp.extraction import DEFAULT_FLOOR
from judgecp.scale import LikertScale


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"10"`` -> seeds 0..9; ``"0,3,7"`` -> those seeds."""
    try:
        if "," in text:
            seeds = tuple(int(s) for s in text.split(",") if s.strip())
        else:
            count = int(text)
            if count < 1:
                raise InputError(f"--seeds must be >= 1, got {count}")
            seeds = tuple(range(count))
    except ValueError as exc:
        raise InputError(f"--seeds takes a count (10) or a list (0,3,7), got {text!r}") from exc
    if len(set(seeds)) != len(seeds):
        raise InputError(f"--seeds lists a seed twice: {text!r}")
    return seeds


def resolve_methods(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """Method specs to run, and the ones ``all`` had to skip (missing optional dependency).

    ``all`` stands for every registered method at its defaults and may be
    combined with further specs: ``all,lac(probabilities=recalibrated)``.
    """
    from judgecp.plugins import is_available, method_classes, missing_dependency, split_method_list

    specs: list[str] = []
    skipped: list[dict[str, str]] = []
    for item in split_method_list(text):
        if item != "all":
            specs.append(item)
            continue
        for name, cls in method_classes().items():
            if is_available(cls):
                specs.append(name)
            else:
                skipped.append({"method": name, "reason": str(missing_dependency(cls))})
    return specs, skipped


def _add_evaluate(sub: Any) -> None:
    p = sub.add_parser(
        "evaluate",
        help="conformal intervals and judge diagnostics for a file of judge outputs",
        description="Evaluate a Likert judge from its score-token logprobs and human labels.",
    )
    p.add_argument("input", nargs="?", help="CSV/TSV or JSONL file, one row per judged item")
    p.add_argument("--example", action="store_true", help="run on the embedded synthetic example instead of INPUT")
    p.add_argument(
        "--format",
        choices=("table", "vlmeval"),
        default="table",
        help="table: CSV/TSV/JSONL of logprobs (default); vlmeval: a VLMEvalKit prediction file "
        "(outputs/<model>/<model>_<dataset>.xlsx) of a judgecp judge dataset, read with its logprob sidecar",
    )
    p.add_argument("--sidecar", action="append", default=[], metavar="FILE",
                   help="--format vlmeval: a logprob sidecar JSONL to use besides the ones found next to INPUT (repeatable)")
    cols = p.add_argument_group("columns")
    cols.add_argument("--label", help="human label column (default: label, gt_score, human_score, human_label)")
    cols.add_argument("--logprobs", metavar="GLOB", help="logprob columns, one per label, e.g. 's2_lp*' (default: auto)")
    cols.add_argument("--logprobs-json", metavar="COLUMN", help="column holding {\"1\": lp, ...} objects")
    cols.add_argument("--id", dest="id_column", help="id column (default: id, sample_id, doc_id, index)")
    cols.add_argument("--parsed", help="the judge's generated score column (default: parsed, parsed_score, judge_score; else argmax)")
    cols.add_argument("--group", help="field for per-group tables (diagnostics, coverage, RSG)")
    cols.add_argument("--join", action="append", default=[], metavar="FILE[:PREFIX]", help="add columns from FILE by id (repeatable)")
    cols.add_argument("--features", metavar="GLOB", help="extra feature columns for fitted models (multi-judge fusion)")
    cols.add_argument("--scale", default="1:5", help="rating scale MIN:MAX (default 1:5)")
    cols.add_argument("--floor", type=float, default=DEFAULT_FLOOR, help="floor for NaN/-inf logprobs (default log 1e-5)")
    cols.add_argument("--nan", choices=("exclude", "floor"), default="exclude", help="rows with NaN logprobs: exclude (default) or floor and flag")
    run = p.add_argument_group("protocol")
    run.add_argument("--alpha", type=float, default=0.1, help="miscoverage level (default 0.1: 90%% coverage)")
    run.add_argument("--methods", default="all", help="comma-separated method specs, e.g. 'naive,lac(probabilities=recalibrated)', or 'all'")
    run.add_argument("--seeds", default="10", help="number of random splits (10) or a list of seeds (0,1,2)")
    run.add_argument("--cal-fraction", type=float, default=0.5, help="fraction of rows that calibrate (default 0.5)")
    run.add_argument("--mondrian", metavar="FIELD", help="calibrate separately for each value of FIELD")
    run.add_argument("--jobs", type=int, default=1, help="processes for the seeds (default 1)")
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="OUT", help="write the full report as strict JSON")
    out.add_argument("--quiet", action="store_true", help="do not print the table")
    out.add_argument("--detail", metavar="METHOD", help="print coverage by label and by judge error, informativeness and midpoints for METHOD (default: the first)")
    p.set_defaults(func=cmd_evaluate)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from judgecp.data import load_likert
    from judgecp.protocol import Protocol, evaluate
    from judgecp.report import dumps, write_detail, write_table
    from judgecp.simulate import simulate_likert_judge

    scale = LikertScale.parse(args.scale)
    if args.example == bool(args.input):
        raise InputError("give an INPUT file or --example (not both)")
    if args.example:
        data = simulate_likert_judge(scale=scale)
        group = args.group or ("group" if not args.mondrian else None)
    elif args.format == "vlmeval":
        # Lazy: the adapter never imports VLMEvalKit to read its files.
        from judgecp.adapters.vlmeval.evaluation import load_vlmeval_likert

        group = args.group
        data = load_vlmeval_likert(args.input, sidecars=args.sidecar, group=group or args.mondrian)
    else:
        group = args.group
        data = load_likert(
            args.input,
            label=args.label,
            logprobs=args.logprobs,
            logprobs_json=args.logprobs_json,
            id_column=args.id_column,
            parsed=args.parsed,
            group=group or args.mondrian,
            joins=args.join,
            features=args.features,
            scale=scale,
            floor=args.floor,
            nan=args.nan,
        )
    specs, skipped = resolve_methods(args.methods)
    protocol = Protocol(
        alpha=args.alpha,
        methods=tuple(specs),
        seeds=parse_seeds(args.seeds),
        cal_fraction=args.cal_fraction,
        mondrian=args.mondrian,
        group=None if args.mondrian else group,
        jobs=args.jobs,
    )
    report = evaluate(data, protocol)
    if skipped:
        report["skipped"] = skipped
    if args.json:
        Path(args.json).write_text(dumps(report), encoding="utf-8")
    if not args.quiet:
        write_table(report, sys.stdout)
        detail = args.detail or next(iter(report["methods"]))
        if detail not in report["methods"]:
            raise InputError(f"--detail {detail!r} is not among the methods run")
        write_detail(report, detail, sys.stdout)
        if args.json:
            print(f"\nfull report: {args.json}")
    return 0


def _add_methods(sub: Any) -> None:
    p = sub.add_parser("methods", help="list the registered conformal methods")
    p.set_defaults(func=cmd_methods)


def cmd_methods(args: argparse.Namespace) -> int:
    from judgecp.plugins import method_classes, missing_dependency

    for name, cls in method_classes().items():
        missing = missing_dependency(cls)
        status = "" if missing is None else f"  [unavailable: {missing}]"
        kind = cls.output + (", fits a model" if cls.fits_model else "")
        print(f"{name:14s} {kind:24s} {cls.reference}{status}")
    return 0


def _add_bench(sub: Any) -> None:
    p = sub.add_parser("bench", help="benchmarks (timings go to the terminal, never to tests)")
    bsub = p.add_subparsers(dest="bench", required=True)
    b = bsub.add_parser("protocol", help="time every method over the seeds on the 5.7k-row features")
    b.add_argument("--data", help="features CSV (default: ../shared/data/mllm_judge/llava_critic_7b_features.csv, else synthetic)")
    b.add_argument("--seeds", default="10")
    b.add_argument("--methods", default="all")
    b.add_argument("--jobs", type=int, default=1)
    b.set_defaults(func=cmd_bench_protocol)


def cmd_bench_protocol(args: argparse.Namespace) -> int:
    from judgecp.bench import bench_protocol

    specs, skipped = resolve_methods(args.methods)
    bench_protocol(args.data, specs, parse_seeds(args.seeds), args.jobs, sys.stdout)
    for s in skipped:
        print(f"  {s['method']}: skipped ({s['reason']})")
    return 0


def _add_vlmeval(sub: Any) -> None:
    p = sub.add_parser(
        "vlmeval",
        help="run VLMEvalKit's run.py with judgecp's datasets and models registered; build judge TSVs",
        add_help=False,
        prefix_chars="\0",  # every argument goes to the adapter, --help included
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_vlmeval)


def cmd_vlmeval(args: argparse.Namespace) -> int:
    from judgecp.adapters.vlmeval.cli import main as vlmeval_main

    return int(vlmeval_main(args.args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="judgecp", description="How far can a model judge be trusted? Conformal reliability metrics for judges."
    )
    from judgecp import __version__

    parser.add_argument("--version", action="version", version=f"judgecp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_evaluate(sub)
    _add_methods(sub)
    _add_bench(sub)
    _add_vlmeval(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (InputError, MissingDependencyError) as exc:
        print(f"judgecp: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
