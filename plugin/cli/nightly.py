"""``judgecp compare``, ``judgecp plan`` and ``judgecp select``: the nightly loop's questions (docs/nightly.md).

Did the new checkpoint get better, and by how much, with the judge's bias
removed (``compare``)? How many labels does an interval of a given
half-width take (``plan``)? Which items should be labeled next (``select``)?
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.exclusions import left_out_lines
from judgecp.base.flags import level, number, whole
from judgecp.cli.calibrators import CLUSTER_HELP, _input_flags, _write_json, raw_records, read_data
from judgecp.cli.compare import add_compare
from judgecp.cli.evaluate import check_output
from judgecp.data.tables import read_table, write_records
from judgecp.workflows.nightly.plan import (
    LabeledPairs,
    calibrator_pairs,
    is_calibrator,
    pilot_pairs,
    plan_labels,
    same_kind,
)
from judgecp.workflows.nightly.runs import (
    cluster_keys,
    item_ids,
    label_hint,
)
from judgecp.workflows.nightly.select import select
from judgecp.workflows.results import SelectResult

# -- plan --------------------------------------------------------------------------------------


def add_plan(sub: Any) -> None:
    p = sub.add_parser(
        "plan",
        help="how many labels give an interval of a given half-width (PPI++ and labels alone)",
        description="From a calibrator's labeled items or a pilot table's labeled rows: the judge-human "
        "relationship, and the number of labels for a target half-width with PPI++ and with labels alone.",
    )
    p.add_argument("input", help="a calibrator JSON (judgecp calibrate), or a pilot table or records with some labels")
    p.add_argument(
        "--half-width", dest="half_width", type=number(above=0), required=True, help="the interval half-width wanted"
    )
    p.add_argument("--unlabeled", type=number(above=0), default=None, metavar="N",
                   help="unlabeled items in the run (default: the pilot's unlabeled rows, else unbounded)")
    p.add_argument("--run", metavar="RUN", help="the run to plan for (read with the same flags): its unlabeled items "
                   "and its judge scores' variance are used, and the pilot is checked against its judge scores")
    p.add_argument("--mismatch", choices=("refuse", "warn"), default="refuse",
                   help="when the pilot's judge scores are unlike the run's: refuse (default), or plan with a warning")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage of the intervals (default 0.1)")
    p.add_argument("--confidence", type=level, default=0.9,
                   help="plan at this confidence bound of the pilot's label sd and correlation (their sampling error "
                   "only; default 0.9)")
    p.add_argument("--json", metavar="OUT", help="write the plan as JSON (labels.ppi, labels.labeled_only, assumed)")
    p.add_argument("--cluster", metavar="FIELD", help=CLUSTER_HELP + "; a pilot's clusters give the design effect "
                   "(the run's labels assumed to come in clusters like the pilot's); with --run, the run's clusters "
                   "give its proxy's, and both files' clusters count in the check")
    _input_flags(p)
    p.set_defaults(func=run_plan)


def labeled_pairs(args: argparse.Namespace, cluster: str | None = None, minimum: int = 0) -> LabeledPairs:
    """The labeled pairs of ``args.input``: a calibrator's PPI pairs or a pilot table's labeled rows."""
    path = Path(args.input)
    if is_calibrator(path):
        return calibrator_pairs(path, cluster)
    return pilot_pairs(read_data(args, require_label=False), path, cluster, minimum)


def run_plan(args: argparse.Namespace) -> int:
    check_output(args, {"--json": args.json})
    if args.run and args.unlabeled is not None:
        raise InputError("give --run or --unlabeled, not both (--run counts the run's unlabeled items)")
    pairs = labeled_pairs(args, args.cluster, minimum=4)
    run = None
    if args.run:
        args.input = args.run
        run = read_data(args, require_label=False)
    result = plan_labels(pairs, args.half_width, alpha=args.alpha, confidence=args.confidence,
                         mismatch=args.mismatch, run=run, run_name=args.run, n_unlabeled=args.unlabeled,
                         cluster=args.cluster)
    _write_json(args.json, result)
    out = result.to_json()
    print(format_plan(out))
    for warning in out["warnings"]:
        print(f"judgecp: warning: {warning}", file=sys.stderr)
    for reason in out["degenerate"]:
        print(f"judgecp: warning: degenerate plan: {reason} (judgecp gate fails it)", file=sys.stderr)
    return 0


def format_plan(out: dict[str, Any]) -> str:
    """The plan in three lines: the counts, what was assumed with what confidence, and the run it was checked on."""
    rel, labels = out["assumed"], out["labels"]
    unl = "unbounded" if rel["n_unlabeled"] is None else str(rel["n_unlabeled"])
    lines = [f"half-width {out['half_width']:g} at {1 - out['alpha']:.0%}: PPI++ {_count(labels['ppi'])} labels, "
             f"labels alone {_count(labels['labeled_only'])}",
             f"  assumed from {rel['from']}: correlation {rel['correlation']:.3f} (>= {rel['correlation_lower']:.3f}), "
             f"label sd {rel['sd_label']:.3f} (<= {rel['sd_label_upper']:.3f}), bounds at confidence "
             f"{rel['confidence']:g} for the pilot's sampling error only, not for a run unlike the pilot; "
             f"unlabeled items {unl}"]
    run = rel.get("run")
    if run:
        check = run["check"]
        lines.append(f"  {run['from']}: {run['n_items']} items, judge score sd {run['sd_proxy']:.3f}; "
                     + ("its judge scores are unlike the pilot's" if check["mismatch"] else
                        "the pilot's judge scores are like it") + f" ({check['message']})")
    deff = rel.get("design_effect")
    if deff:
        lines.append(
            f"  clustered by {out['cluster']} ({deff['n_clusters']} clusters of {deff['mean_cluster_size']:.1f} "
            f"labeled items on average): design effect {deff['labels']:.2f} for labels alone, "
            f"{deff['residual']:.2f} for PPI++"
        )
    lines += [f"  {line}" for line in left_out_lines(out.get("excluded") or [],
                                                     {"label_off_scale": out.get("label_hint") or ""})]
    return "\n".join(lines)


def _count(n: int | None) -> str:
    return "not reachable" if n is None else str(n)


# -- select ------------------------------------------------------------------------------------


def add_select(sub: Any) -> None:
    p = sub.add_parser(
        "select",
        help="which unlabeled items to label next (active inference), with the expected gain",
        description="Sampling probabilities from the judge's uncertainty (or its error on a calibrator's "
        "or a pilot's labeled items), mixed with uniform sampling; each item drawn independently. The "
        "items to label are written with their sampling_probability, which `judgecp estimate` uses.",
    )
    p.add_argument("input", help="the run: a table, records, or a harness output file")
    p.add_argument("--budget", type=number(above=0), required=True, help="the expected number of items to label")
    p.add_argument("-o", "--output", required=True, help="the items to label (JSONL, as the input's rows)")
    p.add_argument("--calibrator", help="a calibrator whose labeled items give the judge's error model")
    p.add_argument("--pilot", help="a table of labeled items (read with the same flags) for the error model")
    p.add_argument("--mix", type=mix_flag, default=None, metavar="auto|SHARE",
                   help="share of uniform sampling mixed in (default auto: chosen by cross-validation on the error "
                   "model, uniform sampling unless a gain survives its noise)")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage of the expected intervals (default 0.1)")
    p.add_argument("--random-state", dest="random_state", type=whole(at_least=0), default=0)
    p.add_argument("--json", metavar="OUT", help="write the selection summary as JSON")
    p.add_argument("--cluster", metavar="FIELD", help=CLUSTER_HELP + " (for the expected widths)")
    _input_flags(p)
    p.set_defaults(func=run_select)


def mix_flag(text: str) -> float | None:
    """``--mix``: ``auto`` (None: chosen by cross-validation) or a share in [0, 1]."""
    if str(text).strip().lower() == "auto":
        return None
    try:
        return number(at_least=0, at_most=1)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be auto or a number in [0, 1], got {text!r}") from None


def run_select(args: argparse.Namespace) -> int:

    check_output(args, {"--output": args.output, "--json": args.json})
    if args.calibrator and args.pilot:
        raise InputError("give --calibrator or --pilot, not both")
    run_input = args.input
    pairs = None
    if args.calibrator or args.pilot:
        args.input = args.calibrator or args.pilot
        pairs = labeled_pairs(args)
        args.input = run_input
        if pairs.labels.size == 0:
            raise InputError(f"--{'calibrator' if args.calibrator else 'pilot'}: {pairs.source} has no labeled items "
                             "to fit an error model on")
    data = read_data(args, require_label=False)
    if pairs is not None:
        same_kind(pairs, data, f"--{'calibrator' if args.calibrator else 'pilot'}")
    res = select(data, args.budget, mix=args.mix, alpha=args.alpha, random_state=args.random_state,
                 labeled_pairs=None if pairs is None else (pairs.labels, pairs.proxies),
                 pairs_source=pairs.source if pairs else "",
                 clusters=None if args.cluster is None else cluster_keys(data, args.cluster)[0])
    ids = item_ids(data)
    chosen = {str(ids[i]): float(res.probability[i]) for i in res.selected.tolist()}
    rows, label = selected_rows(args, data, chosen)
    count = write_records(args.output, rows)
    summary = res.summary
    summary.update(output=args.output, n_written=count, label_field=label, source=str(data.source),
                   excluded=data.excluded.to_json(), cluster=args.cluster, **label_hint(data))
    if pairs is not None and pairs.excluded:
        summary["pilot_excluded"] = pairs.excluded
    _write_json(args.json, SelectResult(summary))
    print(format_select(summary, args.budget, label), file=sys.stderr)
    for line in left_out_lines(summary["excluded"], {"label_off_scale": summary.get("label_hint") or ""}):
        print(f"  {line}", file=sys.stderr)
    for line in left_out_lines(summary.get("pilot_excluded") or [],
                               {"label_off_scale": pairs.label_hint if pairs else ""}):
        print(f"  pilot {line}", file=sys.stderr)
    if summary.get("warning"):
        print(f"judgecp: warning: {summary['warning']}", file=sys.stderr)
    for reason in summary["degenerate"]:
        print(f"judgecp: warning: degenerate selection: {reason} (judgecp gate fails it)", file=sys.stderr)
    return 0


def format_select(summary: dict[str, Any], budget: float, label: str) -> str:
    """What was drawn and written, and the width expected against uniform sampling (or why there is none)."""
    head = (f"{summary['n_selected']} of {summary['n_items']} unlabeled items to label (budget {budget:g}), written to "
            f"{summary['output']} with their sampling_probability (fill in `{label}`)")
    already = summary["already_labeled"]
    counted = f"; the run's {already} labels count with probability 1" if already else ""
    w = summary["expected_width"]
    if w is None:
        return f"{head}; {summary['why']}; no expected width without one{counted}"
    low, high = w["range"]
    return (f"{head}; expected width {w['active']:.4f} ({low:.4f}-{high:.4f} for the error model's sampling error) "
            f"against {w['uniform']:.4f} with uniform sampling (ratio {w['ratio']:.3f}, held-out; mix "
            f"{summary['mix']:g}, {summary['mix_chosen_by']}; error model: {summary['error_model']}){counted}")


def selected_rows(args: argparse.Namespace, data: Any, chosen: dict[str, float]) -> tuple[list[dict[str, Any]], str]:
    """The input's own rows (a table's cells, or its records) of the chosen items, each with ``sampling_probability``,
    and the field the annotators fill in (the input's label column; ``label`` when it has none)."""

    raw = raw_records(args)
    columns = getattr(data, "columns", None) or {}
    out: list[dict[str, Any]] = []
    if raw is not None:
        for rec in raw:
            key = str(rec.get("pair_id", rec.get("id")))
            if key in chosen:
                out.append({**rec, "label": rec.get("label"), "sampling_probability": chosen[key]})
        return out, "label"

    table = read_table(args.input)
    label = columns.get("label") or args.label or "label"
    id_col = columns.get("id", args.id_column)
    keys = [str(v).strip() for v in table.columns[id_col]] if id_col else [str(i) for i in range(table.n_rows)]
    for i, key in enumerate(keys):
        if key in chosen:
            row = dict(table.row(i))
            row.setdefault(label, None)
            out.append({**row, "sampling_probability": chosen[key]})
    return out, label


def add_parser(sub: Any) -> None:
    add_compare(sub)
    add_plan(sub)
    add_select(sub)
