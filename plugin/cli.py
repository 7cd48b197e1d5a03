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
    p.add_argument(
        "--kind",
        choices=("likert", "pairwise", "mcq", "parc"),
        default=None,
        help="likert: scores on a scale (default); pairwise: A/B verdicts in both orders; "
        "mcq: multiple-choice answers; parc: multiple choice across prompt variations. "
        "--format vlmeval: read from the file when not given",
    )
    p.add_argument("--example", action="store_true", help="run on the embedded synthetic example instead of INPUT")
    p.add_argument(
        "--format",
        choices=("table", "vlmeval"),
        default="table",
        help="table: CSV/TSV/JSONL of logprobs (default); vlmeval: a VLMEvalKit prediction file "
        "(outputs/<model>/<model>_<dataset>.xlsx) of a judgecp dataset or, with an -lp model, of a VLMEvalKit "
        "multiple-choice benchmark, read with its logprob sidecar",
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
    pw = p.add_argument_group("pairwise (--kind pairwise)")
    pw.add_argument("--alphas", default="0.05,0.1,0.15,0.2,0.25", help="target risk levels")
    pw.add_argument("--splits", type=int, default=1000, help="random calibration/test splits (default 1000)")
    pw.add_argument("--signal", default="bpe", help="uncertainty signal for the controllers: bpe, predictive, verbalized, agreement")
    pw.add_argument("--controllers", default="scope,clopper_pearson,naive,heuristic,vanilla")
    pw.add_argument("--delta", type=float, default=0.1, help="Clopper-Pearson controller: 1 - confidence (default 0.1)")
    pa = p.add_argument_group("parc (--kind parc)")
    pa.add_argument("--reference", choices=("variation", "original"), default="variation",
                    help="prompts whose calibration half sets the certainty threshold")
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="OUT", help="write the full report as strict JSON")
    out.add_argument("--quiet", action="store_true", help="do not print the table")
    out.add_argument("--detail", metavar="METHOD", help="print coverage by label and by judge error, informativeness and midpoints for METHOD (default: the first)")
    p.set_defaults(func=cmd_evaluate)


def _write(report: dict[str, Any], args: argparse.Namespace, table: Any) -> None:
    from judgecp.report import dumps

    if args.json:
        Path(args.json).write_text(dumps(report), encoding="utf-8")
    if not args.quiet:
        table(report, sys.stdout)
        if args.json:
            print(f"\nfull report: {args.json}")


