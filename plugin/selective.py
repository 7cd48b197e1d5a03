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
arrays sorted by ``u`` within each split), which is what makes 1000 splits
x 5 levels x 2000 pairs take about a second.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from judgecp.hookspecs import hookimpl

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
        """Per-split thresholds from calibration uncertainties sorted ascending (with errors in the same order)."""
        raise NotImplementedError


def _last_of_ties(u_sorted: FloatArray) -> NDArray[np.bool_]:
    """True at positions where a threshold equal to u accepts exactly the prefix up to here."""
    last = np.ones_like(u_sorted, dtype=bool)
    last[:, :-1] = u_sorted[:, 1:] > u_sorted[:, :-1]
    return last


def _largest_feasible(u_sorted: FloatArray, feasible: NDArray[np.bool_]) -> FloatArray:
    any_ = feasible.any(axis=1)
    last = feasible.shape[1] - 1 - np.argmax(feasible[:, ::-1], axis=1)
    out: FloatArray = np.where(any_, u_sorted[np.arange(u_sorted.shape[0]), last], -np.inf)
    return out


def linear_budget(e_sorted: NDArray[np.bool_], alpha: float) -> FloatArray:
    """``sum_{i <= j} (E_i - alpha)`` for every prefix j (SCOPE's linearized loss)."""
    k = np.arange(1, e_sorted.shape[1] + 1)
    out: FloatArray = np.cumsum(e_sorted, axis=1) - alpha * k
    return out


class Scope(RiskController):
    name = "scope"
    reference = "SCOPE (2026), eq. 4-6; LEC (Wang et al. 2025)"
    guaranteed = True

    def thresholds(self, u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alpha: float, signal: Any) -> FloatArray:
        feasible = (linear_budget(e_sorted, alpha) <= -1.0) & _last_of_ties(u_sorted)
        return _largest_feasible(u_sorted, feasible)


class Naive(RiskController):
    name = "naive"
    reference = "empirical calibration without finite-sample correction (SCOPE's baseline)"

    def thresholds(self, u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alpha: float, signal: Any) -> FloatArray:
        feasible = (linear_budget(e_sorted, alpha) <= 0.0) & _last_of_ties(u_sorted)
        return _largest_feasible(u_sorted, feasible)


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

    def thresholds(self, u_sorted: FloatArray, e_sorted: NDArray[np.bool_], alpha: float, signal: Any) -> FloatArray:
        grid = self.grid_values(signal)
        cum_e = np.concatenate([np.zeros((u_sorted.shape[0], 1)), np.cumsum(e_sorted, axis=1)], axis=1)
        accepted = np.stack([np.searchsorted(row, grid, side="right") for row in u_sorted])
        errors = np.take_along_axis(cum_e, accepted, axis=1)
        passes = self.upper_bound(errors, accepted, self.delta) <= alpha
        first_fail = np.where(passes.all(axis=1), grid.size, np.argmin(passes, axis=1))
        out: FloatArray = np.where(first_fail > 0, grid[np.maximum(first_fail - 1, 0)], -np.inf)
        return out


BUILTIN_CONTROLLERS = (Scope, ClopperPearson, Naive, Heuristic, Vanilla)


@hookimpl
def register_risk_controllers() -> list[type[RiskController]]:
    return list(BUILTIN_CONTROLLERS)


def controller_classes(pm: Any = None) -> dict[str, type[RiskController]]:
    from judgecp.plugins import get_plugin_manager

    pm = pm or get_plugin_manager()
    found: dict[str, type[RiskController]] = {}
    for classes in reversed(pm.hook.register_risk_controllers()):
        for cls in classes:
            if cls.name in found and found[cls.name] is not cls:
                raise RuntimeError(f"two plugins register a risk controller named {cls.name!r}")
            found[cls.name] = cls
    return found


def apply(threshold: FloatArray, u: FloatArray, e: NDArray[np.bool_]) -> tuple[FloatArray, FloatArray, NDArray[np.int64]]:
    """Test-split risk (FDR; 0 when nothing is accepted), coverage and accepted count per split."""
    accept = u <= threshold[:, None]
    n_acc = accept.sum(axis=1)
    n_err = (accept & e).sum(axis=1)
    risk = np.where(n_acc > 0, n_err / np.maximum(n_acc, 1), 0.0)
    return risk, n_acc / u.shape[1], n_acc

