"""Which items to label next: active statistical inference (``judgecp select``).

Zrnic & Candes 2024 ("Active Statistical Inference", ICML): label item ``i``
of a run of ``N`` items with probability ``pi_i``, independently (Poisson
sampling, ``xi_i ~ Bernoulli(pi_i)``), and estimate the mean human score by

    z_i = h_i + (Y_i - h_i) xi_i / pi_i,    theta_hat = mean_i z_i,

with ``h_i = a + lam f_i`` a control variate built on the judge's proxy
``f_i``. ``E[xi_i / pi_i] = 1``, so ``theta_hat`` is unbiased for any fixed
``(a, lam)``; they are tuned to minimise the sample variance of the ``z_i``
(least squares, the active form of PPI++'s power tuning; ``a`` matters
because ``xi / pi`` does not average to 1 in a sample). The interval is
``theta_hat +- z_{1-alpha/2} sd(z) / sqrt(N)`` (asymptotically valid;
``pi`` only enters through the weights the labeled items carry).

The variance's sampling part is ``sum_i E[(Y_i - h_i)^2 | x_i] (1 - pi_i) /
pi_i / N^2``, smallest for ``pi_i`` proportional to the error's size. The
error's size comes from labeled pairs that are not the run's (a
calibrator's, a pilot's: :func:`error_model`, the residual's root mean
square by decile of the proxy), else from the judge's own uncertainty
(:func:`judge_uncertainty`: the spread of its rating distribution for
Likert judges, ``sqrt(p (1 - p))`` of its verdict or answer otherwise). It
is mixed with uniform sampling (``mix``, default 0.5) so that no item's
weight explodes where the model of the error is wrong, and capped at 1.
Where the judge knows where it errs (Polaris captions, 300 labels from
8,426 items), active sampling is about 10% narrower than uniform sampling
at the same budget; where its errors are nearly the same size everywhere
(LLaVA-Critic on MLLM-as-a-Judge) the calibrator's error model keeps the
probabilities near uniform and the width with them. Valid either way: the
weights, not the model, carry the guarantee.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.conformal import check_alpha
from judgecp.errors import InputError
from judgecp.ppi import normal_interval, proxy_and_target, quantile
from judgecp.ppi_design import unit_sums

FloatArray = NDArray[np.float64]
#: Share of uniform sampling mixed into the uncertainty-proportional probabilities.
DEFAULT_MIX = 0.5


def judge_uncertainty(data: Any) -> FloatArray:
    """The judge's own uncertainty about each item's label (module docstring), by kind."""
    from judgecp.data import PairData, ScoreData

    if isinstance(data, ScoreData):
        return _likert_uncertainty(data)
    if isinstance(data, PairData):
        return _bernoulli_uncertainty(np.nanmean(np.column_stack([data.p_fwd, data.p_rev]), axis=1))
    return _bernoulli_uncertainty(proxy_and_target(data)[0])  # the predicted option's probability


def _likert_uncertainty(data: Any) -> FloatArray:
    """Likert: the standard deviation of the judge's rating distribution."""
    from judgecp.features import judge_probabilities, score_std

    out: FloatArray = score_std(judge_probabilities(data.logprobs, data.scale), data.scale)
    return out


def _bernoulli_uncertainty(p: FloatArray) -> FloatArray:
    """A verdict or an answer: ``sqrt(p (1 - p))``, the spread of a 0/1 outcome the judge gives probability ``p``."""
    q = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    out: FloatArray = np.sqrt(q * (1.0 - q))
    return out


def probabilities(uncertainty: FloatArray, budget: float, *, mix: float = DEFAULT_MIX) -> FloatArray:
    """``pi`` proportional to the uncertainty, mixed with uniform, capped at 1, summing to ``budget``."""
    u = np.asarray(uncertainty, dtype=np.float64)
    n = u.size
    if not 0 < budget <= n:
        raise InputError(f"--budget must be between 1 and the {n} items to choose from, got {budget:g}")
    if not 0.0 <= mix <= 1.0:
        raise InputError(f"--mix must be in [0, 1], got {mix}")
    if not np.isfinite(u).all() or (u < 0).any():
        raise InputError("the judge's uncertainty is not a finite non-negative number on every item")
    share = u / u.sum() if u.sum() > 0 else np.full(n, 1.0 / n)
    weight = (1.0 - mix) * share + mix / n
    pi = np.zeros(n)
    capped = np.zeros(n, bool)
    for _ in range(n):  # water-filling: items whose share exceeds 1 are taken surely, the rest rescaled
        left = budget - capped.sum()
        pi[~capped] = left * weight[~capped] / weight[~capped].sum()
        over = (pi > 1.0) & ~capped
        if not over.any():
            break
        capped |= over
        pi[capped] = 1.0
    return pi


def expected_widths(f: FloatArray, sd: FloatArray, pi: FloatArray, budget: float, alpha: float,
                    clusters: NDArray[Any] | None = None) -> dict[str, Any]:
    """Interval widths expected when the judge's error has size ``sd`` (``Y = f + e``, ``e`` with sd ``sd``).

    ``var = s2(f) / N + sum sd_i^2 (1 - pi_i) / pi_i / N^2``, for ``pi`` and for
    uniform ``pi = budget / N``; the ratio is what the active choice is expected to gain.
    With ``clusters`` the first term is the cluster-robust variance of the mean
    proxy (the items of a cluster move together; each item is still drawn on
    its own, so the sampling term keeps its form).
    """
    n = f.size
    z = 2.0 * float(_z(alpha))
    base = float(np.var(f)) / n if clusters is None else clustered_variance(f, clusters)
    uniform = budget / n

    def width(p: FloatArray) -> float:
        return z * math.sqrt(base + float(np.sum(sd**2 * (1.0 - p) / p)) / n**2)

    active, flat = width(pi), width(np.full(n, uniform))
    return {"active": active, "uniform": flat, "ratio": active / flat}


