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

from judgecp.base.scale import LikertScale

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
        # Each block's codes (twice the value, from 0) are made where they are used, counted, then
        # looked up: no column of n codes (60 MB at 7.5 million pooled rows) is held.
        size = int(high - low) + 1
        counts = np.zeros(size, dtype=np.int64)
        for b in blocks:
            counts += np.bincount((2.0 * a[b] - low).astype(np.intp), minlength=size)
        per_value: FloatArray = np.cumsum(counts) - counts + (counts + 1) / 2.0
        for b in blocks:  # clip: every code is in range; no buffered copy
            np.take(per_value, (2.0 * a[b] - low).astype(np.intp), out=ranks[b], mode="clip")
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
        by_position = np.repeat(starts + 1 + (counts - 1) / 2.0, counts)  # no run index of n integers
    ranks[order] = by_position
    return ranks


def pearson(a: FloatArray, b: FloatArray) -> float:
    """Pearson's r of two finite, non-constant columns: ``scipy.stats.pearsonr``'s statistic, in less memory.

    The same steps as scipy's (centre, scale by the largest deviation, norm,
    dot product of the normalised columns, clip; ``n = 2`` rounds to +-1) on
    the same values, done in place: two temporaries of the columns' length
    instead of about five (each 60 MB at the 7.5 million pooled rows of a
    million-record study). A column is squared in place for its norm and
    centred again after. ``tests/test_diagnostics.py`` checks it against
    scipy on every kind of column; with scipy 1.17 and numpy 2 they are equal
    to the bit.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    normalised = []
    for column in (x, y):
        mean = column.mean()
        dev = column - mean
        largest = max(dev.max(), -dev.min())  # max |dev|, without a column of absolute values
        dev /= largest
        np.multiply(dev, dev, out=dev)
        norm = largest * np.sqrt(np.add.reduce(dev))
        np.subtract(column, mean, out=dev)  # the deviations again, as they were
        dev /= norm
        normalised.append(dev)
    dot = getattr(np, "vecdot", np.dot)  # numpy >= 2 (scipy's own call); numpy 1.x: the same product by dot
    r = float(np.clip(dot(*normalised), -1.0, 1.0))
    return float(np.round(r)) if x.size == 2 else r


def _corrcoef_of_columns(columns: FloatArray) -> float:
    """``np.corrcoef(columns, rowvar=False)[1, 0]`` of an ``(n, 2)`` C-ordered array, which it overwrites.

    numpy's ``cov`` centres a copy of its input and multiplies it by a
    conjugated copy of its transpose: two more arrays of the input's size
    (240 MB at 7.5 million pooled rows). The same operations on the same
    memory layouts, done in place, give the same bits
    (``tests/test_diagnostics.py`` checks them against ``np.corrcoef``).
    """
    X = columns.T  # (2, n), as cov transposes for rowvar=False
    X -= np.average(X, axis=1)[:, None]
    c = np.dot(X, X.T)  # X.T is the columns' own C-ordered layout, the layout of cov's conjugated copy
    c *= np.true_divide(1, X.shape[1] - 1)
    stddev = np.sqrt(np.diag(c))
    c /= stddev[:, None]
    c /= stddev[None, :]
    np.clip(c, -1, 1, out=c)
    return float(c[1, 0])


def correlation(kind: str, a: FloatArray, b: FloatArray) -> float | None:
    """Pearson, Spearman or Kendall (tau-b) correlation; ``None`` when a column is constant.

    Spearman's is the correlation of average ranks, computed as
    ``scipy.stats.spearmanr`` does (the same number), with faster ranks.
    """
    from scipy import stats

    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:  # a constant column (ptp: no temporary copies)
        return None
    if kind == "pearson":
        return pearson(a, b)
    if kind == "spearman":
        ranked = np.empty((a.size, 2))  # what column_stack gives, without a second copy of the ranks
        average_ranks(a, out=ranked[:, 0])
        average_ranks(b, out=ranked[:, 1])
        return _corrcoef_of_columns(ranked)
    return float(stats.kendalltau(a, b)[0])  # tau-b


def point_metrics(
    predicted: Any,
    labels: Any,
    scale: LikertScale,
    probabilities: FloatArray | None = None,
    bins: Any = None,
) -> dict[str, Any]:
    """Agreement of the judge's score with the human label.

    ``bias`` is the mean signed error judge - human; ``bias_by_label`` the
    same within each ground-truth level. With the judge's label
    probabilities, ``overconfident_99`` / ``overconfident_999`` are the
    fractions of rows whose largest probability exceeds 0.99 / 0.999.
    ``bins`` (continuous labels: each label's nearest scale point) stand for
    the labels where they are categories: exact accuracy and the by-label
    tables; correlations, errors and bias use the labels themselves.
    """
    p = np.asarray(predicted, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    err = p - y
    cat = y if bins is None else np.asarray(bins, dtype=np.float64)
    out: dict[str, Any] = {
        "n": int(y.size),
        "pearson": correlation("pearson", p, y),
        "spearman": correlation("spearman", p, y),
        "kendall": correlation("kendall", p, y),
        "exact_accuracy": float(np.mean(p == cat)) if y.size else None,
        "within1_accuracy": float(np.mean(np.abs(err) <= 1)) if y.size else None,
        "within2_accuracy": float(np.mean(np.abs(err) <= 2)) if y.size else None,
        "mae": float(np.mean(np.abs(err))) if y.size else None,
        "bias": float(np.mean(err)) if y.size else None,
        "bias_by_label": {
            str(k): (float(np.mean(err[cat == k])) if np.any(cat == k) else None) for k in scale.labels
        },
        "n_by_label": {str(k): int(np.sum(cat == k)) for k in scale.labels},
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
