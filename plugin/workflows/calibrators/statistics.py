"""Label-free statistics of judge records: the drift statistic, the records' identity, conformity scores."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.kinds import calibration_kind
from judgecp.kinds.likert.estimator import ScoreIntervals
from judgecp.stats.methods.sets import LAC, Margin, lac_scores, margin_scores, true_label_scores
from judgecp.stats.methods.split import NaiveSplit

#: Identity fields compared at apply time.
IDENTITY_FIELDS = ("judge", "prompt", "task")


def drift_statistic(data: Any, signal: str = "bpe") -> tuple[str, NDArray[np.float64]]:
    """The label-free judge statistic of each item the drift test compares (name, values): the data's kind's."""

    name, values = calibration_kind(data.kind).calibration.drift_statistic(data, signal)
    return name, np.asarray(values, dtype=np.float64)


def _identity(data: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name in IDENTITY_FIELDS:
        if name in data.fields:
            values = sorted({str(v) for v in data.fields[name] if str(v) not in ("", "None", "nan")})
            if values:
                out[name] = values
    return out


def conformity_scores(method: Any, X: Any, y: Any) -> tuple[str, NDArray[np.float64]] | None:
    """The conformity scores of labeled rows under a calibrated method, where it has a label-free formula.

    ``naive`` (expected score): ``|y - sum_k k p_k|``; ``lac``: ``1 - p_y``;
    ``margin``: ``max_{j != y} p_j - p_y`` (the judge's own probabilities).
    Other methods (randomised scores, fitted models): ``None``.
    """

    Xa, ya = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    name = conformity_name(method)
    if isinstance(method, NaiveSplit) and name is not None:
        return name, np.abs(ya - method.point(Xa))
    if isinstance(method, (LAC, Margin)) and name is not None and np.all(ya == np.round(ya)):
        P = method._proba(Xa)
        scores = lac_scores(P) if isinstance(method, LAC) else margin_scores(P)
        return name, true_label_scores(scores, method.scale.index(ya))
    return None


def conformity_name(method: Any) -> str | None:
    """The name of a method's label-free conformity score (:func:`conformity_scores`), or None."""

    if isinstance(method, NaiveSplit) and method.predictor == "expected":
        return "abs_residual"
    if isinstance(method, (LAC, Margin)) and method.probabilities == "judge":
        return str(method.name)
    return None


def calibration_conformity(estimator: Any) -> tuple[str, NDArray[np.float64]] | None:
    """A Likert estimator's calibration conformity scores (the ones that set its threshold), ascending,
    where the method has a label-free formula for them and is not calibrated per group."""

    if not isinstance(estimator, ScoreIntervals) or estimator.mondrian_ is not None:
        return None
    name = conformity_name(estimator.method_)
    return None if name is None else (name, np.sort(vars(estimator.method_)["scores_"]))
