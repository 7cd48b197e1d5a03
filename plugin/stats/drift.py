"""Conformal test martingales: exchangeability checks of runs against their calibration, in any row order.

The calibration items (in a seeded random order: a set of exchangeable items
in random order is an exchangeable sequence) are followed by the run's items
**in a seeded random order too**: a run sorted by task, by time or by score is
then tested as the set it is, not as a stream whose order carries the shift
(issue 26: in file order, grouped by task, the old test alarmed on 200 of 200
healthy runs). Each item gets the smoothed online conformal p-value of its
statistic among all items so far (Vovk, Gammerman & Shafer, *Algorithmic
Learning in a Random World*, ch. 7):

    p_i = (#{j <= i : a_j > a_i} + u_i #{j <= i : a_j = a_i}) / i,  u_i ~ U(0, 1)

which are independent and uniform under exchangeability. The run's p-values
are bet on with the mixture power martingale
``M_n = integral_0^1 prod_{i in run, i <= n} e p_i^(e - 1) de`` (a grid of
``e``), once for large and once for small values of the statistic, averaged
(an average of test martingales is one). By Ville's inequality, under
exchangeability ``P(sup_n M_n >= 1/level) <= level``: an alarm at
``1/level`` is a valid test at whatever point of the run it comes.

:mod:`judgecp.workflows.nightly.history` uses the same p-values across many runs, with bets that pay on any change
of their distribution, not only on extreme ranks (:func:`polya_log_lr`).
"""

from __future__ import annotations

import bisect
import functools
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import betaln, gammaln

FloatArray = NDArray[np.float64]
#: Betting exponents of the mixture (midpoints of a uniform grid on (0, 1)).
EPSILONS = (np.arange(100) + 0.5) / 100
#: New items up to which :func:`pvalues_after` ranks them by one square comparison (memory ~ 2 bytes x size^2).
_SQUARE_LIMIT = 3000


def online_pvalues(values: ArrayLike, rng: np.random.Generator) -> FloatArray:
    """Smoothed online conformal p-values (large values conform least) of a sequence."""
    return pvalues_after(np.zeros(0), values, rng.uniform(size=np.asarray(values).size))


def pvalues_after(seen_sorted: ArrayLike, values: ArrayLike, u: ArrayLike) -> FloatArray:
    """Smoothed online p-values of ``values`` (in their order) following items already seen (sorted ascending).

    The same numbers :func:`online_pvalues` gives for the whole sequence
    ``seen + values``, for the new items only: each is ranked among every item
    before it and itself; ``u`` breaks ties (one uniform per new item).
    """
    prior = np.asarray(seen_sorted, dtype=np.float64)
    seq = np.asarray(values, dtype=np.float64)
    uu = np.asarray(u, dtype=np.float64)
    # Among the prior items: counts by binary search on the sorted array.
    prior_greater = prior.size - np.searchsorted(prior, seq, side="right")
    prior_equal = np.searchsorted(prior, seq, side="right") - np.searchsorted(prior, seq, side="left")
    if seq.size <= _SQUARE_LIMIT:
        # Among the earlier new items: one (m, m) comparison, lower triangle (j < i), plus the item itself.
        earlier = np.tri(seq.size, k=-1, dtype=bool)
        own_greater = ((seq[None, :] > seq[:, None]) & earlier).sum(axis=1)
        own_equal = ((seq[None, :] == seq[:, None]) & earlier).sum(axis=1) + 1
    else:
        own_greater, own_equal = np.empty(seq.size, np.int64), np.empty(seq.size, np.int64)
        own: list[float] = []
        for i, a in enumerate(seq.tolist()):
            bisect.insort(own, a)
            right, left = bisect.bisect_right(own, a), bisect.bisect_left(own, a)
            own_greater[i], own_equal[i] = len(own) - right, right - left
    count = prior.size + np.arange(1, seq.size + 1)
    out: FloatArray = (prior_greater + own_greater + uu * (prior_equal + own_equal)) / count
    return out


def log_bets(pvalues: ArrayLike) -> FloatArray:
    """``log(e p^(e - 1))`` of each p-value (rows) for each betting exponent of :data:`EPSILONS` (columns)."""
    p = np.maximum(np.asarray(pvalues, dtype=np.float64), 1e-300)
    out: FloatArray = np.log(EPSILONS)[None, :] + (EPSILONS[None, :] - 1.0) * np.log(p)[:, None]
    return out


