"""PPI++ against references computed another way (issue 37): exact moments by enumeration, the paper's closed form.

The estimator is checked through the public :func:`judgecp.stats.ppi.ppi_mean` only (no helper of its
module), so the checks hold whatever computes it.

**Enumeration.** Labeled pairs ``(Y, f)`` are drawn with replacement from a small population ``P`` and
unlabeled proxies ``g`` from a population ``Q``; with ``lam`` fixed, every possible sample (all
``|P|^n |Q|^N`` of them, each equally likely) is run through ``ppi_mean``, so the averages below are the
exact expectations, with no sampling error:

* ``E[theta_hat] = E_P[Y] + lam (E_Q[g] - E_P[f])`` (the estimate is linear in the sample means);
* ``Var[theta_hat] = Var_P(Y - lam f) / n + lam^2 Var_Q(g) / N`` (independent means), which the spread of the
  enumerated estimates must equal;
* the reported variance ``se^2`` estimates it: with the unbiased sample variances (ddof 1, judgecp's
  ``small-sample`` conventions) ``E[se^2] = Var[theta_hat]`` exactly; with ppi-python's (ddof 0) each term
  is shrunk by ``(k - 1)/k`` for its ``k`` items. Using ``lam`` where ``lam^2`` belongs (the unlabeled
  term) doubles that term at ``lam = 0.5``; the check fails by far more than rounding.

Stratified: the same within two strata of fixed sizes, combined with the shares ``w_h = (n_h + N_h) /
(n + N)``: ``E[theta_hat] = sum_h w_h E_h`` and ``E[se^2] = sum_h w_h^2 E[se_h^2]``.

**Closed form.** The power-tuned ``lam`` minimises the estimated variance (Angelopoulos, Duchi & Zrnic
2023, Example 1): ppi-python's ``cov(Y, f) / ((1 + n/N) s2_f)`` (``s2_f`` on all ``n + N`` proxies) in
its conventions, the least-squares ``(cov(Y, f)/n) / (s2_f/n + s2_g/N)`` with ddof 1 in the
small-sample ones; both clipped to [0, 1].

Which conventions ``ppi_mean`` has is read from its signature (a ``conventions`` keyword, or
ppi-python's alone): each one it has is checked against its own formulas.
"""

from __future__ import annotations

import inspect
import itertools
import math
from typing import Any

import numpy as np
import pytest

from judgecp.stats.ppi import ppi_mean

#: A labeled population: (human label Y, judge proxy f); and an unlabeled population of proxies g
#: (disjoint from the f values: no sample has a constant proxy, which an estimator may treat apart).
LABELED = np.array([[1.0, 0.2], [3.0, 1.5], [2.0, 1.1]])
UNLABELED = np.array([2.5, 4.0])


def conventions() -> list[str]:
    """The variance conventions ``ppi_mean`` offers: ``ppi-python`` (ddof 0, normal quantile) always."""
    parameter = inspect.signature(ppi_mean).parameters.get("conventions")
    if parameter is None:
        return ["ppi-python"]
    return ["ppi-python", "small-sample"]


def run(y: Any, f: Any, g: Any, convention: str, **options: Any) -> dict[str, Any]:
    if "conventions" in inspect.signature(ppi_mean).parameters:
        options["conventions"] = convention
    return ppi_mean(y, f, g, **options)


def shrink(k: int, convention: str) -> float:
    """``E[s2] / sigma^2`` of the variance estimate over ``k`` items."""
    return (k - 1) / k if convention == "ppi-python" else 1.0


def population_var(values: np.ndarray) -> float:
    return float(np.mean((values - values.mean()) ** 2))


def samples(population: np.ndarray, size: int) -> list[np.ndarray]:
    """Every ordered sample of ``size`` draws with replacement (all equally likely)."""
    return [population[list(index)] for index in itertools.product(range(len(population)), repeat=size)]


