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

**Every item's deviation.** The estimate is a sum over items, so its
variance is the sum of squares of each independent unit's deviation: a
labeled item ``i`` of stratum ``h`` deviates by ``w_h (Y_i - mean Y_h - lam
(f_i - mean f_h)) / n_h``, an unlabeled item by ``w_h lam (g_j - mean g_h) /
N_h`` (``w_h`` the stratum's share of all items), and ``var(lam) = sum_k
(sum_{i in k} deviation_i)^2`` over the units ``k``: every item its own unit
(the formula above), or, with clusters (several answers to one prompt,
turns of one conversation: ``--cluster``), every cluster one unit, the
cluster-robust (sandwich, "CR1") variance, whose sums keep the covariance of
the items of a cluster, labeled and unlabeled alike. ``var(lam)`` is a
quadratic in ``lam``: the power-tuned ``lam`` is its least-squares
minimiser, with the clustered variances when there are clusters. Two runs
(``judgecp compare``) are one more sum: the difference of their estimates
deviates by the difference of their items' deviations, unit by unit (an
item judged in both runs, or a cluster, is one unit), and its two ``lam``
are tuned together (:func:`difference`).

**Small samples** (``conventions="small-sample"``, the default): each
component's sum of squares is multiplied by ``G / (G - 1)`` with ``G`` its
units (ddof 1: ``s2`` with ``n - 1`` without clusters, CR1 with them), and
the quantile is Student's ``t`` with ``G_labeled - H - p`` degrees of
freedom (the labeled units less the strata and the ``p`` power-tuned
``lam``: the classical rule of a stratified mean with a fitted slope, where
the labeled term dominates; the unlabeled term is estimated on many more
items). A stratum needs 2 labeled units (fewer: refused; ``judgecp
estimate`` merges strata by their counts first,
:func:`judgecp.proxies.choose_strata`), and uses the proxies of its
unlabeled items only when it has 2 unlabeled units (else its estimate is
its labeled mean). ``conventions="ppi-python"`` keeps ppi-python's (ddof 0,
the normal quantile, ``lam = cov(Y, f) / ((1 + n/N) s2_f)`` with ``s2_f`` on
all ``n + N`` proxies) so that the two agree to rounding
(``tests/test_ppi.py::test_agrees_with_ppi_python``).

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

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import lsq_linear
from scipy.stats import norm
from scipy.stats import t as student_t

from judgecp import proxies
from judgecp.conformal import check_alpha
from judgecp.errors import InputError, unknown

FloatArray = NDArray[np.float64]
#: Variance and quantile conventions: ``small-sample`` (ddof 1 / CR1, Student's t) or ``ppi-python`` (ddof 0, normal).
CONVENTIONS = ("small-sample", "ppi-python")
#: The stratum of items without a judge proxy: estimated from their labels.
NO_PROXY = "(no proxy)"


@dataclass(frozen=True)
class MeanEstimate:
    """A point estimate, its standard error and its ``1 - alpha`` interval."""

    mean: float
    se: float
    lower: float
    upper: float

    def to_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "lower": self.lower, "upper": self.upper, "se": self.se}


def quantile(alpha: float, df: float = math.inf) -> float:
    """``z_{1-alpha/2}``, or Student's ``t_{df, 1-alpha/2}`` when ``df`` is finite (small samples)."""
    if math.isinf(df):
        return float(norm.ppf(1.0 - alpha / 2.0))
    return float(student_t.ppf(1.0 - alpha / 2.0, max(df, 1.0)))


def normal_interval(mean: float, var: float, alpha: float, df: float = math.inf) -> MeanEstimate:
    """``mean +- q sqrt(var)``, the interval every estimate here reports: ``q`` normal, or Student's ``t`` with
    ``df`` degrees of freedom (:func:`quantile`)."""
    se = math.sqrt(max(var, 0.0))
    q = quantile(alpha, df)
    return MeanEstimate(mean, se, mean - q * se, mean + q * se)


# -- the estimate as a sum over items -----------------------------------------------------------


@dataclass(frozen=True)
class Stratum:
    """One stratum of a :class:`Design`: its items, share, counts, and the ``lam`` column it uses (``None``: its
    labeled mean, for want of a proxy or of unlabeled units)."""

    name: str
    rows: NDArray[np.int64]
    weight: float
    n_labeled: int
    n_unlabeled: int
    labeled_units: int
    column: int | None


