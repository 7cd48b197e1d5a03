"""Data behind the report's reliability diagrams and set-size histograms (added report keys, nothing changed).

* Likert ``reliability_diagram``: the judge's confidence (largest score-token
  probability) against whether that most probable label is the human label.
* Pairwise ``reliability_diagram.<signal>``: each signal's confidence against
  the correctness of its prediction (the data behind ``uncertainty.<signal>.ece``).
* Multiple choice ``set_size_distribution.<spec>``: share of test items by
  set size at the headline level, test rows of every split pooled.

Bins are :func:`judgecp.stats.signals.expected_calibration_error`'s: ``bins``
equal-width confidence bins on [0, 1], and ``ece`` is the same number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray


def reliability_bins(confidence: NDArray[np.float64], correct: NDArray[Any], bins: int = 10) -> dict[str, Any]:
    """Per bin: its edges, count, mean confidence and accuracy (empty bins: ``n`` 0, values ``None``); and ECE."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.digitize(confidence, edges[1:-1], right=True), 0, bins - 1)
    out = []
    ece = 0.0
    for b in range(bins):
        m = idx == b
        n = int(m.sum())
        conf = float(confidence[m].mean()) if n else None
        acc = float(np.mean(correct[m])) if n else None
        if n:
            ece += n / confidence.size * abs(acc - conf)  # type: ignore[operator]
        out.append(
            {"lower": float(edges[b]), "upper": float(edges[b + 1]), "n": n, "confidence": conf, "accuracy": acc}
        )
    return {"bins": out, "ece": ece}


def likert_reliability(
    probabilities: NDArray[np.float64], labels: NDArray[np.float64], scale_labels: Sequence[float]
) -> dict[str, Any]:
    """The judge's reliability diagram: max score-token probability against argmax label == human label."""
    top = np.asarray(scale_labels, dtype=np.float64)[np.argmax(probabilities, axis=1)]
    out = reliability_bins(probabilities.max(axis=1), top == labels)
    out["confidence"] = "largest score-token probability"
    out["correct"] = "most probable label equals the human label"
    return out


def pair_reliability(signals: dict[str, Any], labels: NDArray[np.int64]) -> dict[str, Any]:
    return {name: reliability_bins(s.confidence, s.prediction == labels) for name, s in signals.items()}


def set_size_distribution(pooled: list[tuple[NDArray[np.int64], NDArray[np.bool_]]], max_size: int) -> dict[str, float]:
    """Share of test items (every split pooled) by set size ``"0"`` .. ``str(max_size)``."""
    sizes = np.concatenate([sets.sum(axis=1) for _, sets in pooled])
    counts = np.bincount(sizes, minlength=max_size + 1)
    return {str(k): float(c / sizes.size) for k, c in enumerate(counts)}
