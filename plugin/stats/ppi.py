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

from judgecp.base.errors import InputError, unknown
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
__all__ = ["CONVENTIONS", "NO_PROXY", "MeanEstimate", "cluster_keys", "estimand", "estimate", "item_ids",
           "label_hint", "no_proxy_ids", "no_proxy_labels", "normal_interval", "off_scale_note", "ppi_items",
           "ppi_mean", "proxy_and_target", "quantile", "sampling_probabilities", "stratification"]


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
    f, y = kind.calibration.proxy_and_target(data)
    return np.asarray(f, dtype=np.float64), np.asarray(y, dtype=np.float64), kind.calibration.ppi_target


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
        raise InputError(f"{data.source}: item {str(item_ids(data)[i])!r}: sampling_probability {str(cell)!r} is not a "
                         f"probability in (0, 1] ({int(bad.sum())} such rows)")
    out: FloatArray = np.where(status == BLANK, np.nan, values)
    return out


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
    counts allow, :func:`judgecp.stats.proxies.choose_strata`), ``"yes"`` (every
    group its own stratum) or ``"no"``. ``proxy`` is ``"judge"`` (the
    judge's own proxy), ``"crossfit"`` (:func:`judgecp.stats.proxies.crossfit_proxy`)
    or ``"auto"`` (cross-fitted when the records carry extra feature columns
    and at least 100 labels, else the judge's). Rows with a label but no
    proxy form their own stratum (module docstring). ``cluster`` names a
    field whose equal values are one cluster (cluster-robust variances).
    Labels with a ``sampling_probability`` (``judgecp select``) are estimated
    by inverse-probability weighting (:func:`judgecp.stats.active.active_mean`).
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
        from judgecp.stats.active import active_mean

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
