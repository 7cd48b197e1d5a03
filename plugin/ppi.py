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
TARGETS = {"likert": "mean human score", "pairwise": "human win rate of response A", "mcq": "accuracy",
           "parc": "accuracy"}


@dataclass(frozen=True)
class MeanEstimate:
    """A point estimate, its standard error and its ``1 - alpha`` interval."""

    mean: float
    se: float
    lower: float
    upper: float

    def to_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "lower": self.lower, "upper": self.upper, "se": self.se}


def _interval(mean: float, var: float, alpha: float) -> MeanEstimate:
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
        return _interval(mean, var, alpha)

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
                             "ppi": _interval(s["ppi_mean"], s["ppi_var"], alpha).to_dict(),
                             "labeled_only": _interval(s["labeled_mean"], s["labeled_var"], alpha).to_dict()}
                         for h, s in strata.items()}
    return out


def proxy_and_target(data: Any) -> tuple[FloatArray, FloatArray, str]:
    """The judge's proxy of every item, the human target (NaN where unlabeled), and the target's name."""
    from judgecp.data import ChoiceData, PairData, ScoreData

    if isinstance(data, ScoreData):
        from judgecp.features import expected_score, judge_probabilities

        f = expected_score(judge_probabilities(data.logprobs, data.scale), data.scale)
        return f, data.labels.astype(np.float64), TARGETS["likert"]
    if isinstance(data, PairData):
        pbar = np.nanmean(np.column_stack([data.p_fwd, data.p_rev]), axis=1)
        y = np.where(data.labeled, data.labels.astype(np.float64), np.nan)
        return pbar, y, TARGETS["pairwise"]
    if isinstance(data, ChoiceData):
        from judgecp.calibrators import _choice_probabilities

        p = _choice_probabilities(data)
        rows = np.arange(data.n)
        f = p[rows, data.prediction]
        correct = data.correct[rows, data.prediction].astype(np.float64)
        y = np.where(data.labeled, correct, np.nan)
        return f, y, TARGETS["mcq"]
    raise InputError(f"PPI: no proxy for {type(data).__name__}")


def estimate(data: Any, *, alpha: float = 0.1, groups: str | None = None, lam: float | None = None,
             clip: bool = True) -> dict[str, Any]:
    """PPI++ on one set of records: the labeled rows are the labeled sample, the unlabeled rows the rest.

    ``data`` comes from :func:`judgecp.load` with ``require_label=False``;
    ``groups`` names a field to stratify by.
    """
    f, y, target = proxy_and_target(data)
    labeled = ~np.isnan(y)
    if labeled.sum() < 2:
        raise InputError(f"PPI needs labeled records: {int(labeled.sum())} of {data.n} have a label")
    gl = gu = None
    if groups is not None:
        if groups not in data.fields:
            from judgecp.errors import unknown

            raise unknown("--group field", groups, data.fields)
        col = np.asarray(data.fields[groups]).astype(str)
        gl, gu = col[labeled], col[~labeled]
    out = ppi_mean(y[labeled], f[labeled], f[~labeled], alpha=alpha, groups_labeled=gl, groups_unlabeled=gu, lam=lam, clip=clip)
    out.update(kind=data.kind, target=target, groups=groups, excluded=data.excluded.to_json(),
               n=int(data.n_read or data.n), source=str(data.source))
    return out
