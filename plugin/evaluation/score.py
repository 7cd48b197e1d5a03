"""Likert judges: repeated calibration/test splits of every conformal method, and the report.

For each split (:mod:`judgecp.protocol`) every method calibrates on the
calibration rows (fitting its model, if any, on a part of them) and predicts
the test rows; Mondrian calibration fits one copy per group. The report has
the judge's point metrics and confusion matrix, each method's coverage and
width (interval, label set, expanded) as mean and std over splits, coverage
by human label and by judge error, informativeness, midpoints, and, with a
group or Mondrian field, the same per group with the ranking-scoring gap.

Continuous labels (:attr:`judgecp.data.ScoreData.continuous_labels`, e.g.
``--label-scale 0:1``): only interval methods run (the others are listed in
``skipped`` with the reason), their entries have the interval's coverage and
width and no ``labels``/``expanded`` (label sets are for integer labels), and
the tables that treat a label as a category bin it to its nearest scale
point (the report's ``label_scale.binned`` names them).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.conformal import Prediction, min_calibration_size
from judgecp.data.score import ScoreData
from judgecp.diagnostics import confusion_matrix, point_metrics, ranking_scoring_gap
from judgecp.errors import InputError
from judgecp.evaluation.conditional import conditional_coverage, judge_error
from judgecp.evaluation.continuous import interval_specs, label_scale_section, with_label_units
from judgecp.evaluation.diagrams import likert_reliability
from judgecp.evaluation.metrics import (
    RowMetrics,
    agreement,
    headline_entry,
    informativeness,
    midpoint_table,
    pooled,
    stratified,
    summary,
)
from judgecp.evaluation.sweep import SWEEP_KEY, likert_sweep, sweep_levels
from judgecp.features import judge_probabilities, log_softmax_once
from judgecp.memory import release_freed_memory
from judgecp.methods.mondrian import Mondrian
from judgecp.methods.variants import is_group_conditional
from judgecp.plugins import build_method, canonical_spec, parse_method_spec
from judgecp.progress import progress
from judgecp.protocol import Protocol, split_indices

#: Thread-pool variables set to 1 in worker processes: one process per core,
#: or OpenMP's spinning threads (scikit-learn, torch) oversubscribe the cores.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass
class SplitResult:
    seed: int
    test: NDArray[np.signedinteger[Any]]  # int32 below 2**31 rows
    metrics: dict[str, RowMetrics]  # each method's coverage and width on the test rows
    seconds: dict[str, float]
    insufficient_groups: dict[str, list[str]] = field(default_factory=dict)


def run_split(data: ScoreData, protocol: Protocol, specs: Sequence[str], seed: int) -> SplitResult:
    """Calibrate every method on one split's calibration rows and predict its test rows."""
    cal, test = split_indices(data.n, seed, protocol.cal_fraction)
    X, y = data.X, data.labels
    X_cal, y_cal, X_test, y_test = X[cal], y[cal], X[test], y[test]
    continuous = data.continuous_labels
    alpha = protocol.level
    metrics: dict[str, RowMetrics] = {}
    seconds: dict[str, float] = {}
    insufficient: dict[str, list[str]] = {}
    with log_softmax_once(X_cal, X_test):  # every method reads the judge's distribution of the same rows
        for spec in specs:
            t0 = time.perf_counter()
            if is_group_conditional(spec):  # one pooled fit, a threshold per group (judgecp.methods.variants)
                groups = data.field(protocol.mondrian or protocol.group or "", "mondrian field")
                grouped: Any = build_method(spec, alpha=alpha, scale=data.scale, random_state=seed)
                pred: Prediction = grouped.calibrate(X_cal, y_cal, groups=groups[cal]).predict(X_test, groups=groups[test])
                insufficient[spec] = list(grouped.pooled_groups_)
            elif protocol.mondrian:
                groups = data.field(protocol.mondrian, "mondrian field")

                def make(i: int, spec: str = spec) -> Any:
                    state = int(np.random.SeedSequence([seed, i]).generate_state(1)[0])
                    return build_method(spec, alpha=alpha, scale=data.scale, random_state=state)

                mondrian = Mondrian(make).calibrate(X_cal, y_cal, groups[cal])
                pred = mondrian.predict(X_test, groups[test])
                insufficient[spec] = mondrian.insufficient_groups_
            else:
                method = build_method(spec, alpha=alpha, scale=data.scale, random_state=seed)
                pred = method.calibrate(X_cal, y_cal).predict(X_test)
            seconds[spec] = time.perf_counter() - t0
            # Keep the row metrics, not the prediction: a fraction of the memory at a million rows.
            metrics[spec] = RowMetrics.of(pred, y_test, continuous=continuous)
    # The test rows as a small copy: ``test`` is a view that would keep the whole permutation alive.
    kept = test.astype(np.int32) if data.n < 2**31 else test.copy()
    return SplitResult(seed, kept, metrics, seconds, insufficient)


