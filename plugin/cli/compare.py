"""``judgecp compare``: the judge-corrected difference of two runs' means, B - A (docs/nightly.md).

The statistics are :mod:`judgecp.workflows.nightly.compare`'s; this module reads the two runs (a file each, or a harness
results folder) and prints the difference, its design and its label counts.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions, left_out_lines
from judgecp.base.flags import level
from judgecp.base.scale import LikertScale
from judgecp.cli.calibrators import CLUSTER_HELP, _input_flags, _write_json, read_data
from judgecp.cli.evaluate import check_output
from judgecp.data import Fields
from judgecp.data.formats import record_formats
from judgecp.data.tables import table_from_rows
from judgecp.kinds.reading import from_table
from judgecp.workflows.nightly.compare import compare


def add_compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="the judge-corrected difference of two runs' means (B - A) with valid intervals",
        description="Two runs judged by the same judge, each with zero or more human labels (rows with an "
        "empty label are unlabeled): PPI++, labeled-only and judge-only intervals for the difference of "
        "the mean human score (win rate, accuracy), B - A; paired by id when the runs share items; per "
        "group (task, --group) and pooled.",
    )
    p.add_argument("a", metavar="A", help="run A (the baseline): a table, records, a harness output file or folder")
    p.add_argument("b", metavar="B", help="run B (the candidate), as A")
    p.add_argument("--json", metavar="OUT", help="write the comparison as JSON (difference.ppi.lower, ...)")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage of the intervals (default 0.1)")
    p.add_argument("--paired", choices=("auto", "yes", "no"), default="auto",
                   help="pair items by id (auto: when at least half of each run's items are shared)")
    p.add_argument("--stratify", choices=("auto", "yes", "no"), default="auto",
                   help="stratify each run's estimate by --group (default: task when present): auto when every "
                   "stratum has 10 labels (smaller ones merged), yes, or no")
    p.add_argument("--cluster", metavar="FIELD", help=CLUSTER_HELP + "; a value names one cluster in both runs")
    _input_flags(p)
    p.set_defaults(func=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    check_output(args, {"--json": args.json})
    a, b = read_run(args, args.a), read_run(args, args.b)
    out = compare(a, b, alpha=args.alpha, group=args.group, paired=args.paired, stratify=args.stratify,
                  cluster=args.cluster)
    _write_json(args.json, out)
    print(format_compare(out))
    for reason in out["degenerate"]:
        print(f"judgecp: warning: degenerate difference: {reason} (judgecp gate fails it)", file=sys.stderr)
    return 0


def read_run(args: argparse.Namespace, path: str) -> Any:
    """One run: a file as every command reads it, or a harness results folder (the files directly in it that a
    registered format recognises: lm-eval samples files, VLMEvalKit prediction files), their records together.

    With several files, an item's id is prefixed by its task (or its file's name), as doc ids repeat across tasks.
    """
    folder = Path(path)
    if not folder.is_dir():
        args.input = path
        return read_data(args, require_label=False)

    formats = record_formats()
    batches = []
    for file in sorted(p for p in folder.iterdir() if p.is_file()):
        fmt = next((f for f in formats.values() if f.sniff(file)), None)
        if fmt is not None:
            batches.append((file, fmt.read(file, kind=args.kind)))
    if not batches:
        raise InputError(f"{folder}: no harness output in this folder ({', '.join(formats)} files: "
                         f"{', '.join(f.description for f in formats.values())})")
    records, excluded = [], Exclusions()
    for file, batch in batches:
        excluded.merge(batch.excluded)
        for rec in batch.records:
            key = "pair_id" if "pair_id" in rec else "id"
            prefix = f"{rec.get('task') or file.stem}/" if len(batches) > 1 else ""
            records.append({**rec, key: f"{prefix}{rec.get(key)}"})
    table = table_from_rows(records, source=str(folder), excluded=excluded,
                            n_read=sum(b.n_read or len(b.records) for _, b in batches))
    fields = Fields(label=args.label, id=args.id_column, logprobs=args.logprobs, prediction=args.prediction,
                    group=args.group, joins=tuple(args.join))
    options: dict[str, Any] = {"scale": LikertScale.parse(args.scale)} if args.scale else {}
    return from_table(table, args.kind or batches[0][1].kind, fields, require_label=False, **options)


def format_compare(out: dict[str, Any]) -> str:
    d = out["difference"]
    match = out["matching"]
    design = (f"paired on the {match['shared']} items both runs judged" if out["design"] == "paired"
              else "two samples")
    lines = [f"{out['target']}, {design}, {1 - out['alpha']:.0%} intervals:"]
    for name in ("ppi", "labeled_only", "judge_only"):
        e = d[name]
        lines.append(f"  {name:<13} {e['mean']:+.4f}  [{e['lower']:+.4f}, {e['upper']:+.4f}]")
    n = out["n_labeled"]
    both = f"; {out['n_labeled_pairs']} items labeled in both runs" if out["design"] == "paired" else ""
    worth = f", worth {d['effective_labels']:.0f} without the judge" if math.isfinite(d["effective_labels"]) else ""
    lines.append(f"  {d['n_labels']} labels (A {n['a']}, B {n['b']}{both}){worth}")
    if out.get("labels_unused"):
        lines.append(f"  {out['labels_unused']} labels on items only one run judged: not in the paired estimand")
    if out.get("labels_left_out"):
        lines.append(f"  {out['labels_left_out']} labels of items without a judge proxy left out (2 are needed)")
    for run in ("a", "b"):
        if (out["runs"][run].get("no_proxy") or {}).get("n"):
            np_info = out["runs"][run]["no_proxy"]
            lines.append(f"  run {run.upper()}: {np_info['n']} items without a judge proxy ({np_info['n_labeled']} "
                         "labeled), their own stratum")
    strata = out.get("stratification") or {}
    for run in ("a", "b"):
        info = strata.get(run) or {}
        if info.get("stratified") and "strata" in info:
            lines.append(f"  run {run.upper()} stratified by {out['group']} ({len(info['strata'])} strata)")
    if out.get("clusters"):
        lines.append(
            f"  cluster-robust: {out['clusters']['a']} and {out['clusters']['b']} clusters of {out['cluster']}"
        )
    for run in ("a", "b"):
        info = out["runs"][run]
        for line in left_out_lines(info.get("excluded") or [], {"label_off_scale": info.get("label_hint") or ""}):
            lines.append(f"  run {run.upper()} {line}")
    for name, res in (out.get("by_group") or {}).items():
        if "error" in res:
            lines.append(f"  {out['group']}={name}: no interval ({res['error']})")
        else:
            e = res["difference"]["ppi"]
            lines.append(f"  {out['group']}={name}: PPI++ {e['mean']:+.4f} [{e['lower']:+.4f}, {e['upper']:+.4f}]")
    for run, names in (out.get("groups_only_in") or {}).items():
        if names:
            lines.append(f"  {out['group']} only in run {run.upper()} (not compared): {', '.join(names)}")
    return "\n".join(lines)
