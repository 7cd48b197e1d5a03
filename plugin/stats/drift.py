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

:mod:`judgecp.workflows.nightly.history` uses the same p-values and bets across many runs.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

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