#: Why ``jobs > 1`` failed in a worker: the calling script started the work at import time.
SCRIPT_NEEDS_MAIN_GUARD = (
    "jobs > 1 runs the splits in new Python processes, and each imports the calling script again: "
    "put the script's work under `if __name__ == \"__main__\":` (or use jobs=1)"
)

_HELD: tuple[ScoreData, Protocol, Sequence[str]] | None = None


def _hold(path: str) -> None:
    """A worker's initializer: the data, protocol and methods, read once from the file the caller wrote.

    Ctrl-C is the caller's to handle (it stops the workers: :func:`_stop`): a worker ignores SIGINT, so a
    terminal's Ctrl-C, which reaches every process of the group, prints no traceback per worker.
    """
    global _HELD
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with open(path, "rb") as handle:
        _HELD = pickle.load(handle)


def _run_held(seed: int) -> SplitResult:
    assert _HELD is not None, "worker started without its data"
    return run_split(*_HELD, seed)


def run_splits(data: ScoreData, protocol: Protocol, specs: Sequence[str]) -> list[SplitResult]:
    """Every split, in processes when ``protocol.jobs > 1`` (same results either way)."""
    seeds = protocol.split_seeds("likert")
    bar = progress(len(seeds), f"likert splits (alpha {protocol.level:g})")
    if protocol.jobs <= 1 or len(seeds) <= 1:
        results = []
        for s in seeds:
            results.append(run_split(data, protocol, specs, s))
            bar.update()
        bar.close()
        return results
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # A worker re-running the caller's script (spawn imports ``__main__`` again) came here:
        # starting a pool now would leave the caller waiting forever on this worker.
        raise InputError(SCRIPT_NEEDS_MAIN_GUARD)
    # spawn, not fork: a forked child of a process that already started
    # torch's (or OpenMP's) thread pool can deadlock. Children copy the
    # environment at start, so the thread limits are set around the pool.
    saved = {k: os.environ.get(k) for k in THREAD_ENV}
    os.environ.update(dict.fromkeys(THREAD_ENV, "1"))
    try:
        ctx = multiprocessing.get_context("spawn")
        # The data goes to each worker once (the initializer), not once per split, and through a file,
        # not the pipe that starts the worker: CPython's spawn writes that pipe while holding its read
        # end, so a worker that dies before reading a large payload would leave this process waiting forever.
        with tempfile.TemporaryDirectory(prefix="judgecp-splits-") as tmp:
            held = os.path.join(tmp, "held.pickle")
            with open(held, "wb") as handle:
                pickle.dump((data, protocol, specs), handle, protocol=pickle.HIGHEST_PROTOCOL)
            with ProcessPoolExecutor(max_workers=min(protocol.jobs, len(seeds)), mp_context=ctx,
                                     initializer=_hold, initargs=(held,)) as pool:
                try:
                    futures = [pool.submit(_run_held, s) for s in seeds]
                    results = []
                    for f in futures:
                        results.append(f.result())
                        bar.update()
                except BrokenProcessPool as exc:
                    raise InputError(f"a worker process of jobs={protocol.jobs} stopped ({exc}). From a script: "
                                     f"{SCRIPT_NEEDS_MAIN_GUARD}. Otherwise it may have run out of memory: "
                                     "try fewer jobs") from exc
                except BaseException:  # Ctrl-C, SIGTERM: stop now, not after every split still queued
                    _stop(pool)
                    raise
                bar.close()
                return results
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the splits not started and end the workers at once (leaving the pool's ``with`` block would
    otherwise wait for every queued split: 23 s for ``--jobs 2`` on the example)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    # No public way before 3.14; taken before shutdown(), which forgets them.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


