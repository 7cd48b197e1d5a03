"""Judge diagnostics: how well the judge's own scores agree with human labels.

The point metrics of the seed paper's Table 1 (correlations, accuracy, MAE,
bias overall and by ground-truth level, softmax over-confidence), its
confusion matrix (Table 12), per-group tables (Table 11) and the
ranking-scoring gap (eq. 7). Undefined values (a correlation of a constant
column) are ``None``, never NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.scale import LikertScale

FloatArray = NDArray[np.float64]


def average_ranks(a: FloatArray) -> FloatArray:
    """``scipy.stats.rankdata(a)`` (ties get their average rank), in less time or memory.

    Scores, labels and label-set midpoints are multiples of 1/2 over a short
    range: counting them is O(n) where ``rankdata`` sorts. Other finite data
    is sorted once and ranked in place (about half of ``rankdata``'s
    temporary memory: it ranks five million pooled interval midpoints). The
    ranks are half-integers, so both give exactly ``rankdata``'s numbers;
    data with NaN goes to ``rankdata``.
    """
    from scipy import stats

    a = np.asarray(a, dtype=np.float64)
    doubled = 2.0 * a
    if a.size and np.isfinite(doubled).all():
        low, high = doubled.min(), doubled.max()
        if high - low <= 4 * a.size and np.array_equal(doubled, np.round(doubled)):
            doubled -= low  # in place: five million pooled rows are 40 MB a copy
            codes = doubled.astype(np.int64)
            del doubled
            counts = np.bincount(codes)
            per_value: FloatArray = np.cumsum(counts) - counts + (counts + 1) / 2.0
            ranks: FloatArray = per_value[codes]
            return ranks
        del doubled
        return _sorted_average_ranks(a)
    return np.asarray(stats.rankdata(a), dtype=np.float64)


def _sorted_average_ranks(a: FloatArray) -> FloatArray:
    """Average ranks of finite ``a`` by one stable sort: ordinal ranks, then each tie's mean."""
    n = a.size
    order = np.argsort(a, kind="stable")
    ordered = a[order]
    new_value = np.empty(n, dtype=bool)
    new_value[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_value[1:])
    del ordered
    by_position: FloatArray = np.arange(1, n + 1, dtype=np.float64)  # the ranks in sorted order
    if not new_value.all():
        starts = np.flatnonzero(new_value)
        counts = np.diff(starts, append=n)
        tied = counts > 1
        starts, counts = starts[tied], counts[tied]
        # a tie of c values from sorted position s shares rank s + 1 + (c - 1) / 2
        first = np.repeat(starts, counts)
        within = np.arange(first.size) - np.repeat(np.cumsum(counts) - counts, counts)
        by_position[first + within] = np.repeat(starts + 1 + (counts - 1) / 2.0, counts)
    ranks: FloatArray = np.empty(n, dtype=np.float64)
    ranks[order] = by_position
    return ranks


def correlation(kind: str, a: FloatArray, b: FloatArray) -> float | None:
    """Pearson, Spearman or Kendall (tau-b) correlation; ``None`` when a column is constant.

    Spearman's is the correlation of average ranks, computed as
    ``scipy.stats.spearmanr`` does (the same number), with faster ranks.
    """
    from scipy import stats

    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:  # a constant column (ptp: no temporary copies)
        return None
    if kind == "pearson":
        return float(stats.pearsonr(a, b)[0])
    if kind == "spearman":
        ranked = np.empty((a.size, 2))  # what column_stack gives, without a second copy of the ranks
        ranked[:, 0] = average_ranks(a)
        ranked[:, 1] = average_ranks(b)
        matrix: FloatArray = np.asarray(np.corrcoef(ranked, rowvar=False))
        return float(matrix[1, 0])
    return float(stats.kendalltau(a, b)[0])  # tau-b


def point_metrics(
    predicted: Any,
    labels: Any,
    scale: LikertScale,
    probabilities: FloatArray | None = None,
) -> dict[str, Any]:
    """Agreement of the judge's score with the human label.

    ``bias`` is the mean signed error judge - human; ``bias_by_label`` the
    same within each ground-truth level. With the judge's label
    probabilities, ``overconfident_99`` / ``overconfident_999`` are the
    fractions of rows whose largest probability exceeds 0.99 / 0.999.
    """
    p = np.asarray(predicted, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    err = p - y
    out: dict[str, Any] = {
        "n": int(y.size),
        "pearson": correlation("pearson", p, y),
        "spearman": correlation("spearman", p, y),
        "kendall": correlation("kendall", p, y),
        "exact_accuracy": float(np.mean(err == 0)) if y.size else None,
        "within1_accuracy": float(np.mean(np.abs(err) <= 1)) if y.size else None,
        "within2_accuracy": float(np.mean(np.abs(err) <= 2)) if y.size else None,
        "mae": float(np.mean(np.abs(err))) if y.size else None,
        "bias": float(np.mean(err)) if y.size else None,
        "bias_by_label": {
            str(k): (float(np.mean(err[y == k])) if np.any(y == k) else None) for k in scale.labels
        },
        "n_by_label": {str(k): int(np.sum(y == k)) for k in scale.labels},
    }
    if probabilities is not None and y.size:
        mx = probabilities.max(axis=1)
        out["max_softmax_mean"] = float(mx.mean())
        out["overconfident_99"] = float(np.mean(mx > 0.99))
        out["overconfident_999"] = float(np.mean(mx > 0.999))
    return out


def confusion_matrix(predicted: Any, labels: Any, scale: LikertScale) -> dict[str, Any]:
    """Counts with ground truth in rows and the judge's score in columns (Table 12 layout)."""
    p = scale.index(np.asarray(predicted))
    y = scale.index(np.asarray(labels))
    k = scale.k
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(counts, (y, p), 1)
    totals = counts.sum(axis=1)
    within1 = [
        float(counts[i, max(0, i - 1) : i + 2].sum() / totals[i]) if totals[i] else None for i in range(k)
    ]
    return {
        "labels": [int(v) for v in scale.labels],
        "counts": counts.tolist(),
        "row_percent": [
            [float(100 * c / totals[i]) if totals[i] else None for c in counts[i]] for i in range(k)
        ],
        "within1_by_label": within1,
    }


def ranking_scoring_gap(pearson: float | None, width: float | None, scale: LikertScale) -> float | None:
    """RSG = |rho| - (1 - w / (K - 1)) (seed paper, eq. 7).

    ``K - 1`` is the span of the scale (4 on 1..5). Positive: the judge ranks
    better than it scores (high correlation, wide intervals).
    """
    if pearson is None or width is None:
        return None
    return float(abs(pearson) - (1.0 - width / scale.span))
