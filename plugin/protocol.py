"""The evaluation protocol: repeated random calibration/test splits.

For each seed the valid rows are shuffled with ``numpy.random.default_rng(seed)``;
the first ``round(cal_fraction * n)`` calibrate every method (which fits its
model, if any, on a part of them) and the rest are the test set. Metrics are
averaged over seeds (mean and sample standard deviation, ddof=1). The same
data, options and seeds give the same report, byte for byte, whatever
``jobs`` is.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.conformal import Prediction, check_alpha, min_calibration_size
from judgecp.data import LikertData
from judgecp.diagnostics import confusion_matrix, point_metrics, ranking_scoring_gap
from judgecp.errors import InputError
from judgecp.features import judge_probabilities
from judgecp.methods.mondrian import Mondrian
from judgecp.plugins import build_method, canonical_spec, parse_method_spec


def informativeness(widths: NDArray[np.float64]) -> dict[str, float]:
    """Fractions of label sets that are decisive (width <= 1), moderate (1-3] or uninformative (> 3).

    The bins of the seed paper's appendix F.6, in the scale's units.
    """
    return {
        "decisive": float(np.mean(widths <= 1)),
        "moderate": float(np.mean((widths > 1) & (widths <= 3))),
        "uninformative": float(np.mean(widths > 3)),
    }


@dataclass(frozen=True)
class Protocol:
    """What to run: level, methods, splits and (optionally) groups."""

    alpha: float = 0.1
    methods: tuple[str, ...] = ("naive",)
    seeds: tuple[int, ...] = tuple(range(10))
    cal_fraction: float = 0.5
    mondrian: str | None = None
    group: str | None = None
    jobs: int = 1

    def __post_init__(self) -> None:
        check_alpha(self.alpha)
        if not 0.0 < self.cal_fraction < 1.0:
            raise InputError(f"cal_fraction must be in (0, 1), got {self.cal_fraction!r}")
        if not self.seeds:
            raise InputError("need at least one seed")
        if not self.methods:
            raise InputError("need at least one method")


def split_indices(n: int, seed: int, cal_fraction: float) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    perm = np.random.default_rng(seed).permutation(n)
    n_cal = round(cal_fraction * n)
    n_cal = min(max(n_cal, 1), n - 1)
    return perm[:n_cal], perm[n_cal:]


@dataclass
class SplitResult:
    seed: int
    test: NDArray[np.int64]
    predictions: dict[str, Prediction]
    seconds: dict[str, float]
    insufficient_groups: dict[str, list[str]] = field(default_factory=dict)


#: Thread-pool variables set to 1 in worker processes: one process per core,
#: or OpenMP's spinning threads (scikit-learn, torch) oversubscribe the cores.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _run_parallel(data: LikertData, protocol: Protocol, specs: Sequence[str]) -> list[SplitResult]:
    # spawn, not fork: a forked child of a process that already started
    # torch's (or OpenMP's) thread pool can deadlock. Children copy the
    # environment at start, so the thread limits are set around the pool.
    saved = {k: os.environ.get(k) for k in THREAD_ENV}
    os.environ.update(dict.fromkeys(THREAD_ENV, "1"))
    try:
        ctx = multiprocessing.get_context("spawn")
        workers = min(protocol.jobs, len(protocol.seeds))
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = [pool.submit(_run_split, data, protocol, specs, s) for s in protocol.seeds]
            return [f.result() for f in futures]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run_split(data: LikertData, protocol: Protocol, specs: Sequence[str], seed: int) -> SplitResult:
    cal, test = split_indices(data.n, seed, protocol.cal_fraction)
    X, y = data.X, data.labels
    preds: dict[str, Prediction] = {}
    seconds: dict[str, float] = {}
    insufficient: dict[str, list[str]] = {}
    for spec in specs:
        t0 = time.perf_counter()
        if protocol.mondrian:
            groups = data.field(protocol.mondrian)

            def make(i: int, spec: str = spec) -> Any:
                state = int(np.random.SeedSequence([seed, i]).generate_state(1)[0])
                return build_method(spec, alpha=protocol.alpha, scale=data.scale, random_state=state)

            mondrian = Mondrian(make).calibrate(X[cal], y[cal], groups[cal])
            preds[spec] = mondrian.predict(X[test], groups[test])
            insufficient[spec] = mondrian.insufficient_groups_
        else:
            method = build_method(spec, alpha=protocol.alpha, scale=data.scale, random_state=seed)
            preds[spec] = method.calibrate(X[cal], y[cal]).predict(X[test])
        seconds[spec] = time.perf_counter() - t0
    return SplitResult(seed, test, preds, seconds, insufficient)


# -- per-split metrics -------------------------------------------------------


def label_bounds(sets: NDArray[np.bool_], minimum: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Smallest and largest label of each set (NaN for an empty set)."""
    any_ = sets.any(axis=1)
    first = np.argmax(sets, axis=1).astype(np.float64) + minimum
    last = (sets.shape[1] - 1 - np.argmax(sets[:, ::-1], axis=1)).astype(np.float64) + minimum
    return np.where(any_, first, np.nan), np.where(any_, last, np.nan)


