"""Prediction-powered inference (PPI++) for the mean a judge is used to estimate.

Given ``n`` labeled items (human label ``Y_i``, judge proxy ``f_i``) and ``N``
unlabeled items (proxy ``g_j``), the PPI++ estimate of the population mean
``theta = E[Y]`` (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient
Prediction-Powered Inference", mean estimation, Example 1 / Section 3) is

    theta_hat(lam) = mean_i Y_i + lam * (mean_j g_j - mean_i f_i)

with variance estimate ``var(lam) = lam^2 s2_g / N + s2_{Y - lam f} / n``
and the power-tuned ``lam_hat = cov(Y, f) / ((1 + n / N) s2_f)``, which
minimises ``var(lam)`` (``s2_f`` is estimated on all ``n + N`` proxies with
``ddof=1``, the covariance on the labeled pairs with ``1/n``, the variances
of the interval with ``1/n``: ppi-python's conventions, so that the two agree
to rounding), clipped to [0, 1] as ppi-python does. The interval is
``theta_hat +- z_{1-alpha/2} sqrt(var(lam_hat))``: asymptotically valid for
any judge, however biased (the bias term ``mean g - mean f`` removes it),
and no wider than the labeled-only interval asymptotically, because
``lam = 0`` is the labeled-only estimator.

Also reported: the *labeled-only* interval (``mean Y +- z s_Y / sqrt(n)``),
the *judge-only* interval (``mean of f over all n + N items +- z s_f /
sqrt(n + N)``: what a harness's stderr amounts to; it ignores the judge's
bias and its coverage fails under bias), and the *effective sample size*
``n * var_labeled_only / var_ppi``: the number of labeled items the
labeled-only estimator would need for the PPI++ interval's width.

Stratified (by a group field): PPI++ in each stratum ``h``, combined with
the stratum shares ``w_h = (n_h + N_h) / (n + N)``: ``theta = sum_h w_h
theta_h``, ``var = sum_h w_h^2 var_h`` (each stratum needs two labeled
items). One ``lam`` for all strata minimises ``var`` (``lam = sum_h w_h^2
cov_h / n_h / sum_h w_h^2 (s2_fh / n_h + s2_gh / N_h)``, clipped); a
per-stratum ``lam_h`` (``stratum_lambda="per_stratum"``) over-fits small
strata.

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
from scipy.stats import norm

from judgecp.conformal import check_alpha
from judgecp.errors import InputError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class MeanEstimate:
    """A point estimate, its standard error and its ``1 - alpha`` interval."""

    mean: float
    se: float
    lower: float
    upper: float

    def to_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "lower": self.lower, "upper": self.upper, "se": self.se}


def normal_interval(mean: float, var: float, alpha: float) -> MeanEstimate:
    """``mean +- z_{1-alpha/2} sqrt(var)``, the normal interval every estimate here reports."""
    se = math.sqrt(max(var, 0.0))
    z = float(norm.ppf(1.0 - alpha / 2.0))
    return MeanEstimate(mean, se, mean - z * se, mean + z * se)


def _pieces(y: FloatArray, f: FloatArray, g: FloatArray, lam: float | None, clip: bool) -> dict[str, float]:
    """Means and variances of one stratum (labeled y, f; unlabeled g), in ppi-python's conventions."""
    n, big_n = y.size, g.size
    if n < 2:
        raise InputError(f"PPI needs at least 2 labeled items in every stratum, got {n}")
    all_f = np.concatenate([f, g])
    var_f = float(np.var(all_f, ddof=1))
    if big_n == 0:
        lam = 0.0  # nothing to impute: the labeled mean
    elif lam is None:
        cov = float(np.mean((y - y.mean()) * (f - f.mean())))
        lam = 0.0 if var_f == 0.0 else cov / ((1.0 + n / big_n) * var_f)
        if clip:
            lam = min(max(lam, 0.0), 1.0)
    mean = float(y.mean()) + (lam * (float(g.mean()) - float(f.mean())) if big_n else 0.0)
    var = float(np.var(y - lam * f)) / n + (lam**2 * float(np.var(g)) / big_n if big_n else 0.0)
    return {"n": n, "N": big_n, "lam": lam, "ppi_mean": mean, "ppi_var": var,
            "labeled_mean": float(y.mean()), "labeled_var": float(np.var(y)) / n,
            "judge_mean": float(all_f.mean()), "judge_var": float(np.var(all_f)) / all_f.size}