@dataclass(frozen=True)
class Design:
    """One sample's PPI++ estimate as a function of ``lam``, item by item (module docstring).

    ``theta(lam) = base + slope @ lam``; item ``i`` deviates by ``a[i] + b[i] @ lam`` (already scaled by its
    stratum's share and small-sample factor); ``var(lam) = sum_k (sum_{i in k} a_i + b_i @ lam)^2`` over the
    units ``keys``. ``judge`` are the items' deviations of the judge-only estimate ``judge_mean``.
    """

    keys: NDArray[Any]
    y: FloatArray
    f: FloatArray
    a: FloatArray
    b: FloatArray
    base: float
    slope: FloatArray
    judge: FloatArray
    judge_mean: float
    df: float
    judge_df: float
    strata: tuple[Stratum, ...]

    @property
    def n_labeled(self) -> int:
        return int((~np.isnan(self.y)).sum())


def unit_sums(keys: NDArray[Any], values: FloatArray) -> FloatArray:
    """The rows of ``values`` summed within each unit of ``keys`` (units in sorted order)."""
    _, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.ravel()
    units = int(inverse.max()) + 1 if inverse.size else 0
    if values.ndim == 1:
        return np.asarray(np.bincount(inverse, weights=values, minlength=units), dtype=np.float64)
    sums = np.zeros((units, values.shape[1]))
    np.add.at(sums, inverse, values)
    return sums


def tuned_lambda(a: FloatArray, b: FloatArray, clip: bool) -> FloatArray:
    """The ``lam`` minimising ``||a + b lam||^2`` (units' deviations summed), each in [0, 1] when ``clip``.

    One ``lam``: the closed form, clipped; several (per stratum, two runs): bounded least squares. A ``lam``
    whose column is zero (no unlabeled units, constant proxies) stays 0.
    """
    lam = np.zeros(b.shape[1])
    live = np.flatnonzero((b**2).sum(axis=0) > 0)
    if live.size == 0:
        return lam
    scale = float(np.abs(b[:, live]).max())
    bl, al = b[:, live] / scale, a / scale
    if live.size == 1:
        x = -float(al @ bl[:, 0]) / float(bl[:, 0] @ bl[:, 0])
        lam[live] = min(max(x, 0.0), 1.0) if clip else x
    elif clip:
        lam[live] = lsq_linear(bl, -al, bounds=(0.0, 1.0), method="bvls").x
    else:
        lam[live] = np.linalg.lstsq(bl, -al, rcond=None)[0]
    return lam


def tuned_count(b: FloatArray) -> int:
    """How many ``lam`` power tuning fits (the columns of ``b`` that are not zero): each costs a degree of freedom."""
    return int(np.count_nonzero((b**2).sum(axis=0) > 0))


def _correction(units: int, small_sample: bool) -> float:
    return units / (units - 1) if small_sample and units > 1 else 1.0