def enumerate_estimates(convention: str, lam: float, n: int, big_n: int,
                        strata: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PPI++ means, their ``se^2``, and the labeled-only ``se^2``, over every sample (``strata`` copies of the
    design, stratum ``h`` with its populations shifted by ``h``: different means and one shared spread)."""
    per_stratum = [[(lab + h, unl + h) for lab in samples(LABELED, n) for unl in samples(UNLABELED, big_n)]
                   for h in range(strata)]
    means, variances, labeled = [], [], []
    for combo in itertools.product(*per_stratum):
        y = np.concatenate([lab[:, 0] for lab, _ in combo])
        f = np.concatenate([lab[:, 1] for lab, _ in combo])
        g = np.concatenate([unl for _, unl in combo])
        options: dict[str, Any] = {"lam": lam}
        if strata > 1:
            options["groups_labeled"] = np.repeat([f"s{h}" for h in range(strata)], n)
            options["groups_unlabeled"] = np.repeat([f"s{h}" for h in range(strata)], big_n)
        out = run(y, f, g, convention, **options)["estimate"]
        means.append(out["ppi"]["mean"])
        variances.append(out["ppi"]["se"] ** 2)
        labeled.append(out["labeled_only"]["se"] ** 2)
    return np.asarray(means), np.asarray(variances), np.asarray(labeled)


@pytest.mark.parametrize("convention", conventions())
@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_moments_by_enumeration(convention: str, lam: float) -> None:
    n, big_n = 3, 4
    means, variances, labeled = enumerate_estimates(convention, lam, n, big_n)
    y, f = LABELED[:, 0], LABELED[:, 1]
    expected_mean = y.mean() + lam * (UNLABELED.mean() - f.mean())
    labeled_term, unlabeled_term = population_var(y - lam * f) / n, lam**2 * population_var(UNLABELED) / big_n
    assert means.mean() == pytest.approx(expected_mean, rel=1e-12)
    assert population_var(means) == pytest.approx(labeled_term + unlabeled_term, rel=1e-10)
    expected_se2 = shrink(n, convention) * labeled_term + shrink(big_n, convention) * unlabeled_term
    assert variances.mean() == pytest.approx(expected_se2, rel=1e-10)
    assert labeled.mean() == pytest.approx(shrink(n, convention) * population_var(y) / n, rel=1e-10)
    if convention == "small-sample":  # unbiased: the reported variance is the estimate's variance on average
        assert variances.mean() == pytest.approx(population_var(means), rel=1e-10)


@pytest.mark.parametrize("convention", conventions())
def test_stratified_moments_by_enumeration(convention: str) -> None:
    lam, n, big_n = 0.5, 2, 2
    means, variances, _ = enumerate_estimates(convention, lam, n, big_n, strata=2)
    w = (n + big_n) / (2 * (n + big_n))  # two strata of equal size
    expected_mean = sum(w * ((LABELED[:, 0] + h).mean() + lam * ((UNLABELED + h).mean() - (LABELED[:, 1] + h).mean()))
                        for h in range(2))
    stratum_se2 = (shrink(n, convention) * population_var(LABELED[:, 0] - lam * LABELED[:, 1]) / n
                   + shrink(big_n, convention) * lam**2 * population_var(UNLABELED) / big_n)
    assert means.mean() == pytest.approx(expected_mean, rel=1e-12)
    assert variances.mean() == pytest.approx(2 * w**2 * stratum_se2, rel=1e-10)


def closed_form(y: np.ndarray, f: np.ndarray, g: np.ndarray, convention: str) -> tuple[float, float]:
    """The power-tuned ``lam`` (clipped) and the variance at it, from the paper's formulas (module docstring)."""
    n, big_n = y.size, g.size
    ddof = 0 if convention == "ppi-python" else 1
    cov = float(np.sum((y - y.mean()) * (f - f.mean()))) / (n - ddof)
    if convention == "ppi-python":
        lam = cov / ((1 + n / big_n) * float(np.var(np.concatenate([f, g]), ddof=1)))
    else:
        lam = (cov / n) / (float(np.var(f, ddof=1)) / n + float(np.var(g, ddof=1)) / big_n)
    lam = min(max(lam, 0.0), 1.0)
    var = float(np.var(y - lam * f, ddof=ddof)) / n + lam**2 * float(np.var(g, ddof=ddof)) / big_n
    return lam, var


@pytest.mark.parametrize("convention", conventions())
@pytest.mark.parametrize("seed", range(6))
def test_power_tuned_lambda_and_variance_are_the_closed_form(convention: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(5, 60)), int(rng.integers(5, 400))
    y = rng.normal(3.0, 1.0, n)
    slope = [0.9, 0.4, 0.05, -0.5, 2.0, 0.7][seed]  # a good, a weak, a useless, a reversed, an inflated judge
    f = 3.3 + slope * (y - 3.0) + rng.normal(0, 0.6, n)
    g = 3.3 + rng.normal(0, math.hypot(slope, 0.6), big_n)
    out = run(y, f, g, convention, alpha=0.1)
    lam, var = closed_form(y, f, g, convention)
    assert out["lambda"] == pytest.approx(lam, rel=1e-9, abs=1e-12)
    assert out["estimate"]["ppi"]["mean"] == pytest.approx(y.mean() + lam * (g.mean() - f.mean()), rel=1e-12)
    assert out["estimate"]["ppi"]["se"] == pytest.approx(math.sqrt(var), rel=1e-9)


def test_the_interval_is_the_mean_plus_minus_the_normal_quantile_in_ppi_python_conventions() -> None:
    rng = np.random.default_rng(3)
    y, f, g = rng.normal(size=40), rng.normal(size=40), rng.normal(size=300)
    out = run(y + f, f, g, "ppi-python", alpha=0.05)["estimate"]
    for name in ("ppi", "labeled_only", "judge_only"):
        e = out[name]
        assert e["upper"] - e["mean"] == pytest.approx(1.959963984540054 * e["se"], rel=1e-12)
        assert e["mean"] - e["lower"] == pytest.approx(1.959963984540054 * e["se"], rel=1e-12)
