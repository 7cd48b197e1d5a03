"""The estimate from labels ``judgecp select`` drew: inverse-probability weighted, over all the run's items.

:mod:`judgecp.stats.active` states it (its docstring) and draws the items; this module computes the interval
(``judgecp estimate --labeled L --unlabeled U`` when L's items carry a ``sampling_probability``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.stats.conformal import check_alpha
from judgecp.stats.ppi import normal_interval
from judgecp.stats.ppi_design import clustered_variance

FloatArray = NDArray[np.float64]


def active_mean(y: FloatArray, f: FloatArray, pi: FloatArray, *, alpha: float = 0.1,
                clusters: NDArray[Any] | None = None) -> dict[str, Any]:
    """The inverse-probability-weighted estimate over all items (:mod:`judgecp.stats.active`'s docstring).

    ``y`` is NaN on unlabeled items; a labeled item's ``pi`` is its sampling
    probability in (0, 1], or NaN for a label the run had before the draw
    (it was known for sure: ``pi = 1``, the item enters with its label). The
    other items' ``pi`` is not used.
    Returns the shape of :func:`judgecp.stats.ppi.ppi_mean`'s output: ``ppi`` (the
    tuned control variate), ``labeled_only`` (the weighted labels with the
    best constant only) and ``judge_only``. The variances are ``s2(z) / N``
    (ddof 1), cluster-robust over ``clusters`` (every item's cluster) when
    given; the quantile is Student's t with the labeled units less 1 degrees
    of freedom (the labeled terms carry the variance).
    """
    alpha = check_alpha(alpha)
    y, f, pi = (np.asarray(v, dtype=np.float64) for v in (y, f, pi))
    labeled = ~np.isnan(y)
    p = pi[labeled]
    sure = int(np.isnan(p).sum())
    missing = int((~labeled & np.isfinite(pi)).sum())
    p = np.where(np.isnan(p), 1.0, p)
    if ((p <= 0) | (p > 1)).any():
        raise InputError("a sampling_probability is outside (0, 1]")
    if labeled.sum() < 2:
        raise InputError(f"active PPI needs at least 2 labeled items, got {int(labeled.sum())}")
    n = y.size
    weight = np.zeros(n)
    weight[labeled] = 1.0 / p
    a = np.where(labeled, y, 0.0) * weight
    b = 1.0 - weight
    tuned = _least_variance(a, np.column_stack([b, f * b]))
    constant = _least_variance(a, b[:, None])
    lam = float(tuned[1])
    ppi, lab = a + np.column_stack([b, f * b]) @ tuned, a + b * constant[0]
    units = np.arange(n) if clusters is None else np.asarray(clusters)
    df = max(np.unique(units[labeled]).size - 1, 1)
    est = {name: normal_interval(float(z.mean()), clustered_variance(z, clusters), alpha,
                                 np.unique(units).size - 1 if name == "judge_only" else df)
           for name, z in (("ppi", ppi), ("labeled_only", lab), ("judge_only", f))}
    var_ppi, var_lab = est["ppi"].se ** 2, est["labeled_only"].se ** 2
    return {
        "alpha": alpha, "n_labeled": int(labeled.sum()), "n_unlabeled": int(n - labeled.sum()),
        "estimate": {k: v.to_dict() for k, v in est.items()},
        "lambda": lam, "intercept": float(tuned[0]),
        "effective_sample_size": float(labeled.sum()) * var_lab / var_ppi if var_ppi > 0 else math.inf,
        "judge_bias": est["judge_only"].mean - est["ppi"].mean, "df": df,
        "sampling": "active (inverse-probability weighted, judgecp select)", "n_labeled_before_the_draw": sure,
        "selected_without_label": missing,
        "estimand": f"mean over all {n} items of the run the labels were drawn from"
        + (f"; {missing} selected items have no label and count as not drawn (valid only if they are missing at "
           "random)" if missing else ""),
    }


def _least_variance(a: FloatArray, b: FloatArray) -> FloatArray:
    """Coefficients ``c`` minimising the sample variance of ``a + b c`` (least squares on centred columns)."""
    bc = b - b.mean(axis=0)
    coef, *_ = np.linalg.lstsq(bc, -(a - a.mean()), rcond=None)
    out: FloatArray = coef
    return out