def design(y: ArrayLike, f: ArrayLike, *, strata: ArrayLike | None = None, keys: ArrayLike | None = None,
           conventions: str = "small-sample", stratum_lambda: str = "common") -> Design:
    """Every item's deviation (module docstring) of one sample: labels ``y`` (NaN: unlabeled), proxies ``f``
    (NaN: no proxy, the :data:`NO_PROXY` stratum), ``strata`` (default one), ``keys`` the independent units
    (default every item its own; a cluster column for cluster-robust variances)."""
    if conventions not in CONVENTIONS:
        raise InputError(f"conventions must be one of {', '.join(CONVENTIONS)}, got {conventions!r}")
    if stratum_lambda not in ("common", "per_stratum"):
        raise InputError(f"stratum_lambda must be 'common' or 'per_stratum', got {stratum_lambda!r}")
    ya, fa = np.asarray(y, dtype=np.float64).ravel(), np.asarray(f, dtype=np.float64).ravel()
    n_items = ya.size
    small = conventions == "small-sample"
    unit = np.arange(n_items) if keys is None else np.asarray(keys)
    proxied, labeled = ~np.isnan(fa), ~np.isnan(ya)
    names = np.full(n_items, "all", dtype=object) if strata is None else np.asarray(strata).astype(str).astype(object)
    names = np.where(proxied, names, NO_PROXY)
    order = sorted(set(names.tolist()) - {NO_PROXY}) + ([NO_PROXY] if (~proxied).any() else [])
    columns = 1 if stratum_lambda == "common" else max(1, len(order) - int(NO_PROXY in order))
    a, b, judge = np.zeros(n_items), np.zeros((n_items, columns)), np.zeros(n_items)
    base, slope, judge_mean, df, judge_df = 0.0, np.zeros(columns), 0.0, 0.0, 0.0
    n_proxied = int(proxied.sum())
    found: list[Stratum] = []
    for index, name in enumerate(order):
        rows = np.flatnonzero(names == name)
        lab, unl = rows[labeled[rows]], rows[~labeled[rows]]
        w = rows.size / n_items
        g_lab = np.unique(unit[lab]).size
        if g_lab < 2:
            what = "labeled items" if keys is None else "labeled clusters"
            where = "" if name == "all" else f" (stratum {name!r})"
            if lab.size == 0 and name != "all":
                raise InputError(f"PPI: stratum {[name]} has unlabeled items but no labeled ones")
            raise InputError(f"PPI needs at least 2 {what} in every stratum, got {g_lab}{where}")
        c_lab = _correction(g_lab, small)
        mean_y = float(ya[lab].mean())
        base += w * mean_y
        a[lab] = w * math.sqrt(c_lab) * (ya[lab] - mean_y) / lab.size
        df += g_lab - 1
        column = None
        if name != NO_PROXY:
            share = rows.size / n_proxied
            mean_f_all = float(fa[rows].mean())
            judge_mean += share * mean_f_all
            g_all = np.unique(unit[rows]).size
            judge[rows] = share * math.sqrt(_correction(g_all, small)) * (fa[rows] - mean_f_all) / rows.size
            judge_df += max(g_all - 1, 0)
            g_unl = np.unique(unit[unl]).size
            if g_unl >= (2 if small else 1) and float(np.ptp(fa[rows])) > 0:  # a constant proxy corrects nothing
                column = 0 if columns == 1 else index
                mean_f, mean_g = float(fa[lab].mean()), float(fa[unl].mean())
                slope[column] += w * (mean_g - mean_f)
                b[lab, column] = -w * math.sqrt(c_lab) * (fa[lab] - mean_f) / lab.size
                b[unl, column] = w * math.sqrt(_correction(g_unl, small)) * (fa[unl] - mean_g) / unl.size
        found.append(Stratum(name, rows, w, int(lab.size), int(unl.size), int(g_lab), column))
    return Design(unit, ya, fa, a, b, base, slope, judge, judge_mean, df if small else math.inf,
                  max(judge_df, 1.0) if small else math.inf, tuple(found))


def estimable(y: FloatArray, f: FloatArray, keys: NDArray[Any]) -> NDArray[np.bool_]:
    """The items an estimate keeps: all, but the items without a proxy when fewer than 2 of their units are
    labeled (too few to estimate them: the estimand leaves them out, and says so)."""
    no_proxy = np.isnan(f)
    if np.unique(np.asarray(keys)[no_proxy & ~np.isnan(y)]).size >= 2:
        return np.ones(y.size, bool)
    out: NDArray[np.bool_] = ~no_proxy
    return out


def difference(da: Design, db: Design, *, alpha: float, clip: bool = True) -> dict[str, Any]:
    """``B - A`` of two samples' designs whose units are matched by their keys (module docstring).

    An item (or cluster) in both samples is one unit: its deviation is B's minus A's, so the variance keeps
    the covariance of the two estimates through the items they share, whichever of them are labeled in
    which sample; units in one sample only are independent. The two ``lam`` are tuned together for the
    difference's variance. The quantile's degrees of freedom are the smaller of the two samples' (a lower
    bound of Welch-Satterthwaite's).
    """
    n_a = da.keys.size
    keys = np.concatenate([da.keys, db.keys])  # the same kind of keys in both (compare: integer codes)
    p_a, p_b = da.b.shape[1], db.b.shape[1]
    b = np.zeros((keys.size, p_a + p_b))
    b[:n_a, :p_a], b[n_a:, p_a:] = -da.b, db.b
    a_units, b_units = unit_sums(keys, np.concatenate([-da.a, db.a])), unit_sums(keys, b)
    lam = tuned_lambda(a_units, b_units, clip)
    dev = a_units + b_units @ lam
    slope = np.concatenate([-da.slope, db.slope])
    df = max(min(da.df - tuned_count(b_units[:, :p_a]), db.df - tuned_count(b_units[:, p_a:])), 1.0)
    judge = unit_sums(keys, np.concatenate([-da.judge, db.judge]))
    return {
        "ppi": normal_interval(db.base - da.base + float(slope @ lam), float(dev @ dev), alpha, df).to_dict(),
        "labeled_only": normal_interval(db.base - da.base, float(a_units @ a_units), alpha, min(da.df, db.df)).to_dict(),
        "judge_only": normal_interval(db.judge_mean - da.judge_mean, float(judge @ judge), alpha,
                                      min(da.judge_df, db.judge_df)).to_dict(),
        "lambda": {"a": float(lam[0]) if p_a == 1 else None, "b": float(lam[p_a]) if p_b == 1 else None},
        "df": None if math.isinf(df) else df,
    }


