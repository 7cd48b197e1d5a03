"""``judgecp evaluate``: the repeated-split study of a judge, from a file or the embedded example.

The flags mean the same for every ``--kind``: the column flags become a
:class:`judgecp.data.Fields`, the protocol flags go through
:func:`judgecp.kinds.protocol.parse_settings` (a flag a kind does not use is an
error, never silently ignored), and the report is :func:`judgecp.evaluate`'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.flags import level, levels, number
from judgecp.base.outputs import atomic_write_text, check_outputs
from judgecp.base.scale import LabelScale, LikertScale
from judgecp.data import Fields
from judgecp.data.fields import _parse_join
from judgecp.data.formats import record_format, sniff_format
from judgecp.data.judge import name_judge
from judgecp.data.row_features import with_row_features
from judgecp.data.tables import check_readable, read_table
from judgecp.kinds.protocol import parse_settings
from judgecp.kinds.reading import TABLE_KIND, from_table
from judgecp.kinds.registry import get_kind, kind_names, kinds
from judgecp.kinds.sweep import write_sweep
from judgecp.workflows.study import evaluate, write_report
from judgecp.workflows.study.warnings import summary_lines

#: Protocol flags (argparse dest -> setting name).
PROTOCOL_FLAGS = ("alpha", "alphas", "methods", "splits", "seeds", "random_state", "cal_fraction", "mondrian",
                  "group", "jobs", "signal", "controllers", "delta", "reference", "label_scale")


#: ``--label-scale``, the same in every command that reads Likert labels.
LABEL_SCALE_HELP = ("the labels' own range when it is not the judge's scale (e.g. 0:1 for averaged scores): mapped "
                    "onto the scale by LO -> MIN, HI -> MAX; non-integer labels are kept (interval methods only; "
                    "docs/beyond.md)")


def flag_name(setting: str) -> str:
    return "--" + setting.replace("_", "-")


def add_parser(sub: Any) -> None:

    p = sub.add_parser(
        "evaluate",
        help="the repeated-split study of a judge: conformal sets, selective risk, PARC, diagnostics",
        description="Evaluate a judge from its answer-token logprobs and human labels (any kind, any input).",
    )
    p.add_argument(
        "input", nargs="?", help="CSV/TSV/JSONL/Parquet of judge outputs, or a harness output file (--format)"
    )
    p.add_argument("--kind", choices=kind_names(), default=None,
                   help="likert: scores on a scale; pairwise: A/B verdicts in both orders; mcq: multiple-choice "
                   "answers; parc: multiple choice across prompt variations; ensemble: one judge's answers under "
                   "many prompts, pooled (default: the records' shape, else likert)")
    p.add_argument(
        "--example", action="store_true", help="run on the embedded synthetic example of --kind instead of INPUT"
    )
    p.add_argument("--format", default="auto",
                   help="auto (default): recognise the input by its content (an lm-eval samples file, a VLMEvalKit "
                   "prediction file, judgecp records, a table); or name it: table (CSV/TSV/JSONL/Parquet), lm-eval, "
                   "vlmeval")
    p.add_argument("--sidecar", action="append", default=[], metavar="FILE",
                   help="--format vlmeval: a logprob sidecar JSONL besides the ones found next to INPUT (repeatable)")
    cols = p.add_argument_group("columns (every kind)")
    cols.add_argument("--label", help="human label column (default: label, or the kind's usual names)")
    cols.add_argument("--id", dest="id_column", help="id column (default: id, sample_id, doc_id, index)")
    cols.add_argument("--logprobs", metavar="COLUMN|GLOB",
                      help="a column of {token: logprob} objects, or a glob of one column per token ('s2_lp*', 'lp_*')")
    cols.add_argument(
        "--prediction",
        "--parsed",
        dest="prediction",
        help="the judge's own answer (Likert: its parsed score; default: prediction, parsed, ...; else argmax)",
    )
    cols.add_argument("--group", help="field for per-group tables (Likert, pairwise) or grouping (multiple choice)")
    cols.add_argument(
        "--join", action="append", default=[], metavar="FILE[:PREFIX]", help="add columns from FILE by id (repeatable)"
    )
    cols.add_argument(
        "--judge", metavar="NAME", help="the judge's name, for records that name none (calibrators check it)"
    )
    lik = p.add_argument_group("Likert (--kind likert)")
    lik.add_argument("--features", metavar="GLOB", help="extra feature columns for fitted models (multi-judge fusion)")
    lik.add_argument("--row-features", dest="row_features", metavar="FIELD[,FIELD]",
                     help="row fields as inputs of the fitted models: one indicator column per value of each FIELD "
                     "(e.g. task), and 'parsed' for the judge's parsed score (docs/beyond.md)")
    lik.add_argument("--scale", help="rating scale MIN:MAX (default 1:5)")
    lik.add_argument("--label-scale", dest="label_scale", metavar="LO:HI", help=LABEL_SCALE_HELP)
    lik.add_argument("--floor", type=number(), help="value for NaN/-inf logprobs that are floored (default log 1e-5)")
    lik.add_argument(
        "--nan", choices=("exclude", "floor"), help="rows with NaN logprobs: exclude (default) or floor and flag"
    )
    run = p.add_argument_group("protocol (every kind)")
    run.add_argument(
        "--alpha",
        type=level,
        help="miscoverage (Likert, multiple choice), PARC's LAC level, or pairwise headline risk (default 0.1)",
    )
    run.add_argument(
        "--alphas",
        type=levels,
        help="levels to sweep, comma-separated (pairwise default 0.05,0.1,0.15,0.2,0.25; "
        "Likert and multiple choice: the same study at each level, in the report's alpha_sweep)",
    )
    run.add_argument(
        "--methods",
        help="comma-separated conformal method specs, e.g. 'naive,lac(probabilities=recalibrated)', "
        "or 'all' for every registered method (default: Likert naive,lac, seconds on thousands of rows; "
        "multiple choice lac,aps,aps(randomized=False),raps,margin)",
    )
    run.add_argument("--splits", help="random calibration/test splits (default 10; pairwise 1000)")
    run.add_argument("--seeds", help="the splits' seeds as a list (0,3,7), or a count (same as --splits)")
    run.add_argument("--random-state", dest="random_state", help="seed of the first split (default 0)")
    run.add_argument(
        "--cal-fraction", dest="cal_fraction", type=level, help="calibration share of each split (default 0.5)"
    )
    run.add_argument("--mondrian", metavar="FIELD", help="calibrate separately for each value of FIELD (Likert)")
    run.add_argument("--jobs", help="processes for the splits (Likert; default 1)")
    pw = p.add_argument_group("pairwise (--kind pairwise)")
    pw.add_argument(
        "--signal", help="uncertainty the controllers threshold: bpe (default), predictive, verbalized, agreement"
    )
    pw.add_argument("--controllers", help="risk controllers (default scope,clopper_pearson,naive,heuristic,vanilla)")
    pw.add_argument("--delta", type=level, help="Clopper-Pearson controller: 1 - confidence (default 0.1)")
    pa = p.add_argument_group("PARC (--kind parc)")
    pa.add_argument("--reference", choices=("variation", "original"),
                    help="prompts whose calibration half sets the certainty threshold (default variation)")
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="OUT", help="write the full report as strict JSON")
    out.add_argument("--quiet", action="store_true", help="print neither the table nor progress lines (warnings still)")
    out.add_argument("--progress", action="store_true",
                     help="progress lines on stderr from the start (default: once the work runs past a few "
                     "seconds, a few lines a minute when stderr is not a terminal; none with --quiet)")
    out.add_argument(
        "--detail",
        metavar="METHOD",
        help="Likert: print coverage by label and by judge error, informativeness and midpoints for METHOD (default: "
             "the first)",
    )
    for kind in kinds().values():
        if kind.command is not None:
            kind.command.add_arguments(p)
    p.set_defaults(func=run_evaluate)


#: argparse dests that name files a command reads (its outputs must not replace them), and how a message
#: names each (a positional argument: "the input").
INPUT_DESTS = {"input": "the input", "calibrator": "the input", "labeled": "--labeled", "unlabeled": "--unlabeled",
               "sidecar": "--sidecar", "join": "--join", "embeddings": "--embeddings", "prompt_set": "--prompt-set",
               "a": "the input", "b": "the input", "pilot": "--pilot", "history": "--history"}


def input_paths(args: argparse.Namespace, *, skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The files ``args`` names as inputs, each with how a message names it (``--join FILE:PREFIX``: the file);
    ``skip``: dests checked as outputs instead (``history``, which apply appends to)."""

    paths = []
    for dest, what in INPUT_DESTS.items():
        value = getattr(args, dest, None) if dest not in skip else None
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item:
                paths.append((what, _parse_join(item)[0] if dest == "join" else item))
    return paths


