"""PPI++ as a sum over items: every item's deviation, the power tuning of every ``lam``, two samples' difference.

:mod:`judgecp.stats.ppi` states the estimator; this module computes it.

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
:func:`judgecp.stats.proxies.choose_strata`), and uses the proxies of its
unlabeled items only when it has 2 unlabeled units (else its estimate is
its labeled mean). ``conventions="ppi-python"`` keeps ppi-python's (ddof 0,
the normal quantile, ``lam = cov(Y, f) / ((1 + n/N) s2_f)`` with ``s2_f`` on
all ``n + N`` proxies) so that the two agree to rounding
(``tests/test_ppi.py::test_agrees_with_ppi_python``).
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

from judgecp.base.errors import InputError

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


def clustered_variance(values: FloatArray, clusters: NDArray[Any] | None) -> float:
    """The variance of the mean of ``values``: ``s2 / n`` (ddof 1), or cluster-robust (CR1) over ``clusters``."""
    z = np.asarray(values, dtype=np.float64)
    if clusters is None:
        return float(np.var(z, ddof=1)) / z.size
    sums = unit_sums(np.asarray(clusters), z - z.mean())
    g = sums.size
    return float(sums @ sums) / z.size**2 * (g / (g - 1) if g > 1 else 1.0)


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
        "labeled_only": normal_interval(
            db.base - da.base, float(a_units @ a_units), alpha, min(da.df, db.df)
        ).to_dict(),
        "judge_only": normal_interval(
            db.judge_mean - da.judge_mean, float(judge @ judge), alpha, min(da.judge_df, db.judge_df)
        ).to_dict(),
        "lambda": {"a": float(lam[0]) if p_a == 1 else None, "b": float(lam[p_a]) if p_b == 1 else None},
        "df": None if math.isinf(df) else df,
    }


def ppi_python_lambda(y: FloatArray, f: FloatArray, g: FloatArray, clip: bool) -> float:
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
