"""Applying a stored calibrator to new records, labeled or not: :func:`apply` and its checks.

Per item the label set (and interval), option set, or accept/abstain; a
summary with the compatibility checks, the drift tests (per run, and across
nights with a history file: :mod:`judgecp.monitor`), the checks that need the
run's labels (:mod:`judgecp.calibrators.checks`), and the PPI++ estimate or
why it was withheld (:mod:`judgecp.calibrators.transport`). Every warning
comes from a test whose false-alarm rate is at most its level, so
``--strict`` fails a healthy run with probability at most the sum of the
levels of the checks it ran (``strict_false_alarm_bound``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.calibrators.checks import (
    GroupCount,
    beta_binomial_pvalue,
    label_shift_test,
    risk_permutation_test,
)
from judgecp.calibrators.fileformat import IDENTITY_FIELDS, SCHEMA, Calibrator
from judgecp.calibrators.statistics import _identity, drift_statistic
from judgecp.calibrators.transport import calibrated_estimate, run_estimate
from judgecp.errors import InputError
from judgecp.monitor import DEFAULT_HORIZON, record_night

__all__ = ["DRIFT_LEVEL", "Applied", "annotate", "apply", "calibrated_estimate", "check_compatible", "drift_test"]

#: Default level of the drift test.
DRIFT_LEVEL = 0.01


@dataclass
class ApplyParts:
    """What one kind's calibrator gives on a run (:meth:`judgecp.kinds.Kind.apply_calibrator`); :func:`apply`
    adds the checks every kind shares."""

    #: The kind's summary fields (set sizes, or the accepted share), in the summary's order.
    summary: dict[str, Any]
    #: The run's labeled items: coverage or the error among accepted, with the calibration-conditional check.
    labeled: dict[str, Any] | None = None
    sets: list[list[Any]] | None = None
    lower: NDArray[np.float64] | None = None
    upper: NDArray[np.float64] | None = None
    accept: NDArray[np.bool_] | None = None
    #: The fields added to each applied record, by its key (:meth:`judgecp.kinds.Kind.record_key`).
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The fields a record the calibrator could not use gets besides ``"applied": false``: the kind's output
    #: that claims nothing (the whole scale as the set, every option, abstain), so every input row has a line.
    unused: dict[str, Any] = field(default_factory=dict)


@dataclass
class Applied:
    """What :func:`apply` found: per-item outputs (in the data's row order) and the summary."""

    data: Any
    parts: ApplyParts
    summary: dict[str, Any]

    @property
    def sets(self) -> list[list[Any]] | None:
        return self.parts.sets

    @property
    def lower(self) -> NDArray[np.float64] | None:
        return self.parts.lower

    @property
    def upper(self) -> NDArray[np.float64] | None:
        return self.parts.upper

    @property
    def accept(self) -> NDArray[np.bool_] | None:
        return self.parts.accept

    def _key(self, record: dict[str, Any]) -> str:
        from judgecp.kinds import get_kind

        return get_kind(self.data.kind).record_key(record)

    def records(self) -> list[dict[str, Any]]:
        """The applied items as ``judgecp.record/1`` records with ``set`` (and ``interval``) or ``accept``."""
        from judgecp.data.export import to_records

        out: list[dict[str, Any]] = to_records(self.data)
        for rec in out:
            rec.update(self.parts.outputs[self._key(rec)])
        return out


def annotate(raw: list[dict[str, Any]], applied: Applied) -> list[dict[str, Any]]:
    """Every input record (as read, in input order) with the calibrator's output added.

    A record judgecp used gets ``set`` (and ``interval``) or ``accept``; one it
    could not use (excluded, counted in the summary) gets the output that claims
    nothing (Likert: the whole scale as its set and interval; multiple choice:
    every option; pairwise: abstain) and ``"applied": false``. Records are matched by the kind's key
    (``id``; pairs by ``pair_id`` and ``order``); a repeated id is applied once, at its first record.
    """
    done = dict(applied.parts.outputs)
    out: list[dict[str, Any]] = []
    for rec in raw:
        added = done.pop(applied._key(rec), None)
        out.append({**rec, **added} if added is not None else {**rec, **applied.parts.unused, "applied": False})
    return out


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


def check_compatible(cal: Calibrator, data: Any, *, force: bool = False) -> list[str]:
    """Problems that make ``cal`` unfit for ``data``: an InputError, or warnings when ``force``."""
    from judgecp.kinds import calibration_kind

    kind = calibration_kind(data.kind)
    if kind.name != cal.kind:
        raise InputError(f"the calibrator is for {cal.kind} judges, the records are {data.kind} records "
                         "(no --force: the state cannot apply to another kind)")
    problems = kind.compatibility(cal, data)
    run_identity = _identity(data)
    for name in IDENTITY_FIELDS:
        want, got = cal.identity.get(name), run_identity.get(name)
        if want and got and set(got) - set(want):
            problems.append(f"{name} {sorted(set(got) - set(want))} differs from the calibrator's {want}")
    if problems and not force:
        raise InputError("the calibrator does not fit these records: " + "; ".join(problems) + " (--force to apply anyway)")
    return problems


def judge_check(cal: Calibrator, data: Any) -> dict[str, Any]:
    """The judges the calibrator and the records name (null: none), and whether they were compared."""
    want, got = cal.identity.get("judge"), _identity(data).get("judge")
    return {"calibrator": want, "records": got, "checked": bool(want and got)}


def _drift_values(cal: Calibrator, data: Any) -> tuple[str, NDArray[np.float64]]:
    name, values = drift_statistic(data, getattr(cal.estimator, "signal", "bpe"))
    return name, values[np.isfinite(values)]


def drift_test(cal: Calibrator, data: Any, level: float = DRIFT_LEVEL) -> dict[str, Any]:
    """Two-sample Kolmogorov-Smirnov test of the run's drift statistic against the calibrator's sample,
    and the conformal test martingale of the run (in a seeded random order) after it."""
    from scipy.stats import ks_2samp

    name, values = _drift_values(cal, data)
    out: dict[str, Any] = {"test": "ks_2samp", "statistic_of": name, "level": level,
                           "n_calibration": int(cal.drift_sample.size), "n_run": int(values.size)}
    if values.size == 0 or cal.drift_sample.size == 0:
        out.update(statistic=None, p_value=None, drift=None)
        return out
    from judgecp.drift import martingale_test

    with warnings.catch_warnings():  # tied values: scipy falls back to the asymptotic p-value and says so
        warnings.filterwarnings("ignore", message="ks_2samp: Exact calculation unsuccessful")
        res = ks_2samp(cal.drift_sample, values)
    out.update(statistic=float(res.statistic), p_value=float(res.pvalue), drift=bool(res.pvalue < level),
               calibration_median=float(np.median(cal.drift_sample)), run_median=float(np.median(values)),
               martingale=martingale_test(cal.drift_sample, values, level=level))
    return out


# -- the checks with the run's labels, one function per kind of calibrator -------------------------


def _set_counts(methods: dict[str, Any], groups: NDArray[Any], covered: NDArray[np.bool_], alpha: float
                ) -> list[GroupCount] | None:
    """Covered labeled items per calibration group, with the group's calibration size and rank (None: no law)."""
    from judgecp.conformal import conformal_rank

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


def likert_coverage_check(cal: Calibrator, data: Any, covered: NDArray[np.bool_], by: str | None) -> dict[str, Any]:
    """The beta-binomial coverage test of a Likert calibrator's sets on the run's labeled items."""
    labeled = data.labeled
    mondrian = cal.estimator.mondrian_
    if mondrian is None:
        methods, groups = {"all": cal.estimator.method_}, np.full(int(labeled.sum()), "all")
    else:
        methods = dict(mondrian.methods_)
        groups = np.asarray(data.fields[by]).astype(str)[labeled] if by else np.full(int(labeled.sum()), "")
    counts = _set_counts(methods, groups, covered[labeled], cal.alpha)
    return _coverage_result(counts)


def choice_coverage_check(cal: Calibrator, data: Any, covered: NDArray[np.bool_]) -> dict[str, Any]:
    """The beta-binomial coverage test of a multiple-choice calibrator's option sets on the run's labeled items."""
    labeled = data.labeled
    counts = _set_counts({"all": cal.estimator.method_}, np.full(int(labeled.sum()), "all"), covered[labeled],
                         cal.alpha)
    return _coverage_result(counts)


def _coverage_result(counts: list[GroupCount] | None) -> dict[str, Any]:
    if counts is None:
        return {"test": None, "p_value": None, "reason": "the method sets two thresholds; no calibration-conditional law"}
    return beta_binomial_pvalue(counts)


def pairwise_risk_check(cal: Calibrator, data: Any) -> dict[str, Any]:
    """The permutation test of a selective judge's error among accepted pairs (re-running its controller).

    The calibration pairs' uncertainties and errors are rebuilt from the
    calibrator's stored proxies (BPE: the binary entropy of the order-averaged
    P(A), predicting A iff it is >= 0.5), and used only when the controller
    recomputes the stored threshold from them.
    """
    from judgecp.evaluation.pair import make_controller
    from judgecp.signals import binary_entropy, signals

    est = cal.estimator
    if est.signal != "bpe" or cal.ppi_labels is None or cal.ppi_proxy is None:
        return {"test": None, "p_value": None, "reason": f"the calibration pairs' {est.signal} is not stored"}
    sig = signals(data)[est.signal]
    u_cal = binary_entropy(cal.ppi_proxy)
    e_cal = (cal.ppi_proxy >= 0.5).astype(np.int64) != cal.ppi_labels.astype(np.int64)
    ctrl = make_controller(est.controller, est.delta)
    order = np.argsort(u_cal, kind="stable")
    again = float(ctrl.thresholds(u_cal[order][None, :], e_cal[order][None, :], cal.alpha, sig)[0])
    if not (again == est.threshold_ or abs(again - est.threshold_) <= 1e-9):
        return {"test": None, "p_value": None, "reason": "the stored pairs do not reproduce the threshold"}
    rows = np.flatnonzero(data.labeled)
    e_run = sig.prediction[rows] != data.labels[rows]
    return risk_permutation_test(u_cal, e_cal, sig.uncertainty[rows], e_run, controller=ctrl, alpha=cal.alpha,
                                 signal=sig)


def label_check(cal: Calibrator, data: Any, level: float) -> dict[str, Any] | None:
    """The label-side check: the run's residuals (label - judge proxy) against the calibration's; None when
    the calibrator holds no labeled pairs or the run has fewer than 2 labels."""
    from judgecp.ppi import proxy_and_target

    if cal.ppi_labels is None or cal.ppi_proxy is None or cal.ppi_labels.size < 2:
        return None
    proxy, target, _ = proxy_and_target(data)
    rows = np.flatnonzero(~np.isnan(target) & np.isfinite(proxy))
    if rows.size < 2:
        return None
    return label_shift_test(cal.ppi_labels, cal.ppi_proxy, target[rows], proxy[rows], level=level)


# -- apply ---------------------------------------------------------------------------------------


def apply(cal: Calibrator, data: Any, *, force: bool = False, groups: str | None = None,
          drift_level: float = DRIFT_LEVEL, history: str | Path | None = None,
          history_horizon: int = DEFAULT_HORIZON) -> Applied:
    """Per-item sets / intervals / accept-abstain on ``data`` and the summary (see :mod:`judgecp.calibrators`).

    ``history``: a history file (JSONL) to which the run's drift statistic
    is added; the summary's ``history`` is the change detector across all
    its nights (:mod:`judgecp.monitor`; a new history takes ``drift_level``
    and ``history_horizon``: no false alarm within that many nights but with
    probability at most the level).
    """
    problems = check_compatible(cal, data, force=force)
    raised = [{"kind": "compatibility", "message": m + " (forced)"} for m in problems]
    summary: dict[str, Any] = {
        "kind": cal.kind, "method": cal.method, "alpha": cal.alpha, "n": int(data.n_read or data.n),
        "n_applied": int(data.n), "excluded": data.excluded.to_json(), "n_calibration": cal.n_calibration,
        "calibrator": {"schema": SCHEMA, "digest": cal.digest}, "judge": judge_check(cal, data),
    }
    from judgecp.kinds import get_kind

    parts: ApplyParts = get_kind(cal.kind).apply_calibrator(cal, data, groups=groups)
    summary.update(parts.summary)
    if parts.labeled is not None:
        summary["labeled"] = parts.labeled
    drift = drift_test(cal, data, drift_level)
    summary["drift"] = drift
    summary["label_check"] = label_check(cal, data, drift_level)
    if history is not None:
        summary["history"] = record_night(history, cal, _drift_values(cal, data)[1], level=drift_level,
                                          horizon=history_horizon, source=str(getattr(data, "source", "")))
    raised += _check_warnings(summary, cal, drift_level)
    failed = [w["kind"] for w in raised]
    summary["estimate"], withheld = run_estimate(cal, data, failed=failed)
    if withheld is not None:
        summary["estimate_withheld"] = withheld
    summary["strict_false_alarm_bound"] = _strict_bound(summary, drift_level)
    summary["warnings"] = raised
    return Applied(data, parts, summary)


def _check_warnings(summary: dict[str, Any], cal: Calibrator, level: float) -> list[dict[str, str]]:
    """One warning per check that failed at its level."""
    out = []
    drift = summary["drift"]
    if drift.get("drift"):
        out.append({"kind": "drift", "message": (
            f"the run's {drift['statistic_of']} differs from the calibration data (KS p = {drift['p_value']:.2g} "
            f"< {level}); the calibrator's guarantees assume exchangeable items")})
    martingale = drift.get("martingale") or {}
    if martingale.get("alarm"):
        out.append({"kind": "drift_sequential", "message": (
            f"the conformal test martingale of the run's {drift['statistic_of']} (in a seeded random order) reached "
            f"{martingale['max']:.3g} >= 1/{level:g}: the run is not exchangeable with the calibration data")})
    history = summary.get("history") or {}
    if history.get("alarm"):
        out.append({"kind": "drift_history", "message": (
            f"across the {history['nights']} nights of {history['file']}, the change detector's evidence of drift "
            f"reached {history['threshold']:g} at night {history['first_alarm']} (the change most likely began "
            f"on night {history['since_night']})")})
    lab = summary.get("labeled") or {}
    p = lab.get("p_value_below_target", lab.get("p_value_above_risk"))
    if p is not None and p < level:
        what = (f"coverage on the run's labeled items is {lab['coverage']:.3f}, below {1 - cal.alpha:.2f}"
                if "coverage" in lab else
                f"the error among the run's accepted labeled pairs is {lab['error_among_accepted']:.3f}, "
                f"above what the calibration allows at risk {cal.alpha:g}")
        out.append({"kind": "coverage", "message": f"{what} ({lab['check']['test']} p = {p:.2g} < {level})"})
    check = summary.get("label_check") or {}
    if check.get("shift_detected"):
        out.append({"kind": "label_shift", "message": (
            f"the judge's residuals on the run's {check['n_run']} labeled items are {check['shift']:+.3f} off the "
            f"calibration's (permutation p = {check['p_value']:.2g} < {level}): humans rate these items differently")})
    return out


def _strict_bound(summary: dict[str, Any], level: float) -> float:
    """Sum of the levels of the checks that ran: ``--strict``'s false-alarm rate on a healthy run is at most this."""
    drift = summary["drift"]
    ran = [drift.get("p_value") is not None, (drift.get("martingale") or {}).get("alarm") is not None,
           (summary.get("labeled") or {}).get("check", {}).get("p_value") is not None,
           summary.get("label_check") is not None]
    bound = level * sum(ran)
    if summary.get("history"):
        bound += float(summary["history"]["false_alarm_bound"])  # P(the history alarms by tonight), no drift
    return bound