def _common_lambda(y: FloatArray, f: FloatArray, g: FloatArray, gl: NDArray[Any], gu: NDArray[Any],
                   names: list[str], clip: bool) -> float:
    """The one ``lam`` minimising ``sum_h w_h^2 var_h(lam)`` (every stratum's variance is quadratic in it)."""
    total = y.size + g.size
    num = den = 0.0
    for h in names:
        yh, fh, gh = y[gl == h], f[gl == h], g[gu == h]
        n, big_n = yh.size, gh.size
        if n == 0 or big_n == 0:  # no unlabeled items: the stratum's estimate is its labeled mean
            continue
        w2 = ((n + big_n) / total) ** 2
        num += w2 * float(np.mean((yh - yh.mean()) * (fh - fh.mean()))) / n
        den += w2 * (float(np.var(fh)) / n + float(np.var(gh)) / big_n)
    lam = num / den if den > 0 else 0.0
    return min(max(lam, 0.0), 1.0) if clip else lam


def ppi_mean(
    y: ArrayLike, f_labeled: ArrayLike, f_unlabeled: ArrayLike, *, alpha: float = 0.1,
    groups_labeled: ArrayLike | None = None, groups_unlabeled: ArrayLike | None = None, lam: float | None = None,
    clip: bool = True, stratum_lambda: str = "common",
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

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=200); f = y + 0.5 + rng.normal(0, 0.5, 200); g = rng.normal(size=2000) + 0.5
    >>> out = ppi_mean(y, f, g, alpha=0.1)
    >>> out["estimate"]["ppi"]["upper"] - out["estimate"]["ppi"]["lower"] < (
    ...     out["estimate"]["labeled_only"]["upper"] - out["estimate"]["labeled_only"]["lower"])
    True
    """
    alpha = check_alpha(alpha)
    ya, fa, ga = (np.asarray(v, dtype=np.float64).ravel() for v in (y, f_labeled, f_unlabeled))
    if ya.shape != fa.shape:
        raise InputError(f"{ya.size} labels but {fa.size} labeled proxies")
    for name, arr in (("labels", ya), ("labeled proxies", fa), ("unlabeled proxies", ga)):
        if not np.isfinite(arr).all():
            raise InputError(f"PPI: the {name} contain NaN or infinite values")
    if (groups_labeled is None) != (groups_unlabeled is None):
        raise InputError("give the groups of both the labeled and the unlabeled items, or neither")
    if groups_labeled is None:
        strata = {"all": _pieces(ya, fa, ga, lam, clip)}
    else:
        gl, gu = np.asarray(groups_labeled).astype(str), np.asarray(groups_unlabeled).astype(str)
        missing = sorted(set(gu) - set(gl))
        if missing:
            raise InputError(f"PPI: stratum {missing[:5]} has unlabeled items but no labeled ones")
        names = sorted(set(gl))
        if lam is None and stratum_lambda == "common":
            lam = _common_lambda(ya, fa, ga, gl, gu, names, clip)
        elif stratum_lambda not in ("common", "per_stratum"):
            raise InputError(f"stratum_lambda must be 'common' or 'per_stratum', got {stratum_lambda!r}")
        strata = {h: _pieces(ya[gl == h], fa[gl == h], ga[gu == h], lam, clip) for h in names}
    total = ya.size + ga.size
    weights = {h: (s["n"] + s["N"]) / total for h, s in strata.items()}

    def combine(key: str) -> MeanEstimate:
        mean = sum(weights[h] * s[f"{key}_mean"] for h, s in strata.items())
        var = sum(weights[h] ** 2 * s[f"{key}_var"] for h, s in strata.items())
        return normal_interval(mean, var, alpha)

    ppi, labeled, judge = combine("ppi"), combine("labeled"), combine("judge")
    n_eff = ya.size * labeled.se**2 / ppi.se**2 if ppi.se > 0 else math.inf
    out: dict[str, Any] = {
        "alpha": alpha, "n_labeled": int(ya.size), "n_unlabeled": int(ga.size),
        "estimate": {"ppi": ppi.to_dict(), "labeled_only": labeled.to_dict(), "judge_only": judge.to_dict()},
        "lambda": strata["all"]["lam"] if groups_labeled is None else lam,
        "effective_sample_size": n_eff,
        "judge_bias": float(judge.mean - ppi.mean),
    }
    if groups_labeled is not None:
        out["strata"] = {h: {"n_labeled": s["n"], "n_unlabeled": s["N"], "weight": weights[h], "lambda": s["lam"],
                             "ppi": normal_interval(s["ppi_mean"], s["ppi_var"], alpha).to_dict(),
                             "labeled_only": normal_interval(s["labeled_mean"], s["labeled_var"], alpha).to_dict()}
                         for h, s in strata.items()}
    return out


def proxy_and_target(data: Any) -> tuple[FloatArray, FloatArray, str]:
    """The judge's proxy of every item, the human target (NaN where unlabeled), and the target's name: the
    data's kind says what they are (:meth:`judgecp.kinds.Kind.proxy_and_target`)."""
    from judgecp.kinds import calibration_kind

    kind = calibration_kind(data.kind)
    f, y = kind.proxy_and_target(data)
    return np.asarray(f, dtype=np.float64), np.asarray(y, dtype=np.float64), kind.ppi_target


