"""Prediction-powered inference (PPI++) for the mean a judge is used to estimate.

Given ``n`` labeled items (human label ``Y_i``, judge proxy ``f_i``) and ``N``
unlabeled items (proxy ``g_j``), the PPI++ estimate of the population mean
``theta = E[Y]`` (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient
Prediction-Powered Inference", mean estimation, Example 1 / Section 3) is

    theta_hat(lam) = mean_i Y_i + lam * (mean_j g_j - mean_i f_i)

with variance ``var(lam) = lam^2 s2_g / N + s2_{Y - lam f} / n``, power-tuned
``lam`` (the minimiser of ``var(lam)``, clipped to [0, 1] as ppi-python
does) and the interval ``theta_hat +- q sqrt(var(lam_hat))``: valid for any
judge, however biased (the bias term ``mean g - mean f`` removes it), and
no wider than the labeled-only interval asymptotically, because ``lam = 0``
is the labeled-only estimator.

The estimate is a sum over items; its variance, the power tuning of
``lam``, small samples, clusters and the difference of two runs are
:mod:`judgecp.stats.ppi_design`'s (its docstring): ddof 1 and Student's t by
default, ``conventions="ppi-python"`` for ppi-python's ddof 0 and normal
quantile.

Also reported: the *labeled-only* interval (``lam = 0``: the labels' mean,
post-stratified when stratified), the *judge-only* interval (the proxies'
mean over all items with a proxy: what a harness's stderr amounts to; it
ignores the judge's bias and its coverage fails under bias), and the
*effective sample size* ``n * var_labeled_only / var_ppi``: the number of
labeled items the labeled-only estimator would need for the PPI++ width.

Stratified (by a group field): PPI++ in each stratum ``h``, combined with
the stratum shares ``w_h = (n_h + N_h) / (n + N)``; one ``lam`` for all
strata minimises the combined variance (``stratum_lambda="per_stratum"``:
each stratum its own, which over-fits small strata). Items without a judge
proxy (no score logprobs) are one more stratum, estimated from their labels
(:data:`NO_PROXY`).

The proxy and the target of each kind: Likert, the judge's expected score
``sum_k k p_k`` for the mean human score; pairwise, ``P(original A
preferred)`` averaged over the orders for the human win rate of A; multiple
choice, the probability of the predicted option for the accuracy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.base.errors import InputError
from judgecp.stats import proxies
from judgecp.stats.conformal import check_alpha
from judgecp.stats.ppi_design import (
    CONVENTIONS,
    NO_PROXY,
    MeanEstimate,
    design,
    estimable,
    normal_interval,
    ppi_python_lambda,
    quantile,
    summarize,
)

FloatArray = NDArray[np.float64]
#: What other modules import from here (the interval helpers live in :mod:`judgecp.stats.ppi_design`).
__all__ = ["CONVENTIONS", "NO_PROXY", "MeanEstimate", "estimand", "normal_interval", "ppi_items", "ppi_mean",
           "quantile", "stratification"]


def ppi_items(y: ArrayLike, f: ArrayLike, *, alpha: float = 0.1, strata: ArrayLike | None = None,
              keys: ArrayLike | None = None, lam: float | None = None, clip: bool = True,
              stratum_lambda: str = "common", conventions: str = "small-sample") -> dict[str, Any]:
    """PPI++ of one sample given item by item: labels ``y`` (NaN: unlabeled), proxies ``f`` (NaN: no proxy).

    Items without a proxy are their own stratum when 2 of their units are labeled (else they are left out of
    the estimand, and ``no_proxy`` says so); ``strata`` stratifies the others; ``keys`` are the independent
    units (clusters). Returns :func:`ppi_mean`'s result.
    """
    alpha = check_alpha(alpha)
    ya, fa = np.asarray(y, dtype=np.float64).ravel(), np.asarray(f, dtype=np.float64).ravel()
    if ya.shape != fa.shape:
        raise InputError(f"{ya.size} labels but {fa.size} proxies")
    if np.isinf(ya).any() or np.isinf(fa).any():
        raise InputError("PPI: the labels or proxies contain infinite values")
    unit = np.arange(ya.size) if keys is None else np.asarray(keys)
    no_proxy = np.isnan(fa)
    np_info: dict[str, Any] | None = None
    if no_proxy.any():
        np_info = {"n": int(no_proxy.sum()), "n_labeled": int((no_proxy & ~np.isnan(ya)).sum())}
        keep = estimable(ya, fa, unit)
        ya, fa, unit = ya[keep], fa[keep], unit[keep]
        strata = None if strata is None else np.asarray(strata)[keep]
        no_proxy = np.isnan(fa)
    proxied_labeled = ~no_proxy & ~np.isnan(ya)
    if strata is None and lam is None and conventions == "ppi-python" and keys is None and not no_proxy.any():
        lam = ppi_python_lambda(ya[proxied_labeled], fa[proxied_labeled], fa[np.isnan(ya)], clip)
    d = design(ya, fa, strata=strata, keys=None if keys is None else unit, conventions=conventions,
               stratum_lambda=stratum_lambda)
    res = summarize(d, alpha=alpha, lam=lam, clip=clip)
    by_stratum = res.pop("_strata")
    out: dict[str, Any] = {
        "alpha": alpha, "n_labeled": int(proxied_labeled.sum()), "n_unlabeled": int((~no_proxy & np.isnan(ya)).sum()),
        **res, "conventions": conventions,
    }
    if keys is not None:
        out["clusters"] = {"n": int(np.unique(unit).size), "labeled": int(np.unique(unit[~np.isnan(ya)]).size)}
    if strata is not None:
        out["strata"] = {h: s for h, s in by_stratum.items() if h != NO_PROXY}
    if np_info is not None:
        if NO_PROXY in by_stratum:
            s = by_stratum[NO_PROXY]
            np_info.update(weight=s["weight"], labeled_only=s["labeled_only"])
        out["no_proxy"] = np_info
    proxy = fa[~no_proxy]
    if proxy.size and float(np.ptp(proxy)) == 0.0:
        out["degenerate"] = [f"the judge's proxy has no spread (every proxy {proxy[0]:g}): the interval is the "
                             "labels' alone"]
    return out


def ppi_mean(
    y: ArrayLike, f_labeled: ArrayLike, f_unlabeled: ArrayLike, *, alpha: float = 0.1,
    groups_labeled: ArrayLike | None = None, groups_unlabeled: ArrayLike | None = None, lam: float | None = None,
    clip: bool = True, stratum_lambda: str = "common", clusters_labeled: ArrayLike | None = None,
    clusters_unlabeled: ArrayLike | None = None, conventions: str = "small-sample",
) -> dict[str, Any]:
    """PPI++ mean with power tuning, next to the labeled-only and judge-only intervals (module docstring).

    Parameters
    ----------
    y, f_labeled : array-like
        Human labels and the judge's proxy on the labeled items.
    f_unlabeled : array-like
        The judge's proxy on the unlabeled items.
    alpha : float
        Miscoverage of the intervals.
    groups_labeled, groups_unlabeled : array-like, optional
        Strata (both or neither) for the stratified estimator.
    lam : float, optional
        A fixed ``lam`` instead of the power-tuned one (``1``: plain PPI; ``0``: labeled only).
    clip : bool
        Clip the power-tuned ``lam`` to [0, 1] (default, as ppi-python does).
    stratum_lambda : {"common", "per_stratum"}
        Stratified: one ``lam`` minimising the stratified variance (default),
        or each stratum's own (needs many labels per stratum: with about 20
        it under-covers, see docs/calibrators.md).
    clusters_labeled, clusters_unlabeled : array-like, optional
        The cluster of every item (both or neither): cluster-robust variances and ``lam``.
    conventions : {"small-sample", "ppi-python"}
        ddof 1 (CR1 with clusters) and Student's t (default), or ppi-python's ddof 0 and normal quantile.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=200); f = y + 0.5 + rng.normal(0, 0.5, 200); g = rng.normal(size=2000) + 0.5
    >>> out = ppi_mean(y, f, g, alpha=0.1)
    >>> out["estimate"]["ppi"]["upper"] - out["estimate"]["ppi"]["lower"] < (
    ...     out["estimate"]["labeled_only"]["upper"] - out["estimate"]["labeled_only"]["lower"])
    True
    """
    ya, fa, ga = (np.asarray(v, dtype=np.float64).ravel() for v in (y, f_labeled, f_unlabeled))
    if ya.shape != fa.shape:
        raise InputError(f"{ya.size} labels but {fa.size} labeled proxies")
    for name, arr in (("labels", ya), ("labeled proxies", fa), ("unlabeled proxies", ga)):
        if not np.isfinite(arr).all():
            raise InputError(f"PPI: the {name} contain NaN or infinite values")
    if (groups_labeled is None) != (groups_unlabeled is None):
        raise InputError("give the groups of both the labeled and the unlabeled items, or neither")
    if (clusters_labeled is None) != (clusters_unlabeled is None):
        raise InputError("give the clusters of both the labeled and the unlabeled items, or neither")
    strata = keys = None
    if groups_labeled is not None and groups_unlabeled is not None:
        gl, gu = np.asarray(groups_labeled).astype(str), np.asarray(groups_unlabeled).astype(str)
        missing = sorted(set(gu.tolist()) - set(gl.tolist()))
        if missing:
            raise InputError(f"PPI: stratum {missing[:5]} has unlabeled items but no labeled ones")
        strata = np.concatenate([gl, gu])
    if clusters_labeled is not None and clusters_unlabeled is not None:
        keys = np.concatenate([np.asarray(clusters_labeled).astype(str), np.asarray(clusters_unlabeled).astype(str)])
    if ya.size < 2:
        raise InputError(f"PPI needs at least 2 labeled items in every stratum, got {ya.size}")
    return ppi_items(np.concatenate([ya, np.full(ga.size, np.nan)]), np.concatenate([fa, ga]), alpha=alpha,
                     strata=strata, keys=keys, lam=lam, clip=clip, stratum_lambda=stratum_lambda,
                     conventions=conventions)


def estimand(out: dict[str, Any], target: str) -> str:
    """What an estimate's interval is about: all items, or the items with a proxy when too few without one are
    labeled (``no_proxy``)."""
    n_items = out["n_labeled"] + out["n_unlabeled"]
    info = out.get("no_proxy")
    if not info:
        return f"{target} over all {n_items} items"
    if "weight" not in info:
        return (f"{target} over the {n_items} items with a judge proxy; {info['n']} items without one are not in it "
                f"({info['n_labeled']} labeled: 2 are needed to estimate them)")
    return (f"{target} over all {n_items + info['n']} items: {n_items} with a judge proxy (PPI++), {info['n']} "
            f"without one as their own stratum, estimated from their {info['n_labeled']} labels (the judge-only "
            "interval covers the proxied items only)")


def stratification(col: NDArray[Any] | None, labeled: NDArray[np.bool_], stratify: str,
                   units: NDArray[Any] | None = None) -> tuple[NDArray[Any] | None, dict[str, Any]]:
    """The strata of every item under ``stratify`` (``auto``: :func:`judgecp.stats.proxies.choose_strata`, counting
    labeled ``units`` when clustered), and why."""
    if col is None:
        return None, {"stratified": False, "reason": "no group field"}
    if stratify == "yes":
        return col, {"stratified": True, "strata": sorted(set(col.tolist()))}
    if stratify == "no":
        return None, {"stratified": False, "reason": "--stratify no"}
    return proxies.choose_strata(col, labeled, units=units)
