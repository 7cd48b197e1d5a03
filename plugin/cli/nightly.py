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

from judgecp.cli.calibrators import CLUSTER_HELP, _input_flags, _write_json, read_data
from judgecp.cli.flags import level, number, whole
from judgecp.errors import InputError
from judgecp.exclusions import left_out_lines
from judgecp.ppi import (
    NO_PROXY,
    cluster_keys,
    estimand,
    item_ids,
    label_hint,
    no_proxy_labels,
    off_scale_note,
    ppi_items,
    proxy_and_target,
    sampling_probabilities,
)

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
                   help="stratify each run's estimate by --group (default: task when present): auto when every "
                   "stratum has 10 labels (smaller ones merged), yes, or no")
    p.add_argument("--cluster", metavar="FIELD", help=CLUSTER_HELP + "; a value names one cluster in both runs")
    _input_flags(p)
    p.set_defaults(func=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    from judgecp.cli.evaluate import check_output
    from judgecp.compare import compare

    check_output(args, {"--json": args.json})
    a, b = read_run(args, args.a), read_run(args, args.b)
    out = compare(a, b, alpha=args.alpha, group=args.group, paired=args.paired, stratify=args.stratify,
                  cluster=args.cluster)
    from judgecp.calibrators.results import CompareResult, compare_degenerate

    out["degenerate"] = compare_degenerate(out)
    _write_json(args.json, CompareResult(out))
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
        lines.append(f"  cluster-robust: {out['clusters']['a']} and {out['clusters']['b']} clusters of {out['cluster']}")
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
    p.add_argument("--cluster", metavar="FIELD", help=CLUSTER_HELP + "; a pilot's clusters give the design effect "
                   "(the run's labels assumed to come in clusters like the pilot's)")
    _input_flags(p)
    p.set_defaults(func=run_plan)


def labeled_pairs(args: argparse.Namespace) -> tuple[Any, Any, str, int]:
    """Labels and proxies of a calibrator's PPI pairs or of a pilot's labeled rows, the source, its unlabeled rows."""
    y, f, source, unlabeled, _ = pilot(args)
    return y, f, source, unlabeled


def pilot(args: argparse.Namespace, cluster: str | None = None,
          minimum: int = 0) -> tuple[Any, Any, str, int, dict[str, Any]]:
    """:func:`labeled_pairs`, and what else the pilot says: its labeled items' clusters (``cluster``), its rows
    left out (``excluded``, ``label_hint``). Fewer than ``minimum`` labels (a plan's 4) is an error that names the
    labels left out off the scale."""
    import numpy as np

    path = Path(args.input)
    if is_calibrator(path):
        from judgecp.calibrators import Calibrator

        if cluster is not None:
            raise InputError(f"--cluster {cluster}: a calibrator keeps no clusters; give a pilot table with the field")
        cal = Calibrator.load(path)
        if cal.ppi_labels is None or cal.ppi_proxy is None:
            raise InputError(f"{path}: the calibrator stores no labeled PPI pairs (recalibrate with this version)")
        return cal.ppi_labels, cal.ppi_proxy, f"calibrator {path} ({cal.ppi_labels.size} labeled items)", 0, {}
    data = read_data(args, require_label=False)
    f, y, _ = proxy_and_target(data)
    labeled = ~np.isnan(y)
    if labeled.sum() < minimum:
        raise InputError(f"{path}: a plan needs at least 4 labeled items with a judge proxy, got "
                         f"{int(labeled.sum())}{off_scale_note(data)}")
    more: dict[str, Any] = {"excluded": data.excluded.to_json(), **label_hint(data)}
    if cluster is not None:
        more["clusters"] = cluster_keys(data, cluster)[0][labeled]
    return y[labeled], f[labeled], f"pilot {path} ({int(labeled.sum())} labeled rows)", int((~labeled).sum()), more


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
    y, f, source, unlabeled_rows, more = pilot(args, args.cluster, minimum=4)
    n_unlabeled = args.unlabeled if args.unlabeled is not None else (unlabeled_rows or math.inf)
    out = plan(y, f, args.half_width, alpha=args.alpha, n_unlabeled=n_unlabeled, confidence=args.confidence,
               source=source, clusters=more.get("clusters"))
    out.update({k: v for k, v in more.items() if k != "clusters"}, cluster=args.cluster)
    from judgecp.calibrators.results import PlanResult

    _write_json(args.json, PlanResult(out))
    rel, labels = out["assumed"], out["labels"]
    unl = "unbounded" if rel["n_unlabeled"] is None else str(rel["n_unlabeled"])
    print(f"half-width {args.half_width:g} at {1 - out['alpha']:.0%}: PPI++ {_count(labels['ppi'])} labels, "
          f"labels alone {_count(labels['labeled_only'])}")
    print(f"  assumed from {source}: correlation {rel['correlation']:.3f} (>= {rel['correlation_lower']:.3f}), "
          f"label sd {rel['sd_label']:.3f} (<= {rel['sd_label_upper']:.3f}) at confidence {rel['confidence']:g}; "
          f"unlabeled items {unl}")
    deff = rel.get("design_effect")
    if deff:
        print(f"  clustered by {args.cluster} ({deff['n_clusters']} clusters of {deff['mean_cluster_size']:.1f} labeled "
              f"items on average): design effect {deff['labels']:.2f} for labels alone, {deff['residual']:.2f} for "
              "PPI++")
    for line in left_out_lines(out.get("excluded") or [], {"label_off_scale": out.get("label_hint") or ""}):
        print(f"  {line}")
    for reason in out["degenerate"]:
        print(f"judgecp: warning: degenerate plan: {reason} (judgecp gate fails it)", file=sys.stderr)
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
    p.add_argument("--cluster", metavar="FIELD", help=CLUSTER_HELP + " (for the expected widths)")
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
    pilot_more: dict[str, Any] = {}
    if args.calibrator or args.pilot:
        args.input = args.calibrator or args.pilot
        y, f, _, _, pilot_more = pilot(args)
        pairs = (y, f)
        args.input = run_input
    data = read_data(args, require_label=False)
    res = select(data, args.budget, mix=args.mix, alpha=args.alpha, random_state=args.random_state,
                 labeled_pairs=pairs, clusters=None if args.cluster is None else cluster_keys(data, args.cluster)[0])
    ids = item_ids(data)
    chosen = {str(ids[i]): float(res["probability"][i]) for i in res["selected"].tolist()}
    rows, label = selected_rows(args, data, chosen)
    count = write_records(args.output, rows)
    summary = res["summary"]
    summary.update(output=args.output, n_written=count, label_field=label, source=str(data.source),
                   excluded=data.excluded.to_json(), cluster=args.cluster, **label_hint(data))
    if pilot_more.get("excluded"):
        summary["pilot_excluded"] = pilot_more["excluded"]
    from judgecp.calibrators.results import SelectResult

    _write_json(args.json, SelectResult(summary))
    w = summary["expected_width"]
    print(f"{summary['n_selected']} of {summary['n_items']} unlabeled items to label (budget {args.budget:g}), written "
          f"to {args.output} with their sampling_probability (fill in `{label}`); expected width {w['active']:.4f} against "
          f"{w['uniform']:.4f} with uniform sampling (ratio {w['ratio']:.3f}; error model: {summary['error_model']})",
          file=sys.stderr)
    for line in left_out_lines(summary["excluded"], {"label_off_scale": summary.get("label_hint") or ""}):
        print(f"  {line}", file=sys.stderr)
    for line in left_out_lines(pilot_more.get("excluded") or [], {"label_off_scale": pilot_more.get("label_hint", "")}):
        print(f"  pilot {line}", file=sys.stderr)
    for reason in summary["degenerate"]:
        print(f"judgecp: warning: degenerate selection: {reason} (judgecp gate fails it)", file=sys.stderr)
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

    args.input = args.labeled
    lab = read_data(args, require_label=False)
    args.input = args.unlabeled
    unl = read_data(args, require_label=False)
    if lab.kind != unl.kind:
        raise InputError(f"--labeled has {lab.kind} records, --unlabeled {unl.kind} records")
    f_l, y_l, target = proxy_and_target(lab)
    f_u, _, _ = proxy_and_target(unl)
    excluded = lab.excluded.to_json() + unl.excluded.to_json()
    common = {"kind": lab.kind, "target": target, "groups": args.group, "excluded": excluded, "cluster": args.cluster,
              **label_hint(lab, unl)}
    pi = sampling_probabilities(lab)
    if pi is not None:
        from judgecp.active import active_mean

        rest = ~np.isin(item_ids(unl), item_ids(lab))  # the run's other items (the labeled file's are in it)
        y = np.concatenate([y_l, np.full(int(rest.sum()), np.nan)])
        clusters = None
        if args.cluster:
            clusters = np.concatenate([cluster_keys(lab, args.cluster)[0], cluster_keys(unl, args.cluster)[0][rest]])
        out: dict[str, Any] = active_mean(y, np.concatenate([f_l, f_u[rest]]),
                                          np.concatenate([pi, np.full(int(rest.sum()), np.nan)]), alpha=args.alpha,
                                          clusters=clusters)
        out.update(common)
        return out
    args.input = args.labeled
    lab = read_data(args, require_label=True)  # rows without a label are left out and counted, as before
    f_l, y_l, _ = proxy_and_target(lab)
    np_l, np_u = no_proxy_labels(lab), no_proxy_labels(unl)
    y = np.concatenate([y_l, np.full(f_u.size, np.nan), np_l, np.full(np_u.size, np.nan)])
    f = np.concatenate([f_l, f_u, np.full(np_l.size + np_u.size, np.nan)])
    strata = keys = None
    if args.group:
        strata = np.concatenate([lab.field(args.group, "--group field").astype(str),
                                 unl.field(args.group, "--group field").astype(str),
                                 np.full(np_l.size + np_u.size, NO_PROXY)])
    if args.cluster:
        (kl, kl_np), (ku, ku_np) = cluster_keys(lab, args.cluster), cluster_keys(unl, args.cluster)
        keys = np.concatenate([kl, ku, kl_np, ku_np])
    out = ppi_items(y, f, alpha=args.alpha, strata=strata, keys=keys)
    out.update(common, excluded=lab.excluded.to_json() + unl.excluded.to_json())
    out["estimand"] = estimand(out, target)
    return out


def add_parser(sub: Any) -> None:
    add_compare(sub)
    add_plan(sub)
    add_select(sub)
