"""``judgecp gate``: an exit code for CI from any judgecp result or an lm-eval results file.

Every judgecp JSON is a typed result (:mod:`judgecp.workflows.results`) read by its
flat scalar names (``coverage_naive``, ``estimate.ppi.lower``,
``difference.ppi.lower``, ``drift.alarm``...); an lm-eval results file by its
metric names (the same names: judgecp's tasks report these scalars), as
``TASK.METRIC`` or ``METRIC`` when one task has it. Exit 0 when every
condition holds; 1 with one line per failed condition, where a metric that is
undefined (null, NaN) or untrustworthy (a degenerate or withheld estimate)
fails whatever the bound; 2 for a usage error (a bound that is not a finite
number, a metric the file does not have: the message lists the ones it has).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError, did_you_mean
from judgecp.workflows.results import load_result, read_json_file

#: Metric names listed in an error before "... and N more".
SHOWN = 40


def bound(text: str, flag: str) -> tuple[str, float]:
    """``METRIC=NUMBER`` with a finite number (NaN or an infinite bound could never fail, or always)."""
    metric, sep, value = text.rpartition("=")
    metric = metric.strip()
    try:
        number = float(value)
    except ValueError:
        number = math.nan
        if not sep or not metric:
            raise InputError(f"{flag} {text!r}: write METRIC=NUMBER") from None
        raise InputError(f"{flag} {text!r}: {value!r} is not a number") from None
    if not sep or not metric:
        raise InputError(f"{flag} {text!r}: write METRIC=NUMBER")
    if not math.isfinite(number):
        raise InputError(f"{flag} {text!r}: the bound must be a finite number")
    return metric, number


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "gate",
        help="exit 1 when a metric of a judgecp result or an lm-eval results file is out of bounds",
        description="METRIC is a flat metric name of the file (judgecp results: `judgecp gate FILE "
        "--list` prints them; lm-eval results: TASK.METRIC or METRIC). Exit 0 when every condition "
        "holds; 1 with one line per failed condition (an undefined or untrustworthy value fails); 2 "
        "when a bound is not a number or a metric is missing.",
    )
    p.add_argument("input", help="a judgecp JSON (evaluate, apply, estimate, compare ... --json) or lm-eval results")
    p.add_argument("--min", action="append", default=[], metavar="METRIC=VALUE", help="fail when METRIC < VALUE")
    p.add_argument("--max", action="append", default=[], metavar="METRIC=VALUE", help="fail when METRIC > VALUE")
    p.add_argument("--no-drift", dest="no_drift", action="store_true",
                   help="fail when the file's drift test flagged drift (drift.alarm) or the change detector across "
                   "nights alarmed (history.alarm, apply --history), or a drift test could not run")
    p.add_argument("--allow-degenerate", dest="allow_degenerate", action="store_true",
                   help="pass a degenerate estimate (zero-width interval, no label variance, tiny effective sample)")
    p.add_argument("--list", action="store_true", help="print the file's metrics and their values, and exit")
    p.set_defaults(func=run_gate)


def harness_metrics(obj: Mapping[str, Any]) -> dict[str, float | None] | None:
    """An lm-eval results file's metrics by ``TASK.METRIC`` (filters dropped), or None for another file."""
    results = obj.get("results")
    if not isinstance(results, Mapping) or "schema" in obj:
        return None
    out: dict[str, float | None] = {}
    for task, metrics in results.items():
        if not isinstance(metrics, Mapping):
            continue
        for key, value in metrics.items():
            name = str(key).split(",")[0]
            if name == "alias" or name.endswith("_stderr"):
                continue
            number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
            out[f"{task}.{name}"] = None if number is None or not math.isfinite(number) else float(number)
    return out


def resolve(metric: str, values: Mapping[str, float | None], where: str, harness: bool) -> str:
    """The file's name for ``metric`` (lm-eval: ``TASK.METRIC`` or a ``METRIC`` only one task has)."""
    if metric in values:
        return metric
    if harness:
        found = [k for k in values if k.split(".", 1)[1] == metric]
        if len(found) > 1:
            raise InputError(
                f"metric {metric!r} is in several tasks of {where} ({', '.join(found)}); write TASK.METRIC"
            )
        if found:
            return found[0]
    names = list(values)
    shown = ", ".join(names[:SHOWN]) + (f" ... and {len(names) - SHOWN} more" if len(names) > SHOWN else "")

    raise InputError(
        f"metric {metric!r} is not in {where}{did_you_mean(metric, names)}; it has: {shown or 'no metrics'}"
    )