def method_specs(protocol: Protocol) -> list[str]:
    specs = [canonical_spec(*parse_method_spec(s)) for s in protocol.method_specs("likert")]
    if len(set(specs)) != len(specs):
        raise InputError(f"a method is listed twice: {specs}")
    return specs


def evaluate_scores(data: ScoreData, protocol: Protocol) -> dict[str, Any]:
    """Run the protocol on a Likert judge and return the report (docs/cli.md, "The JSON report")."""
    specs = method_specs(protocol)
    skipped = list(protocol.skipped)
    continuous = data.continuous_labels
    if continuous:
        specs, not_intervals = interval_specs(specs, protocol.level, data)
        skipped += not_intervals
    for name, setting in ((protocol.mondrian, "mondrian field"), (protocol.group, "group field")):
        if name is not None:
            data.field(name, setting)
    if data.n < 4:
        raise InputError(f"need at least 4 valid rows for a calibration/test split, got {data.n}")
    for spec in specs:  # a bad spec fails before any work
        build_method(spec, alpha=protocol.level, scale=data.scale)
        if is_group_conditional(spec) and not (protocol.mondrian or protocol.group):
            raise InputError(f"method {spec!r}: conditional=group needs --mondrian FIELD or --group FIELD")
    splits = run_splits(data, protocol, specs)
    release_freed_memory()  # the splits' temporaries: the report's tables start from what is kept

    scale = data.scale
    P = judge_probabilities(data.logprobs, scale)
    # Where a label is a category (exact accuracy, per-label tables): continuous labels' nearest scale point.
    bins = np.round(data.labels) if continuous else None
    categories = data.labels if bins is None else bins
    report: dict[str, Any] = {
        "kind": "likert",
        "input": {"source": data.source, "columns": data.columns},
        "n": data.n,
        "n_read": data.n_read,
        "excluded": data.excluded.to_json(),
        "flags": data.flags.to_json(key="flag"),
        "alpha": protocol.level,
        "scale": [scale.minimum, scale.maximum],
        "protocol": {
            "seeds": list(protocol.split_seeds("likert")),
            "cal_fraction": protocol.cal_fraction,
            "n_calibration": int(data.n - splits[0].test.size),
            "n_test": int(splits[0].test.size),
            "mondrian": protocol.mondrian,
            "group": protocol.group,
            "min_calibration_for_alpha": min_calibration_size(protocol.level),
        },
        "point": point_metrics(data.parsed, data.labels, scale, P, bins=bins),
        "confusion": confusion_matrix(data.parsed, categories, scale),
        "reliability_diagram": likert_reliability(P, categories, scale.labels.tolist()),
        "methods": {},
    }
    labels_section = label_scale_section(data)
    if labels_section is not None:
        report["label_scale"] = labels_section
    del P  # 8 bytes a row and label, not needed again (group_report takes its own)
    group_field = protocol.mondrian or protocol.group
    groups = data.field(group_field) if group_field else None
    y_all = data.labels
    report["conditional_coverage"] = {}
    # What does not depend on the method, once, and in small integer types where the values are
    # labels or errors: the pooled rows repeat every row about ten times (5 million at 1M records).
    test_idx = np.concatenate([s.test for s in splits])
    small = np.result_type(*(np.min_scalar_type(v) for v in (-scale.span - 1, scale.minimum, scale.maximum)))
    y_pool = y_all[test_idx]
    bins_pool = None if bins is None else bins[test_idx]
    cat_pool = y_pool if bins_pool is None else bins_pool
    raw_pool = data.parsed[test_idx].astype(np.float64)
    raw_row = agreement(raw_pool, y_pool, bins_pool)
    label_pool = cat_pool.astype(np.int64).astype(small)
    parsed_error = np.abs(raw_pool - cat_pool).astype(small)
    del raw_pool
    judge_error_pool = judge_error(data.logprobs, categories, scale).astype(small)[test_idx]
    group_pool = None if groups is None else groups[test_idx]
    # Without groups or a sweep nothing reads a method's rows after its tables, so each method's rows are
    # dropped once written, and the interval methods (float rows, the costliest ranks) come last, when
    # the others' are gone. The report keeps the order of ``specs``.
    keep_rows = groups is not None or sweep_levels(protocol) is not None
    entries: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for spec in sorted(specs, key=lambda spec: splits[0].metrics[spec].interval_covered is not None):
        per_seed = [s.metrics[spec] for s in splits]
        entry = summary(per_seed)
        entry["full_range"] = float(np.mean([m.full_range.mean() for m in per_seed]))
        entry["coverage_by_label"] = stratified(per_seed, label_pool, list(scale.labels))
        entry["coverage_by_error"] = stratified(per_seed, parsed_error, list(range(scale.k)))
        # Continuous labels: the interval's widths (there are no label sets).
        entry["informativeness"] = informativeness(pooled(per_seed, "interval_width" if continuous else "labels_width"))
        conditional = conditional_coverage(per_seed, cat_pool, judge_error_pool, group_pool)
        # The midpoints' correlations come last: their temporaries of the pooled length set the study's
        # memory peak, so the method's rows, split midpoints included, are dropped first.
        midpoints = pooled(per_seed, "midpoint")
        if not keep_rows:
            del per_seed
            for s in splits:
                del s.metrics[spec]
            release_freed_memory()  # the rows are small arrays: freed, they stay resident until trimmed
        entry["midpoint"] = midpoint_table(midpoints, y_pool, lambda: data.parsed[test_idx], raw_row, bins_pool)
        entries[spec] = with_label_units(entry, data), conditional
    for spec in specs:
        report["methods"][spec], report["conditional_coverage"][spec] = entries[spec]

    if groups is not None:
        report["groups"] = group_report(data, specs, splits, groups)
        report["worst_group"] = {
            spec: min(
                (
                    {"group": g, "coverage": headline_entry(v["methods"][spec])["coverage"]}
                    for g, v in report["groups"].items()
                    if spec in v["methods"]
                ),
                key=lambda d: d["coverage"],
                default=None,
            )
            for spec in specs
        }
    sweep = likert_sweep(data, protocol, specs, splits)
    if sweep is not None:
        report[SWEEP_KEY] = sweep
    if skipped:
        report["skipped"] = [{"method": name, "reason": reason} for name, reason in skipped]
    return report