def check_output(args: argparse.Namespace, outputs: dict[str, str | None], *, appended: tuple[str, ...] = ()) -> None:
    """Outputs that cannot be written, or would replace an input, are an error before any work
    (:func:`judgecp.base.outputs.check_outputs`; ``outputs``: flag -> path). ``appended``: the dests of files the
    command reads and writes (apply's ``history``): checked as outputs, not inputs."""

    check_outputs(outputs, inputs=input_paths(args, skip=appended))


def read_input(
    args: argparse.Namespace, kind: str | None, fields: Any, likert_options: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The validated data of ``args.input`` and the reader's own report section (if any)."""

    path = Path(args.input)
    check_readable(path)
    fmt = sniff_format(path) if args.format == "auto" else args.format
    if fmt == "table":
        if args.sidecar:
            raise InputError("--sidecar goes with --format vlmeval")
        table = read_table(path)
    else:
        options = {"sidecars": args.sidecar} if args.sidecar else {}
        batch = record_format(fmt).read(path, kind=kind, **options)
        table, kind = batch.table(), kind or batch.kind
    if getattr(args, "judge", None) is not None:

        name_judge(table, args.judge)
    return from_table(table, kind, fields, **likert_options), dict(table.info)


def run_evaluate(args: argparse.Namespace) -> int:

    if args.kind is not None and (command := get_kind(args.kind).command) is not None:
        return command.run(args)
    if args.example == bool(args.input):
        raise InputError("give an INPUT file or --example (not both)")
    if args.example and args.judge is not None:
        raise InputError("--judge names the judge of INPUT's records; the example's are synthetic")
    check_output(args, {"--json": args.json})
    for other in kinds().values():
        given = other.command.given(args) if other.command is not None else []
        if given:
            raise InputError(
                f"{', '.join(given)}: options of --kind {other.name}, not of --kind {args.kind or TABLE_KIND}"
            )
    fields = Fields(label=args.label, id=args.id_column, logprobs=args.logprobs, prediction=args.prediction,
                    group=args.group or args.mondrian, joins=tuple(args.join), features=args.features,
                    flags={"group": "--mondrian" if args.mondrian and not args.group else "--group",
                           "id": "--id", "prediction": "--prediction"})
    reader_options: dict[str, Any] = {}
    for name in ("scale", "floor", "nan"):
        if getattr(args, name) is not None:
            reader_options[name] = LikertScale.parse(args.scale) if name == "scale" else getattr(args, name)
    if args.label_scale is not None:
        if args.example:
            raise InputError("--label-scale maps the labels of an INPUT file; the --example judge has its own")
        reader_options["label_scale"] = LabelScale.parse(args.label_scale)
    info: dict[str, Any] = {}
    if args.example:
        kind = get_kind(args.kind or TABLE_KIND)
        data = kind.reader.example(**reader_options)
        if args.group is None and args.mondrian is None and kind.study.example_group is not None:
            args.group = kind.study.example_group  # the example's groups get their tables
    else:
        try:
            data, info = read_input(args, args.kind, fields, reader_options)
        except InputError as exc:
            for other in kinds().values():
                if other.command is not None:
                    exc = other.command.hint(exc, args)
            raise exc from None
        kind = get_kind(data.kind)
    kind.reader.check_options(reader_options, kind.name)
    if args.row_features:
        if not kind.reader.row_features:
            raise InputError(f"--row-features: an option of --kind likert, not of --kind {kind.name}")

        names = [n.strip() for n in args.row_features.split(",") if n.strip()]
        data = with_row_features(data, [n for n in names if n != "parsed"], parsed="parsed" in names)
    values = {name: getattr(args, name) for name in PROTOCOL_FLAGS}
    protocol = parse_settings(values, kind=kind.name, spell=flag_name)
    report = evaluate(data, protocol, **info)
    detail = kind.presenter.console_detail(report, args.detail, kind.name)
    if args.json:
        atomic_write_text(args.json, report.dumps())
    where = f"{args.json} (`warnings`)" if args.json else "the JSON report's `warnings` (--json OUT)"
    found = report.get("warnings", [])
    if args.example and found and all(w.get("warning") == "group_under_target" and not w.get("mondrian")
                                      for w in found):
        # the example's groups differ on purpose: what it shows is not a problem of the user's to act on
        for line in summary_lines(found, where):
            print(f"judgecp: note: expected on the embedded example, whose groups differ on purpose "
                  f"(--mondrian {args.group} calibrates each group): {line}", file=sys.stderr)
        found = []
    for line in summary_lines(found, where):
        print(f"judgecp: warning: {line}", file=sys.stderr)
    if not args.quiet:
        write_report(report, sys.stdout, detail=detail)
        write_sweep(report, sys.stdout)
        if args.methods is None and protocol.methods is None and protocol.method_specs(kind.name):
            print(f"\nmethods: {', '.join(protocol.method_specs(kind.name))} (the default; --methods all runs every "
                  "method, `judgecp methods` lists them)")
        if args.json:
            print(f"\nfull report: {args.json}")
    return 0