def _z(alpha: float) -> float:
    return quantile(alpha)


def clustered_variance(values: FloatArray, clusters: NDArray[Any] | None) -> float:
    """The variance of the mean of ``values``: ``s2 / n`` (ddof 1), or cluster-robust (CR1) over ``clusters``."""
    z = np.asarray(values, dtype=np.float64)
    if clusters is None:
        return float(np.var(z, ddof=1)) / z.size
    sums = unit_sums(np.asarray(clusters), z - z.mean())
    g = sums.size
    return float(sums @ sums) / z.size**2 * (g / (g - 1) if g > 1 else 1.0)


def select(data: Any, budget: float, *, mix: float = DEFAULT_MIX, alpha: float = 0.1, random_state: int = 0,
           labeled_pairs: tuple[FloatArray, FloatArray] | None = None,
           clusters: NDArray[Any] | None = None) -> dict[str, Any]:
    """Draw the items to label among the unlabeled rows of ``data`` (Poisson sampling with :func:`probabilities`).

    ``labeled_pairs`` (labels and proxies of a calibrator or a pilot, never
    the run's) give the error model (:func:`error_model`); without them the
    judge's own uncertainty stands for its error. Returns ``selected`` (row
    indices), ``probability`` (every row's ``pi``; NaN on rows already
    labeled) and the summary (expected and drawn numbers, expected widths
    against uniform sampling; ``clusters``, every row's cluster, for the expected widths) and ``degenerate``
    (why the expected widths mean nothing: a judge proxy, or error model, without spread).
    """
    f, y, target = proxy_and_target(data)
    pool = np.flatnonzero(np.isnan(y))
    if pool.size == 0:
        raise InputError("every item of the run has a label: nothing to select")
    if labeled_pairs is None:
        sd, model = judge_uncertainty(data)[pool], "the judge's own uncertainty (the spread of its distribution)"
    else:
        sd = error_size(error_model(*labeled_pairs), f[pool])
        model = f"the error of the judge's proxy on {labeled_pairs[0].size} labeled items, by proxy decile"
    pi = probabilities(sd, budget, mix=mix)
    rng = np.random.default_rng(random_state)
    drawn = rng.random(pool.size) < pi
    probability = np.full(data.n, np.nan)
    probability[pool] = pi
    summary = {"target": target, "n_items": int(pool.size), "budget": float(budget), "mix": mix,
               "n_selected": int(drawn.sum()), "random_state": random_state, "alpha": check_alpha(alpha),
               "sampling": "Poisson: each item independently with its sampling_probability", "error_model": model,
               "expected_width": expected_widths(f[pool], np.maximum(sd, 1e-12), pi, budget, alpha,
                                                 None if clusters is None else np.asarray(clusters)[pool])}
    degenerate = []
    if pool.size and float(np.ptp(f[pool])) == 0.0:
        degenerate.append(f"the judge's proxy has no spread over the {pool.size} items (every proxy {f[pool][0]:g})")
    if labeled_pairs is not None and float(np.ptp(labeled_pairs[0])) == 0.0:
        degenerate.append(f"the {labeled_pairs[0].size} labels of the error model are all {labeled_pairs[0][0]:g} "
                          "(no spread)")
    if not float(np.max(sd, initial=0.0)) > 0:
        degenerate.append("the error model gives every item error 0: the expected widths are the judge's alone")
    summary["degenerate"] = degenerate
    if data.labeled.any():
        summary["already_labeled"] = int(data.labeled.sum())
    return {"selected": pool[drawn], "probability": probability, "summary": summary}


def active_mean(y: FloatArray, f: FloatArray, pi: FloatArray, *, alpha: float = 0.1,
                clusters: NDArray[Any] | None = None) -> dict[str, Any]:
    """The inverse-probability-weighted estimate over all items (module docstring).

    ``y`` is NaN on unlabeled items; a labeled item's ``pi`` is its sampling
    probability in (0, 1], or NaN for a label the run had before the draw
    (it was known for sure: ``pi = 1``, the item enters with its label). The
    other items' ``pi`` is not used.
    Returns the shape of :func:`judgecp.ppi.ppi_mean`'s output: ``ppi`` (the
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


def error_model(y: FloatArray, f: FloatArray, *, bins: int = 10) -> tuple[FloatArray, FloatArray]:
    """The size of the judge's error as a function of its proxy, from labeled pairs (a calibrator's or a pilot's).

    The residuals of the least-squares line of ``y`` on ``f``; their root mean
    square in each of ``bins`` quantile bins of ``f``. Returns the bins' inner
    edges and their error sizes (:func:`error_size` reads them).
    """
    y, f = np.asarray(y, dtype=np.float64), np.asarray(f, dtype=np.float64)
    if y.size < 2 * bins:
        bins = max(1, y.size // 2)
    slope, intercept = np.polyfit(f, y, 1) if np.ptp(f) > 0 else (0.0, float(y.mean()))
    resid = y - (intercept + slope * f)
    edges = np.unique(np.quantile(f, np.linspace(0, 1, bins + 1)[1:-1]))
    which = np.searchsorted(edges, f, side="right")
    rms = np.array([np.sqrt(np.mean(resid[which == b] ** 2)) if (which == b).any() else np.sqrt(np.mean(resid**2))
                    for b in range(edges.size + 1)])
    return edges, rms


def error_size(model: tuple[FloatArray, FloatArray], f: FloatArray) -> FloatArray:
    edges, rms = model
    out: FloatArray = rms[np.searchsorted(edges, np.asarray(f, dtype=np.float64), side="right")]
    return out
