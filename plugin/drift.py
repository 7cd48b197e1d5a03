"""A conformal test martingale: sequential (streaming) exchangeability check of a run against its calibration.

The calibration items (in a seeded random order: a set of exchangeable items
in random order is an exchangeable sequence) are followed by the run's items
in their order. Each item gets the smoothed online conformal p-value of its
statistic among all items so far (Vovk, Gammerman & Shafer, *Algorithmic
Learning in a Random World*, ch. 7):

    p_i = (#{j <= i : a_j > a_i} + u_i #{j <= i : a_j = a_i}) / i,  u_i ~ U(0, 1)

which are independent and uniform under exchangeability. The run's p-values
are bet on with the mixture power martingale
``M_n = integral_0^1 prod_{i in run, i <= n} e p_i^(e - 1) de`` (a grid of
``e``), once for large and once for small values of the statistic, averaged
(an average of test martingales is one). By Ville's inequality, under
exchangeability ``P(sup_n M_n >= 1/level) <= level``: an alarm at
``1/level`` is a valid sequential test, whenever in the stream it comes.
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
#: Betting exponents of the mixture (midpoints of a uniform grid on (0, 1)).
EPSILONS = (np.arange(100) + 0.5) / 100


def online_pvalues(values: ArrayLike, rng: np.random.Generator) -> FloatArray:
    """Smoothed online conformal p-values (large values conform least) of a sequence."""
    seq = np.asarray(values, dtype=np.float64)
    seen: list[float] = []
    out = np.empty(seq.size)
    u = rng.uniform(size=seq.size)
    for i, a in enumerate(seq.tolist()):
        bisect.insort(seen, a)
        greater = len(seen) - bisect.bisect_right(seen, a)
        equal = bisect.bisect_right(seen, a) - bisect.bisect_left(seen, a)
        out[i] = (greater + u[i] * equal) / len(seen)
    return out


def _log_mixture(pvalues: FloatArray) -> FloatArray:
    """log M_n of the mixture power martingale after each p-value."""
    p = np.maximum(pvalues, 1e-300)
    log_bets = np.log(EPSILONS)[None, :] + (EPSILONS[None, :] - 1.0) * np.log(p)[:, None]  # (n, grid)
    cumulative = np.cumsum(log_bets, axis=0)
    top = cumulative.max(axis=1, keepdims=True)
    out: FloatArray = top[:, 0] + np.log(np.exp(cumulative - top).mean(axis=1))
    return out


def martingale_test(calibration: ArrayLike, run: ArrayLike, *, level: float = 0.01, seed: int = 0) -> dict[str, Any]:
    """Test martingale of ``run`` (in its order) against ``calibration`` (module docstring)."""
    cal = np.asarray(calibration, dtype=np.float64)
    new = np.asarray(run, dtype=np.float64)
    rng = np.random.default_rng(seed)
    seq = np.concatenate([rng.permutation(cal), new])
    logs = []
    for sign in (1.0, -1.0):
        p = online_pvalues(sign * seq, rng)[cal.size :]
        logs.append(_log_mixture(p) if p.size else np.zeros(0))
    if not new.size:
        return {"test": "conformal test martingale", "level": level, "n_run": 0, "max": None, "final": None,
                "alarm": None, "first_alarm": None}
    both = np.vstack(logs)
    top = both.max(axis=0)
    log_m = top + np.log(np.exp(both - top).mean(axis=0))  # log of the average of the two martingales
    threshold = np.log(1.0 / level)
    crossed = np.flatnonzero(log_m >= threshold)
    return {
        "test": "conformal test martingale", "level": level, "n_run": int(new.size),
        "max": float(np.exp(min(log_m.max(), 700.0))), "final": float(np.exp(min(log_m[-1], 700.0))),
        "alarm": bool(crossed.size), "first_alarm": int(crossed[0]) + 1 if crossed.size else None,
    }