def _ppi_python_lambda(y: FloatArray, f: FloatArray, g: FloatArray, clip: bool) -> float:
    """ppi-python's power tuning: ``cov(Y, f) / ((1 + n/N) s2_f)``, ``s2_f`` on all proxies (ddof 1), cov with 1/n."""
    var_f = float(np.var(np.concatenate([f, g]), ddof=1))
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    lam = 0.0 if var_f == 0.0 or g.size == 0 else cov / ((1.0 + y.size / g.size) * var_f)
    return min(max(lam, 0.0), 1.0) if clip else lam


def summarize(d: Design, *, alpha: float, lam: float | FloatArray | None = None, clip: bool = True) -> dict[str, Any]:
    """The PPI++, labeled-only and judge-only intervals of a :class:`Design`, its ``lam`` and per-stratum results."""
    a, b = unit_sums(d.keys, d.a), unit_sums(d.keys, d.b)
    lam_vec = tuned_lambda(a, b, clip) if lam is None else np.broadcast_to(np.asarray(lam, float), d.slope.shape)
    dev = a + b @ lam_vec
    df = max(d.df - (tuned_count(b) if lam is None else 0), 1.0)
    ppi = normal_interval(d.base + float(d.slope @ lam_vec), float(dev @ dev), alpha, df)
    labeled = normal_interval(d.base, float(a @ a), alpha, d.df)
    judge_dev = unit_sums(d.keys, d.judge)
    judge = normal_interval(d.judge_mean, float(judge_dev @ judge_dev), alpha, d.judge_df)
    n_labels = d.n_labeled
    out: dict[str, Any] = {
        "estimate": {"ppi": ppi.to_dict(), "labeled_only": labeled.to_dict(), "judge_only": judge.to_dict()},
        "lambda": float(lam_vec[0]) if lam_vec.size == 1 else None,
        "effective_sample_size": n_labels * labeled.se**2 / ppi.se**2 if ppi.se > 0 else math.inf,
        "judge_bias": float(judge.mean - ppi.mean),
        "df": None if math.isinf(df) else df,
    }
    small = not math.isinf(d.df)
    strata: dict[str, Any] = {}
    for s in d.strata:
        rows = s.rows
        lam_s = 0.0 if s.column is None else float(lam_vec[s.column])
        a_s = unit_sums(d.keys[rows], d.a[rows]) / s.weight
        dev_s = a_s + unit_sums(d.keys[rows], d.b[rows]) @ lam_vec / s.weight
        lab = rows[~np.isnan(d.y[rows])]
        mean_y = float(d.y[lab].mean())
        unl = rows[np.isnan(d.y[rows])]
        shift = 0.0 if s.column is None else lam_s * (float(d.f[unl].mean()) - float(d.f[lab].mean()))
        df_s = s.labeled_units - 1 if small else math.inf
        strata[s.name] = {"n_labeled": s.n_labeled, "n_unlabeled": s.n_unlabeled, "weight": s.weight, "lambda": lam_s,
                          "ppi": normal_interval(mean_y + shift, float(dev_s @ dev_s), alpha, df_s).to_dict(),
                          "labeled_only": normal_interval(mean_y, float(a_s @ a_s), alpha, df_s).to_dict()}
    out["_strata"] = strata
    return out


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
        lam = _ppi_python_lambda(ya[proxied_labeled], fa[proxied_labeled], fa[np.isnan(ya)], clip)
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
        missing = sorted(set(gu) - set(gl))
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


def label_hint(*datas: Any) -> dict[str, str]:
    """``{"label_hint": ...}`` when labels were left out off the judge's scale and look like another scale."""
    for data in datas:
        hint = getattr(getattr(data, "excluded", None), "notes", {}).get("label_off_scale")
        if hint:
            return {"label_hint": hint}
    return {}