def no_proxy_labels(data: Any) -> FloatArray:
    """Likert: the labels (NaN where unlabeled) of rows left out for want of score logprobs; other kinds: none."""
    out: FloatArray = np.asarray(getattr(data, "no_proxy_labels", np.zeros(0)), dtype=np.float64)
    return out


def add_no_proxy_stratum(out: dict[str, Any], labels: FloatArray, alpha: float) -> dict[str, Any]:
    """Items without a judge proxy as their own stratum, estimated from their labels (issue 26, item 5).

    The estimand becomes the mean over all items: ``w theta_proxy + (1 - w)
    mean(no-proxy labels)`` with ``w`` the proxied items' share, variances
    combined with the squared shares. Labeled no-proxy items are a random
    sample of the no-proxy items when labels are drawn at random, so the
    interval keeps its level. Fewer than 2 labeled no-proxy items: the
    estimand stays the mean over the items with a proxy, and says so.
    """
    target = out.get("target", "mean")
    n_items = out["n_labeled"] + out["n_unlabeled"]
    labeled = labels[~np.isnan(labels)]
    if labels.size == 0:
        out["estimand"] = f"{target} over all {n_items} items"
        return out
    info: dict[str, Any] = {"n": int(labels.size), "n_labeled": int(labeled.size)}
    out["no_proxy"] = info
    if labeled.size < 2:
        out["estimand"] = (f"{target} over the {n_items} items with a judge proxy; {labels.size} items without one "
                           f"are not in it ({labeled.size} labeled: 2 are needed to estimate them)")
        return out
    total = n_items + labels.size
    w = labels.size / total
    mean, var = float(labeled.mean()), float(np.var(labeled)) / labeled.size
    info.update(weight=w, labeled_only=normal_interval(mean, var, alpha).to_dict())
    for name in ("ppi", "labeled_only"):
        e = out["estimate"][name]
        out["estimate"][name] = normal_interval((1 - w) * e["mean"] + w * mean,
                                                (1 - w) ** 2 * e["se"] ** 2 + w**2 * var, alpha).to_dict()
    lab = out["estimate"]["labeled_only"]["se"] ** 2 * (out["n_labeled"] + labeled.size)
    ppi_var = out["estimate"]["ppi"]["se"] ** 2
    out["effective_sample_size"] = lab / ppi_var if ppi_var > 0 else math.inf
    out["judge_bias"] = float(out["estimate"]["judge_only"]["mean"] - out["estimate"]["ppi"]["mean"])
    out["estimand"] = (f"{target} over all {total} items: {n_items} with a judge proxy (PPI++), {labels.size} "
                       f"without one as their own stratum, estimated from their {labeled.size} labels "
                       f"(the judge-only interval covers the proxied items only)")
    return out


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
        from judgecp.compare import item_ids

        i = int(np.flatnonzero(bad)[0])
        cell = np.asarray(data.fields["sampling_probability"])[i]
        raise InputError(f"{data.source}: item {str(item_ids(data)[i])!r}: sampling_probability {str(cell)!r} is not a "
                         f"probability in (0, 1] ({int(bad.sum())} such rows)")
    out: FloatArray = np.where(status == BLANK, np.nan, values)
    return out


