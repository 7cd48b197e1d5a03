"""Selective risk controllers: when to accept a judge's verdict.

A controller looks at calibration judgments (uncertainty ``u``, error
indicator ``E``) and returns a threshold ``lambda``; a judgment is accepted
iff ``u <= lambda`` (``-inf``: abstain on everything, ``+inf``: accept all).
The promise is on the error rate among accepted judgments (the FDR):

* ``scope`` (SCOPE eq. 4-6): the largest lambda with
  ``sum_i S_i(lambda) (E_i - alpha) <= -1``; none feasible -> abstain on all.
  Marginal FDR <= alpha under exchangeability.
* ``clopper_pearson``: fixed-sequence testing (Trust or Escalate) over a
  data-independent grid of thresholds from the most to the least certain
  (``grid`` steps equally spaced in confidence);
  at each, the one-sided Clopper-Pearson upper bound (level 1 - delta) of the
  error rate among accepted calibration judgments must be <= alpha; the
  last threshold that passes is used, and when even the first fails the
  controller abstains on everything (the reference code returned its first
  threshold instead). P(FDR <= alpha) >= 1 - delta.
* ``naive``: the largest lambda whose calibration FDR is <= alpha, no
  finite-sample correction (can exceed alpha).
* ``heuristic``: accept when confidence >= 1 - alpha, no calibration.
* ``vanilla``: accept everything.

Controllers are registered through the ``register_risk_controllers`` hook;
each works on many splits at once (``u`` and ``E`` are ``(splits, n)``
arrays sorted by ``u`` within each split), and all levels at once
(``thresholds_at_levels``), which is what makes 1000 splits x 5 levels x
2000 pairs take well under a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from judgecp.base.hookspecs import hookimpl

FloatArray = NDArray[np.float64]


class RiskController:
    """Base class: choose thresholds for many calibration splits at once."""

    name: ClassVar[str]
    reference: ClassVar[str] = ""
    #: Whether the controller carries a finite-sample guarantee.
    guaranteed: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        self.params = params

    def thresholds(
        self, u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alpha: float, signal: Any
    ) -> FloatArray:
        """Per-split thresholds from calibration uncertainties sorted ascending (with errors in the same order).

        A controller overrides this or :meth:`thresholds_at_levels` (each is
        written in terms of the other here).
        """
        if type(self).thresholds_at_levels is RiskController.thresholds_at_levels:
            raise NotImplementedError(f"{type(self).__name__} overrides neither thresholds nor thresholds_at_levels")
        out: FloatArray = self.thresholds_at_levels(u_sorted, e_sorted, [alpha], signal)[0]
        return out

    def thresholds_at_levels(
        self, u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alphas: Sequence[float], signal: Any
    ) -> FloatArray:
        """``(levels, splits)`` thresholds, one row per level; override to share work across levels."""
        if type(self).thresholds is RiskController.thresholds:
            raise NotImplementedError(f"{type(self).__name__} overrides neither thresholds nor thresholds_at_levels")
        return np.stack([self.thresholds(u_sorted, e_sorted, a, signal) for a in alphas])


def _last_of_ties(u_sorted: FloatArray) -> NDArray[np.bool_]:
    """True at positions where a threshold equal to u accepts exactly the prefix up to here."""
    last = np.ones_like(u_sorted, dtype=bool)
    last[:, :-1] = u_sorted[:, 1:] > u_sorted[:, :-1]
    return last


def largest_feasible_prefix(
    u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alphas: Sequence[float], slack: float
) -> FloatArray:
    """For each level, the largest threshold ``u_j`` (at the end of its ties) with
    ``sum_{i <= j} (E_i - alpha) <= -slack``; ``-inf`` where no prefix qualifies.

    The condition is ``r_j = (C_j + slack) / (j + 1) <= alpha`` with ``C_j`` the
    errors in the prefix. One pass computes the suffix minimum of ``r`` over
    the ends of ties, which is non-decreasing in ``j``, so every level's
    answer is a binary search: all levels cost about one level.
    """
    b, m = e_sorted.shape
    # int32 counts (exact below 2**31 pairs): a bool cumsum into int64 or float64 is several times slower.
    ratio = (np.cumsum(e_sorted, axis=1, dtype=np.int32) + slack) / np.arange(1, m + 1)
    ratio[~_last_of_ties(u_sorted)] = np.inf
    suffix_min = np.minimum.accumulate(ratio[:, ::-1], axis=1)[:, ::-1]
    out = np.full((len(alphas), b), -np.inf)
    for row in range(b):
        count = np.searchsorted(suffix_min[row], np.asarray(alphas, dtype=np.float64), side="right")
        out[:, row] = np.where(count > 0, u_sorted[row, np.maximum(count - 1, 0)], -np.inf)
    return out


class Scope(RiskController):
    """SCOPE: the largest lambda with ``sum_i S_i(lambda) (E_i - alpha) <= -1``."""

    name = "scope"
    reference = "SCOPE (2026), eq. 4-6; LEC (Wang et al. 2025)"
    guaranteed = True
    #: The budget's finite-sample correction (the ``-1`` of eq. 6).
    slack: ClassVar[float] = 1.0

    def thresholds_at_levels(
        self, u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alphas: Sequence[float], signal: Any
    ) -> FloatArray:
        return largest_feasible_prefix(u_sorted, e_sorted, alphas, self.slack)


class Naive(Scope):
    """The largest lambda whose calibration FDR is <= alpha (no correction)."""

    name = "naive"
    reference = "empirical calibration without finite-sample correction (SCOPE's baseline)"
    guaranteed = False
    slack = 0.0


class Heuristic(RiskController):
    name = "heuristic"
    reference = "accept when confidence >= 1 - alpha (SCOPE's baseline)"

    def thresholds(self, u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alpha: float, signal: Any) -> FloatArray:
        return np.full(u_sorted.shape[0], signal.uncertainty_at_confidence(1.0 - alpha))


class Vanilla(RiskController):
    name = "vanilla"
    reference = "no abstention"

    def thresholds(self, u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alpha: float, signal: Any) -> FloatArray:
        return np.full(u_sorted.shape[0], np.inf)


class ClopperPearson(RiskController):
    """Fixed-sequence Clopper-Pearson testing (``delta``: 0.1; ``grid``: 50 thresholds)."""

    name = "clopper_pearson"
    reference = "Jung, Brahman & Choi (2025), Trust or Escalate; Bauer (1991)"
    guaranteed = True

    def __init__(self, delta: float = 0.1, grid: int = 50, **params: Any) -> None:
        super().__init__(**params)
        if not 0 < delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        self.delta = delta
        self.grid = grid

    def grid_values(self, signal: Any) -> FloatArray:
        """Data-independent thresholds, most certain first: equally spaced in confidence
        from 1 down to the signal's lowest confidence (0.5 for a binary choice)."""
        conf = np.linspace(1.0, signal.confidence_floor, self.grid + 1)[1:]
        return np.asarray([signal.uncertainty_at_confidence(float(c)) for c in conf])

    @staticmethod
    def upper_bound(errors: NDArray[Any], accepted: NDArray[Any], delta: float) -> FloatArray:
        """One-sided (1 - delta) Clopper-Pearson upper bound of errors/accepted (1 when nothing is accepted)."""
        from scipy.stats import beta

        k = np.asarray(errors, dtype=np.float64)
        m = np.asarray(accepted, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            ub = beta.ppf(1 - delta, k + 1, np.maximum(m - k, 1e-300))
        out: FloatArray = np.where((m == 0) | (k >= m), 1.0, ub)
        return out

    def thresholds_at_levels(
        self, u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alphas: Sequence[float], signal: Any
    ) -> FloatArray:
        grid = self.grid_values(signal)
        accepted = np.stack([np.searchsorted(row, grid, side="right") for row in u_sorted])
        cum_e = np.cumsum(e_sorted, axis=1, dtype=np.int32)
        errors = np.where(accepted > 0, np.take_along_axis(cum_e, np.maximum(accepted - 1, 0), axis=1), 0)
        bound = self.upper_bound(errors, accepted, self.delta)  # the same at every level
        out = np.empty((len(alphas), u_sorted.shape[0]))
        for i, alpha in enumerate(alphas):
            passes = bound <= alpha
            first_fail = np.where(passes.all(axis=1), grid.size, np.argmin(passes, axis=1))
            out[i] = np.where(first_fail > 0, grid[np.maximum(first_fail - 1, 0)], -np.inf)
        return out


BUILTIN_CONTROLLERS = (Scope, ClopperPearson, Naive, Heuristic, Vanilla)


@hookimpl
def register_risk_controllers() -> list[type[RiskController]]:
    return list(BUILTIN_CONTROLLERS)


def apply(
    threshold: FloatArray, u: FloatArray, e: NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray, NDArray[np.int64]]:
    """Test-split risk (FDR; 0 when nothing is accepted), coverage and accepted count per split."""
    accept = u <= threshold[:, None]
    n_acc = accept.sum(axis=1)
    n_err = (accept & e).sum(axis=1)
    risk = np.where(n_acc > 0, n_err / np.maximum(n_acc, 1), 0.0)
    return risk, n_acc / u.shape[1], n_acc

