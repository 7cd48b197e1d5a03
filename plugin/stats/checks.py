"""The checks `apply` makes with the run's own labels, each with a false-alarm rate at most its level.

**Coverage of sets (Likert, multiple choice)**: given its calibration set, a
split-conformal set covers a new item with probability ``C``, and ``C ~
Beta(k, n + 1 - k)`` with ``k = ceil((n + 1)(1 - alpha))`` for ``n``
calibration scores (Vovk 2012; Angelopoulos & Bates 2021, sec. 3.1; ties
only make ``C`` larger). The number of covered run items among ``m`` labeled
ones is then ``BetaBinomial(m, k, n + 1 - k)`` (exactly, under
exchangeability: the rank of each run item among the calibration scores),
so ``P(X <= covered)`` is a valid p-value for "the run's coverage fell below
the promise". The old ``Binom(m, 1 - alpha)`` test treated ``C`` as fixed at
``1 - alpha`` and alarmed on 21-34% of healthy runs at level 0.01 (issue 26).
Mondrian: each group's count is its own beta-binomial (groups are calibrated
on disjoint items); the test combines the sum law (the exact convolution of
the groups' laws, against an overall drop) and the smallest group p-value
(Bonferroni over groups, against one group's drop) by Bonferroni:
``p = min(1, 2 min(p_sum, G min_g p_g))``. Groups that predict the full range
cover always and are left out.

**Risk of a pairwise selective judge**: SCOPE's promise is on the expected
error among accepted pairs, so its calibration-conditional law is not a
closed form. The check is a permutation test of exchangeability between the
calibration pairs and the run's labeled pairs that re-runs the controller:
the statistic is ``T = sum_{run pairs accepted} (E_i - alpha)`` under the
threshold fitted on the calibration part; ``draws`` random re-splits of the
pooled pairs into a calibration part (same size) and a run part give
``T_b``; ``p = (1 + #{T_b >= T}) / (draws + 1)`` is valid for any number of
draws (the observed split is one more exchangeable draw).

**Label side**: the judge's residual against the human label may move while
its scores look ordinary (humans disagree differently on the run's items);
only labels from the run can see that. Residuals ``e = y - a - b f`` from
one least-squares line fitted on the calibration and run pairs together
(symmetric in the pool, so the permutation law is exact); statistic ``|mean
of the run's e - mean of the calibration's e|``; permutation p-value as
above. The power it had is reported as the shift of the mean residual it
detects with 80% power at its level (normal approximation,
``(z_{1-level/2} + z_{0.8}) sd(e) sqrt(1/n + 1/m)``; a test checks it by
simulation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import betabinom, norm

FloatArray = NDArray[np.float64]
#: Permutations of the permutation tests (the p-value is valid for any number; more only sharpens it).
DRAWS = 1999
#: Permutations of the risk test, each re-running the controller (fewer: each costs a sort of the calibration).
RISK_DRAWS = 999
#: Power at which the label check reports the shift it can detect.
POWER = 0.8
#: Most pooled items x draws held in memory at once by a permutation test.
_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class GroupCount:
    """One calibration group's covered run items: ``covered`` of ``m``, under a threshold set at ``rank`` of ``n``."""

    group: str
    covered: int
    m: int
    n: int
    rank: int

    @property
    def full_range(self) -> bool:
        return self.rank > self.n


def beta_binomial_pvalue(counts: Sequence[GroupCount]) -> dict[str, Any]:
    """P-value of the run's coverage against the calibration-conditional law (module docstring)."""
    tested = [c for c in counts if not c.full_range and c.m > 0]
    out: dict[str, Any] = {"test": "beta_binomial", "covered": sum(c.covered for c in counts),
                           "n": sum(c.m for c in counts)}
    if not tested:
        out.update(p_value=None, reason="every labeled item's set is the full range (too few calibration items)")
        return out
    per_group = {c.group: float(betabinom.cdf(c.covered, c.m, c.rank, c.n + 1 - c.rank)) for c in tested}
    if len(tested) == 1:
        out["p_value"] = next(iter(per_group.values()))
        return out
    pmf = np.ones(1)
    for c in tested:
        pmf = np.convolve(pmf, betabinom.pmf(np.arange(c.m + 1), c.m, c.rank, c.n + 1 - c.rank))
    p_sum = float(min(1.0, pmf[: sum(c.covered for c in tested) + 1].sum()))
    p_min = len(tested) * min(per_group.values())  # above 1 only where p_sum <= 1 is the smaller
    out.update(p_value=min(1.0, 2.0 * min(p_sum, p_min)), p_value_sum=p_sum, p_value_groups=per_group,
               combination="Bonferroni of the sum law and the smallest group p-value (times the groups)")
    return out


