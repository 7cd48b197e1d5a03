"""``judgecp calibrate`` and ``judgecp apply`` (``judgecp estimate``: :mod:`judgecp.cli.estimate`; ``judgecp gate``:
:mod:`judgecp.cli.gate`).

Calibrate once on labeled records, apply the saved calibrator to every
unlabeled run, estimate the human-scale mean with PPI++, and turn any of
these reports (or a harness results file) into a CI exit code. See
docs/calibrators.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.flags import level, whole
from judgecp.base.jsonio import dumps
from judgecp.base.outputs import atomic_write_text
from judgecp.base.records import SCHEMA
from judgecp.base.scale import LabelScale, LikertScale
from judgecp.base.schemas import describe_file, describe_schema
from judgecp.cli.evaluate import LABEL_SCALE_HELP, check_output, read_input
from judgecp.data import Fields
from judgecp.data.formats import record_format, sniff_format
from judgecp.data.judge import name_judge_in_records
from judgecp.data.pair import ORDERS_FWD, ORDERS_REV
from judgecp.data.tables import read_jsonl, read_table, write_records
from judgecp.kinds import get_kind, table_kinds
from judgecp.workflows.calibrators import Calibrator, annotate, apply, calibrate
from judgecp.workflows.calibrators.fileformat import SCHEMA as SCHEMA_CALIBRATOR
from judgecp.workflows.nightly.history import DEFAULT_HORIZON
from judgecp.workflows.results import ApplyResult

#: ``--cluster``'s help (estimate, compare, plan, select).
CLUSTER_HELP = ("a field whose equal values are one cluster (the answers to one prompt, the turns of one "
                "conversation): cluster-robust intervals (labels of a cluster are not independent)")


def _input_flags(p: argparse.ArgumentParser) -> None:

    p.add_argument("--kind", choices=table_kinds(),
                   help="the records' kind (default: their shape, else likert)")
    p.add_argument(
        "--format",
        default="auto",
        help="auto (default: recognised by content), table, or a registered harness format (lm-eval, vlmeval)",
    )
    p.add_argument("--sidecar", action="append", default=[], metavar="FILE", help="--format vlmeval: extra sidecar")
    cols = p.add_argument_group("columns (as in `judgecp evaluate`)")
    cols.add_argument("--label")
    cols.add_argument("--id", dest="id_column")
    cols.add_argument("--logprobs", metavar="COLUMN|GLOB")
    cols.add_argument("--prediction", "--parsed", dest="prediction")
    cols.add_argument("--group", help="a field: Mondrian groups (calibrate, apply) or strata (estimate)")
    cols.add_argument("--join", action="append", default=[], metavar="FILE[:PREFIX]")
    cols.add_argument("--scale", help="rating scale MIN:MAX (Likert; default 1:5, or the records' own)")
    cols.add_argument("--judge", metavar="NAME",
                      help="the judge's name, for records that name none (a calibrator records it; apply checks it)")
    cols.add_argument("--label-scale", dest="label_scale", metavar="LO:HI", help="Likert: " + LABEL_SCALE_HELP)


def read_data(args: argparse.Namespace, *, require_label: bool) -> Any:
    """The validated data of ``args.input`` (any kind, any registered format)."""

    fields = Fields(label=args.label, id=args.id_column, logprobs=args.logprobs, prediction=args.prediction,
                    group=args.group, joins=tuple(args.join), features=getattr(args, "features", None))
    options: dict[str, Any] = {"require_label": require_label}
    if args.scale:
        options["scale"] = LikertScale.parse(args.scale)
    if args.label_scale:
        options["label_scale"] = LabelScale.parse(args.label_scale)
    data, _ = read_input(args, args.kind, fields, options)
    return data


def _write_json(path: str | None, obj: Mapping[str, Any]) -> None:

    if path:
        atomic_write_text(path, dumps(obj) + "\n")


def _warn(summary: dict[str, Any]) -> None:
    for warning in summary.get("warnings", []):
        print(f"judgecp: warning: {warning['message']}", file=sys.stderr)


# -- calibrate ---------------------------------------------------------------------------------


def add_calibrate(sub: Any) -> None:
    p = sub.add_parser("calibrate", help="fit a calibrator on labeled records and save it as JSON",
                       description="Fit conformal sets (Likert, multiple choice) or a SCOPE threshold (pairwise) on "
                       "labeled records and write a judgecp.calibrator/2 file for `judgecp apply`.")
    p.add_argument("input")
    p.add_argument("-o", "--output", required=True, help="calibrator JSON to write")
    _input_flags(p)
    p.add_argument("--method", "--methods", dest="method",
                   help="Likert: a conformal method (default naive); multiple choice: a set method (default lac); "
                   "pairwise: a risk controller (default scope)")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage, or the pairwise risk level (default 0.1)")
    p.add_argument("--random-state", dest="random_state", type=whole(at_least=0), default=0,
                   help="seed of the split-conformal draws a method makes, if any (default 0)")
    p.set_defaults(func=run_calibrate)


def run_calibrate(args: argparse.Namespace) -> int:

    check_output(args, {"--output": args.output})
    if args.method and "," in args.method and "(" not in args.method:
        raise InputError("--method: a calibrator holds one method; give one")
    data = read_data(args, require_label=True)
    cal = calibrate(data, kind=args.kind, method=args.method, alpha=args.alpha, groups=args.group,
                    random_state=args.random_state)
    cal.save(args.output)
    left = ", ".join(f"{e['reason']} {e['count']}" for e in data.excluded.to_json()) or "none"
    judge = ", ".join(cal.identity.get("judge", [])) or "none named (--judge NAME: apply then checks it)"
    print(f"{cal.kind} calibrator ({cal.method}, alpha {cal.alpha:g}) fitted on {cal.n_calibration} items, "
          f"written to {args.output}; judge: {judge}; left out: {left}", file=sys.stderr)
    return 0


# -- apply -------------------------------------------------------------------------------------


def add_apply(sub: Any) -> None:
    p = sub.add_parser("apply", help="apply a saved calibrator to (unlabeled) records: sets, intervals, accept/abstain",
                       description="Per item: the label set and interval (Likert), option set (multiple choice) or "
                       "accept/abstain (pairwise), written as records; a summary with the drift test.")
    p.add_argument("calibrator")
    p.add_argument("input")
    p.add_argument("-o", "--output", help="records JSONL to write, each with `set` (and `interval`) or `accept`")
    p.add_argument("--json", metavar="SUMMARY", help="write the summary as JSON")
    _input_flags(p)
    p.add_argument("--force", action="store_true", help="apply to another judge, prompt, scale or options (warned)")
    p.add_argument("--drift-level", dest="drift_level", type=level, default=0.01,
                   help="level of each check: drift, martingale, coverage, label side (default 0.01)")
    p.add_argument("--history", metavar="FILE",
                   help="add the run's drift statistic to this JSONL history and run the change detector over its "
                   "nights (a night already in it is named, not added again; runs sharing a history wait for "
                   "each other)")
    p.add_argument("--history-horizon", dest="history_horizon", metavar="NIGHTS", type=whole(at_least=1),
                   default=DEFAULT_HORIZON,
                   help="a new history alarms without drift within this many nights with probability at most "
                   f"--drift-level (alarm at NIGHTS / level; default {DEFAULT_HORIZON}); an existing history keeps "
                   "the level and horizon of its night 1")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any check fails (false-alarm rate at most the sum of their levels)")
    p.set_defaults(func=run_apply)


def run_apply(args: argparse.Namespace) -> int:

    # --history is read and appended to: checked as an output (writable; not another output's file)
    check_output(args, {"--history": args.history, "--output": args.output, "--json": args.json},
                 appended=("history",))
    cal = load_calibrator(args.calibrator, args.input)
    if args.label_scale is None and cal.extra.get("label_scale"):  # the calibration labels' scale, by default
        args.label_scale = ":".join(repr(float(v)) for v in cal.extra["label_scale"])
    data = read_data(args, require_label=False)
    applied = apply(cal, data, force=args.force, groups=args.group, drift_level=args.drift_level,
                    history=args.history, history_horizon=args.history_horizon)
    summary = applied.summary
    if args.output:
        raw = raw_records(args)
        if raw is not None and args.judge is not None:

            name_judge_in_records(raw, args.judge)
        write_records(args.output, table_records(args, applied) if raw is None else annotate(raw, applied))

    _write_json(args.json, ApplyResult(summary))
    _warn(summary)
    history = summary.get("history")
    if history and not history["recorded"]:
        print(f"judgecp: note: --history {history['file']}: the run's values are those of night "
              f"{history['duplicate_of']} (same digest); not added again", file=sys.stderr)
    print(format_summary(summary))
    return (
        1
        if args.strict and summary["warnings"] and any(w["kind"] != "compatibility" for w in summary["warnings"])
        else 0
    )


def load_calibrator(path: str, other: str) -> Calibrator:
    """The calibrator at ``path``; when it is none and the other argument is one, the error says they were
    swapped (``judgecp apply NIGHT CAL``)."""
    try:
        return Calibrator.load(path)
    except InputError as exc:
        if describe_file(other) == describe_schema(SCHEMA_CALIBRATOR):
            raise InputError(f"{exc}; {other} is the calibrator: the order is `judgecp apply CALIBRATOR INPUT` "
                             f"(judgecp apply {other} {path})") from None
        raise


def table_records(args: argparse.Namespace, applied: Any) -> list[dict[str, Any]]:
    """A table's rows as applied records, one per row in the table's order: a row judgecp used is its record
    with ``set`` (``interval``) or ``accept``; a row it left out (no usable score logprobs, a label off the scale,
    ..., counted in the summary) is a record of its id with the output that claims nothing (the whole scale,
    every option, abstain) and ``"applied": false``, so a join by id downstream loses no item."""

    kind = get_kind(applied.data.kind)
    records: list[dict[str, Any]] = applied.records()
    by_key = {kind.calibration.record_key(r): r for r in records}
    table = read_table(args.input)
    id_col = (getattr(applied.data, "columns", None) or {}).get("id") or ("id" if "id" in table.columns else None)
    shape = (records[0].get("shape") if records else None) or kind.reader.record_shape or None
    out: list[dict[str, Any]] = []
    matched = 0
    for i in range(table.n_rows):
        row = table.row(i)
        cell = row.get(id_col) if id_col else None
        rid = str(cell).strip() if cell is not None and str(cell).strip() else str(i)
        key: dict[str, Any] = {"id": rid}
        if "pair_id" in row:
            order = str(row.get("order") or "fwd").strip().lower()
            key.update(pair_id=row["pair_id"], order="rev" if order in ORDERS_REV else
                       "fwd" if order in ORDERS_FWD else order)
        found = by_key.pop(kind.calibration.record_key(key), None)
        matched += found is not None
        out.append(found if found is not None else
                   {"schema": SCHEMA, "shape": shape, **key, **applied.parts.unused, "applied": False})
    if not matched:  # the table's rows cannot be told apart by the records' keys (a kind of a plugin's): as read
        return records
    out += by_key.values()  # never lose an applied item (a key the table spells otherwise)
    return out


def raw_records(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """The input's records as read (a records file, or a harness file's records); ``None`` for a plain table."""

    path = Path(args.input)
    fmt = sniff_format(path) if args.format == "auto" else args.format
    if fmt != "table":
        records: list[dict[str, Any]] = record_format(fmt).read(
            path, **({"sidecars": args.sidecar} if args.sidecar else {})).records
        return records
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        return None
    rows = [obj for _, obj in read_jsonl(path) if obj is not None]
    return rows if rows and all("schema" in r for r in rows) else None


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"{summary['kind']} calibrator {summary['method']} (alpha {summary['alpha']:g}, "
             f"{summary['n_calibration']} calibration items): {summary['n_applied']} of {summary['n']} records applied"]
    if summary.get("calibrator"):
        lines.append(
            f"  calibrator {summary['calibrator']['digest']} (content verified); {_judge_line(summary['judge'])}"
        )
    if summary["kind"] == "pairwise":
        lines.append(f"  accepted {summary['accepted']}, abstention rate {_num(summary['abstention_rate'])}")
    else:
        lines.append(
            f"  mean set size {_num(summary['mean_set_size'])}, singletons {_num(summary['singleton_share'])}, "
            f"empty sets {summary['empty_sets']}"
        )
    lab = summary.get("labeled")
    if lab:
        check = lab.get("check") or {}
        p = f", {check['test']} p = {check['p_value']:.3g}" if check.get("p_value") is not None else ""
        if "coverage" in lab:
            lines.append(
                f"  labeled items {lab['n']}: coverage {_num(lab['coverage'])} (target {lab['target']:.2f}{p})"
            )
        else:
            lines.append(f"  labeled pairs {lab['n']}: error among accepted {_num(lab['error_among_accepted'])}"
                         f" (risk level {lab['risk_level']:g}{p})")
    drift = summary["drift"]
    if drift.get("p_value") is not None:
        martingale = drift.get("martingale") or {}
        lines.append(f"  drift ({drift['statistic_of']}, KS): p = {drift['p_value']:.3g}"
                     f"{' DRIFT' if drift['drift'] else ''}; martingale max {martingale.get('max', 0):.3g}"
                     f"{' ALARM' if martingale.get('alarm') else ''}")
    check = summary.get("label_check")
    if check:
        lines.append(f"  label side ({check['n_run']} run labels): residual shift {check['shift']:+.3f}, "
                     f"p = {check['p_value']:.3g}{' SHIFT' if check['shift_detected'] else ''}; "
                     f"detects {check['detectable_shift']:.2f} with {check['power']:.0%} power")
    history = summary.get("history")
    if history:
        lines.append(history_line(history))
    est = summary.get("estimate")
    withheld = summary.get("estimate_withheld")
    if est:
        e, j = est["estimate"]["ppi"], est["estimate"]["judge_only"]
        source = (f"labels from the run: {est['n_labeled']}" if est["labeled_from"] == "run" else
                  f"labels from the {est['labeled_from']}: {est['n_labeled']}")
        lines.append(f"  {est['target']} (PPI++, {source} labeled + {est['n_unlabeled']} unlabeled): {e['mean']:.4f} "
                     f"[{e['lower']:.4f}, {e['upper']:.4f}]; judge only {j['mean']:.4f}")
        if est.get("lambda_from") == "calibrator" and isinstance(est.get("lambda"), (int, float)):
            lines.append(f"    power tuning lambda {est['lambda']:.3f} from the calibrator's labeled pairs (judgecp "
                         "estimate tunes it on the run's labels: a slightly different interval, as valid)")
        if est.get("assumption"):
            lines.append(f"    {est['assumption']}")
    elif withheld and withheld["reason"] != "no_unlabeled":
        lines.append(f"  estimate withheld ({withheld['reason']}): {withheld['message']}")
    for e in summary["excluded"]:
        lines.append(f"  left out: {e['reason']} {e['count']}")
    return "\n".join(lines)


def _judge_line(judge: dict[str, Any]) -> str:
    want, got = judge["calibrator"], judge["records"]
    if want and got:
        return f"judge {', '.join(got)} (checked against the calibrator's)"
    if not (want or got):
        return "judge not checked: neither the calibrator nor the records name one (--judge NAME)"
    return (f"judge not checked: the records name none (the calibrator's: {', '.join(want)})" if want
            else f"judge not checked: the calibrator names none (the records': {', '.join(got)})")


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def add_parser(sub: Any) -> None:
    add_calibrate(sub)
    add_apply(sub)


def history_line(history: Mapping[str, Any]) -> str:
    """The summary's line for ``--history``: tonight's night number (or the night it repeats), the evidence
    against the alarm threshold, the chance of a false alarm so far, and the alarm with where the change began."""
    if history.get("recorded", True):
        head = f"night {history['night']} of {history['nights']}"
    else:
        head = (f"NOT ADDED: the run's values are night {history['duplicate_of']}'s (same digest), "
                f"{history['nights']} nights")
    alarm = (f" ALARM since night {history['first_alarm']} (change from night {history['since_night']})"
             if history["alarm"] else "")
    return (f"  history {history['file']}: {head}, evidence {history['evidence']:.3g} (alarm at "
            f"{history['threshold']:g}; without drift P(alarm by now) <= {history['false_alarm_bound']:.2g}){alarm}")
