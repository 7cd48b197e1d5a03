"""Calibration and selective-prediction metrics of a judge's answer distribution.

All metrics look at the top-label view of ``proba`` (items x classes): the
prediction is ``argmax_y p(y|x)`` (ties: the first class), its confidence is
``max_y p(y|x)``, and it is correct when it equals the human label.

* **ECE**: 15 equal-width bins on [0, 1] (bin b holds confidences in
  ``(b/15, (b+1)/15]``, the first bin also holds 0); ``sum_b (n_b/n) |acc_b -
  conf_b|`` with acc_b and conf_b the mean correctness and confidence in the
  bin (Guo et al., 2017). For two classes confidences are >= 0.5, so only the
  upper 8 bins are ever filled.
* **MCE**: ``max_b |acc_b - conf_b|`` over non-empty bins.
* **AUPRC**: average precision (scikit-learn's ``average_precision_score``)
  of the confidence as a detector of correct answers: precision is the
  accuracy among the answers kept above a confidence threshold, recall the
  share of all correct answers kept. This is the selective-prediction reading
  of the supplement's "AUC Precision-Recall"; the paper does not spell out
  its positive class, so which one it used is an assumption here.
* **NLL**: mean ``-log p(y_true|x)`` (probabilities floored at 1e-12).
* **Error-coverage curve** (supplement Fig. 5): keep the k most confident
  answers (k = 1..n, ties broken by item order); coverage k/n against the
  error rate among the kept. Its area (AURC) is the mean of the curve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sklearn.metrics import average_precision_score

from judgecp.base.errors import InputError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

#: Equal-width confidence bins of ECE/MCE.
ECE_BINS = 15
#: Smallest probability used in the NLL.
PROBABILITY_FLOOR = 1e-12


def top_label(proba: FloatArray, labels: IntArray) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Confidence of the predicted class and whether it is correct."""
    p = np.asarray(proba, dtype=float)
    y = np.asarray(labels)
    if p.ndim != 2 or y.shape != (p.shape[0],):
        raise InputError(f"proba must be (items x classes) and labels (items,), got {p.shape}, {y.shape}")
    if (y < 0).any() or (y >= p.shape[1]).any():
        raise InputError(f"labels must be class indices in 0..{p.shape[1] - 1}")
    prediction = np.argmax(p, axis=1)
    confidence: FloatArray = p[np.arange(p.shape[0]), prediction]
    return confidence, prediction == y


def _bins(confidence: FloatArray, correct: NDArray[np.bool_], n_bins: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    index = np.clip(np.ceil(confidence * n_bins).astype(int) - 1, 0, n_bins - 1)
    count: FloatArray = np.bincount(index, minlength=n_bins).astype(float)
    conf_sum: FloatArray = np.bincount(index, weights=confidence, minlength=n_bins).astype(float)
    acc_sum: FloatArray = np.bincount(index, weights=correct.astype(float), minlength=n_bins).astype(float)
    return count, conf_sum, acc_sum


def expected_calibration_error(proba: FloatArray, labels: IntArray, n_bins: int = ECE_BINS) -> float:
    """ECE over ``n_bins`` equal-width confidence bins (see the module docstring)."""
    confidence, correct = top_label(proba, labels)
    _, conf_sum, acc_sum = _bins(confidence, correct, n_bins)
    return float(np.abs(acc_sum - conf_sum).sum() / max(len(confidence), 1))


def maximum_calibration_error(proba: FloatArray, labels: IntArray, n_bins: int = ECE_BINS) -> float:
    """MCE: the largest |accuracy - confidence| over non-empty bins."""
    confidence, correct = top_label(proba, labels)
    count, conf_sum, acc_sum = _bins(confidence, correct, n_bins)
    filled = count > 0
    if not filled.any():
        return float("nan")
    return float(np.max(np.abs(acc_sum[filled] - conf_sum[filled]) / count[filled]))


def auprc(proba: FloatArray, labels: IntArray) -> float:
    """Average precision of the confidence for detecting correct answers (NaN if all or none are correct)."""
    confidence, correct = top_label(proba, labels)
    if correct.all() or not correct.any():
        return float("nan")
    return float(average_precision_score(correct, confidence))


def negative_log_likelihood(proba: FloatArray, labels: IntArray) -> float:
    """Mean ``-log p(y_true | x)``."""
    p = np.asarray(proba, dtype=float)
    top_label(p, labels)  # validates
    chosen = p[np.arange(p.shape[0]), np.asarray(labels)]
    return float(-np.mean(np.log(np.maximum(chosen, PROBABILITY_FLOOR))))


@dataclass(frozen=True)
class ErrorCoverage:
    """Error-coverage curve: keep the k most confident answers, k = 1..n."""

    coverage: FloatArray  #: k / n
    error: FloatArray  #: error rate among the k kept
    threshold: FloatArray  #: confidence of the k-th kept answer

    @property
    def area(self) -> float:
        """Area under the curve (AURC): the mean selective error over k."""
        return float(self.error.mean()) if self.error.size else float("nan")

    def error_at(self, coverage: float) -> float:
        """Error rate when keeping the ``ceil(coverage * n)`` most confident answers."""
        n = self.coverage.size
        k = int(np.ceil(coverage * n))
        return float(self.error[k - 1]) if 1 <= k <= n else float("nan")


def error_coverage_curve(proba: FloatArray, labels: IntArray) -> ErrorCoverage:
    """The error-coverage curve of supplement Fig. 5 (stable sort on confidence)."""
    confidence, correct = top_label(proba, labels)
    order = np.argsort(-confidence, kind="stable")
    errors = np.cumsum(~correct[order])
    k = np.arange(1, confidence.size + 1)
    return ErrorCoverage(
        coverage=k / max(confidence.size, 1), error=errors / k, threshold=confidence[order]
    )


def calibration_summary(proba: FloatArray, labels: IntArray) -> dict[str, float]:
    """ECE, MCE, AUPRC, NLL, accuracy and AURC in one dictionary."""
    _, correct = top_label(proba, labels)
    return {
        "ece": expected_calibration_error(proba, labels),
        "mce": maximum_calibration_error(proba, labels),
        "auprc": auprc(proba, labels),
        "nll": negative_log_likelihood(proba, labels),
        "accuracy": float(correct.mean()) if correct.size else float("nan"),
        "aurc": error_coverage_curve(proba, labels).area,
    }