def off_scale_note(data: Any) -> str:
    """`` (left out: label_off_scale 148; labels look like 0..1: --label-scale 0:1?)`` for an error about too few
    labels, when labels were left out off the judge's scale; else nothing."""
    excluded = getattr(data, "excluded", None)
    count = excluded.counts.get("label_off_scale", 0) if excluded is not None else 0
    if not count or excluded is None:
        return ""
    hint = excluded.notes.get("label_off_scale")
    return f" (left out: label_off_scale {count}" + (f"; {hint})" if hint else ")")


def proxy_and_target(data: Any) -> tuple[FloatArray, FloatArray, str]:
    """The judge's proxy of every item, the human target (NaN where unlabeled), and the target's name: the
    data's kind says what they are (:meth:`judgecp.kinds.Kind.proxy_and_target`)."""
    from judgecp.kinds import calibration_kind

    kind = calibration_kind(data.kind)
    f, y = kind.proxy_and_target(data)
    return np.asarray(f, dtype=np.float64), np.asarray(y, dtype=np.float64), kind.ppi_target


def item_ids(data: Any) -> NDArray[np.str_]:
    """The ids items are matched by: a pair's ``pair_id``, any other item's ``id``."""
    out: NDArray[np.str_] = np.asarray(getattr(data, "pair_ids", None) if hasattr(data, "pair_ids") else data.ids).astype(str)
    return out


def no_proxy_labels(data: Any) -> FloatArray:
    """Likert: the labels (NaN where unlabeled) of rows left out for want of score logprobs; other kinds: none."""
    out: FloatArray = np.asarray(getattr(data, "no_proxy_labels", np.zeros(0)), dtype=np.float64)
    return out


def no_proxy_ids(data: Any) -> NDArray[np.str_]:
    """The ids of the rows without a proxy (:func:`no_proxy_labels`); made up, never matching, where not read."""
    n = no_proxy_labels(data).size
    ids = getattr(data, "no_proxy_ids", None)
    if ids is not None and np.asarray(ids).size == n:
        return np.asarray(ids).astype(str)
    return np.asarray([f"\x00no-proxy-{i}" for i in range(n)]).astype(str)


def cluster_keys(data: Any, column: str) -> tuple[NDArray[np.str_], NDArray[np.str_]]:
    """``--cluster COLUMN``: the cluster of every item with a proxy, and of every item without one (each its own
    cluster where the reader kept no fields for them). A blank cell is an error naming the item."""
    if column not in data.fields:
        raise unknown("--cluster field", column, data.fields)
    keys = np.asarray(data.fields[column]).astype(str)
    blank = np.flatnonzero(np.char.strip(keys) == "")
    if blank.size:
        raise InputError(f"{data.source}: --cluster {column}: {blank.size} items have no value (item "
                         f"{str(item_ids(data)[blank[0]])!r} first); every item needs its cluster")
    n_np = no_proxy_labels(data).size
    fields = getattr(data, "no_proxy_fields", None) or {}
    if n_np and column in fields:
        np_keys = np.asarray(fields[column]).astype(str)
        np_keys = np.where(np.char.strip(np_keys) == "", np.char.add("\x00no-proxy-", no_proxy_ids(data)), np_keys)
    else:
        np_keys = np.char.add("\x00no-proxy-", no_proxy_ids(data)) if n_np else np.zeros(0, str)
    return keys, np.asarray(np_keys).astype(str)


