"""``judgecp compare``, ``judgecp plan`` and ``judgecp select``: the nightly loop's questions (docs/nightly.md).

Did the new checkpoint get better, and by how much, with the judge's bias
removed (``compare``)? How many labels does an interval of a given
half-width take (``plan``)? Which items should be labeled next (``select``)?
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from judgecp.cli.calibrators import _input_flags, _write_json, read_data
from judgecp.cli.flags import level, number, whole
from judgecp.errors import InputError
from judgecp.results import short_repr

# -- compare -----------------------------------------------------------------------------------


def add_compare(sub: Any) -> None:
    p = sub.add_parser("compare", help="the judge-corrected difference of two runs' means (B - A) with valid intervals",
                       description="Two runs judged by the same judge, each with zero or more human labels (rows with an "
                       "empty label are unlabeled): PPI++, labeled-only and judge-only intervals for the difference of "
                       "the mean human score (win rate, accuracy), B - A; paired by id when the runs share items; per "
                       "group (task, --group) and pooled.")
    p.add_argument("a", metavar="A", help="run A (the baseline): a table, records, a harness output file or folder")
    p.add_argument("b", metavar="B", help="run B (the candidate), as A")
    p.add_argument("--json", metavar="OUT", help="write the comparison as JSON (difference.ppi.lower, ...)")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage of the intervals (default 0.1)")
    p.add_argument("--paired", choices=("auto", "yes", "no"), default="auto",
                   help="pair items by id (auto: when at least half of each run's items are shared)")
    p.add_argument("--stratify", choices=("auto", "yes", "no"), default="auto",
                   help="stratify the pooled estimate by the group (auto: when every stratum has 10 labels)")
    _input_flags(p)
    p.set_defaults(func=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    from judgecp.cli.evaluate import check_output
    from judgecp.compare import compare

    check_output(args, {"--json": args.json})
    a, b = read_run(args, args.a), read_run(args, args.b)
    out = compare(a, b, alpha=args.alpha, group=args.group, paired=args.paired, stratify=args.stratify)
    from judgecp.calibrators.results import CompareResult

    _write_json(args.json, CompareResult(out))
    print(format_compare(out))
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
    from judgecp.data import Fields, from_table
    from judgecp.exclusions import Exclusions
    from judgecp.plugins import record_formats
    from judgecp.scale import LikertScale
    from judgecp.tables import table_from_rows

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
    lines = [f"{out['target']}, {out['design']}, {1 - out['alpha']:.0%} intervals:"]
    for name in ("ppi", "labeled_only", "judge_only"):
        e = d[name]
        lines.append(f"  {name:<13} {e['mean']:+.4f}  [{e['lower']:+.4f}, {e['upper']:+.4f}]")
    lines.append(f"  {d['n_labels']} labels, worth {d['effective_labels']:.0f} without the judge"
                 if math.isfinite(d["effective_labels"]) else f"  {d['n_labels']} labels")
    for name, res in (out.get("by_group") or {}).items():
        if "error" in res:
            lines.append(f"  {out['group']}={name}: no interval ({res['error']})")
        else:
            e = res["difference"]["ppi"]
            lines.append(f"  {out['group']}={name}: PPI++ {e['mean']:+.4f} [{e['lower']:+.4f}, {e['upper']:+.4f}]")
    for run, names in (out.get("groups_only_in") or {}).items():
        if names:
            lines.append(f"  {out['group']} only in run {run.upper()} (not compared): {', '.join(names)}")
    for run, section in (out.get("runs") or {}).items():
        for e in section.get("excluded") or ():
            lines.append(f"  left out of run {run.upper()}: {e['reason']} {e['count']}")
    return "\n".join(lines)


# -- plan --------------------------------------------------------------------------------------


def add_plan(sub: Any) -> None:
    p = sub.add_parser("plan", help="how many labels give an interval of a given half-width (PPI++ and labels alone)",
                       description="From a calibrator's labeled items or a pilot table's labeled rows: the judge-human "
                       "relationship, and the number of labels for a target half-width with PPI++ and with labels alone.")
    p.add_argument("input", help="a calibrator JSON (judgecp calibrate), or a pilot table or records with some labels")
    p.add_argument("--half-width", dest="half_width", type=number(above=0), required=True, help="the interval half-width wanted")
    p.add_argument("--unlabeled", type=number(above=0), default=None, metavar="N",
                   help="unlabeled items in the run (default: the pilot's unlabeled rows, else unbounded)")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage of the intervals (default 0.1)")
    p.add_argument("--confidence", type=level, default=0.9,
                   help="plan at this confidence bound of the pilot's estimates (default 0.9)")
    p.add_argument("--json", metavar="OUT", help="write the plan as JSON (labels.ppi, labels.labeled_only, assumed)")
    _input_flags(p)
    p.set_defaults(func=run_plan)


def labeled_pairs(args: argparse.Namespace) -> tuple[Any, Any, str, int]:
    """Labels and proxies of a calibrator's PPI pairs or of a pilot's labeled rows, the source, its unlabeled rows."""
    import numpy as np

    path = Path(args.input)
    if is_calibrator(path):
        from judgecp.calibrators import Calibrator

        cal = Calibrator.load(path)
        if cal.ppi_labels is None or cal.ppi_proxy is None:
            raise InputError(f"{path}: the calibrator stores no labeled PPI pairs (recalibrate with this version)")
        return cal.ppi_labels, cal.ppi_proxy, f"calibrator {path} ({cal.ppi_labels.size} labeled items)", 0
    from judgecp.ppi import proxy_and_target

    data = read_data(args, require_label=False)
    f, y, _ = proxy_and_target(data)
    labeled = ~np.isnan(y)
    return y[labeled], f[labeled], f"pilot {path} ({int(labeled.sum())} labeled rows)", int((~labeled).sum())


def is_calibrator(path: Path) -> bool:
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(obj, dict) and str(obj.get("schema", "")).startswith("judgecp.calibrator")


def run_plan(args: argparse.Namespace) -> int:
    from judgecp.cli.evaluate import check_output
    from judgecp.plan import plan

    check_output(args, {"--json": args.json})
    y, f, source, unlabeled_rows = labeled_pairs(args)
    n_unlabeled = args.unlabeled if args.unlabeled is not None else (unlabeled_rows or math.inf)
    out = plan(y, f, args.half_width, alpha=args.alpha, n_unlabeled=n_unlabeled, confidence=args.confidence,
               source=source)
    from judgecp.calibrators.results import PlanResult

    _write_json(args.json, PlanResult(out))
    rel, labels = out["assumed"], out["labels"]
    unl = "unbounded" if rel["n_unlabeled"] is None else str(rel["n_unlabeled"])
    print(f"half-width {args.half_width:g} at {1 - out['alpha']:.0%}: PPI++ {_count(labels['ppi'])} labels, "
          f"labels alone {_count(labels['labeled_only'])}")
    print(f"  assumed from {source}: correlation {rel['correlation']:.3f} (>= {rel['correlation_lower']:.3f}), "
          f"label sd {rel['sd_label']:.3f} (<= {rel['sd_label_upper']:.3f}) at confidence {rel['confidence']:g}; "
          f"unlabeled items {unl}")
    return 0


def _count(n: int | None) -> str:
    return "not reachable" if n is None else str(n)


# -- select ------------------------------------------------------------------------------------


def add_select(sub: Any) -> None:
    p = sub.add_parser("select", help="which unlabeled items to label next (active inference), with the expected gain",
                       description="Sampling probabilities from the judge's uncertainty (or its error on a calibrator's "
                       "or a pilot's labeled items), mixed with uniform sampling; each item drawn independently. The "
                       "items to label are written with their sampling_probability, which `judgecp estimate` uses.")
    p.add_argument("input", help="the run: a table, records, or a harness output file")
    p.add_argument("--budget", type=number(above=0), required=True, help="the expected number of items to label")
    p.add_argument("-o", "--output", required=True, help="the items to label (JSONL, as the input's rows)")
    p.add_argument("--calibrator", help="a calibrator whose labeled items give the judge's error model")
    p.add_argument("--pilot", help="a table of labeled items (read with the same flags) for the error model")
    p.add_argument("--mix", type=number(at_least=0, at_most=1), default=0.5, help="share of uniform sampling mixed in (default 0.5)")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage of the expected intervals (default 0.1)")
    p.add_argument("--random-state", dest="random_state", type=whole(at_least=0), default=0)
    p.add_argument("--json", metavar="OUT", help="write the selection summary as JSON")
    _input_flags(p)
    p.set_defaults(func=run_select)


def run_select(args: argparse.Namespace) -> int:
    from judgecp.active import select
    from judgecp.cli.evaluate import check_output
    from judgecp.tables import write_records

    check_output(args, {"--output": args.output, "--json": args.json})
    if args.calibrator and args.pilot:
        raise InputError("give --calibrator or --pilot, not both")
    pairs = None
    run_input = args.input
    if args.calibrator or args.pilot:
        args.input = args.calibrator or args.pilot
        y, f, _, _ = labeled_pairs(args)
        pairs = (y, f)
        args.input = run_input
    data = read_data(args, require_label=False)
    res = select(data, args.budget, mix=args.mix, alpha=args.alpha, random_state=args.random_state,
                 labeled_pairs=pairs)
    from judgecp.compare import item_ids

    ids = item_ids(data)
    chosen = {str(ids[i]): float(res["probability"][i]) for i in res["selected"].tolist()}
    rows, label = selected_rows(args, data, chosen)
    count = write_records(args.output, rows)
    summary = res["summary"]
    summary.update(output=args.output, n_written=count, label_field=label, source=str(data.source))
    from judgecp.calibrators.results import SelectResult

    _write_json(args.json, SelectResult(summary))
    w = summary["expected_width"]
    print(f"{summary['n_selected']} of {summary['n_items']} unlabeled items to label (budget {args.budget:g}), written "
          f"to {args.output} with their sampling_probability (fill in `{label}`); expected width {w['active']:.4f} against "
          f"{w['uniform']:.4f} with uniform sampling (ratio {w['ratio']:.3f}; error model: {summary['error_model']})",
          file=sys.stderr)
    return 0


def selected_rows(args: argparse.Namespace, data: Any, chosen: dict[str, float]) -> tuple[list[dict[str, Any]], str]:
    """The input's own rows (a table's cells, or its records) of the chosen items, each with ``sampling_probability``,
    and the field the annotators fill in (the input's label column; ``label`` when it has none)."""
    from judgecp.cli.calibrators import raw_records

    raw = raw_records(args)
    columns = getattr(data, "columns", None) or {}
    out: list[dict[str, Any]] = []
    if raw is not None:
        for rec in raw:
            key = str(rec.get("pair_id", rec.get("id")))
            if key in chosen:
                out.append({**rec, "label": rec.get("label"), "sampling_probability": chosen[key]})
        return out, "label"
    from judgecp.tables import read_table

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


def estimate_two_files(args: argparse.Namespace) -> dict[str, Any]:
    """``judgecp estimate --labeled L --unlabeled U``: PPI++ of L's labels with U's proxies (U: the other items);
    when L's items carry a ``sampling_probability`` (``judgecp select``), the active estimate over U's items."""
    import numpy as np

    from judgecp.compare import item_ids
    from judgecp.ppi import (
        add_no_proxy_stratum,
        no_proxy_labels,
        ppi_mean,
        proxy_and_target,
        sampling_probabilities,
    )

    args.input = args.labeled
    lab = read_data(args, require_label=False)
    args.input = args.unlabeled
    unl = read_data(args, require_label=False)
    if lab.kind != unl.kind:
        raise InputError(f"--labeled has {lab.kind} records, --unlabeled {unl.kind} records")
    f_l, y_l, target = proxy_and_target(lab)
    f_u, _, _ = proxy_and_target(unl)
    excluded = lab.excluded.to_json() + unl.excluded.to_json()
    rows_read = (int(lab.n_read or lab.n), int(unl.n_read or unl.n))
    # n: the rows read, as a one-file estimate's (gate reads it): the labels drawn by select are the run's own
    common = {"kind": lab.kind, "target": target, "groups": args.group, "excluded": excluded, "n": sum(rows_read)}
    pi = sampling_probabilities(lab)
    if pi is not None:
        common["n"] = rows_read[1]
        from judgecp.active import active_mean

        check_drawn_from(args, item_ids(lab), item_ids(unl))
        rest = ~np.isin(item_ids(unl), item_ids(lab))  # the run's other items (the labeled file's are in it)
        y = np.concatenate([y_l, np.full(int(rest.sum()), np.nan)])
        out: dict[str, Any] = active_mean(y, np.concatenate([f_l, f_u[rest]]),
                                          np.concatenate([pi, np.full(int(rest.sum()), np.nan)]), alpha=args.alpha)
        out.update(common)
        return out
    args.input = args.labeled
    lab = read_data(args, require_label=True)  # rows without a label are left out and counted, as before
    f_l, y_l, _ = proxy_and_target(lab)
    groups = (None, None)
    if args.group:
        groups = (lab.field(args.group, "--group field"), unl.field(args.group, "--group field"))
    out = ppi_mean(y_l, f_l, f_u, alpha=args.alpha, groups_labeled=groups[0], groups_unlabeled=groups[1])
    out.update(common, excluded=lab.excluded.to_json() + unl.excluded.to_json())
    unl_np = no_proxy_labels(unl)
    return add_no_proxy_stratum(out, np.concatenate([no_proxy_labels(lab), np.full(unl_np.size, np.nan)]), args.alpha)


def check_drawn_from(args: argparse.Namespace, labeled: Any, run: Any) -> None:
    """Labels drawn by ``judgecp select`` (with their ``sampling_probability``) are weighted over the run they
    were drawn from: every labeled item must be one of ``--unlabeled``'s, or the estimand would silently become
    the mean over a run with those items added."""
    import numpy as np

    foreign = ~np.isin(labeled, run)
    if foreign.any():
        first = str(labeled[int(np.flatnonzero(foreign)[0])])
        raise InputError(f"--labeled {args.labeled}: {int(foreign.sum())} of its {labeled.size} items are not in "
                         f"--unlabeled {args.unlabeled} (the first: {short_repr(first)}); labels drawn by `judgecp "
                         "select` are weighted over the run they were drawn from: give that whole run as --unlabeled")


def add_parser(sub: Any) -> None:
    add_compare(sub)
    add_plan(sub)
    add_select(sub)
