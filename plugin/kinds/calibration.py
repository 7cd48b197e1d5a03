"""What every kind's calibrator part shares: the fitted estimator, a calibrator file's kind fields, the
per-item output on a run, and the checks a set calibrator makes with the run's labels.

A kind's :class:`judgecp.kinds.kind.Calibration` fits with :class:`Fitted`, reads its fields of a
``judgecp.calibrator/2`` file into :class:`KindParts` and applies with :class:`ApplyParts`; the file
format and the ``calibrate``/``apply`` commands around them are :mod:`judgecp.workflows.calibrators`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.kinds.registry import build_method, calibration_kind, saved_method_class
from judgecp.stats.checks import GroupCount, beta_binomial_pvalue
from judgecp.stats.conformal import conformal_rank, min_calibration_size
from judgecp.stats.saved_state import StateReader, not_data

#: Most labels of a scale, or options of multiple choice, a calibrator may name (sizes are checked before
#: anything of that size is allocated).
MAX_LABELS = 1000


# -- fitting -------------------------------------------------------------------------------------


@dataclass
class Fitted:
    """A kind's fitted estimator for a calibrator (:meth:`judgecp.kinds.kind.Calibration.fit`)."""

    estimator: Any
    #: The method as the file names it (a canonical conformal method spec, or a risk controller).
    method: str
    scale: tuple[int, int] | None = None
    options: list[str] | None = None


def check_size(alpha: float, n: int) -> None:
    """A level no calibration of ``n`` items can reach is refused before fitting (every set would be the full range)."""
    need = min_calibration_size(alpha)
    if need > n:
        shown = f"{need:,}" if need < 10**15 else f"about {float(need):.3g}"
        raise InputError(f"alpha {alpha:g} needs at least {shown} calibration items for a finite threshold, "
                         f"and there are {n}: every set would be the full range; choose a larger alpha")


def check_saveable(spec: str, alpha: float, scale: Any) -> None:
    """A method whose fitted state is a model (not numbers) is refused before any fitting."""
    saved_method_class(spec)
    if not build_method(spec, alpha=alpha, scale=scale).is_saveable():
        raise not_data(spec)


def check_conformal_part(spec: str, alpha: float, method: Any, n: int) -> None:
    """A method that fits a model conformalizes on part of the items: too few there for the level is refused too."""
    if method is not None and getattr(method, "insufficient_", False):
        raise InputError(f"alpha {alpha:g}: {spec} fits its model on part of the {n} items and sets its threshold on "
                         f"the other {method.n_conformalize_}, which needs at least "
                         f"{min_calibration_size(method._rank_alpha()):,}: every set would be the full range; "
                         "give more items or choose a larger alpha")



# -- a calibrator file's kind fields ---------------------------------------------------------------


class KindParts(NamedTuple):
    """What one kind's fields of a calibrator file give (:meth:`judgecp.kinds.kind.Calibration.parts`)."""

    estimator: Any
    scale: tuple[int, int] | None
    options: list[str] | None
    groups: str | None
    drift_statistic: str
    drift_range: tuple[float, float]
    #: The range of the PPI pairs' human target and judge proxy.
    ppi_range: tuple[float, float]
    #: The drift values the state implies, where it does (pairwise: the calibration pairs' uncertainties).
    drift_values: NDArray[np.float64] | None = None


def null_fields(r: StateReader, *keys: str) -> None:
    for key in keys:
        if r.obj.get(key) is not None:
            r.fail(key, f"a {r.obj.get('kind')} calibrator has no {key} (null)")


def check_spec_field(r: StateReader, check: Callable[[], str]) -> None:
    """The method spec is a registered, saveable method written as ``judgecp calibrate`` writes it."""
    try:
        canonical = check()
        saved_method_class(canonical)
    except InputError as exc:
        r.fail("method", str(exc).removeprefix("method: "))
    if canonical != r.obj["method"]:
        r.fail("method", f"{r.obj['method']!r} is not written as judgecp writes it ({canonical!r})")



# -- applying ------------------------------------------------------------------------------------


