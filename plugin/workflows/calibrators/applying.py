"""Applying a stored calibrator to new records, labeled or not: :func:`apply` and its checks.

Per item the label set (and interval), option set, or accept/abstain; a
summary with the compatibility checks, the drift tests (per run, and across
nights with a history file: :mod:`judgecp.workflows.nightly.history`), the checks that need the
run's labels (:mod:`judgecp.stats.checks`), and the PPI++ estimate or
why it was withheld (:mod:`judgecp.workflows.calibrators.transport`). Every warning
comes from a test whose false-alarm rate is at most its level, so
``--strict`` fails a healthy run with probability at most the sum of the
levels of the checks it ran (``strict_false_alarm_bound``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.kinds import calibration_kind, get_kind
from judgecp.kinds.calibration import ApplyParts, proxy_and_target
from judgecp.kinds.reading import to_records
from judgecp.stats.checks import (
    label_shift_test,
)
from judgecp.stats.drift import martingale_test
from judgecp.workflows.calibrators.fileformat import SCHEMA, Calibrator
from judgecp.workflows.calibrators.statistics import IDENTITY_FIELDS, _identity, drift_statistic
from judgecp.workflows.calibrators.transport import calibrated_estimate, run_estimate
from judgecp.workflows.nightly.history import (
    DEFAULT_HORIZON,
    night_digest,
    note_night,
    record_night,
)

__all__ = ["DRIFT_LEVEL", "Applied", "annotate", "apply", "calibrated_estimate", "check_compatible", "drift_test"]

#: Default level of the drift test.
DRIFT_LEVEL = 0.01


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

        return get_kind(self.data.kind).calibration.record_key(record)

    def records(self) -> list[dict[str, Any]]:
        """The applied items as ``judgecp.record/1`` records with ``set`` (and ``interval``) or ``accept``."""

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


def check_compatible(cal: Calibrator, data: Any, *, force: bool = False) -> list[str]:
    """Problems that make ``cal`` unfit for ``data``: an InputError, or warnings when ``force``."""

    kind = calibration_kind(data.kind)
    if kind.name != cal.kind:
        raise InputError(f"the calibrator is for {cal.kind} judges, the records are {data.kind} records "
                         "(no --force: the state cannot apply to another kind)")
    problems = kind.calibration.compatibility(cal, data)
    run_identity = _identity(data)
    for name in IDENTITY_FIELDS:
        want, got = cal.identity.get(name), run_identity.get(name)
        if want and got and set(got) - set(want):
            problems.append(f"{name} {sorted(set(got) - set(want))} differs from the calibrator's {want}")
    if problems and not force:
        raise InputError(
            "the calibrator does not fit these records: " + "; ".join(problems) + " (--force to apply anyway)"
        )
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

    with warnings.catch_warnings():  # tied values: scipy falls back to the asymptotic p-value and says so
        warnings.filterwarnings("ignore", message="ks_2samp: Exact calculation unsuccessful")
        res = ks_2samp(cal.drift_sample, values)
    out.update(statistic=float(res.statistic), p_value=float(res.pvalue), drift=bool(res.pvalue < level),
               calibration_median=float(np.median(cal.drift_sample)), run_median=float(np.median(values)),
               martingale=martingale_test(cal.drift_sample, values, level=level))
    return out


# -- the checks with the run's labels, one function per kind of calibrator -------------------------


def label_check(cal: Calibrator, data: Any, level: float) -> dict[str, Any] | None:
    """The label-side check: the run's residuals (label - judge proxy) against the calibration's; None when
    the calibrator holds no labeled pairs or the run has fewer than 2 labels."""

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
    """Per-item sets / intervals / accept-abstain on ``data`` and the summary (see
    :mod:`judgecp.workflows.calibrators`).

    ``history``: a history file (JSONL) to which the run's drift statistic
    is added; the summary's ``history`` is the change detector across all
    its nights (:mod:`judgecp.workflows.nightly.history`; a new history takes ``drift_level``
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

    parts: ApplyParts = get_kind(cal.kind).calibration.apply(cal, data, groups=groups)
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
    recorded = summary.get("history") or {}
    if history is not None and recorded.get("recorded"):
        note_night(history, int(recorded["night"]), night_digest(_drift_values(cal, data)[1]), night_note(summary))
    return Applied(data, parts, summary)


def night_note(summary: dict[str, Any]) -> dict[str, Any]:
    """What a history keeps of the night's apply (:func:`judgecp.workflows.nightly.history.note_night`)."""
    est = summary.get("estimate")
    kept: dict[str, Any] = {key: summary.get(key) for key in
                            ("n", "n_applied", "mean_set_size", "singleton_share", "abstention_rate") if key in summary}
    if est:
        ppi, judge = est["estimate"]["ppi"], est["estimate"]["judge_only"]
        kept["estimate"] = {"target": est.get("target"), "mean": ppi["mean"], "lower": ppi["lower"],
                            "upper": ppi["upper"], "judge_only": judge["mean"], "alpha": est.get("alpha"),
                            "n_labeled": est.get("n_labeled"), "labeled_from": est.get("labeled_from")}
    withheld = summary.get("estimate_withheld")
    if withheld:
        kept["estimate_withheld"] = withheld.get("reason")
    kept["warnings"] = [w["kind"] for w in summary.get("warnings", [])]
    return kept


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
