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


#: Rows a time when :func:`average_ranks` checks its data: temporaries of 8 MB, not of the whole column.
RANK_BLOCK = 1 << 20


def average_ranks(a: FloatArray, out: FloatArray | None = None) -> FloatArray:
    """``scipy.stats.rankdata(a)`` (ties get their average rank), in less time or memory.

    Scores, labels and label-set midpoints are multiples of 1/2 over a short
    range: counting them is O(n) where ``rankdata`` sorts. Other finite data
    is sorted once and ranked in place (about half of ``rankdata``'s
    temporary memory: it ranks five million pooled interval midpoints). The
    ranks are half-integers, so both give exactly ``rankdata``'s numbers;
    data with NaN goes to ``rankdata``. The data are checked a block at a
    time, and the ranks are written into ``out`` (any float64 array of
    ``a``'s length, a column of a matrix included) when it is given.
    """
    from scipy import stats

    a = np.asarray(a, dtype=np.float64)
    n = a.size
    ranks: FloatArray = np.empty(n, dtype=np.float64) if out is None else out
    blocks = [slice(start, start + RANK_BLOCK) for start in range(0, n, RANK_BLOCK)]
    with np.errstate(over="ignore"):  # twice a huge finite value is not finite: rankdata ranks it
        finite = bool(n) and all(np.isfinite(2.0 * a[b]).all() for b in blocks)
    if not finite:
        ranks[:] = stats.rankdata(a)
        return ranks
    low, high = 2.0 * a.min(), 2.0 * a.max()
    if high - low <= 4 * n and all(np.array_equal(d, np.round(d)) for d in (2.0 * a[b] for b in blocks)):
        codes = np.empty(n, dtype=np.int64)
        for b in blocks:
            codes[b] = 2.0 * a[b] - low
        counts = np.bincount(codes)
        per_value: FloatArray = np.cumsum(counts) - counts + (counts + 1) / 2.0
        np.take(per_value, codes, out=ranks, mode="clip")  # clip: every code is in range; no buffered copy
        return ranks
    return _sorted_average_ranks(a, ranks)


def _sorted_average_ranks(a: FloatArray, ranks: FloatArray) -> FloatArray:
    """Average ranks of finite ``a`` into ``ranks`` by one stable sort: ordinal ranks, then each tie's mean."""
    n = a.size
    order = np.argsort(a, kind="stable")
    ordered = a[order]
    new_value = np.empty(n, dtype=bool)
    new_value[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_value[1:])
    del ordered
    if new_value.all():
        by_position: FloatArray = np.arange(1, n + 1, dtype=np.float64)  # the ranks in sorted order
    else:  # a run of c equal values from sorted position s shares rank s + 1 + (c - 1) / 2 (c = 1: s + 1)
        starts = np.flatnonzero(new_value)
        counts = np.diff(starts, append=n)
        run = np.cumsum(new_value, dtype=np.int64)
        run -= 1  # each sorted position's run
        by_position = (starts + 1 + (counts - 1) / 2.0)[run]
        del run
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
        average_ranks(a, out=ranked[:, 0])
        average_ranks(b, out=ranked[:, 1])
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
