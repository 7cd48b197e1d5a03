"""The pairwise estimator: :class:`SelectiveJudge`, SCOPE (or another risk controller) choosing when to accept
a verdict so that the error among accepted verdicts stays at ``risk_level``; :class:`SelectivePrediction`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, NotCalibratedError
from judgecp.data import PairData
from judgecp.kinds.pairwise.study import make_controller
from judgecp.kinds.registry import controller_classes
from judgecp.stats.conformal import check_alpha
from judgecp.stats.saved_state import (
    RANGE_SLACK,
    StateReader,
    check_threshold,
    encode_float,
    encode_floats,
)
from judgecp.stats.signals import RANGES, signals, stored_signal

BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class SelectivePrediction:
    """Accept/abstain decisions on pairwise verdicts."""

    pair_ids: NDArray[np.str_]
    accept: BoolArray
    prediction: NDArray[np.int64]  # 1: the original A is preferred
    uncertainty: NDArray[np.float64]

    @property
    def coverage(self) -> float:
        """Share of verdicts accepted."""
        return float(self.accept.mean()) if self.accept.size else 0.0


class SelectiveJudge:
    """Accept a pairwise verdict only when its uncertainty is low enough, with the error among accepted ones controlled.

    ``controller="scope"`` (SCOPE, eq. 4-6) keeps the expected error rate
    among accepted verdicts at most ``risk_level`` under exchangeability;
    ``signal="bpe"`` is the bidirectional preference entropy (both orders).
    """

    def __init__(
        self, controller: str = "scope", *, risk_level: float = 0.1, signal: str = "bpe", delta: float = 0.1
    ) -> None:
        self.controller = controller
        self.risk_level = risk_level
        self.signal = signal
        self.delta = delta

    def _signal(self, data: PairData) -> Any:

        sigs = signals(data)
        if self.signal not in sigs:
            raise InputError(f"signal {self.signal!r} is not available; the records support {', '.join(sigs)}")
        return sigs[self.signal]

    def calibrate(self, data: PairData) -> SelectiveJudge:
        check_alpha(self.risk_level)
        if not data.labeled.all():
            raise InputError("SelectiveJudge.calibrate needs labeled pairs")
        sig = self._signal(data)
        order = np.argsort(sig.uncertainty, kind="stable")
        self.uncertainty_ = sig.uncertainty[order]
        self.errors_ = (sig.prediction != data.labels)[order]
        self.threshold_ = self._threshold(self.uncertainty_, self.errors_, sig)
        self.n_calibration_ = data.n
        return self

    def _threshold(self, u_sorted: NDArray[np.float64], errors: BoolArray, signal: Any) -> float:

        ctrl = make_controller(self.controller, self.delta)
        return float(ctrl.thresholds(u_sorted[None, :], errors[None, :], self.risk_level, signal)[0])

    def state_dict(self) -> dict[str, Any]:
        """``controller``, ``signal``, ``delta``, ``threshold`` and what sets it: the calibration pairs'
        ``uncertainty`` (ascending, full precision) and ``errors`` (1: the verdict was wrong), in that order."""

        if not hasattr(self, "threshold_"):
            raise NotCalibratedError("SelectiveJudge: calibrate() before state_dict()")
        return {"controller": self.controller, "signal": self.signal, "delta": self.delta,
                "threshold": encode_float(self.threshold_), "uncertainty": encode_floats(self.uncertainty_),
                "errors": [int(e) for e in self.errors_]}

    @classmethod
    def from_state(cls, state: Any, *, controller: str, risk_level: float, n_calibration: int,
                   where: str = "state") -> SelectiveJudge:
        """The calibrated judge :meth:`state_dict` describes; the threshold must be the one the controller
        gives on the stored uncertainties and errors (so ``threshold: inf`` on a SCOPE file is refused)."""

        reader = StateReader(state, where)
        if reader.text("controller", choices=controller_classes()) != controller:
            reader.fail("controller", f"{reader.get('controller')!r} is not the calibrator's method {controller!r}")
        signal = reader.text("signal", choices=RANGES)
        low, high, _ = RANGES[signal]
        est = cls(controller, risk_level=check_alpha(risk_level), signal=signal,
                  delta=reader.number("delta", low=0.0, high=1.0, open_interval=True))
        u = reader.floats("uncertainty", size=n_calibration, low=low - RANGE_SLACK, high=high + RANGE_SLACK,
                          ascending=True)
        errors = reader.floats("errors", size=n_calibration, low=0.0, high=1.0)
        if not np.isin(errors, (0.0, 1.0)).all():
            reader.fail("errors", "holds a value that is neither 0 nor 1")
        threshold, recomputed = reader.number("threshold", infinite=True), est._threshold(u, errors.astype(bool),
                                                                                            stored_signal(signal, u))
        check_threshold(reader, "threshold", threshold, recomputed, tolerance=1e-12)
        reader.finish()
        # The recomputed threshold (the stored one within rounding): an edit below the tolerance changes nothing.
        est.uncertainty_, est.errors_, est.threshold_, est.n_calibration_ = (
            u,
            errors.astype(bool),
            recomputed,
            n_calibration,
        )
        return est

    def predict(self, data: PairData) -> SelectivePrediction:
        if not hasattr(self, "threshold_"):
            raise NotCalibratedError("SelectiveJudge: call calibrate() first")
        sig = self._signal(data)
        return SelectivePrediction(data.pair_ids, sig.uncertainty <= self.threshold_, sig.prediction, sig.uncertainty)