@dataclass
class RowMetrics:
    """Per-test-row coverage and width of one method's predictions."""

    interval_covered: NDArray[np.bool_] | None
    interval_width: NDArray[np.float64] | None
    labels_covered: NDArray[np.bool_]
    labels_width: NDArray[np.float64]
    labels_size: NDArray[np.int64]
    expanded_covered: NDArray[np.bool_] | None
    expanded_width: NDArray[np.float64] | None
    full_range: NDArray[np.bool_]
    midpoint: NDArray[np.float64]

    @classmethod
    def of(cls, pred: Prediction, y: NDArray[np.float64]) -> RowMetrics:
        scale = pred.scale
        idx = scale.index(np.round(y))
        rows = np.arange(y.size)
        covered = pred.sets[rows, idx]
        lo, hi = label_bounds(pred.sets, scale.minimum)
        width = np.nan_to_num(hi - lo, nan=0.0)
        if pred.has_interval:
            exp = pred.expanded_sets()
            assert exp is not None
            elo, ehi = label_bounds(exp, scale.minimum)
            return cls(
                (y >= pred.lower) & (y <= pred.upper),
                np.maximum(pred.upper - pred.lower, 0.0),
                covered,
                width,
                pred.sets.sum(axis=1),
                exp[rows, idx],
                np.nan_to_num(ehi - elo, nan=0.0),
                pred.full_range,
                (pred.lower + pred.upper) / 2,
            )
        mid = np.where(np.isnan(lo), np.nan, (lo + hi) / 2)
        return cls(None, None, covered, width, pred.sets.sum(axis=1), None, None, pred.full_range, mid)


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def _summary(per_seed: list[RowMetrics], *, with_size: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if per_seed[0].interval_covered is not None:
        c = _mean_std([m.interval_covered.mean() for m in per_seed])  # type: ignore[union-attr]
        w = _mean_std([m.interval_width.mean() for m in per_seed])  # type: ignore[union-attr]
        out["interval"] = {"coverage": c[0], "coverage_std": c[1], "width": w[0], "width_std": w[1]}
        c = _mean_std([m.expanded_covered.mean() for m in per_seed])  # type: ignore[union-attr]
        w = _mean_std([m.expanded_width.mean() for m in per_seed])  # type: ignore[union-attr]
        expanded = {"coverage": c[0], "coverage_std": c[1], "width": w[0], "width_std": w[1]}
    else:
        out["interval"] = None
        expanded = None
    c = _mean_std([m.labels_covered.mean() for m in per_seed])
    w = _mean_std([m.labels_width.mean() for m in per_seed])
    labels: dict[str, Any] = {"coverage": c[0], "coverage_std": c[1], "width": w[0], "width_std": w[1]}
    if with_size:
        s = _mean_std([m.labels_size.mean() for m in per_seed])
        labels.update(size=s[0], size_std=s[1], empty=float(np.mean([(m.labels_size == 0).mean() for m in per_seed])))
    out["labels"] = labels
    out["expanded"] = expanded
    return out


def _pooled(rows: list[RowMetrics], attr: str) -> NDArray[Any]:
    return np.concatenate([getattr(r, attr) for r in rows])


def _stratified(rows: list[RowMetrics], strata: NDArray[Any], values: Sequence[Any]) -> dict[str, Any]:
    """Coverage and width within each stratum, pooled over seeds."""
    out: dict[str, Any] = {}
    has_interval = rows[0].interval_covered is not None
    lab_cov, lab_w = _pooled(rows, "labels_covered"), _pooled(rows, "labels_width")
    if has_interval:
        int_cov, int_w = _pooled(rows, "interval_covered"), _pooled(rows, "interval_width")
        exp_cov, exp_w = _pooled(rows, "expanded_covered"), _pooled(rows, "expanded_width")
    for v in values:
        m = strata == v
        if not m.any():
            continue
        entry: dict[str, Any] = {
            "n": float(m.sum() / len(rows)),
            "labels": {"coverage": float(lab_cov[m].mean()), "width": float(lab_w[m].mean())},
        }
        if has_interval:
            entry["interval"] = {"coverage": float(int_cov[m].mean()), "width": float(int_w[m].mean())}
            entry["expanded"] = {"coverage": float(exp_cov[m].mean()), "width": float(exp_w[m].mean())}
        out[str(v)] = entry
    return out


def _midpoint_table(rows: list[RowMetrics], y: NDArray[np.float64], raw: NDArray[np.float64], scale: Any) -> dict[str, Any]:
    mid = _pooled(rows, "midpoint")
    ok = ~np.isnan(mid)
    def stats(est: NDArray[np.float64]) -> dict[str, Any]:
        pm = point_metrics(est[ok], y[ok], scale)
        return {k: pm[k] for k in ("pearson", "spearman", "mae")} | {
            "exact_accuracy": float(np.mean(np.round(est[ok]) == y[ok])) if ok.any() else None
        }
    return {"raw": stats(raw), "midpoint": stats(mid)}


def evaluate(data: LikertData, protocol: Protocol) -> dict[str, Any]:
    """Run the protocol and return the report (see the README for its schema)."""
    specs = []
    for s in protocol.methods:
        name, kwargs = parse_method_spec(s)
        specs.append(canonical_spec(name, kwargs))
    if len(set(specs)) != len(specs):
        raise InputError(f"a method is listed twice: {specs}")
    for f in (protocol.mondrian, protocol.group):
        if f is not None:
            data.field(f)
    if data.n < 4:
        raise InputError(f"need at least 4 valid rows for a calibration/test split, got {data.n}")
    # Build each method once up front so a bad spec fails before any work.
    for spec in specs:
        build_method(spec, alpha=protocol.alpha, scale=data.scale)

    if protocol.jobs > 1 and len(protocol.seeds) > 1:
        splits = _run_parallel(data, protocol, specs)
    else:
        splits = [_run_split(data, protocol, specs, s) for s in protocol.seeds]

    scale = data.scale
    P = judge_probabilities(data.logprobs, scale)
    report: dict[str, Any] = {
        "kind": "likert",
        "input": {"source": data.source, "columns": data.columns},
        "n": data.n,
        "n_read": data.n_read,
        "excluded": data.excluded.to_json(),
        "flags": data.flags.to_json(key="flag"),
        "alpha": protocol.alpha,
        "scale": [scale.minimum, scale.maximum],
        "protocol": {
            "seeds": list(protocol.seeds),
            "cal_fraction": protocol.cal_fraction,
            "n_calibration": int(data.n - splits[0].test.size),
            "n_test": int(splits[0].test.size),
            "mondrian": protocol.mondrian,
            "group": protocol.group,
            "min_calibration_for_alpha": min_calibration_size(protocol.alpha),
        },
        "point": point_metrics(data.parsed, data.labels, scale, P),
        "confusion": confusion_matrix(data.parsed, data.labels, scale),
        "methods": {},
    }
    group_field = protocol.mondrian or protocol.group
    groups = data.field(group_field) if group_field else None
    y_all = data.labels
    for spec in specs:
        per_seed = [RowMetrics.of(s.predictions[spec], y_all[s.test]) for s in splits]
        test_idx = np.concatenate([s.test for s in splits])
        y_pool = y_all[test_idx]
        entry = _summary(per_seed)
        entry["full_range"] = float(np.mean([m.full_range.mean() for m in per_seed]))
        err = np.abs(data.parsed[test_idx] - y_pool).astype(np.int64)
        entry["coverage_by_label"] = _stratified(per_seed, y_pool.astype(np.int64), list(scale.labels))
        entry["coverage_by_error"] = _stratified(per_seed, err, list(range(scale.k)))
        widths = _pooled(per_seed, "labels_width")
        entry["informativeness"] = informativeness(widths)
        entry["midpoint"] = _midpoint_table(per_seed, y_pool, data.parsed[test_idx].astype(np.float64), scale)
        report["methods"][spec] = entry

    if groups is not None:
        report["groups"] = _group_report(data, protocol, specs, splits, groups)
        report["worst_group"] = {
            spec: min(
                (
                    {"group": g, "coverage": v["methods"][spec]["labels"]["coverage"]}
                    for g, v in report["groups"].items()
                    if spec in v["methods"]
                ),
                key=lambda d: d["coverage"],
                default=None,
            )
            for spec in specs
        }
    return report


def _group_report(
    data: LikertData,
    protocol: Protocol,
    specs: Sequence[str],
    splits: list[SplitResult],
    groups: NDArray[np.str_],
) -> dict[str, Any]:
    scale = data.scale
    P = judge_probabilities(data.logprobs, scale)
    out: dict[str, Any] = {}
    for g in sorted(set(groups.tolist())):
        rows = groups == g
        point = point_metrics(data.parsed[rows], data.labels[rows], scale, P[rows])
        entry: dict[str, Any] = {"n": int(rows.sum()), "point": point, "methods": {}}
        for spec in specs:
            per_seed = []
            for s in splits:
                in_group = groups[s.test] == g
                if not in_group.any():
                    continue
                per_seed.append(RowMetrics.of(s.predictions[spec].take(np.flatnonzero(in_group)), data.labels[s.test][in_group]))
            if not per_seed:
                continue
            summary = _summary(per_seed)
            summary["full_range"] = float(np.mean([m.full_range.mean() for m in per_seed]))
            summary["insufficient_calibration_seeds"] = int(
                sum(g in s.insufficient_groups.get(spec, []) for s in splits)
            )
            width = (summary["interval"] or summary["labels"])["width"]
            summary["rsg"] = ranking_scoring_gap(point["pearson"], width, scale)
            entry["methods"][spec] = summary
        out[g] = entry
    return out