@dataclass
class ApplyParts:
    """What one kind's calibrator gives on a run (:meth:`judgecp.kinds.kind.Calibration.apply`);
    :func:`judgecp.workflows.calibrators.apply`
    adds the checks every kind shares."""

    #: The kind's summary fields (set sizes, or the accepted share), in the summary's order.
    summary: dict[str, Any]
    #: The run's labeled items: coverage or the error among accepted, with the calibration-conditional check.
    labeled: dict[str, Any] | None = None
    sets: list[list[Any]] | None = None
    lower: NDArray[np.float64] | None = None
    upper: NDArray[np.float64] | None = None
    accept: NDArray[np.bool_] | None = None
    #: The fields added to each applied record, by its key (:meth:`judgecp.kinds.kind.Calibration.record_key`).
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The fields a record the calibrator could not use gets besides ``"applied": false``: the kind's output
    #: that claims nothing (the whole scale as the set, every option, abstain), so every input row has a line.
    unused: dict[str, Any] = field(default_factory=dict)


def set_outputs(ids: Any, sets: list[list[Any]], lower: NDArray[np.float64] | None = None,
                upper: NDArray[np.float64] | None = None) -> dict[str, dict[str, Any]]:
    """Each item's ``set`` (and finite ``interval``), by id: the records' fields of a set calibrator."""
    out: dict[str, dict[str, Any]] = {}
    for i, rid in enumerate(ids.tolist()):
        entry: dict[str, Any] = {"set": sets[i]}
        if lower is not None and upper is not None and math.isfinite(lower[i]):
            entry["interval"] = [float(lower[i]), float(upper[i])]
        out[str(rid)] = entry
    return out


def set_summary(size: NDArray[Any], n: int) -> dict[str, Any]:
    """Mean set size, share of singletons, empty sets."""
    return {"mean_set_size": float(size.mean()) if n else None,
            "singleton_share": float((size == 1).mean()) if n else None, "empty_sets": int((size == 0).sum())}


def coverage_section(covered: NDArray[np.bool_], labeled: NDArray[np.bool_], alpha: float,
                     check: dict[str, Any]) -> dict[str, Any]:
    """Coverage on the run's labeled items and its calibration-conditional check."""
    k, n = int(covered[labeled].sum()), int(labeled.sum())
    # One-sided: P(K <= k) for K ~ BetaBinomial(n, k*, n_cal + 1 - k*): coverage given the calibration set.
    return {"n": n, "coverage": k / n, "target": 1.0 - alpha, "p_value_below_target": check["p_value"], "check": check}


def set_counts(methods: dict[str, Any], groups: NDArray[Any], covered: NDArray[np.bool_], alpha: float
                ) -> list[GroupCount] | None:
    """Covered labeled items per calibration group, with the group's calibration size and rank (None: no law)."""
    counts = []
    for g in np.unique(groups).tolist():
        rows = groups == g
        method = methods.get(str(g))
        if method is None:  # a group never calibrated: the full range, always covered
            counts.append(GroupCount(str(g), int(covered[rows].sum()), int(rows.sum()), 0, 1))
            continue
        if abs(method._rank_alpha() - alpha) > 1e-12:
            return None  # two thresholds per set (a split level): coverage has no single beta law
        n = int(method.n_conformalize_)
        counts.append(GroupCount(str(g), int(covered[rows].sum()), int(rows.sum()), n, conformal_rank(n, alpha)))
    return counts


def coverage_result(counts: list[GroupCount] | None) -> dict[str, Any]:
    if counts is None:
        return {
            "test": None,
            "p_value": None,
            "reason": "the method sets two thresholds; no calibration-conditional law",
        }
    return beta_binomial_pvalue(counts)


def proxy_and_target(data: Any) -> tuple[NDArray[np.float64], NDArray[np.float64], str]:
    """The judge's proxy of every item, the human target (NaN where unlabeled), and the target's name: the
    data's calibration kind says what they are (:meth:`judgecp.kinds.kind.Calibration.proxy_and_target`)."""
    kind = calibration_kind(data.kind)
    f, y = kind.calibration.proxy_and_target(data)
    return np.asarray(f, dtype=np.float64), np.asarray(y, dtype=np.float64), kind.calibration.ppi_target