def _permutation_splits(size: int, draws: int, rng: np.random.Generator) -> Any:
    """Chunks of random permutations of ``range(size)`` (rows), ``draws`` rows in all."""
    rows = max(1, _CHUNK_CELLS // max(size, 1))
    done = 0
    while done < draws:
        k = min(rows, draws - done)
        yield rng.permuted(np.broadcast_to(np.arange(size), (k, size)), axis=1)
        done += k


def risk_permutation_test(
    u_cal: FloatArray, e_cal: NDArray[np.bool_], u_run: FloatArray, e_run: NDArray[np.bool_], *,
    controller: Any, alpha: float, signal: Any, draws: int = RISK_DRAWS, seed: int = 0,
) -> dict[str, Any]:
    """Permutation test of the run's error among accepted pairs, re-running ``controller`` (module docstring)."""
    n, m = u_cal.size, u_run.size
    u = np.concatenate([u_cal, u_run]).astype(np.float64)
    e = np.concatenate([e_cal, e_run]).astype(bool)

    def statistic(cal_idx: NDArray[np.intp], run_idx: NDArray[np.intp]) -> FloatArray:
        order = np.argsort(u[cal_idx], axis=1, kind="stable")
        cu, ce = np.take_along_axis(u[cal_idx], order, axis=1), np.take_along_axis(e[cal_idx], order, axis=1)
        lam = np.asarray(controller.thresholds(cu, ce, alpha, signal), dtype=np.float64)
        accepted = u[run_idx] <= lam[:, None]
        out: FloatArray = ((e[run_idx] - alpha) * accepted).sum(axis=1)
        return out

    observed = float(statistic(np.arange(n)[None, :], np.arange(n, n + m)[None, :])[0])
    rng = np.random.default_rng(seed)
    exceed = 0
    for perm in _permutation_splits(n + m, draws, rng):
        exceed += int((statistic(perm[:, :n], perm[:, n:]) >= observed - 1e-12).sum())
    return {"test": "permutation (controller re-run)", "draws": draws, "statistic": observed,
            "p_value": (1 + exceed) / (draws + 1)}


def label_shift_test(
    y_cal: FloatArray, f_cal: FloatArray, y_run: FloatArray, f_run: FloatArray, *,
    level: float, draws: int = DRAWS, seed: int = 0,
) -> dict[str, Any]:
    """Exact two-sample permutation test of the judge's residuals, run against calibration (module docstring)."""
    n, m = y_cal.size, y_run.size
    y = np.concatenate([y_cal, y_run]).astype(np.float64)
    f = np.concatenate([f_cal, f_run]).astype(np.float64)
    var_f = float(np.var(f))
    slope = float(np.mean((f - f.mean()) * (y - y.mean())) / var_f) if var_f > 0 else 0.0
    resid = y - (y.mean() + slope * (f - f.mean()))
    total = float(resid.sum())
    run_sum = float(resid[n:].sum())

    def gap(sum_run: Any) -> Any:
        return np.abs(sum_run / m - (total - sum_run) / n)

    observed = float(gap(run_sum))
    rng = np.random.default_rng(seed)
    exceed = 0
    for perm in _permutation_splits(n + m, draws, rng):
        exceed += int((gap(resid[perm[:, n:]].sum(axis=1)) >= observed - 1e-12).sum())
    p = (1 + exceed) / (draws + 1)
    sd = float(np.std(resid, ddof=1)) if resid.size > 1 else 0.0
    detectable = (float(norm.ppf(1 - level / 2)) + float(norm.ppf(POWER))) * sd * math.sqrt(1 / n + 1 / m)
    return {
        "test": "permutation (residuals of the judge's proxy)", "draws": draws, "level": level,
        "n_calibration": int(n), "n_run": int(m), "slope": slope,
        "mean_residual_calibration": float(resid[:n].mean()), "mean_residual_run": float(resid[n:].mean()),
        "shift": float(resid[n:].mean() - resid[:n].mean()), "p_value": p, "shift_detected": bool(p < level),
        "detectable_shift": detectable, "power": POWER,
    }
