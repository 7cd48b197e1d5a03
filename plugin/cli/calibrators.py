"""``judgecp calibrate``, ``judgecp apply``, ``judgecp estimate`` and ``judgecp gate``.

Calibrate once on labeled records, apply the saved calibrator to every
unlabeled run, estimate the human-scale mean with PPI++, and turn any of
these reports (or a harness results file) into a CI exit code. See
docs/calibrators.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from judgecp.cli.flags import level
from judgecp.errors import InputError


def _input_flags(p: argparse.ArgumentParser, *, kinds: tuple[str, ...] = ("likert", "pairwise", "mcq", "parc")) -> None:
    p.add_argument("--kind", choices=kinds, help="the records' kind (default: their shape, else likert)")
    p.add_argument("--format", default="table",
                   help="table (default), auto, or a registered harness format (lm-eval samples, vlmeval predictions)")
    p.add_argument("--sidecar", action="append", default=[], metavar="FILE", help="--format vlmeval: extra sidecar")
    cols = p.add_argument_group("columns (as in `judgecp evaluate`)")
    cols.add_argument("--label")
    cols.add_argument("--id", dest="id_column")
    cols.add_argument("--logprobs", metavar="COLUMN|GLOB")
    cols.add_argument("--prediction", "--parsed", dest="prediction")
    cols.add_argument("--group", help="a field: Mondrian groups (calibrate, apply) or strata (estimate)")
    cols.add_argument("--join", action="append", default=[], metavar="FILE[:PREFIX]")
    cols.add_argument("--scale", help="rating scale MIN:MAX (Likert; default 1:5, or the records' own)")


def read_data(args: argparse.Namespace, *, require_label: bool) -> Any:
    """The validated data of ``args.input`` (any kind, any registered format)."""
    from judgecp.cli.evaluate import read_input
    from judgecp.data import Fields
    from judgecp.scale import LikertScale

    fields = Fields(label=args.label, id=args.id_column, logprobs=args.logprobs, prediction=args.prediction,
                    group=args.group, joins=tuple(args.join))
    options: dict[str, Any] = {"require_label": require_label}
    if args.scale:
        options["scale"] = LikertScale.parse(args.scale)
    data, _ = read_input(args, args.kind, fields, options)
    return data


def _write_json(path: str | None, obj: dict[str, Any]) -> None:
    from judgecp.outputs import atomic_write_text
    from judgecp.report import dumps

    if path:
        atomic_write_text(path, dumps(obj) + "\n")


def _warn(summary: dict[str, Any]) -> None:
    for warning in summary.get("warnings", []):
        print(f"judgecp: warning: {warning['message']}", file=sys.stderr)


# -- calibrate ---------------------------------------------------------------------------------


def add_calibrate(sub: Any) -> None:
    p = sub.add_parser("calibrate", help="fit a calibrator on labeled records and save it as JSON",
                       description="Fit conformal sets (Likert, multiple choice) or a SCOPE threshold (pairwise) on "
                       "labeled records and write a judgecp.calibrator/1 file for `judgecp apply`.")
    p.add_argument("input")
    p.add_argument("-o", "--output", required=True, help="calibrator JSON to write")
    _input_flags(p)
    p.add_argument("--method", "--methods", dest="method",
                   help="Likert: a conformal method (default naive); multiple choice: a set method (default lac); "
                   "pairwise: a risk controller (default scope)")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage, or the pairwise risk level (default 0.1)")
    p.add_argument("--random-state", dest="random_state", type=int, default=0)
    p.set_defaults(func=run_calibrate)


def run_calibrate(args: argparse.Namespace) -> int:
    from judgecp.calibrators import calibrate
    from judgecp.cli.evaluate import check_output

    check_output(args, {"--output": args.output})
    if args.method and "," in args.method and "(" not in args.method:
        raise InputError("--method: a calibrator holds one method; give one")
    data = read_data(args, require_label=True)
    cal = calibrate(data, kind=args.kind, method=args.method, alpha=args.alpha, groups=args.group,
                    random_state=args.random_state)
    cal.save(args.output)
    left = ", ".join(f"{e['reason']} {e['count']}" for e in data.excluded.to_json()) or "none"
    print(f"{cal.kind} calibrator ({cal.method}, alpha {cal.alpha:g}) fitted on {cal.n_calibration} items, "
          f"written to {args.output}; left out: {left}", file=sys.stderr)
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
                   help="level of the drift test (default 0.01)")
    p.add_argument("--strict", action="store_true", help="exit 1 when the drift test or the coverage check fails")
    p.set_defaults(func=run_apply)


def run_apply(args: argparse.Namespace) -> int:
    from judgecp.calibrators import Calibrator, annotate, apply
    from judgecp.cli.evaluate import check_output
    from judgecp.tables import write_records

    check_output(args, {"--output": args.output, "--json": args.json})
    cal = Calibrator.load(args.calibrator)
    data = read_data(args, require_label=False)
    applied = apply(cal, data, force=args.force, groups=args.group, drift_level=args.drift_level)
    summary = applied.summary
    if args.output:
        raw = raw_records(args)
        write_records(args.output, applied.records() if raw is None else annotate(raw, applied))
    _write_json(args.json, summary)
    _warn(summary)
    print(format_summary(summary))
    return 1 if args.strict and summary["warnings"] and any(w["kind"] != "compatibility" for w in summary["warnings"]) else 0


def raw_records(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """The input's records as read (a records file, or a harness file's records); ``None`` for a plain table."""
    from judgecp.plugins import record_format, sniff_format
    from judgecp.tables import read_jsonl

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
    if summary["kind"] == "pairwise":
        lines.append(f"  accepted {summary['accepted']}, abstention rate {_num(summary['abstention_rate'])}")
    else:
        lines.append(f"  mean set size {_num(summary['mean_set_size'])}, singletons {_num(summary['singleton_share'])}, "
                     f"empty sets {summary['empty_sets']}")
    lab = summary.get("labeled")
    if lab:
        if "coverage" in lab:
            lines.append(f"  labeled items {lab['n']}: coverage {_num(lab['coverage'])} (target {lab['target']:.2f})")
        else:
            lines.append(f"  labeled pairs {lab['n']}: error among accepted {_num(lab['error_among_accepted'])}")
    drift = summary["drift"]
    if drift.get("p_value") is not None:
        lines.append(f"  drift ({drift['statistic_of']}, KS): p = {drift['p_value']:.3g}"
                     f"{' DRIFT' if drift['drift'] else ''}")
    est = summary.get("estimate")
    if est:
        e, j = est["estimate"]["ppi"], est["estimate"]["judge_only"]
        lines.append(f"  {est['target']} (PPI++, labels from the {est['labeled_from']}): {e['mean']:.4f} "
                     f"[{e['lower']:.4f}, {e['upper']:.4f}]; judge only {j['mean']:.4f}")
    for e in summary["excluded"]:
        lines.append(f"  left out: {e['reason']} {e['count']}")
    return "\n".join(lines)


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.3f}"


# -- estimate ----------------------------------------------------------------------------------


def add_estimate(sub: Any) -> None:
    p = sub.add_parser("estimate", help="prediction-powered (PPI++) mean with a valid interval from a few labels",
                       description="Records with a label are the labeled sample, records without one the unlabeled "
                       "sample (or give them as two files with --labeled/--unlabeled). Prints the PPI++ estimate of "
                       "the human mean (Likert), win rate (pairwise) or accuracy (multiple choice) with its interval, "
                       "next to the judge-only and labeled-only intervals.")
    p.add_argument("input", nargs="?", help="records, labeled and unlabeled together")
    p.add_argument("--labeled", metavar="FILE", help="labeled records (with --unlabeled, instead of INPUT)")
    p.add_argument("--unlabeled", metavar="FILE", help="unlabeled records (their labels, if any, are ignored)")
    p.add_argument("--json", metavar="OUT", help="write the estimate as JSON")
    p.add_argument("--alpha", type=level, default=0.1, help="miscoverage of the intervals (default 0.1)")
    _input_flags(p)
    p.set_defaults(func=run_estimate)


def run_estimate(args: argparse.Namespace) -> int:
    from judgecp.cli.evaluate import check_output
    from judgecp.ppi import estimate, ppi_mean, proxy_and_target

    check_output(args, {"--json": args.json})
    if bool(args.input) == bool(args.labeled or args.unlabeled):
        raise InputError("give INPUT (labeled and unlabeled records together) or --labeled and --unlabeled")
    if args.input:
        out = estimate(read_data(args, require_label=False), alpha=args.alpha, groups=args.group)
    else:
        if not (args.labeled and args.unlabeled):
            raise InputError("--labeled and --unlabeled go together")
        args.input = args.labeled
        lab = read_data(args, require_label=True)
        args.input = args.unlabeled
        unl = read_data(args, require_label=False)
        if lab.kind != unl.kind:
            raise InputError(f"--labeled has {lab.kind} records, --unlabeled {unl.kind} records")
        f_l, y_l, target = proxy_and_target(lab)
        f_u, _, _ = proxy_and_target(unl)
        groups = (None, None)
        if args.group:
            groups = (lab.field(args.group, "--group field"), unl.field(args.group, "--group field"))
        out = ppi_mean(y_l, f_l, f_u, alpha=args.alpha, groups_labeled=groups[0], groups_unlabeled=groups[1])
        excluded = lab.excluded.to_json() + unl.excluded.to_json()
        out.update(kind=lab.kind, target=target, groups=args.group, excluded=excluded)
    _write_json(args.json, out)
    est = out["estimate"]
    print(f"{out['target']} ({out['kind']}), {out['n_labeled']} labeled + {out['n_unlabeled']} unlabeled items, "
          f"{1 - out['alpha']:.0%} intervals:")
    for name in ("ppi", "labeled_only", "judge_only"):
        e = est[name]
        print(f"  {name:<13} {e['mean']:.4f}  [{e['lower']:.4f}, {e['upper']:.4f}]  width {e['upper'] - e['lower']:.4f}")
    ess = out["effective_sample_size"]
    print(f"  effective sample size {ess:.0f} labeled items; judge bias (judge - PPI) {out['judge_bias']:+.4f}"
          if math.isfinite(ess) else "  effective sample size: unbounded")
    return 0


# -- gate --------------------------------------------------------------------------------------


def add_gate(sub: Any) -> None:
    p = sub.add_parser("gate", help="exit 1 when a metric of a judgecp JSON or a harness results file is out of bounds",
                       description="METRIC is a dotted path into the JSON (estimate.ppi.lower, drift.p_value) or, in "
                       "an lm-eval results file, a metric name (TASK.METRIC or METRIC). Exit 0 when every condition "
                       "holds, 1 with one line per failed condition, 2 when a metric is missing.")
    p.add_argument("input", help="a judgecp JSON (apply --json, estimate --json, evaluate --json) or harness results")
    p.add_argument("--min", action="append", default=[], metavar="METRIC=VALUE", help="fail when METRIC < VALUE")
    p.add_argument("--max", action="append", default=[], metavar="METRIC=VALUE", help="fail when METRIC > VALUE")
    p.add_argument("--no-drift", dest="no_drift", action="store_true",
                   help="fail when the report's drift test flagged drift (drift.drift is true)")
    p.set_defaults(func=run_gate)


def lookup(obj: Any, metric: str) -> Any:
    """The value at a dotted path, or a metric of an lm-eval results file (``results.<task>.<metric>,<filter>``)."""
    node = obj
    for part in metric.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            node = None
            break
    if node is not None:
        return node
    results = obj.get("results") if isinstance(obj, dict) else None
    if isinstance(results, dict):
        task, _, name = metric.rpartition(".")
        found = []
        for t, metrics in results.items():
            if (task and t != task) or not isinstance(metrics, dict):
                continue
            for key, value in metrics.items():
                if key == name or key.split(",")[0] == name:
                    found.append((f"{t}.{key}", value))
        if len(found) > 1:
            raise InputError(f"metric {metric!r} is in several tasks ({', '.join(k for k, _ in found)}); write TASK.METRIC")
        if found:
            return found[0][1]
    raise InputError(f"metric {metric!r} is not in the file")


def _condition(text: str, flag: str) -> tuple[str, float]:
    metric, _, value = text.rpartition("=")
    try:
        if metric.strip():
            return metric.strip(), float(value)
    except ValueError:
        pass
    raise InputError(f"{flag} {text!r}: write METRIC=NUMBER")


def run_gate(args: argparse.Namespace) -> int:
    path = Path(args.input)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"), parse_constant=lambda name: None)  # bare NaN: lm-eval
    except ValueError as exc:
        raise InputError(f"{path}: not JSON ({exc})") from exc
    if not (args.min or args.max or args.no_drift):
        raise InputError("give at least one --min, --max or --no-drift condition")
    failures: list[str] = []
    checks = [(m, v, "min") for m, v in (_condition(t, "--min") for t in args.min)]
    checks += [(m, v, "max") for m, v in (_condition(t, "--max") for t in args.max)]
    for metric, bound, side in checks:
        value = lookup(obj, metric)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(float(value)):
            failures.append(f"{metric} = {value!r} is not a number ({'>=' if side == 'min' else '<='} {bound:g} required)")
        elif side == "min" and value < bound:
            failures.append(f"{metric} = {value:.6g} < {bound:g}")
        elif side == "max" and value > bound:
            failures.append(f"{metric} = {value:.6g} > {bound:g}")
    if args.no_drift and lookup(obj, "drift.drift") is True:
        failures.append(f"drift detected: p = {lookup(obj, 'drift.p_value'):.3g} < {lookup(obj, 'drift.level')}")
    for line in failures:
        print(f"judgecp gate: FAIL {line}")
    if not failures:
        print(f"judgecp gate: ok ({len(checks) + int(args.no_drift)} condition(s))")
    return 1 if failures else 0


def add_parser(sub: Any) -> None:
    add_calibrate(sub)
    add_apply(sub)
    add_estimate(sub)
    add_gate(sub)
