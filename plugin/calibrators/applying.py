"""Applying a stored calibrator to new records, labeled or not: :func:`apply` and its checks.

Per item the label set (and interval), option set, or accept/abstain; a
summary with the compatibility checks, the drift tests, coverage where the
run has labels, and the PPI++ estimate (:func:`calibrated_estimate`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.calibrators.fileformat import IDENTITY_FIELDS, Calibrator
from judgecp.calibrators.statistics import _identity, conformity_scores, drift_statistic
from judgecp.errors import InputError

#: Default level of the drift test.
DRIFT_LEVEL = 0.01


@dataclass
class Applied:
    """What :func:`apply` found: per-item outputs (in the data's row order) and the summary."""

    data: Any
    sets: list[list[Any]] | None
    lower: NDArray[np.float64] | None
    upper: NDArray[np.float64] | None
    accept: NDArray[np.bool_] | None
    summary: dict[str, Any]

    def records(self) -> list[dict[str, Any]]:
        """The applied items as ``judgecp.record/1`` records with ``set`` (and ``interval``) or ``accept``."""
        from judgecp.data.export import to_records

        out: list[dict[str, Any]] = to_records(self.data)
        if self.accept is not None:
            by_pair = dict(zip(self.data.pair_ids.tolist(), self.accept.tolist(), strict=True))
            for rec in out:
                rec["accept"] = bool(by_pair[rec["pair_id"]])
            return out
        assert self.sets is not None
        for i, rec in enumerate(out):
            rec["set"] = self.sets[i]
            if self.lower is not None and self.upper is not None and math.isfinite(self.lower[i]):
                rec["interval"] = [float(self.lower[i]), float(self.upper[i])]
        return out


def annotate(raw: list[dict[str, Any]], applied: Applied) -> list[dict[str, Any]]:
    """Every input record (as read, in input order) with the calibrator's output added.

    A record judgecp used gets ``set`` (and ``interval``) or ``accept``; one it
    could not use (excluded, counted in the summary) gets ``set`` / ``accept``
    null and ``"applied": false``. Records are matched by ``id`` (pairs by
    ``pair_id`` and ``order``); a repeated id is applied once, at its first record.
    """
    pairs = applied.accept is not None
    out_key = "accept" if pairs else "set"
    done: dict[Any, dict[str, Any]] = {}
    for rec in applied.records():
        key = (str(rec.get("pair_id")), str(rec.get("order"))) if pairs else str(rec.get("id"))
        done[key] = {k: rec[k] for k in ("set", "interval", "accept") if k in rec}
    out: list[dict[str, Any]] = []
    for rec in raw:
        key = (str(rec.get("pair_id")), str(rec.get("order"))) if pairs else str(rec.get("id"))
        added = done.pop(key, None)
        out.append({**rec, **added} if added is not None else {**rec, out_key: None, "applied": False})
    return out


def check_compatible(cal: Calibrator, data: Any, *, force: bool = False) -> list[str]:
    """Problems that make ``cal`` unfit for ``data``: an InputError, or warnings when ``force``."""
    problems: list[str] = []
    ckind = {"likert": "likert", "pairwise": "pairwise", "mcq": "mcq", "parc": "mcq"}[data.kind]
    if ckind != cal.kind:
        raise InputError(f"the calibrator is for {cal.kind} judges, the records are {data.kind} records "
                         "(no --force: the state cannot apply to another kind)")
    if cal.kind == "likert" and cal.scale and (data.scale.minimum, data.scale.maximum) != tuple(cal.scale):
        problems.append(f"scale {data.scale.minimum}:{data.scale.maximum} differs from the calibrator's "
                        f"{cal.scale[0]}:{cal.scale[1]}")
    if cal.kind == "mcq":
        width = int(cal.estimator.width_)
        if data.k > width:
            raise InputError(f"items with {data.k} options; the calibrator saw at most {width}")
        letters = sorted({o for opts in data.options for o in opts} - set(cal.options or []))
        if letters:
            problems.append(f"options {letters} never seen in calibration (options {cal.options})")
    run_identity = _identity(data)
    for name in IDENTITY_FIELDS:
        want, got = cal.identity.get(name), run_identity.get(name)
        if want and got and set(got) - set(want):
            problems.append(f"{name} {sorted(set(got) - set(want))} differs from the calibrator's {want}")
    if problems and not force:
        raise InputError("the calibrator does not fit these records: " + "; ".join(problems) + " (--force to apply anyway)")
    return problems


def drift_test(cal: Calibrator, data: Any, level: float = DRIFT_LEVEL) -> dict[str, Any]:
    """Two-sample Kolmogorov-Smirnov test of the run's drift statistic against the calibrator's sample."""
    from scipy.stats import ks_2samp

    signal = cal.estimator.signal if cal.kind == "pairwise" else "bpe"
    name, values = drift_statistic(data, signal)
    values = values[np.isfinite(values)]
    out: dict[str, Any] = {"test": "ks_2samp", "statistic_of": name, "level": level,
                           "n_calibration": int(cal.drift_sample.size), "n_run": int(values.size)}
    if values.size == 0 or cal.drift_sample.size == 0:
        out.update(statistic=None, p_value=None, drift=None)
        return out
    from judgecp.drift import martingale_test

    res = ks_2samp(cal.drift_sample, values)
    out.update(statistic=float(res.statistic), p_value=float(res.pvalue), drift=bool(res.pvalue < level),
               calibration_median=float(np.median(cal.drift_sample)), run_median=float(np.median(values)),
               martingale=martingale_test(cal.drift_sample, values, level=level))
    if cal.conformity is not None and cal.kind == "likert" and data.labeled.sum() >= 2:
        rows = np.flatnonzero(data.labeled)
        found = conformity_scores(cal.estimator.method_, data.X[rows], data.labels[rows])
        if found is not None and found[0] == cal.conformity[0]:
            conf = ks_2samp(cal.conformity[1], found[1])
            out["conformity"] = {"score": found[0], "n_run": int(rows.size), "statistic": float(conf.statistic),
                                 "p_value": float(conf.pvalue), "drift": bool(conf.pvalue < level)}
    return out


def apply(cal: Calibrator, data: Any, *, force: bool = False, groups: str | None = None,
          drift_level: float = DRIFT_LEVEL) -> Applied:
    """Per-item sets / intervals / accept-abstain on ``data`` and the summary (see :mod:`judgecp.calibrators`)."""
    from scipy.stats import binom

    warnings = [{"kind": "compatibility", "message": m + " (forced)"} for m in check_compatible(cal, data, force=force)]
    summary: dict[str, Any] = {
        "kind": cal.kind, "method": cal.method, "alpha": cal.alpha, "n": int(data.n_read or data.n),
        "n_applied": int(data.n), "excluded": data.excluded.to_json(), "n_calibration": cal.n_calibration,
    }
    labeled = data.labeled
    sets = lower = upper = accept = None
    if cal.kind == "pairwise":
        pred = cal.estimator.predict(data)
        accept = pred.accept
        summary.update(threshold=float(cal.estimator.threshold_), accepted=int(accept.sum()),
                       abstention_rate=float(1.0 - accept.mean()) if data.n else None)
        if labeled.any():
            acc = accept & labeled
            err = pred.prediction[acc] != data.labels[acc]
            summary["labeled"] = {"n": int(labeled.sum()), "accepted": int(acc.sum()),
                                  "error_among_accepted": float(err.mean()) if acc.any() else None,
                                  "risk_level": cal.alpha}
    else:
        if cal.kind == "likert":
            by = groups or cal.groups
            prediction = cal.estimator.predict(data, groups=by) if cal.estimator.mondrian_ is not None else \
                cal.estimator.predict(data)
            sets = prediction.label_sets()
            size = prediction.sets.sum(axis=1)
            if prediction.has_interval:
                lower, upper = prediction.lower, prediction.upper
                summary["mean_interval_width"] = float(np.mean(upper - lower)) if data.n else None
            summary["full_range"] = int(prediction.full_range.sum())
            covered = np.zeros(data.n, bool)
            covered[labeled] = prediction.take(np.flatnonzero(labeled)).covers(data.labels[labeled])
        else:
            choice = cal.estimator.predict(data)
            sets = choice.option_sets()
            size = choice.size
            covered = (choice.sets & data.correct[:, : choice.sets.shape[1]]).any(axis=1)
        summary.update(mean_set_size=float(size.mean()) if data.n else None,
                       singleton_share=float((size == 1).mean()) if data.n else None,
                       empty_sets=int((size == 0).sum()))
        if cal.kind == "likert" and not prediction.has_interval and data.continuous_labels:
            labeled = np.zeros_like(labeled)  # label sets cannot hold continuous labels: no coverage to check
            summary["labeled"] = {"n": int(data.labeled.sum()), "coverage": None, "target": 1.0 - cal.alpha,
                                  "reason": "continuous labels, and the calibrator's method predicts label sets"}
        if labeled.any():
            k, n = int(covered[labeled].sum()), int(labeled.sum())
            # One-sided: P(K <= k) for K ~ Bin(n, 1 - alpha); small when coverage fell below the promise.
            summary["labeled"] = {"n": n, "coverage": k / n, "target": 1.0 - cal.alpha,
                                  "p_value_below_target": float(binom.cdf(k, n, 1.0 - cal.alpha))}
    drift = drift_test(cal, data, drift_level)
    summary["drift"] = drift
    if drift.get("drift"):
        warnings.append({"kind": "drift", "message": (
            f"the run's {drift['statistic_of']} differs from the calibration data (KS p = {drift['p_value']:.2g} "
            f"< {drift_level}); the calibrator's guarantees assume exchangeable items")})
    if (drift.get("conformity") or {}).get("drift"):
        warnings.append({"kind": "conformity_drift", "message": (
            f"the conformity scores ({drift['conformity']['score']}) of the run's labeled items differ from the "
            f"calibration items' (KS p = {drift['conformity']['p_value']:.2g} < {drift_level})")})
    martingale = drift.get("martingale") or {}
    if martingale.get("alarm"):
        warnings.append({"kind": "drift_sequential", "message": (
            f"the conformal test martingale of the run's {drift['statistic_of']} reached {martingale['max']:.3g} "
            f">= 1/{drift_level:g} (first at record {martingale['first_alarm']}): the run is not exchangeable "
            "with the calibration data")})
    lab = summary.get("labeled", {})
    if lab.get("p_value_below_target") is not None and lab["p_value_below_target"] < drift_level:
        warnings.append({"kind": "coverage", "message": (
            f"coverage on the run's labeled items is {lab['coverage']:.3f}, below {1 - cal.alpha:.2f} "
            f"(binomial p = {lab['p_value_below_target']:.2g})")})
    summary["estimate"] = calibrated_estimate(cal, data)
    summary["warnings"] = warnings
    return Applied(data, sets, lower, upper, accept, summary)


def calibrated_estimate(cal: Calibrator, data: Any, alpha: float | None = None) -> dict[str, Any] | None:
    """PPI++ with the calibrator's labeled items (and the run's labeled rows) as the labeled sample.

    The run's unlabeled rows are the unlabeled sample. Valid when the run's
    items are exchangeable with the calibration items (the drift test checks
    the judge's side of that); for a new model under evaluation, label a few
    hundred of its own items and use :func:`judgecp.ppi.estimate` instead.
    ``None`` when the calibrator has no PPI pairs or the run no unlabeled row.
    """
    from judgecp.ppi import ppi_mean, proxy_and_target

    if cal.ppi_labels is None or cal.ppi_proxy is None:
        return None
    proxy, target, name = proxy_and_target(data)
    unlabeled = np.isnan(target)
    if not unlabeled.any():
        return None
    y = np.concatenate([cal.ppi_labels, target[~unlabeled]])
    f = np.concatenate([cal.ppi_proxy, proxy[~unlabeled]])
    out: dict[str, Any] = ppi_mean(y, f, proxy[unlabeled], alpha=cal.alpha if alpha is None else alpha)
    out.update(target=name, labeled_from="calibrator" if unlabeled.all() else "calibrator+run",
               n_labeled_calibrator=int(cal.ppi_labels.size))
    return out
