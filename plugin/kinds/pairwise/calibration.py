"""A saved pairwise calibrator: a selective judge (accept or abstain per pair) at a risk level."""

from __future__ import annotations

from typing import Any

import numpy as np

from judgecp.base.errors import InputError
from judgecp.kinds.calibration import ApplyParts, Fitted, KindParts, null_fields
from judgecp.kinds.kind import Calibration
from judgecp.kinds.metrics import Metric, accept_summary_metrics
from judgecp.kinds.pairwise.estimator import SelectiveJudge
from judgecp.kinds.pairwise.study import make_controller
from judgecp.kinds.registry import controller_classes
from judgecp.stats.checks import risk_permutation_test
from judgecp.stats.saved_state import StateReader
from judgecp.stats.signals import RANGES, binary_entropy, signals


class PairwiseCalibration(Calibration):
    """A :class:`judgecp.kinds.pairwise.estimator.SelectiveJudge` saved as data; the PPI proxy is P(A preferred)."""

    ppi_target = "human win rate of response A"
    default_method = "scope"

    def proxy_and_target(self, data: Any) -> tuple[Any, Any]:
        """P(original A preferred), averaged over the orders, and 1 when humans prefer A."""
        pbar = np.nanmean(np.column_stack([data.p_fwd, data.p_rev]), axis=1)
        return pbar, np.where(data.labeled, data.labels.astype(np.float64), np.nan)

    def drift_statistic(self, data: Any, signal: str) -> tuple[str, Any]:
        return f"uncertainty:{signal}", np.asarray(signals(data)[signal].uncertainty, dtype=np.float64)

    def fit(self, data: Any, *, method: str | None, alpha: float, groups: str | None,
            random_state: int | None, signal: str, delta: float) -> Any:
        if groups:
            raise InputError("groups (Mondrian) are for Likert calibrators")
        spec = method or self.default_method
        return Fitted(SelectiveJudge(spec, risk_level=alpha, signal=signal, delta=delta).calibrate(data), spec)

    def parts(self, reader: Any, method: str, alpha: float, n: int) -> KindParts:
        """A SelectiveJudge state (the controller is the calibrator's ``method``)."""
        r: StateReader = reader
        null_fields(r, "scale", "options", "groups")
        r.text("method", controller_classes())
        est = SelectiveJudge.from_state(r.get("state"), controller=method, risk_level=alpha, n_calibration=n,
                                        where=r.path("state"))
        low, high, _ = RANGES[est.signal]
        return KindParts(est, None, None, None, f"uncertainty:{est.signal}", (low, high), (0.0, 1.0),
                         est.uncertainty_)

    def apply(self, cal: Any, data: Any, *, groups: str | None) -> Any:
        """Accept or abstain per pair (both orders share the pair's decision); the error among accepted
        labeled pairs, with the permutation check of the controller."""
        pred = cal.estimator.predict(data)
        accept = pred.accept
        summary = {"threshold": float(cal.estimator.threshold_), "accepted": int(accept.sum()),
                   "abstention_rate": float(1.0 - accept.mean()) if data.n else None}
        labeled = data.labeled
        section = None
        if labeled.any():
            acc = accept & labeled
            err = pred.prediction[acc] != data.labels[acc]
            check = risk_check(cal, data)
            section = {"n": int(labeled.sum()), "accepted": int(acc.sum()),
                       "error_among_accepted": float(err.mean()) if acc.any() else None,
                       "risk_level": cal.alpha, "p_value_above_risk": check["p_value"], "check": check}
        outputs = {
            f"{pair}|{order}": {"accept": bool(ok)}
            for pair, ok in zip(data.pair_ids.tolist(), accept.tolist(), strict=True)
            for order in ("fwd", "rev")
        }
        # A pair the calibrator could not use is abstained on (accept false), never accepted unchecked.
        return ApplyParts(summary, section, accept=accept, outputs=outputs, unused={"accept": False})

    def record_key(self, record: Any) -> str:
        return f"{record.get('pair_id')}|{record.get('order')}"

    def applied_metrics(self) -> list[Metric]:
        return accept_summary_metrics()


def risk_check(cal: Any, data: Any) -> dict[str, Any]:
    """The permutation test of a selective judge's error among accepted pairs (re-running its controller).

    The calibration pairs' uncertainties and errors are rebuilt from the
    calibrator's stored proxies (BPE: the binary entropy of the order-averaged
    P(A), predicting A iff it is >= 0.5), and used only when the controller
    recomputes the stored threshold from them.
    """
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
