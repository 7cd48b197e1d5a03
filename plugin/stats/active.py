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
``theta_hat +- t sd(z) / sqrt(N)``, Student's ``t`` with the labeled units
less 1 degrees of freedom (asymptotically valid; ``pi`` only enters through
the weights the labeled items carry; cluster-robust with clusters). A label
the run had before the draw enters with ``pi = 1`` (``z_i = Y_i``). The
estimate is :func:`active_mean` (:mod:`judgecp.stats.active_estimate`, imported
here too).

**The promise: never wider than uniform sampling at the same budget.**
``var(z) ~ lam^2 var(f) + mean_i e_i^2 / pi_i`` with ``e = Y - h`` the
judge's error, so the width is smallest for ``pi_i`` proportional to the
error's size, and the gain over uniform sampling is only as real as the
model of that size. The model comes from labeled pairs that are not the
run's (a calibrator's, a pilot's: :func:`error_model`, the residual's root
mean square by quantile bin of the proxy); without one, ``select`` samples
uniformly and says why: the judge's own spread (the sd of its rating
distribution) is not the size of its error; used as one, on LLaVA-Critic,
it printed 0.31 of the width achieved and cost 4.4% of width against
uniform sampling (issue 32; docs/benchmarks.md). With a model, ``pi`` is the model's sizes mixed with uniform
(share ``mix``), capped at 1, and the mix is chosen among
:data:`MIX_CHOICES` by a cross-validated estimate of the sampling variance
(:func:`cross_validated`: the error model fitted on 4/5 of the pairs,
scored on the held-out fifth, 4 repeats), departing from uniform only
when the held-out gain exceeds :data:`GAIN_MARGIN_SE` standard errors
(a one-sided test at 5%).
The expected widths printed are the held-out ones too (the in-sample
model is optimistic about itself), with a 90% range for the pairs'
sampling error of the error's variance. Where the judge's errors are the same
size everywhere (LLaVA-Critic on MLLM-as-a-Judge) the choice is uniform
sampling; where the judge knows where it errs (Polaris captions) it
departs and gains (docs/benchmarks.md). Valid either way: the weights, not
the model, carry the guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.stats.active_estimate import active_mean as active_mean
from judgecp.stats.plan import proxy_check
from judgecp.stats.ppi import quantile
from judgecp.stats.ppi_design import clustered_variance

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
#: The shares of uniform sampling ``select`` chooses among by cross-validation (1: uniform sampling).
MIX_CHOICES = (1.0, 0.75, 0.5, 0.25)
#: Folds and repeats of the cross-validated sampling variance.
CV_FOLDS, CV_REPEATS = 5, 4
#: A mix departs from uniform sampling only when its held-out gain exceeds this many standard errors (one-sided 5%).
GAIN_MARGIN_SE = 1.645
#: The fewest labeled pairs an error model is fitted on.
MIN_PAIRS = 30
#: Labeled pairs per proxy bin of the error model (at most :data:`MAX_BINS` bins).
PAIRS_PER_BIN, MAX_BINS = 30, 10
#: Why ``select`` samples uniformly without an error model (printed and written).
NO_MODEL = ("uniform sampling: no error model (give --calibrator or --pilot); the judge's own spread is not the size "
            "of its error")


@dataclass(frozen=True)
class ErrorModel:
    """The size of the judge's error as a function of its proxy (:func:`error_model`)."""

    edges: FloatArray  #: inner edges of the proxy's bins (quantiles of the pairs' proxy)
    rms: FloatArray  #: root mean square residual in each bin
    slope: float  #: of the least-squares line of the label on the proxy
    intercept: float
    n_pairs: int

    def bin_of(self, f: FloatArray) -> IntArray:
        out: IntArray = np.searchsorted(self.edges, np.asarray(f, dtype=np.float64), side="right")
        return out

    def size(self, f: FloatArray) -> FloatArray:
        out: FloatArray = self.rms[self.bin_of(f)]
        return out