def sampling_probabilities(data: Any) -> FloatArray | None:
    """The ``sampling_probability`` field of actively selected items (``judgecp select``), NaN where blank.

    A cell that is not a probability in (0, 1] is an error naming its row.
    """
    if "sampling_probability" not in data.fields:
        return None
    from judgecp.data.fields import BLANK, numbers

    values, status = numbers(list(np.asarray(data.fields["sampling_probability"]).astype(str)))
    with np.errstate(invalid="ignore"):
        bad = (status != BLANK) & ~((values > 0) & (values <= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        cell = np.asarray(data.fields["sampling_probability"])[i]
        raise InputError(f"{data.source}: item {item_ids(data)[i]!r}: sampling_probability {cell!r} is not a "
                         f"probability in (0, 1] ({int(bad.sum())} such rows)")
    out: FloatArray = np.where(status == BLANK, np.nan, values)
    return out


def stratification(col: NDArray[Any] | None, labeled: NDArray[np.bool_], stratify: str,
                   units: NDArray[Any] | None = None) -> tuple[NDArray[Any] | None, dict[str, Any]]:
    """The strata of every item under ``stratify`` (``auto``: :func:`judgecp.proxies.choose_strata`, counting
    labeled ``units`` when clustered), and why."""
    if col is None:
        return None, {"stratified": False, "reason": "no group field"}
    if stratify == "yes":
        return col, {"stratified": True, "strata": sorted(set(col.tolist()))}
    if stratify == "no":
        return None, {"stratified": False, "reason": "--stratify no"}
    return proxies.choose_strata(col, labeled, units=units)


def group_column(data: Any, groups: str | None) -> tuple[str | None, NDArray[np.str_] | None]:
    """The field to stratify by (``groups``, else ``task`` when the records have several tasks) and its values."""
    if groups is None and "task" in data.fields and np.unique(np.asarray(data.fields["task"])).size > 1:
        groups = "task"
    if groups is None:
        return None, None
    if groups not in data.fields:
        raise unknown("--group field", groups, data.fields)
    return groups, np.asarray(data.fields[groups]).astype(str)


def estimate(data: Any, *, alpha: float = 0.1, groups: str | None = None, lam: float | None = None,
             clip: bool = True, stratify: str = "auto", proxy: str = "auto", random_state: int = 0,
             cluster: str | None = None) -> dict[str, Any]:
    """PPI++ on one set of records: the labeled rows are the labeled sample, the unlabeled rows the rest.

    ``data`` comes from :func:`judgecp.load` with ``require_label=False``.
    ``groups`` names a field to stratify by (default: ``task`` when the
    records have one); ``stratify`` is ``"auto"`` (stratify when the label
    counts allow, :func:`judgecp.proxies.choose_strata`), ``"yes"`` (every
    group its own stratum) or ``"no"``. ``proxy`` is ``"judge"`` (the
    judge's own proxy), ``"crossfit"`` (:func:`judgecp.proxies.crossfit_proxy`)
    or ``"auto"`` (cross-fitted when the records carry extra feature columns
    and at least 100 labels, else the judge's). Rows with a label but no
    proxy form their own stratum (module docstring). ``cluster`` names a
    field whose equal values are one cluster (cluster-robust variances).
    Labels with a ``sampling_probability`` (``judgecp select``) are estimated
    by inverse-probability weighting (:func:`judgecp.active.active_mean`).
    """
    if stratify not in ("auto", "yes", "no") or proxy not in ("auto", "judge", "crossfit"):
        raise InputError(f"stratify is auto, yes or no (got {stratify!r}); proxy auto, judge or crossfit (got {proxy!r})")
    f, y, target = proxy_and_target(data)
    labeled = ~np.isnan(y)
    if labeled.sum() < 2:
        raise InputError(f"PPI needs labeled records: {int(labeled.sum())} of {data.n} have a label"
                         f"{off_scale_note(data)}")
    common = {"kind": data.kind, "target": target, "excluded": data.excluded.to_json(),
              "n": int(data.n_read or data.n), "source": str(data.source), "cluster": cluster,
              **label_hint(data)}
    clusters = None if cluster is None else cluster_keys(data, cluster)
    probabilities = sampling_probabilities(data)
    if probabilities is not None:
        from judgecp.active import active_mean

        res = active_mean(y, f, probabilities, alpha=alpha, clusters=None if clusters is None else clusters[0])
        return {**res, **common, "groups": None}
    groups, col = group_column(data, groups)
    strata, strata_info = stratification(col, labeled, stratify, None if clusters is None else clusters[0])
    extra = getattr(data, "extra_features", None) is not None
    use_crossfit = proxy == "crossfit" or (proxy == "auto" and extra and labeled.sum() >= proxies.CROSSFIT_MIN_LABELS)
    if use_crossfit:
        f = proxies.crossfit_proxy(y, proxies.proxy_features(data, f, col), labeled, random_state=random_state,
                                   clusters=None if clusters is None else clusters[0])
    y_np = no_proxy_labels(data)
    out = ppi_items(np.concatenate([y, y_np]), np.concatenate([f, np.full(y_np.size, np.nan)]), alpha=alpha,
                    strata=None if strata is None else np.concatenate([strata, np.full(y_np.size, NO_PROXY)]),
                    keys=None if clusters is None else np.concatenate(clusters), lam=lam, clip=clip)
    out.update(common, groups=groups, stratification=strata_info,
               proxy="cross-fitted (ridge, 10 folds)" if use_crossfit else "judge")
    out["estimand"] = estimand(out, target)
    return out
