"""Selective prediction with false-discovery control (Benjamini-Yekutieli).

Which of the judge's answers on unlabeled items can be trusted, with a
guarantee on the share of wrong answers among the trusted ones? We treat
"answer j is wrong" as the null hypothesis of item j and select by multiple
testing over conformal p-values (conformal selection, Jin & Candes 2023):

    p_j = (1 + #{i in calibration : answer i wrong and conf_i >= conf_j}) / (n + 1),

from n labeled calibration items that played no part in fitting the ensemble
and a confidence score ``conf`` (the ensemble's top-label probability). When
the calibration and test items are exchangeable, p_j is a valid p-value for a
wrong answer: ``P(p_j <= t, answer j wrong) <= t``.

The Benjamini-Yekutieli step-up procedure at level alpha then selects the
items with the k smallest p-values, k the largest index with
``p_(k) <= k alpha / (m c(m))``, ``c(m) = sum_{i<=m} 1/i``; it controls the
false-discovery rate ``E[#wrong selected / max(#selected, 1)] <= alpha`` under
any dependence between the p-values (they share the calibration set).
Benjamini-Hochberg (``c(m) = 1``) is offered too: it is valid here as well
(the p-values are PRDS, Jin & Candes Thm. 3) and selects more.

The naive rule "trust an answer when its confidence is >= 1 - alpha" has no
such guarantee; :func:`select_by_confidence` exists as the negative control.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
Procedure = Literal["by", "bh"]


def conformal_pvalues(
    calibration_confidence: FloatArray,
    calibration_correct: BoolArray,
    test_confidence: FloatArray,
) -> FloatArray:
    """Conformal p-values for "the answer is wrong" (see the module docstring)."""
    cal = np.asarray(calibration_confidence, dtype=float)
    correct = np.asarray(calibration_correct, dtype=bool)
    test = np.asarray(test_confidence, dtype=float)
    if cal.shape != correct.shape or cal.ndim != 1:
        raise InputError("calibration confidences and correctness must be 1-D of the same length")
    wrong = np.sort(cal[~correct])
    # number of wrong calibration answers with confidence >= each test confidence
    at_least = wrong.size - np.searchsorted(wrong, test, side="left")
    out: FloatArray = ((1.0 + at_least) / (cal.size + 1.0)).astype(float)
    return out


def step_up(pvalues: FloatArray, alpha: float, procedure: Procedure = "by") -> BoolArray:
    """Benjamini-Yekutieli (``"by"``) or Benjamini-Hochberg (``"bh"``) selection at level alpha."""
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return np.zeros(0, dtype=bool)
    if procedure == "by":
        harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    elif procedure == "bh":
        harmonic = 1.0
    else:
        raise InputError(f"procedure must be 'by' or 'bh', got {procedure!r}")
    order = np.argsort(p, kind="stable")
    passing = p[order] <= np.arange(1, m + 1) * alpha / (m * harmonic)
    selected = np.zeros(m, dtype=bool)
    if passing.any():
        k = int(np.flatnonzero(passing)[-1]) + 1
        selected[order[:k]] = True
    return selected


@dataclass(frozen=True)
class Selection:
    """Selected test items and, when their labels are known, the realised error."""

    selected: BoolArray
    pvalues: FloatArray
    alpha: float
    procedure: str

    @property
    def n_selected(self) -> int:
        return int(self.selected.sum())

    def false_discovery_proportion(self, test_correct: BoolArray) -> float:
        """#wrong selected / max(#selected, 1)."""
        wrong = ~np.asarray(test_correct, dtype=bool)
        return float((self.selected & wrong).sum() / max(self.n_selected, 1))


def select_by_fdr(
    calibration_confidence: FloatArray,
    calibration_correct: BoolArray,
    test_confidence: FloatArray,
    alpha: float = 0.1,
    procedure: Procedure = "by",
) -> Selection:
    """Trust the test answers selected by BY (or BH) over conformal p-values at level alpha.

    Parameters
    ----------
    calibration_confidence, calibration_correct : ndarray of shape (n,)
        Confidence and correctness of labeled calibration items (not used to
        fit the ensemble).
    test_confidence : ndarray of shape (m,)
        Confidence of the answers to select from.
    alpha : float
        Target false-discovery rate.
    procedure : {"by", "bh"}
    """
    pvalues = conformal_pvalues(calibration_confidence, calibration_correct, test_confidence)
    return Selection(step_up(pvalues, alpha, procedure), pvalues, alpha, procedure)


def select_by_confidence(test_confidence: FloatArray, alpha: float = 0.1) -> BoolArray:
    """The naive rule: trust answers with confidence >= 1 - alpha (no guarantee)."""
    out: BoolArray = np.asarray(test_confidence, dtype=float) >= 1.0 - alpha
    return out