def log_mean_exp(a: ArrayLike, axis: int = -1) -> FloatArray:
    """``log(mean(exp(a)))`` along ``axis``, without overflow."""
    arr = np.asarray(a, dtype=np.float64)
    top = np.max(arr, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out: FloatArray = np.squeeze(top, axis=axis) + np.log(np.mean(np.exp(arr - top), axis=axis))
    return out


def martingale_test(calibration: ArrayLike, run: ArrayLike, *, level: float = 0.01, seed: int = 0) -> dict[str, Any]:
    """Test martingale of ``run`` (in a seeded random order) against ``calibration`` (module docstring).

    ``first_alarm`` counts the run's items in that random order: the
    evidence it needed, not a place in the file.
    """
    cal = np.asarray(calibration, dtype=np.float64)
    new = np.asarray(run, dtype=np.float64)
    rng = np.random.default_rng(seed)
    seq = np.concatenate([rng.permutation(cal), rng.permutation(new)])
    if not new.size:
        return {"test": "conformal test martingale", "order": "seeded random", "level": level, "n_run": 0,
                "max": None, "final": None, "alarm": None, "first_alarm": None}
    logs = []
    for sign in (1.0, -1.0):
        p = online_pvalues(sign * seq, rng)[cal.size :]
        logs.append(np.cumsum(log_bets(p), axis=0))  # (n_run, grid): log of each power martingale
    log_m = log_mean_exp(np.concatenate(logs, axis=1), axis=1)  # the average over exponents and both signs
    threshold = np.log(1.0 / level)
    crossed = np.flatnonzero(log_m >= threshold)
    return {
        "test": "conformal test martingale", "order": "seeded random", "level": level, "n_run": int(new.size),
        "max": float(np.exp(min(log_m.max(), 700.0))), "final": float(np.exp(min(log_m[-1], 700.0))),
        "alarm": bool(crossed.size), "first_alarm": int(crossed[0]) + 1 if crossed.size else None,
    }


# -- bets that pay on any change of the p-values' distribution ----------------------------------------
#
# Under exchangeability the p-values are independent and uniform on (0, 1). The history's detector
# (judgecp.workflows.nightly.history) bets on them with a mixture of three families of densities on (0, 1), each a test
# martingale (a mixture of likelihood ratios against the uniform), so their weighted average is one too:
# a Polya tree (any change of shape the cells can see), exponential tilts (the judge scores a run higher or
# lower) and beta densities (a tail that empties or fills: extreme ranks, as the power bets of
# martingale_test, and missing ones; more or fewer extremes on both sides). Each depends on the p-values only
# through a few sums (bet_statistics): the martingale of the items since any night is one difference of
# cumulative sums.

#: Levels of the Polya tree of :func:`polya_log_lr`: its finest cells cut [0, 1] into ``2**TREE_DEPTH``.
TREE_DEPTH = 6
#: Exponential tilts ``f(p) = a exp(a p) / (exp(a) - 1)`` of the uniform (a grid, equal weights).
TILTS = np.linspace(-8.0, 8.0, 41)
_SHAPES = np.geomspace(0.2, 5.0, 41)
#: Beta densities ``p^(a - 1) (1 - p)^(b - 1) / B(a, b)``: ``(a, 1)``, ``(1, a)`` and ``(a, a)`` for ``a`` on a
#: geometric grid from 0.2 to 5 (``a < 1``: extreme ranks, the power bets ``e p^(e - 1)``; ``a > 1``: a tail
#: that empties).
BETAS = np.concatenate([np.stack([_SHAPES, np.ones_like(_SHAPES)], axis=1),
                        np.stack([np.ones_like(_SHAPES), _SHAPES], axis=1), np.stack([_SHAPES, _SHAPES], axis=1)])
#: Weights of the Polya tree, the tilts and the beta densities in the mixture.
FAMILY_WEIGHTS = (0.5, 0.25, 0.25)
#: The sums :func:`bet_statistics` gives after the cell counts.
SUMS = ("n", "sum_p", "sum_log_p", "sum_log_1mp")


def _log_tilt_normalisers() -> FloatArray:
    """``log Z(a) = log((exp(a) - 1) / a)`` of every tilt (0 for ``a = 0``)."""
    safe = np.where(TILTS == 0.0, 1.0, TILTS)
    out: FloatArray = np.where(TILTS == 0.0, 0.0, np.log(np.expm1(safe) / safe))
    return out


#: ``log Z(a)`` of each tilt, and ``log B(a, b)`` of each beta density.
TILT_LOG_NORMALISERS = _log_tilt_normalisers()
BETA_LOG_NORMALISERS: FloatArray = betaln(BETAS[:, 0], BETAS[:, 1])


def cell_counts(pvalues: ArrayLike, depth: int = TREE_DEPTH) -> NDArray[np.int64]:
    """How many p-values fall in each of the ``2**depth`` equal cells of [0, 1] (a p-value of 1 in the last)."""
    cells = 2**depth
    p = np.asarray(pvalues, dtype=np.float64)
    index = np.minimum((p * cells).astype(np.int64), cells - 1)
    out: NDArray[np.int64] = np.bincount(index, minlength=cells).astype(np.int64)
    return out


def bet_statistics(pvalues: ArrayLike) -> FloatArray:
    """What the bets of :func:`mixture_log_lr` need of some p-values: the ``2**TREE_DEPTH`` cell counts, then
    the sums of :data:`SUMS` (their number, ``sum p``, ``sum log p``, ``sum log(1 - p)``), which add up over
    nights."""
    p = np.asarray(pvalues, dtype=np.float64)
    sums = [p.size, p.sum(), np.log(np.maximum(p, 1e-300)).sum(), np.log1p(-np.minimum(p, 1.0 - 2.0**-53)).sum()]
    return np.concatenate([cell_counts(p), sums]).astype(np.float64)


def polya_log_lr(counts: ArrayLike) -> FloatArray:
    """Log of the Polya-tree mixture martingale of p-values with these cell counts (last axis: the cells).

    The cells are the leaves of the dyadic tree of [0, 1] (``2**D`` of
    them, ``D`` levels). At each node of level ``j`` the share of the
    node's p-values that fall in its left half gets a ``Beta(j^2, j^2)``
    prior (Lavine 1992: the growing concentration keeps the density
    smooth); the likelihood ratio of the p-values against the uniform is

        prod_nodes B(l + j^2, r + j^2) / B(j^2, j^2) * 2^(l + r)

    (``l``, ``r``: the node's items in its left and right half). It is the
    product, item by item, of the posterior-predictive density of each
    item's cell given the items before it, divided by the uniform's: a bet
    on each p-value placed with the earlier ones, so a test martingale when
    the p-values are independent and uniform, in any order. Unlike a power
    bet ``e p^(e - 1)``, which pays only when the p-values pile up at 0, it
    pays on any change the cells can see: a missing tail, a bump in the
    middle, extreme ranks. Its cost when nothing changed is about half a
    log of the node's item count per node that holds items.
    """
    c = np.asarray(counts)
    if c.size and (c.min() < 0 or not np.array_equal(c, np.round(c))):
        raise ValueError("cell counts must be whole numbers >= 0")
    c = np.round(c).astype(np.int64)
    cells = c.shape[-1]
    depth = cells.bit_length() - 1
    if 2**depth != cells:
        raise ValueError(f"{cells} cells: a Polya tree needs a power of two")
    n = c.sum(axis=-1)
    tables = _log_gamma_tables(1 << max(int(n.max()) if n.size else 0, 1).bit_length(), depth)  # few sizes
    out: FloatArray = n * (depth * math.log(2.0))
    children = c
    for level in range(depth, 0, -1):  # level j: the 2^j cells are the halves of the 2^(j - 1) nodes above
        parents = children.reshape(*children.shape[:-1], -1, 2).sum(axis=-1)
        half, whole, constant = tables[level - 1]
        out = out + (half[children].sum(axis=-1) - whole[parents].sum(axis=-1) - parents.shape[-1] * constant)
        children = parents
    return out


@functools.lru_cache(maxsize=8)
def _log_gamma_tables(size: int, depth: int) -> tuple[tuple[FloatArray, FloatArray, float], ...]:
    """Per level ``j``: ``log Gamma(k + j^2)`` and ``log Gamma(k + 2 j^2)`` for whole ``k < size``, and
    ``log B(j^2, j^2)`` (the counts are whole numbers: a table look-up, not a log-gamma each)."""
    k = np.arange(size, dtype=np.float64)
    out = []
    for level in range(1, depth + 1):
        a = float(level * level)
        out.append((gammaln(k + a), gammaln(k + 2 * a), float(2 * gammaln(a) - gammaln(2 * a))))
    return tuple(out)


def mixture_log_lr(statistics: ArrayLike) -> FloatArray:
    """Log of the mixture martingale of p-values with these :func:`bet_statistics` (last axis).

    :data:`FAMILY_WEIGHTS` of: the Polya tree (:func:`polya_log_lr`), the
    average over :data:`TILTS` of ``prod_i a exp(a p_i) / (exp(a) - 1)``,
    and the average over :data:`BETAS` of ``prod_i p_i^(a - 1) (1 - p_i)^(b -
    1) / B(a, b)``. Each density integrates to 1 on (0, 1), so each product
    is a test martingale for independent uniform p-values, and so is the
    weighted average.
    """
    st = np.asarray(statistics, dtype=np.float64)
    cells = 2**TREE_DEPTH
    n, s1, log_p, log_q = (st[..., cells + i] for i in range(len(SUMS)))
    tree = polya_log_lr(st[..., :cells])
    tilt = log_mean_exp(TILTS * s1[..., None] - n[..., None] * TILT_LOG_NORMALISERS, axis=-1)
    beta = log_mean_exp((BETAS[:, 0] - 1.0) * log_p[..., None] + (BETAS[:, 1] - 1.0) * log_q[..., None]
                        - n[..., None] * BETA_LOG_NORMALISERS, axis=-1)
    parts = np.stack([tree, tilt, beta], axis=-1) + np.log(FAMILY_WEIGHTS)
    out: FloatArray = log_mean_exp(parts, axis=-1) + math.log(3.0)
    return out
