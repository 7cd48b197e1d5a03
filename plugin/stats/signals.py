"""Uncertainty signals of a pairwise judge and how good they are.

Signals (lower uncertainty = more certain; each with a prediction and a
confidence for ECE/AUROC/AUPRC):

* ``bpe`` (SCOPE eq. 2-3): ``p̄ = (p_fwd + p_rev)/2`` with both probabilities
  that the original A is preferred; uncertainty = binary entropy of p̄ in
  nats; confidence ``max(p̄, 1 - p̄)``; prediction A iff ``p̄ >= 0.5``. A pair
  judged in one order uses that order's probability.
* ``predictive``: the single-order maximum softmax probability of the
  forward record (the reversed one when the pair has no forward record).
* ``verbalized`` / ``agreement``: a confidence the records carry
  (``verbalized_confidence``; ``annotator_agreement`` of simulated
  annotators), with the single-order prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # the pairs' arrays (p_fwd, p_rev, labels); numbers only here
    from judgecp.data.pair import PairData


FloatArray = NDArray[np.float64]


def binary_entropy(p: FloatArray) -> FloatArray:
    """Binary entropy in nats, 0 at p in {0, 1}."""
    q = np.clip(p, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(np.where(q > 0, q * np.log(q), 0.0) + np.where(q < 1, (1 - q) * np.log(1 - q), 0.0))
    out: FloatArray = h
    return out


@dataclass(frozen=True)
class Signal:
    """An uncertainty signal evaluated on every pair."""

    name: str
    uncertainty: FloatArray  # lower = more certain
    confidence: FloatArray  # in [0.5, 1] for binary signals; [0, 1] for carried confidences
    prediction: NDArray[np.int64]  # 1: original A preferred
    #: Uncertainty range, known before seeing data.
    low: float
    high: float
    #: Lowest possible confidence (0.5 for a binary choice).
    confidence_floor: float = 0.5

    def take(self, rows: NDArray[Any]) -> Signal:
        return Signal(self.name, self.uncertainty[rows], self.confidence[rows], self.prediction[rows], self.low,
                      self.high, self.confidence_floor)

    def uncertainty_at_confidence(self, c: float) -> float:
        """The uncertainty value whose confidence is ``c`` (heuristic thresholding)."""
        if self.name == "bpe":
            return float(binary_entropy(np.asarray([c]))[0])
        return 1.0 - c


#: Each signal's data-independent range: ``(low, high, confidence_floor)`` (as :func:`signals` builds them).
RANGES: dict[str, tuple[float, float, float]] = {
    "bpe": (0.0, math.log(2), 0.5), "predictive": (0.0, 0.5, 0.5), "verbalized": (0.0, 1.0, 0.0),
    "agreement": (0.0, 1.0, 0.0),
}


def stored_signal(name: str, uncertainty: FloatArray) -> Signal:
    """A signal rebuilt from stored uncertainties (a calibrator's): what a risk controller reads of it."""
    low, high, floor = RANGES[name]
    return Signal(name, uncertainty, np.full(uncertainty.shape, np.nan), np.zeros(uncertainty.shape, np.int64),
                  low, high, floor)


def _single_order(data: PairData) -> FloatArray:
    return np.where(np.isnan(data.p_fwd), data.p_rev, data.p_fwd)


def signals(data: PairData) -> dict[str, Signal]:
    """Every signal the records support."""
    out: dict[str, Signal] = {}
    both = np.column_stack([data.p_fwd, data.p_rev])
    pbar = np.nanmean(both, axis=1)
    out["bpe"] = Signal(
        "bpe", binary_entropy(pbar), np.maximum(pbar, 1 - pbar), (pbar >= 0.5).astype(np.int64), 0.0, math.log(2)
    )
    p1 = _single_order(data)
    conf1 = np.maximum(p1, 1 - p1)
    pred1 = (p1 >= 0.5).astype(np.int64)
    out["predictive"] = Signal("predictive", 1 - conf1, conf1, pred1, 0.0, 0.5)
    for name, values in (("verbalized", data.verbalized), ("agreement", data.agreement)):
        if values is not None:
            c = np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0)
            out[name] = Signal(name, 1 - c, c, pred1, 0.0, 1.0, 0.0)
    return out


# -- uncertainty quality -------------------------------------------------------------


def expected_calibration_error(confidence: FloatArray, correct: NDArray[Any], bins: int = 10) -> float:
    """ECE with ``bins`` equal-width confidence bins on [0, 1] (Naeini et al. 2015)."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.digitize(confidence, edges[1:-1], right=True), 0, bins - 1)
    ece = 0.0
    n = confidence.size
    for b in range(bins):
        m = idx == b
        if m.any():
            ece += m.sum() / n * abs(float(correct[m].mean()) - float(confidence[m].mean()))
    return ece


def uncertainty_quality(sig: Signal, labels: NDArray[np.int64]) -> dict[str, float | None]:
    """Accuracy, ECE, AUROC and AUPRC of a signal's confidence for its own correctness."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    correct = (sig.prediction == labels).astype(np.int64)
    both = 0 < correct.sum() < correct.size
    return {
        "accuracy": float(correct.mean()),
        "ece": expected_calibration_error(sig.confidence, correct),
        "auroc": float(roc_auc_score(correct, sig.confidence)) if both else None,
        "auprc": float(average_precision_score(correct, sig.confidence)) if both else None,
    }


def risk_coverage_curve(sig: Signal, labels: NDArray[np.int64], points: int = 21) -> list[dict[str, float]]:
    """Risk among the most certain judgments at coverage 0, 5%, ..., 100%."""
    order = np.argsort(sig.uncertainty, kind="stable")
    errors = (sig.prediction != labels)[order]
    cum = np.cumsum(errors)
    out = []
    for cov in np.linspace(0, 1, points):
        k = round(cov * labels.size)
        out.append({"coverage": float(cov), "risk": float(cum[k - 1] / k) if k else 0.0})
    return out