def bins_for(n_pairs: int) -> int:
    """Proxy bins of an error model on ``n_pairs`` pairs: one per :data:`PAIRS_PER_BIN`, 1 to :data:`MAX_BINS`."""
    return max(1, min(MAX_BINS, n_pairs // PAIRS_PER_BIN))


def _line(y: FloatArray, f: FloatArray) -> tuple[float, float]:
    if np.ptp(f) > 0:
        slope, intercept = np.polyfit(f, y, 1)
        return float(slope), float(intercept)
    return 0.0, float(y.mean())


def _rms_by_bin(resid: FloatArray, which: IntArray, n_bins: int) -> FloatArray:
    overall = float(np.sqrt(np.mean(resid**2)))
    return np.array([float(np.sqrt(np.mean(resid[which == b] ** 2))) if (which == b).any() else overall
                     for b in range(n_bins)])


def error_model(y: FloatArray, f: FloatArray, *, bins: int | None = None,
                edges: FloatArray | None = None) -> ErrorModel:
    """The judge's error by proxy bin, from labeled pairs (a calibrator's or a pilot's; never the run's).

    The residuals of the least-squares line of ``y`` on ``f``; their root mean
    square in each of ``bins`` (default :func:`bins_for`) quantile bins of
    ``f``, or in the bins of the given inner ``edges``.
    """
    y, f = np.asarray(y, dtype=np.float64), np.asarray(f, dtype=np.float64)
    if edges is None:
        n_bins = bins or bins_for(y.size)
        edges = np.unique(np.quantile(f, np.linspace(0, 1, n_bins + 1)[1:-1]))
    slope, intercept = _line(y, f)
    resid = y - (intercept + slope * f)
    which = np.searchsorted(edges, f, side="right")
    return ErrorModel(edges, _rms_by_bin(resid, which, edges.size + 1), slope, intercept, int(y.size))


def error_size(model: ErrorModel, f: FloatArray) -> FloatArray:
    """The model's error size at each proxy value."""
    return model.size(f)


def check_pairs(y: FloatArray, f: FloatArray, source: str) -> None:
    """Labeled pairs an error model can be fitted on: enough of them, finite, and labels that vary."""
    if y.size < MIN_PAIRS:
        raise InputError(f"{source}: an error model needs at least {MIN_PAIRS} labeled items with a judge proxy, "
                         f"got {y.size}")
    if not (np.isfinite(y).all() and np.isfinite(f).all()):
        raise InputError(f"{source}: the labeled items' labels and proxies must be finite numbers")
    if np.ptp(y) == 0:
        raise InputError(f"{source}: every label is {y[0]:g}; labels without spread give no error model (it would "
                         "promise a width of nearly 0)")


def probabilities(uncertainty: FloatArray, budget: float, *, mix: float = 0.5) -> FloatArray:
    """``pi`` proportional to the uncertainty, mixed with uniform, capped at 1, summing to ``budget``."""
    u = np.asarray(uncertainty, dtype=np.float64)
    n = u.size
    if not 0 < budget <= n:
        raise InputError(f"--budget must be between 1 and the {n} items to choose from, got {budget:g}")
    if not 0.0 <= mix <= 1.0:
        raise InputError(f"--mix must be in [0, 1], got {mix}")
    if not np.isfinite(u).all() or (u < 0).any():
        raise InputError("the error sizes are not a finite non-negative number on every item")
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


@dataclass(frozen=True)
class CrossValidated:
    """Held-out estimates over the run's items (:func:`cross_validated`), as sums of one term per labeled pair."""

    #: Per pair, by mix: its share of ``sum_i e_i^2 (1 - pi_i) / pi_i`` over the items to draw from.
    sampling_terms: dict[float, FloatArray]
    #: Per pair: its share of ``sum_i e_i^2`` over all the run's items (its labeled ones too).
    squared_error_terms: FloatArray

    @property
    def squared_error(self) -> float:
        return float(self.squared_error_terms.sum())

    def sampling(self, mix: float) -> float:
        """``sum_i e_i^2 (1 - pi_i) / pi_i`` over the items to draw from: the sampling variance times ``N^2``."""
        return float(self.sampling_terms[mix].sum())

    def gain(self, mix: float) -> tuple[float, float]:
        """How much smaller ``mix``'s sampling variance is than uniform sampling's, and the standard error of that."""
        d = self.sampling_terms[1.0] - self.sampling_terms[mix]
        return float(d.sum()), float(math.sqrt(d.size) * np.std(d, ddof=1))

    def total_se(self, mix: float) -> float:
        """The standard error of ``sum_i e_i^2 / pi_i`` (its pairs' sampling error)."""
        t = self.squared_error_terms + self.sampling_terms[mix]
        return float(math.sqrt(t.size) * np.std(t, ddof=1))


def cross_validated(y: FloatArray, f: FloatArray, f_pool: FloatArray, f_all: FloatArray, budget: float,
                    mixes: tuple[float, ...], *, random_state: int = 0) -> CrossValidated:
    """The sampling variance each mix would have on the run, estimated on held-out pairs.

    The pairs are split into :data:`CV_FOLDS` folds (:data:`CV_REPEATS`
    times); the error model fitted on the other folds gives ``pi`` over the
    run's items ``f_pool`` for each mix; each held-out pair's squared
    residual, weighted by its bin's share of the run (``f_pool``; ``f_all``
    for the squared error over all items), scores it. Every pair is held out
    once per repeat, so the estimate is an honest one of what the model
    fitted on all the pairs will do. ``mixes`` must include 1 (uniform).
    """
    m = y.size
    edges = error_model(y, f).edges  # bins from the pairs' proxies only: no label enters the bins
    n_bins = edges.size + 1
    pair_bin = np.searchsorted(edges, f, side="right")
    pool_bin = np.searchsorted(edges, f_pool, side="right")
    pairs_in_bin = np.bincount(pair_bin, minlength=n_bins)
    to_pool = np.bincount(pool_bin, minlength=n_bins)[pair_bin] / pairs_in_bin[pair_bin]
    to_all = (
        np.bincount(np.searchsorted(edges, f_all, side="right"), minlength=n_bins)[pair_bin] / pairs_in_bin[pair_bin]
    )
    terms = {mix: np.zeros((CV_REPEATS, m)) for mix in set(mixes) | {1.0}}
    squared = np.zeros((CV_REPEATS, m))
    rng = np.random.default_rng(random_state)
    folds = min(CV_FOLDS, m)
    for r in range(CV_REPEATS):
        fold = np.empty(m, np.intp)
        fold[rng.permutation(m)] = np.arange(m) % folds
        for k in range(folds):
            train, held = fold != k, fold == k
            model = error_model(y[train], f[train], edges=edges)
            resid2 = (y[held] - model.intercept - model.slope * f[held]) ** 2
            squared[r, held] = resid2
            for mix in terms:
                by_bin = np.ones(n_bins)
                by_bin[pool_bin] = probabilities(model.rms[pool_bin], budget, mix=mix)
                p = by_bin[pair_bin[held]]
                terms[mix][r, held] = resid2 * (1.0 - p) / p
    return CrossValidated({mix: to_pool * t.mean(axis=0) for mix, t in terms.items()},
                          to_all * squared.mean(axis=0))


def choose_mix(cv: CrossValidated) -> float:
    """The mix with the largest held-out gain less :data:`GAIN_MARGIN_SE` standard errors; uniform (1) if none
    gains by more."""
    margin = {}
    for mix in cv.sampling_terms:
        if mix != 1.0:
            gain, se = cv.gain(mix)
            margin[mix] = gain - GAIN_MARGIN_SE * se
    best = max(margin, key=lambda mix: margin[mix], default=1.0)
    return best if margin.get(best, 0.0) > 0 else 1.0


def expected_widths(slope: float, f_all: FloatArray, cv: CrossValidated, mix: float, alpha: float, *,
                    df: float = math.inf, clusters: NDArray[Any] | None = None) -> dict[str, Any]:
    """The interval widths expected with ``mix`` and with uniform sampling (held-out estimates), and a 90% range.

    ``var(z) = (slope^2 var(f) N + sum_i e_i^2 + sum_pool e_i^2 (1 - pi_i) / pi_i) / N`` over the run's ``N``
    items (a label the run already has: ``pi = 1``); the width is ``2 t_df sqrt(var(z) / N)`` (``df``:
    :func:`expected_df`). With ``clusters`` (every item's) the proxy's term is the cluster-robust variance of its
    mean (the items of a cluster move together; each is still drawn on its own, so the sampling term keeps its
    form). The range is that of the pairs' sampling error of the sums (+-1.645 standard errors): a few hundred
    pairs know the error's variance to a few percent when its tails are light, to much less when they are heavy.
    """
    n = f_all.size
    q = quantile(alpha, df)
    signal = slope**2 * clustered_variance(f_all, clusters) + cv.squared_error / n / n

    def width(sampling: float) -> float:
        return 2.0 * q * math.sqrt(max(signal + sampling / n / n, 0.0))

    active, flat = width(cv.sampling(mix)), width(cv.sampling(1.0))
    spread = 1.645 * cv.total_se(mix)
    return {"active": active, "uniform": flat, "ratio": active / flat,
            "range": [width(cv.sampling(mix) - spread), width(cv.sampling(mix) + spread)]}


def expected_df(pi: FloatArray, clusters: NDArray[Any] | None) -> float:
    """The degrees of freedom :func:`active_mean` is expected to have with every item's sampling probability ``pi``
    (1: labeled already): the expected number of labeled units (items, or clusters with a label) less 1."""
    p = np.clip(np.asarray(pi, dtype=np.float64), 0.0, 1.0)
    if clusters is None:
        return max(float(p.sum()) - 1.0, 1.0)
    _, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    inverse = inverse.ravel()
    none = np.exp(np.bincount(inverse, weights=np.log(np.where(p < 1.0, 1.0 - p, 1.0))))  # P(no item drawn)
    none[np.bincount(inverse, weights=(p >= 1.0).astype(np.float64)) > 0] = 0.0
    return max(float((1.0 - none).sum()) - 1.0, 1.0)


def sampling_design(f: FloatArray, pool: IntArray, budget: float, *,
                    labeled_pairs: tuple[FloatArray, FloatArray] | None = None, pairs_source: str = "the labeled items",
                    mix: float | None = None, alpha: float = 0.1, random_state: int = 0,
                    clusters: NDArray[Any] | None = None) -> tuple[FloatArray, dict[str, Any]]:
    """The sampling probabilities of the items ``pool`` of a run whose proxies are ``f`` (all its items; the others
    are labeled already), and what the summary says of them: the mix and why, the error model, the check of its
    items against the run's, the expected widths (module docstring; :func:`select`; ``clusters``: every item's)."""
    f = np.asarray(f, dtype=np.float64)
    if labeled_pairs is None:
        return probabilities(np.ones(pool.size), budget, mix=1.0), {
            "mix": 1.0, "mix_chosen_by": "no error model", "error_model": None, "model_check": None,
            "expected_width": None, "why": NO_MODEL, "degenerate": []}
    y_p, f_p = (np.asarray(v, dtype=np.float64) for v in labeled_pairs)
    check_pairs(y_p, f_p, pairs_source)
    model = error_model(y_p, f_p)
    check = proxy_check(f_p, f)
    mixes = tuple(sorted(set(MIX_CHOICES) | ({mix} if mix is not None else set()), reverse=True))
    probabilities(np.ones(pool.size), budget, mix=1.0)  # the budget's own check, before the cross-validation
    cv = cross_validated(y_p, f_p, f[pool], f, budget, mixes, random_state=random_state)
    if mix is not None:
        chosen, why = mix, f"--mix {mix:g}"
    elif check["mismatch"]:
        chosen, why = (
            1.0,
            "uniform sampling: the error model's items are unlike the run's, its gain is not to be trusted",
        )
    else:
        chosen = choose_mix(cv)
        why = ("cross-validated: " + ("no mix gains more than its noise over uniform sampling" if chosen == 1.0
                                      else f"mix {chosen:g} gains the most over uniform sampling beyond its noise"))
    pi = probabilities(model.size(f[pool]), budget, mix=chosen)
    every = np.ones(f.size)
    every[pool] = pi
    df = expected_df(every, clusters)
    info: dict[str, Any] = {
        "mix": chosen, "mix_chosen_by": why,
        "error_model": f"the error of the judge's proxy on {pairs_source}, by {model.rms.size} proxy bins",
        "model_check": check,
        "expected_width": expected_widths(model.slope, f, cv, chosen, alpha, df=df, clusters=clusters),
        "expected_ratio_by_mix": {f"{m:g}": expected_widths(model.slope, f, cv, m, alpha, df=df,
                                                            clusters=clusters)["ratio"] for m in mixes},
        "why": why, "degenerate": [] if float(np.max(model.rms)) > 0 else [
            "the error model gives every item error 0: the expected widths are the judge's alone"]}
    if check["mismatch"]:
        info["warning"] = (f"the error model's items are unlike the run's ({check['message']}): the expected width "
                           "assumes they are alike")
    return pi, info