def group_report(
    data: ScoreData, specs: Sequence[str], splits: list[SplitResult], groups: NDArray[np.str_]
) -> dict[str, Any]:
    """Point metrics and every method's coverage, width and RSG within each group (pooled over splits)."""
    scale = data.scale
    P = judge_probabilities(data.logprobs, scale)
    out: dict[str, Any] = {}
    bins = np.round(data.labels) if data.continuous_labels else None
    for g in sorted(set(groups.tolist())):
        rows = groups == g
        point = point_metrics(data.parsed[rows], data.labels[rows], scale, P[rows], bins=None if bins is None else bins[rows])
        entry: dict[str, Any] = {"n": int(rows.sum()), "point": point, "methods": {}}
        for spec in specs:
            per_seed = []
            for s in splits:
                in_group = groups[s.test] == g
                if not in_group.any():
                    continue
                per_seed.append(s.metrics[spec].take(in_group))
            if not per_seed:
                continue
            summary_ = summary(per_seed)
            summary_["full_range"] = float(np.mean([m.full_range.mean() for m in per_seed]))
            summary_["insufficient_calibration_seeds"] = int(sum(g in s.insufficient_groups.get(spec, []) for s in splits))
            width = (summary_["interval"] or summary_["labels"])["width"]
            summary_["rsg"] = ranking_scoring_gap(point["pearson"], width, scale)
            entry["methods"][spec] = summary_
        out[g] = entry
    return out
