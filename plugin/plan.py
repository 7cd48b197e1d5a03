"""How many labels give a target interval half-width, with PPI++ and with labels alone (``judgecp plan``).

From ``m`` labeled pairs ``(Y, f)`` (a calibrator's PPI pairs, or a pilot's
labeled items): the label's variance ``s2_Y``, the proxy's ``s2_f`` and their
correlation ``rho``. With ``n`` labels and ``N`` unlabeled items, PPI++'s
variance at its power-tuned ``lam = rho s_Y / (s_f (1 + n/N))`` (clipped to
[0, 1], as :func:`judgecp.ppi.ppi_mean` does) is

    var(n) = (s2_Y - 2 lam cov + lam^2 s2_f) / n + lam^2 s2_f / N
           = s2_Y (1 - rho^2 / (1 + n/N)) / n          (lam not clipped),

and labels alone give ``s2_Y / n``. The plan is the smallest ``n`` with
``z_{1-alpha/2} sqrt(var(n)) <= half_width``. ``N`` unbounded is PPI++'s
limit ``s2_Y (1 - rho^2) / n``.

The pilot's ``s2_Y`` and ``rho`` are estimates: planned at their values, the
interval is as wide as asked only half of the time. So the counts in
``labels`` plan at ``confidence`` (default 0.9) bounds: the one-sided
chi-square upper bound of ``s2_Y`` and the Fisher-z lower bound of ``rho``
(at 0 when it goes below); ``labels_at_estimates`` plans at the point
estimates. Assumed: tonight's items are like the pilot's (the same judge,
a similar population); a different run changes ``s2_Y`` and ``rho``. The
half-width is Student's ``t_{n-1}`` quantile times the standard error, as
``judgecp estimate`` reports it.

Clustered labels (``clusters``: several answers to one prompt, turns of one
conversation, labeled together): the labels of a cluster are correlated and
each counts for less than an independent one. The pilot's *design effects*,
its cluster-robust variance of the mean over the independent one (of the
labels, for labels alone; of the residual ``Y - lam f`` at the pilot's
``lam``, for PPI++'s labeled term; of the proxy, for its unlabeled term),
multiply the variances above. Assumed: the run's labels come in clusters
like the pilot's (their sizes and within-cluster correlation).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import chi2, norm

from judgecp.active import clustered_variance
from judgecp.conformal import check_alpha
from judgecp.errors import InputError
from judgecp.ppi import quantile

FloatArray = NDArray[np.float64]
#: The schema name of :func:`plan`'s result (``judgecp plan --json``).
SCHEMA = "judgecp.plan/1"
#: The largest label count a plan searches; beyond it the plan says it is not reachable.
MAX_LABELS = 10_000_000


def ppi_variance(n: int, *, sd_y: float, sd_f: float, rho: float, n_unlabeled: float,
                 design_effect: tuple[float, float] = (1.0, 1.0)) -> float:
    """PPI++'s variance with ``n`` labels and ``n_unlabeled`` items (``math.inf``: unbounded), lam clipped to [0, 1];
    ``design_effect`` multiplies its labeled and unlabeled terms (clusters, module docstring)."""
    ratio = 0.0 if math.isinf(n_unlabeled) else n / n_unlabeled
    cov = rho * sd_y * sd_f
    lam = 0.0 if sd_f == 0 else min(max(cov / (sd_f**2 * (1.0 + ratio)), 0.0), 1.0)
    extra = 0.0 if math.isinf(n_unlabeled) else lam**2 * sd_f**2 / n_unlabeled
    return design_effect[0] * (sd_y**2 - 2 * lam * cov + lam**2 * sd_f**2) / n + design_effect[1] * extra


def smallest_n(variance: Any, half_width: float, alpha: float) -> int | None:
    """The smallest ``n >= 2`` with ``t_{n-1} sqrt(variance(n)) <= half_width`` (``variance`` decreasing), else
    ``None``."""
    def ok(n: int) -> bool:
        return bool(quantile(alpha, n - 1) * math.sqrt(max(variance(n), 0.0)) <= half_width)

    hi = 2
    while not ok(hi):
        hi *= 2
        if hi > MAX_LABELS:
            return None
    lo = hi // 2
    if lo < 2 or ok(lo):
        return max(2, lo) if ok(max(2, lo)) else hi
    while hi - lo > 1:  # ok(hi), not ok(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def relationship(y: FloatArray, f: FloatArray, *, confidence: float = 0.9) -> dict[str, Any]:
    """The judge-human relationship of labeled pairs: standard deviations, correlation, and ``confidence`` bounds."""
    y, f = np.asarray(y, dtype=np.float64), np.asarray(f, dtype=np.float64)
    m = y.size
    if m < 4:
        raise InputError(f"a plan needs at least 4 labeled items with a judge proxy, got {m}")
    if not (np.isfinite(y).all() and np.isfinite(f).all()):
        raise InputError("a plan needs finite labels and proxies")
    if not 0.5 <= confidence < 1:
        raise InputError(f"--confidence must be in [0.5, 1), got {confidence}")
    sd_y, sd_f = float(np.std(y, ddof=1)), float(np.std(f, ddof=1))
    rho = 0.0 if sd_y == 0 or sd_f == 0 else float(np.corrcoef(y, f)[0, 1])
    sd_y_upper = math.sqrt((m - 1) * sd_y**2 / float(chi2.ppf(1.0 - confidence, m - 1)))
    z = float(norm.ppf(confidence))
    rho_lower = math.tanh(math.atanh(min(max(rho, -0.999999), 0.999999)) - z / math.sqrt(m - 3)) if m > 3 else 0.0
    return {"n_pairs": m, "mean_label": float(y.mean()), "mean_proxy": float(f.mean()), "sd_label": sd_y,
            "sd_proxy": sd_f, "correlation": rho, "confidence": confidence, "sd_label_upper": sd_y_upper,
            "correlation_lower": max(rho_lower, 0.0)}


def design_effects(y: FloatArray, f: FloatArray, clusters: NDArray[Any]) -> dict[str, Any]:
    """The pilot's design effects (module docstring): of the labels, of PPI++'s residual, of the proxy."""
    y, f = np.asarray(y, dtype=np.float64), np.asarray(f, dtype=np.float64)
    units = np.asarray(clusters)
    g = np.unique(units).size
    if g < 2:
        raise InputError(f"--cluster: the pilot's labeled items are in {g} cluster; design effects need 2 or more")
    var_f = float(np.var(f, ddof=1))
    lam = 0.0 if var_f == 0 else min(max(float(np.cov(y, f)[0, 1]) / var_f, 0.0), 1.0)

    def effect(z: FloatArray) -> float:
        iid = float(np.var(z, ddof=1)) / z.size
        return 1.0 if iid == 0 else clustered_variance(z, units) / iid

    return {"labels": effect(y), "residual": effect(y - lam * f), "proxy": effect(f), "n_clusters": g,
            "mean_cluster_size": y.size / g}


def plan(y: FloatArray, f: FloatArray, half_width: float, *, alpha: float = 0.1, n_unlabeled: float = math.inf,
         confidence: float = 0.9, source: str = "", clusters: NDArray[Any] | None = None) -> dict[str, Any]:
    """Label counts for ``half_width`` (module docstring): ``labels.ppi``, ``labels.labeled_only`` and what was assumed;
    ``clusters`` (the pilot's labeled items' clusters) for the design effects; ``degenerate`` says why a plan
    means nothing (a pilot whose labels or proxies have no spread)."""
    alpha = check_alpha(alpha)
    if not (math.isfinite(half_width) and half_width > 0):
        raise InputError(f"--half-width must be a positive number, got {half_width}")
    if not (n_unlabeled > 0):
        raise InputError(f"--unlabeled must be a positive count, got {n_unlabeled}")
    rel = relationship(y, f, confidence=confidence)
    deff = None if clusters is None else design_effects(y, f, clusters)
    labels_deff = 1.0 if deff is None else deff["labels"]
    ppi_deff = (1.0, 1.0) if deff is None else (deff["residual"], deff["proxy"])

    def counts(sd_y: float, rho: float) -> dict[str, int | None]:
        def ppi(n: int) -> float:
            return ppi_variance(n, sd_y=sd_y, sd_f=rel["sd_proxy"], rho=rho, n_unlabeled=n_unlabeled,
                                design_effect=ppi_deff)

        return {"ppi": smallest_n(ppi, half_width, alpha),
                "labeled_only": smallest_n(lambda n: labels_deff * sd_y**2 / n, half_width, alpha)}

    labels = counts(rel["sd_label_upper"], rel["correlation_lower"])
    out: dict[str, Any] = {
        "schema": SCHEMA, "half_width": half_width, "alpha": alpha, "labels": labels,
        "labels_at_estimates": counts(rel["sd_label"], rel["correlation"]),
        "assumed": {**rel, "n_unlabeled": None if math.isinf(n_unlabeled) else int(n_unlabeled), "from": source},
    }
    if deff is not None:
        out["assumed"]["design_effect"] = deff
    if labels["ppi"] and labels["labeled_only"]:
        out["label_saving"] = 1.0 - labels["ppi"] / labels["labeled_only"]
    out["curve"] = width_curve(rel, alpha=alpha, n_unlabeled=n_unlabeled, design_effect=(labels_deff, *ppi_deff))
    out["degenerate"] = degenerate_pilot(y, f)
    return out


def degenerate_pilot(y: FloatArray, f: FloatArray) -> list[str]:
    """Why a pilot cannot plan: labels without spread (every count is 2), proxies without spread."""
    notes = []
    if float(np.ptp(y)) == 0.0:
        notes.append(f"the pilot's {y.size} labels are all {y[0]:g} (no spread): any count gives a zero-width plan")
    if float(np.ptp(f)) == 0.0:
        notes.append(f"the pilot's judge proxy has no spread (every proxy {f[0]:g}): its correlation is unknown")
    return notes


def width_curve(rel: dict[str, Any], *, alpha: float, n_unlabeled: float, points: int = 24,
                design_effect: tuple[float, float, float] = (1.0, 1.0, 1.0)) -> dict[str, list[float]]:
    """Expected half-widths against the number of labels (at the conservative bounds), for the figure."""
    top = 20_000 if math.isinf(n_unlabeled) else max(20, int(n_unlabeled))
    ns = sorted({int(v) for v in np.geomspace(10, top, points)})
    sd_y, rho = rel["sd_label_upper"], rel["correlation_lower"]
    return {"labels": [float(n) for n in ns],
            "ppi": [quantile(alpha, n - 1) * math.sqrt(ppi_variance(
                n, sd_y=sd_y, sd_f=rel["sd_proxy"], rho=rho, n_unlabeled=n_unlabeled,
                design_effect=design_effect[1:])) for n in ns],
            "labeled_only": [quantile(alpha, n - 1) * sd_y * math.sqrt(design_effect[0] / n) for n in ns]}