def stratification(col: NDArray[Any] | None, labeled: NDArray[np.bool_],
                   stratify: str) -> tuple[NDArray[Any] | None, dict[str, Any]]:
    """The strata of every item under ``stratify`` (``auto``: :func:`judgecp.proxies.choose_strata`), and why."""
    from judgecp.proxies import choose_strata

    if col is None:
        return None, {"stratified": False, "reason": "no group field"}
    if stratify == "yes":
        return col, {"stratified": True, "strata": sorted(set(col.tolist()))}
    if stratify == "no":
        return None, {"stratified": False, "reason": "--stratify no"}
    return choose_strata(col, labeled)


def estimate(data: Any, *, alpha: float = 0.1, groups: str | None = None, lam: float | None = None,
             clip: bool = True, stratify: str = "auto", proxy: str = "auto", random_state: int = 0) -> dict[str, Any]:
    """PPI++ on one set of records: the labeled rows are the labeled sample, the unlabeled rows the rest.

    ``data`` comes from :func:`judgecp.load` with ``require_label=False``.
    ``groups`` names a field to stratify by (default: ``task`` when the
    records have one); ``stratify`` is ``"auto"`` (stratify when the label
    counts allow, :func:`judgecp.proxies.choose_strata`), ``"yes"`` (every
    group its own stratum) or ``"no"``. ``proxy`` is ``"judge"`` (the
    judge's own proxy), ``"crossfit"`` (:func:`judgecp.proxies.crossfit_proxy`)
    or ``"auto"`` (cross-fitted when the records carry extra feature columns
    and at least 100 labels, else the judge's). Rows with a label but no
    proxy form their own stratum (:func:`add_no_proxy_stratum`). Labels with
    a ``sampling_probability`` (``judgecp select``) are estimated by
    inverse-probability weighting (:func:`judgecp.active.active_mean`).
    """
    from judgecp import proxies

    if stratify not in ("auto", "yes", "no") or proxy not in ("auto", "judge", "crossfit"):
        raise InputError(f"stratify is auto, yes or no (got {stratify!r}); proxy auto, judge or crossfit (got {proxy!r})")
    f, y, target = proxy_and_target(data)
    labeled = ~np.isnan(y)
    if labeled.sum() < 2:
        raise InputError(f"PPI needs labeled records: {int(labeled.sum())} of {data.n} have a label")
    common = {"kind": data.kind, "target": target, "excluded": data.excluded.to_json(),
              "n": int(data.n_read or data.n), "source": str(data.source)}
    probabilities = sampling_probabilities(data)
    if probabilities is not None:
        from judgecp.active import active_mean

        return {**active_mean(y, f, probabilities, alpha=alpha), **common, "groups": None}
    if groups is None and "task" in data.fields and np.unique(np.asarray(data.fields["task"])).size > 1:
        groups = "task"
    col = None
    if groups is not None:
        if groups not in data.fields:
            from judgecp.errors import unknown

            raise unknown("--group field", groups, data.fields)
        col = np.asarray(data.fields[groups]).astype(str)
    strata, strata_info = stratification(col, labeled, stratify)
    extra = getattr(data, "extra_features", None) is not None
    use_crossfit = proxy == "crossfit" or (proxy == "auto" and extra and labeled.sum() >= proxies.CROSSFIT_MIN_LABELS)
    if use_crossfit:
        f = proxies.crossfit_proxy(y, proxies.proxy_features(data, f, col), labeled, random_state=random_state)
    gl, gu = (None, None) if strata is None else (strata[labeled], strata[~labeled])
    out = ppi_mean(y[labeled], f[labeled], f[~labeled], alpha=alpha, groups_labeled=gl, groups_unlabeled=gu, lam=lam,
                   clip=clip)
    out.update(common, groups=groups, stratification=strata_info,
               proxy="cross-fitted (ridge, 10 folds)" if use_crossfit else "judge")
    return add_no_proxy_stratum(out, no_proxy_labels(data), alpha)
