"""``judgecp records``, ``judgecp methods`` and ``judgecp bench``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.flags import levels, whole
from judgecp.base.outputs import atomic_write_text, check_outputs
from judgecp.base.scale import LabelScale, LikertScale
from judgecp.bench.scale import bench_scale
from judgecp.bench.studies import bench_protocol, bench_scope
from judgecp.cli.evaluate import check_output, flag_name
from judgecp.data import Fields
from judgecp.data.formats import record_format, sniff_format
from judgecp.data.judge import name_judge, name_judge_in_records
from judgecp.data.tables import check_readable, read_table, write_records
from judgecp.kinds import table_kinds
from judgecp.kinds.protocol import parse_settings
from judgecp.kinds.reading import from_table, to_records
from judgecp.kinds.registry import (
    controller_classes,
    method_classes,
    method_parameters,
    missing_dependency,
)
from judgecp.stats.methods.spec import split_method_list
from judgecp.synthetic.judges import simulate_likert_judge


def add_records(sub: Any) -> None:
    p = sub.add_parser(
        "records",
        help="write any supported input as judgecp.record/1 JSONL (one currency for every tool)",
        description="Read a table (with the column flags of `judgecp evaluate`) or a harness output file "
        "(--format lm-eval|vlmeval) and write its judgments as judgecp.record/1 records, one per line.",
    )
    p.add_argument("input")
    p.add_argument("-o", "--output", required=True, help="records JSONL to write")

    p.add_argument("--kind", choices=table_kinds())
    p.add_argument(
        "--format",
        default="auto",
        help="auto (default: recognised by content), table, or a registered harness format (lm-eval, vlmeval)",
    )
    p.add_argument("--sidecar", action="append", default=[], metavar="FILE", help="--format vlmeval: extra sidecar")
    p.add_argument("--label")
    p.add_argument("--id", dest="id_column")
    p.add_argument("--logprobs", metavar="COLUMN|GLOB")
    p.add_argument("--prediction", "--parsed", dest="prediction")
    p.add_argument("--group")
    p.add_argument("--join", action="append", default=[], metavar="FILE[:PREFIX]")
    p.add_argument("--scale", help="rating scale MIN:MAX (Likert; default 1:5)")
    p.add_argument("--label-scale", dest="label_scale", metavar="LO:HI",
                   help="Likert: the labels' own range (records keep the label as given and carry label_scale)")
    p.add_argument("--unlabeled", action="store_true", help="keep rows without a label (written with label null)")
    p.add_argument("--judge", metavar="NAME", help="the judge's name, written in every record (records naming "
                   "another judge are an error)")
    p.set_defaults(func=run_records)


def run_records(args: argparse.Namespace) -> int:
    from pathlib import Path

    check_output(args, {"--output": args.output})
    path = Path(args.input)
    check_readable(path)
    fmt = sniff_format(path) if args.format == "auto" else args.format
    if fmt != "table":
        batch = record_format(fmt).read(path, **({"sidecars": args.sidecar} if args.sidecar else {}))
        if args.judge is not None:

            name_judge_in_records(batch.records, args.judge)
        count = write_records(args.output, batch.records)
        left = ", ".join(f"{e['reason']} {e['count']}" for e in batch.excluded.to_json()) or "none"
        print(f"{count} records written to {args.output}; left out while reading: {left}", file=sys.stderr)
        return 0
    fields = Fields(label=args.label, id=args.id_column, logprobs=args.logprobs, prediction=args.prediction,
                    group=args.group, joins=tuple(args.join))
    options: dict[str, Any] = {"require_label": not args.unlabeled}
    if args.scale:
        options["scale"] = LikertScale.parse(args.scale)
    if args.label_scale:
        options["label_scale"] = LabelScale.parse(args.label_scale)
    table = read_table(path)
    if args.judge is not None:

        name_judge(table, args.judge)
    data = from_table(table, args.kind, fields, **options)
    count = write_records(args.output, to_records(data))
    left = ", ".join(f"{e['reason']} {e['count']}" for e in data.excluded.to_json()) or "none"
    print(f"{count} {data.kind} records written to {args.output} ({data.n_read} rows read); left out: {left}",
          file=sys.stderr)
    return 0


def add_example(sub: Any) -> None:
    p = sub.add_parser(
        "example", help="write the embedded synthetic example's records: a calibration set and two nightly runs",
        description="Write judgecp.record/1 files of the synthetic Likert judge (judgecp.synthetic.judges; not a real "
        "model) into OUT: calibration.jsonl (600 labeled items), night_a.jsonl and night_b.jsonl (3,000 items each, "
        "the first 150 labeled; the judge is kinder to run B, whose answers humans rate the same). The nightly "
        "loop of README.md and docs/nightly.md runs on them.",
    )
    p.add_argument("out", help="folder to write into (created; a file of these names that is not the example "
                   "is kept and the command refused, unless --force)")
    p.add_argument("--force", action="store_true", help="replace files of these names that differ from the example")
    p.set_defaults(func=run_example)


#: The judge ``judgecp example``'s records name (a synthetic one; not a model).
EXAMPLE_JUDGE = "judgecp-synthetic-likert"
#: ``judgecp example``'s files: name, (items, seed, judge bias), labeled items.
EXAMPLE_FILES = (("calibration.jsonl", 600, 1, 0.3, 600), ("night_a.jsonl", 3000, 2, 0.3, 150),
                 ("night_b.jsonl", 3000, 3, 0.6, 150))


def run_example(args: argparse.Namespace) -> int:
    import filecmp
    import os
    import tempfile
    from pathlib import Path

    if not args.out.strip():
        raise InputError("judgecp example: OUT is empty; name the folder to write into")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    check_outputs({name: str(out / name) for name, *_ in EXAMPLE_FILES}, inputs=[])
    with tempfile.TemporaryDirectory(dir=out, prefix=".judgecp-example-") as tmp:
        for name, n, seed, bias, labeled in EXAMPLE_FILES:
            records = to_records(simulate_likert_judge(n, seed=seed, judge_bias=bias))
            prefix = name.split(".")[0].removeprefix("night_") + "-"
            for i, rec in enumerate(records):
                rec["id"] = prefix + rec["id"]
                rec["judge"] = EXAMPLE_JUDGE  # named, so calibrate records it and apply checks it
                if i >= labeled:
                    rec["label"] = None
            write_records(str(Path(tmp) / name), records)
        # A file of these names the user changed (labels filled in, say) is not lost to a re-run.
        changed = [name for name, *_ in EXAMPLE_FILES
                   if (out / name).exists() and not filecmp.cmp(out / name, Path(tmp) / name, shallow=False)]
        if changed and not args.force:
            raise InputError(f"{out}: {', '.join(changed)} already there and not the example; choose another folder, "
                             "or --force to replace")
        for name, *_ in EXAMPLE_FILES:
            os.replace(Path(tmp) / name, out / name)
    print(f"synthetic example written to {out}: " + ", ".join(f"{name} ({n} items, {labeled} labeled)"
                                                                 for name, n, _, _, labeled in EXAMPLE_FILES),
          file=sys.stderr)
    return 0


def add_methods(sub: Any) -> None:
    p = sub.add_parser("methods", help="list the registered conformal methods and risk controllers")
    p.set_defaults(func=run_methods)


def run_methods(args: argparse.Namespace) -> int:

    print("conformal methods (--methods NAME or NAME(param=value, ...); any method also takes conditional=label, "
          "one that fits a model cv=K and features=entropy+margin+mode, docs/beyond.md):")
    for name, cls in method_classes().items():
        missing = missing_dependency(cls)
        status = "" if missing is None else f"  [unavailable: {missing}]"
        kind = cls.output + (", fits a model" if cls.fits_model else "")
        print(f"  {name:14s} {kind:24s} {cls.reference}{status}")
        params = method_parameters(cls)
        if params:
            print(f"  {'':14s} parameters: {', '.join(params)}")
        print(f"  {'':14s} one split of n rows: time {cls.complexity[0]}; memory {cls.complexity[1]}")
    print("risk controllers (--controllers, pairwise):")
    for name, ctrl in controller_classes().items():
        print(f"  {name:16s} {'guaranteed' if ctrl.guaranteed else 'no guarantee':13s} {ctrl.reference}")
    return 0


def add_bench(sub: Any) -> Any:
    """``judgecp bench``; returns its sub-parser action (adapters add benchmarks to it)."""
    p = sub.add_parser("bench", help="benchmarks (timings go to the terminal, never to tests)")
    bsub = p.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    b = bsub.add_parser("protocol", help="time every method over the splits on the 5.7k-row features")
    b.add_argument(
        "--data", help="features CSV (default: ../shared/data/mllm_judge/llava_critic_7b_features.csv, else synthetic)"
    )
    b.add_argument("--splits", default="10")
    b.add_argument("--methods", default="all")
    b.add_argument("--jobs", default="1")
    b.set_defaults(func=run_bench_protocol)
    b = bsub.add_parser("scope", help="time SCOPE and the other controllers over splits x levels")
    b.add_argument("--pairs", type=whole(at_least=2), default=2000)
    b.add_argument("--splits", type=whole(), default=1000)
    b.add_argument("--alphas", type=levels, default="0.05,0.1,0.15,0.2,0.25")
    b.set_defaults(func=run_bench_scope)
    b = bsub.add_parser("scale", help="time and peak memory at a million records and pairs, and every method at 100k")
    b.add_argument("--rows", type=whole(at_least=2), default=1_000_000, help="Likert records (default 1,000,000)")
    b.add_argument("--pairs", type=whole(at_least=2), default=1_000_000, help="pairs (default 1,000,000)")
    b.add_argument("--pair-splits", type=whole(), default=1000, help="pairwise splits (default 1000)")
    b.add_argument(
        "--method-rows", type=whole(at_least=2), default=100_000, help="records per method (default 100,000)"
    )
    b.add_argument("--methods", help="methods to time at --method-rows (default: every registered method)")
    b.add_argument("--json", help="write the measurements as JSON")
    b.set_defaults(func=run_bench_scale)
    return bsub


def run_bench_scale(args: argparse.Namespace) -> int:
    import json

    check_output(args, {"--json": args.json})
    methods = split_method_list(args.methods) if args.methods else None
    results = bench_scale(sys.stdout, rows=args.rows, pairs=args.pairs, pair_splits=args.pair_splits,
                          method_rows=args.method_rows, methods=methods)
    if args.json:
        atomic_write_text(args.json, json.dumps(results, indent=2) + "\n")
    return 0


def run_bench_protocol(args: argparse.Namespace) -> int:

    protocol = parse_settings({"methods": args.methods, "splits": args.splits, "jobs": args.jobs}, kind="likert",
                              spell=flag_name)
    bench_protocol(args.data, protocol, sys.stdout)
    for name, reason in protocol.skipped:
        print(f"  {name}: skipped ({reason})")
    return 0


def run_bench_scope(args: argparse.Namespace) -> int:

    protocol = parse_settings({"alphas": args.alphas, "splits": args.splits}, kind="pairwise", spell=flag_name)
    bench_scope(args.pairs, protocol, sys.stdout)
    return 0