def _parse_floats(text: str, option: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise InputError(f"{option} takes numbers separated by commas, got {text!r}") from exc


def _with_input_section(report: dict[str, Any], data: Any) -> dict[str, Any]:
    """A reader's summary the data carries (``--format vlmeval``: ``vlmeval``) goes into the report."""
    section = getattr(data, "vlmeval", None)
    if section is not None:
        report["vlmeval"] = section
    return report


def cmd_evaluate_pairwise(args: argparse.Namespace, data: Any = None) -> int:
    from judgecp.pairwise import (
        PairwiseProtocol,
        evaluate_pairwise,
        load_pairwise,
        simulate_pairwise_judge,
    )
    from judgecp.report import write_pairwise_table

    if data is None:
        data = simulate_pairwise_judge() if args.example else load_pairwise(args.input, group=args.group)
    protocol = PairwiseProtocol(
        alphas=_parse_floats(args.alphas, "--alphas"),
        n_splits=args.splits,
        cal_fraction=args.cal_fraction,
        signal=args.signal,
        controllers=tuple(c.strip() for c in args.controllers.split(",") if c.strip()),
        delta=args.delta,
    )
    _write(_with_input_section(evaluate_pairwise(data, protocol), data), args, write_pairwise_table)
    return 0


def cmd_evaluate_mcq(args: argparse.Namespace, data: Any = None) -> int:
    from judgecp.mcq import (
        DEFAULT_MCQ_METHODS,
        MCQProtocol,
        evaluate_mcq,
        load_mcq,
        mcq_from_records,
    )
    from judgecp.plugins import split_method_list
    from judgecp.report import write_mcq_table
    from judgecp.simulate import simulate_mcq_records

    if data is None:
        data = mcq_from_records(simulate_mcq_records(), source="example: synthetic MCQ model") if args.example else load_mcq(args.input)
    methods = DEFAULT_MCQ_METHODS if args.methods == "all" else tuple(split_method_list(args.methods))
    group_by = (args.group,) if args.group else ("dataset", "category")
    protocol = MCQProtocol(args.alpha, methods, parse_seeds(args.seeds), args.cal_fraction, group_by)
    _write(_with_input_section(evaluate_mcq(data, protocol), data), args, write_mcq_table)
    return 0


def cmd_evaluate_parc(args: argparse.Namespace, data: Any = None) -> int:
    from judgecp.mcq import load_mcq, mcq_from_records
    from judgecp.parc import PARCProtocol, evaluate_parc
    from judgecp.report import write_parc_table
    from judgecp.simulate import simulate_parc_records

    if data is None:
        data = mcq_from_records(simulate_parc_records(), source="example: synthetic PARC records") if args.example else load_mcq(args.input)
    protocol = PARCProtocol(args.alpha, parse_seeds(args.seeds), args.cal_fraction, args.reference)
    _write(_with_input_section(evaluate_parc(data, protocol), data), args, write_parc_table)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    if args.example == bool(args.input):
        raise InputError("give an INPUT file or --example (not both)")
    kind, data = args.kind, None
    if args.format == "vlmeval" and not args.example:
        # Lazy: the adapter never imports VLMEvalKit to read its files; it tells the kind.
        from judgecp.adapters.vlmeval.evaluation import load_vlmeval

        kind, data = load_vlmeval(args.input, kind=kind, sidecars=args.sidecar, group=args.group or args.mondrian)
    kind = kind or "likert"
    if kind != "likert":
        return {"pairwise": cmd_evaluate_pairwise, "mcq": cmd_evaluate_mcq, "parc": cmd_evaluate_parc}[kind](args, data)
    return cmd_evaluate_likert(args, data)


def cmd_evaluate_likert(args: argparse.Namespace, data: Any = None) -> int:
    from judgecp.data import load_likert
    from judgecp.protocol import Protocol, evaluate
    from judgecp.report import write_detail, write_table
    from judgecp.simulate import simulate_likert_judge

    scale = LikertScale.parse(args.scale)
    if args.example:
        data = simulate_likert_judge(scale=scale)
        group = args.group or ("group" if not args.mondrian else None)
    elif data is not None:  # read by the vlmeval adapter
        group = args.group
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
    detail = args.detail or next(iter(report["methods"]))
    if detail not in report["methods"]:
        raise InputError(f"--detail {detail!r} is not among the methods run")

    def table(rep: dict[str, Any], out: Any) -> None:
        write_table(rep, out)
        write_detail(rep, detail, out)

    _write(report, args, table)
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
    b = bsub.add_parser("scope", help="time SCOPE and the other controllers over splits x levels")
    b.add_argument("--pairs", type=int, default=2000)
    b.add_argument("--splits", type=int, default=1000)
    b.add_argument("--alphas", default="0.05,0.1,0.15,0.2,0.25")
    b.set_defaults(func=cmd_bench_scope)
    c = bsub.add_parser("capture", help="forward passes and wall time of the lm-eval judge models on tiny local models (needs judgecp[lm-eval])")
    c.add_argument("--documents", type=int, default=24, help="documents per measurement (default 24)")
    c.add_argument("--gen-tokens", type=int, default=64, help="tokens generated per document for chain of thought (default 64)")
    c.add_argument("--repeats", type=int, default=3, help="timed repetitions; the median is reported (default 3)")
    c.set_defaults(func=cmd_bench_capture)


def cmd_bench_protocol(args: argparse.Namespace) -> int:
    from judgecp.bench import bench_protocol

    specs, skipped = resolve_methods(args.methods)
    bench_protocol(args.data, specs, parse_seeds(args.seeds), args.jobs, sys.stdout)
    for s in skipped:
        print(f"  {s['method']}: skipped ({s['reason']})")
    return 0


def cmd_bench_scope(args: argparse.Namespace) -> int:
    from judgecp.bench import bench_scope

    bench_scope(args.pairs, args.splits, _parse_floats(args.alphas, "--alphas"), sys.stdout)
    return 0


def cmd_bench_capture(args: argparse.Namespace) -> int:
    from judgecp.adapters.lm_eval.bench import bench_capture

    bench_capture(documents=args.documents, gen_tokens=args.gen_tokens, repeats=args.repeats, out=sys.stdout)
    return 0


def _add_lm_eval(sub: Any) -> None:
    p = sub.add_parser("tasks-path", help="print the folder of judgecp's lm-eval tasks (for --include_path)")
    p.set_defaults(func=lambda args: _lm_eval_cli().print_tasks_path())
    # Everything after `lm-eval` goes to lm-eval's own parser (see main()).
    sub.add_parser(
        "lm-eval",
        help="run lm-eval with judgecp's models and tasks registered (where the startup hook is off)",
        add_help=False,
    )


def _lm_eval_cli() -> Any:
    """The adapter's command-line module, imported only when an lm-eval subcommand runs."""
    from judgecp.adapters.lm_eval import cli

    return cli


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
    _add_lm_eval(sub)
    _add_vlmeval(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["lm-eval"]:
            return int(_lm_eval_cli().run_lm_eval(argv[1:]))
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args))
    except (InputError, MissingDependencyError) as exc:
        print(f"judgecp: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
