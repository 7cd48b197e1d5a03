"""Multiple choice: conformal option sets over repeated calibration/test splits, and the report.

The set methods of the Likert path (LAC, APS, RAPS, margin; any registered
method with ``ordinal = False``) run unchanged on option index ``1..K``:
padding is masked out of every set, and several correct options are one
merged class (:meth:`judgecp.data.ChoiceData.merged`), so coverage means the
merged class is in the set and set sizes count it once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.stats.conformal import ConformalMethod
from judgecp.data.choice import ChoiceData
from judgecp.base.errors import InputError
from judgecp.stats.diagrams import set_size_distribution
from judgecp.stats.coverage import mean_std
from judgecp.workflows.study.sweep import SWEEP_KEY, choice_sweep
from judgecp.base.plugins import build_method, canonical_spec, parse_method_spec
from judgecp.base.progress import progress
from judgecp.kinds.protocol import Protocol, split_indices
from judgecp.base.scale import LikertScale

BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]

#: How the reports name the record fields of choice records (PARC's and the multiple-choice tables' words).
REPORT_NAMES = {"task": "dataset", "group": "category", "judge": "model"}


def option_scale(data: ChoiceData) -> LikertScale:
    """Options as labels 1..K for the set methods."""
    return LikertScale(1, max(data.k, 2))


def option_sets(method: ConformalMethod, X: FloatArray, valid: BoolArray) -> BoolArray:
    sets: BoolArray = method.predict(X).sets & valid
    return sets


def evaluate_choices(data: ChoiceData, protocol: Protocol) -> dict[str, Any]:
    """Coverage, set size (overall and by correctness) and accuracy per method, split-averaged."""
    if data.n < 4:
        raise InputError(f"need at least 4 usable items for calibration/test splits, got {data.n}")
    specs = [canonical_spec(*parse_method_spec(s)) for s in protocol.method_specs("mcq")]
    seeds = protocol.split_seeds("mcq")
    X, valid, truth = data.merged()
    scale = option_scale(data)
    y = truth + 1.0
    correct_pred = data.correct[np.arange(data.n), data.prediction]
    report: dict[str, Any] = {
        "kind": "mcq",
        "source": data.source,
        "n": data.n,
        "n_read": data.n_read,
        "excluded": data.excluded.to_json(),
        "flags": data.flags.to_json(key="flag"),
        "alpha": protocol.level,
        "protocol": {"seeds": list(seeds), "cal_fraction": protocol.cal_fraction},
        "accuracy": float(correct_pred.mean()),
        "options": {"mean": float(data.n_options.mean()), "max": data.k},
        "methods": {},
    }
    pooled: dict[str, list[tuple[NDArray[np.int64], BoolArray]]] = {s: [] for s in specs}

    def run(spec: str, alpha: float, keep: list[tuple[NDArray[np.int64], BoolArray]] | None = None) -> dict[str, Any]:
        cov, size, size_c, size_w, empty = [], [], [], [], []
        bar = progress(len(seeds), f"multiple choice {spec} splits (alpha {alpha:g})")
        for seed in seeds:
            cal, test = split_indices(data.n, seed, protocol.cal_fraction)
            m = build_method(spec, alpha=alpha, scale=scale, random_state=seed)
            m.calibrate(X[cal], y[cal])
            sets = option_sets(m, X[test], valid[test])
            hit = sets[np.arange(test.size), truth[test]]
            sz = sets.sum(axis=1)
            ok = correct_pred[test]
            cov.append(hit.mean())
            size.append(sz.mean())
            size_c.append(sz[ok].mean() if ok.any() else np.nan)
            size_w.append(sz[~ok].mean() if (~ok).any() else np.nan)
            empty.append((sz == 0).mean())
            if keep is not None:
                keep.append((test, sets))
            bar.update()
        bar.close()
        c, cs = mean_std(cov)
        s, ss = mean_std(size)
        return {
            "coverage": c, "coverage_std": cs, "set_size": s, "set_size_std": ss,
            "set_size_correct": float(np.nanmean(size_c)) if not np.isnan(size_c).all() else None,
            "set_size_incorrect": float(np.nanmean(size_w)) if not np.isnan(size_w).all() else None,
            "empty": float(np.mean(empty)),
            "accuracy": report["accuracy"],
        }

    for spec in specs:
        report["methods"][spec] = run(spec, protocol.level, pooled[spec])
    report["set_size_distribution"] = {spec: set_size_distribution(pooled[spec], data.k) for spec in specs}
    for f in (protocol.group,) if protocol.group else ("task", "group"):
        if f not in data.fields:
            continue
        table: dict[str, Any] = {}
        values = data.fields[f]
        for g in sorted(set(values.tolist())):
            rows = values == g
            entry: dict[str, Any] = {"n": int(rows.sum()), "accuracy": float(correct_pred[rows].mean()), "methods": {}}
            for spec in specs:
                hits, sizes = [], []
                for test, sets in pooled[spec]:
                    sel = rows[test]
                    if sel.any():
                        hits.append(sets[np.flatnonzero(sel), truth[test][sel]])
                        sizes.append(sets[sel].sum(axis=1))
                if hits:
                    entry["methods"][spec] = {
                        "coverage": float(np.concatenate(hits).mean()),
                        "set_size": float(np.concatenate(sizes).mean()),
                    }
            table[g] = entry
        report[f"by_{REPORT_NAMES.get(f, f)}"] = table
    sweep = choice_sweep(protocol, specs, report["methods"], run)
    if sweep is not None:
        report[SWEEP_KEY] = sweep
    return report
