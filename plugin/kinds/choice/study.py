"""Multiple choice: conformal option sets over repeated calibration/test splits, and the report.

The set methods of the Likert path (LAC, APS, RAPS, margin; any registered
method with ``ordinal = False``) run unchanged on option index ``1..K``:
padding is masked out of every set, and several correct options are one
merged class (:meth:`judgecp.data.ChoiceData.merged`), so coverage means the
merged class is in the set and set sizes count it once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.base.progress import progress
from judgecp.base.scale import LikertScale
from judgecp.data.choice import ChoiceData
from judgecp.kinds.kind import Study, counts
from judgecp.kinds.metrics import (
    Entry,
    Metric,
    PrimaryMetric,
    count_metrics,
    metric_suffix,
    pick,
    with_stderr,
)
from judgecp.kinds.protocol import Protocol, split_indices
from judgecp.kinds.registry import build_method, method_classes
from judgecp.kinds.sweep import SWEEP_KEY, choice_sweep
from judgecp.stats.conformal import ConformalMethod
from judgecp.stats.coverage import mean_std
from judgecp.stats.diagrams import set_size_distribution
from judgecp.stats.methods.spec import canonical_spec, parse_method_spec
from judgecp.stats.methods.variants import VARIANT_OPTIONS

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


# -- the study part of the mcq kind ---------------------------------------------------------------


def mcq_metrics(protocol: Protocol, categories: Sequence[str] = ()) -> list[Metric]:
    """``n``, ``excluded``, ``accuracy``; per method ``coverage_<m>``, ``set_size_<m>`` (with ``_stderr``),
    ``set_size_correct_<m>``, ``set_size_incorrect_<m>``, ``empty_<m>``; per category ``accuracy_<c>`` and,
    for the first method, ``coverage_<m>_<c>`` and ``set_size_<m>_<c>``."""
    metrics = [*count_metrics(), Metric("accuracy", pick("accuracy"), True)]
    specs = protocol.method_specs("mcq")
    for spec in specs:
        s = metric_suffix(spec)
        metrics += with_stderr(f"coverage_{s}", ("methods", spec, "coverage"), None)
        metrics += with_stderr(f"set_size_{s}", ("methods", spec, "set_size"), False)
        metrics += [Metric(f"set_size_correct_{s}", pick("methods", spec, "set_size_correct"), False),
                    Metric(f"set_size_incorrect_{s}", pick("methods", spec, "set_size_incorrect"), None),
                    Metric(f"empty_{s}", pick("methods", spec, "empty"), False)]
    for category in categories:
        c = metric_suffix(category)
        metrics.append(Metric(f"accuracy_{c}", pick("by_category", Entry(category), "accuracy"), True))
        for spec in specs[:1]:
            s = metric_suffix(spec)
            metrics += [Metric(f"{key}_{s}_{c}", pick("by_category", Entry(category), "methods", spec, key),
                               None if key == "coverage" else False) for key in ("coverage", "set_size")]
    return metrics


class ChoiceStudy(Study):
    """Conformal option sets over repeated calibration/test splits (:func:`evaluate_choices`)."""

    default_methods = ("lac", "aps", "aps(randomized=False)", "raps", "margin")
    settings = frozenset({"alpha", "alphas", "methods", "splits", "seeds", "random_state", "cal_fraction", "group"})

    def accepts_method(self, cls: Any) -> bool:
        """Options have no order: set methods that do not use it."""
        return bool(cls.output == "set" and not cls.ordinal)

    def check_method(self, spec: str, flag: str) -> None:
        name, kwargs = parse_method_spec(spec)
        if not self.accepts_method(method_classes()[name]):
            raise InputError(f"{flag}: method {name!r} relies on ordered labels; multiple-choice options have no order")
        if any(k in kwargs for k in VARIANT_OPTIONS):
            raise InputError(f"{flag}: {spec}: conditional=, cv= and features= are for Likert labels")
        if kwargs.get("probabilities") == "recalibrated":
            raise InputError(f"{flag}: {spec}: option letters are not classes shared across items; "
                             "use the model's own probabilities")

    def run(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        return evaluate_choices(data, protocol)

    def metrics(
        self, protocol: Protocol, body: Mapping[str, Any] | None = None, categories: tuple[str, ...] = ()
    ) -> list[Metric]:
        if body is not None:
            protocol = protocol.with_(methods=tuple(body["methods"]) or None)
            categories = tuple(body.get("by_category") or ())
        return mcq_metrics(protocol, categories)

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        out = counts(body)
        if "accuracy" in body:
            out["accuracy"] = body["accuracy"]
        for name, entry in (body.get("methods") or {}).items():
            out[name] = {"coverage": entry["coverage"], "set_size": entry["set_size"]}
        return out

    def group_coverages(self, body: Mapping[str, Any]) -> list[tuple[str, str, Any, int, bool]]:
        return [(g, method, m["coverage"], entry["n"], False)
                for key, table in body.items() if key.startswith("by_") and isinstance(table, Mapping)
                for g, entry in table.items() for method, m in entry.get("methods", {}).items()]

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """The first method's coverage and mean set size: every option in every set (a judge
        that says nothing) reads the largest size, not a coverage alone."""
        for key in flat:
            if key.endswith("|set_size"):
                method = key[: -len("|set_size")]
                suffix = metric_suffix(method)
                return [PrimaryMetric(f"{method}|coverage", None, None, f"coverage_{suffix}"),
                        PrimaryMetric(key, False, 1.0, f"set_size_{suffix}")]
        return []