def read_gated(path: Path) -> tuple[dict[str, float | None], dict[str, str], str, bool]:
    """The file's metrics, the untrustworthy ones with why, what the file is, and whether it is lm-eval's."""
    obj = read_json_file(path, "not JSON")  # a bare NaN (lm-eval writes them) reads as null
    if isinstance(obj, Mapping):
        harness = harness_metrics(obj)
        if harness is not None:
            return harness, {}, f"{path} (lm-eval results)", True
    result = load_result(obj, str(path), require_digest=True)  # an edited or undigested result is refused
    return result.scalars(), result.untrusted(), f"{path} ({result.description})", False


def run_gate(args: argparse.Namespace) -> int:
    checks = [(*bound(t, "--min"), "min") for t in args.min] + [(*bound(t, "--max"), "max") for t in args.max]
    if not (checks or args.no_drift or args.list):
        raise InputError("give at least one --min, --max or --no-drift condition (or --list)")
    values, untrusted, where, harness = read_gated(Path(args.input))
    if args.list:
        reasons = list(dict.fromkeys(untrusted[name] for name in values if name in untrusted))
        for name, value in values.items():
            note = f"   untrusted [{reasons.index(untrusted[name]) + 1}]" if name in untrusted else ""
            print(f"{name} = {'undefined' if value is None else f'{value:.6g}'}{note}")
        for number, why in enumerate(reasons, start=1):  # each reason once, however many metrics it holds back
            print(f"[{number}] untrusted: {why}")
        return 0
    resolved = [(m, resolve(m, values, where, harness), b, side) for m, b, side in checks]
    drift_names: list[str] = []
    if args.no_drift:
        drift_names = [k for k in values if k == "drift.alarm" or k.endswith(".drift.alarm") or k == "history.alarm"]
        if not drift_names:
            raise InputError(f"--no-drift: {where} has no drift test (no drift.alarm metric)")
    failures: list[str] = []
    passed: list[str] = []  # what each condition that holds checked, printed as the failures are
    for metric, key, limit, side in resolved:
        value, need = values[key], f"{'>=' if side == 'min' else '<='} {limit:g} required"
        if key in untrusted and not args.allow_degenerate:
            failures.append(f"{metric}: {untrusted[key]} ({need}; --allow-degenerate to pass it anyway)")
        elif value is None:
            failures.append(f"{metric} is undefined ({need})")
        elif side == "min" and value < limit:
            failures.append(f"{metric} = {value:.6g} < {limit:g}")
        elif side == "max" and value > limit:
            failures.append(f"{metric} = {value:.6g} > {limit:g}")
        else:
            passed.append(f"{metric} = {value:.6g} {'>=' if side == 'min' else '<='} {limit:g}"
                          + (f" ({untrusted[key]}; passed by --allow-degenerate)" if key in untrusted else ""))
    for name in drift_names:
        if values[name] is None:
            failures.append(f"{name} is undefined: the drift test could not run")
        elif values[name] and name == "history.alarm":
            failures.append(f"drift detected across nights (history.alarm: evidence {values['history.evidence']:.3g}"
                            f" reached the threshold {values['history.threshold']:g})")
        elif values[name]:
            p_value = values.get(name.replace("alarm", "p_value"))
            failures.append(f"drift detected ({name}" + (f", p = {p_value:.3g}" if p_value is not None else "") + ")")
        elif name == "history.alarm":
            passed.append(f"no drift across nights (history.alarm = 0: evidence {values['history.evidence']:.3g} "
                          f"below the threshold {values['history.threshold']:g})")
        else:
            p_value = values.get(name.replace("alarm", "p_value"))
            passed.append(f"no drift ({name} = 0" + (f", p = {p_value:.3g}" if p_value is not None else "") + ")")
    for line in passed:
        print(f"judgecp gate: ok {line}")
    for line in failures:
        print(f"judgecp gate: FAIL {line}")
    if not failures:
        print(f"judgecp gate: ok ({len(resolved) + len(drift_names)} condition(s))")
    return 1 if failures else 0
