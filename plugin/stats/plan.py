"""How many labels give a target interval half-width, with PPI++ and with labels alone (``judgecp plan``).

From ``m`` labeled pairs ``(Y, f)`` (a calibrator's PPI pairs, or a pilot's
labeled items): the label's variance ``s2_Y``, the proxy's ``s2_f`` and their
correlation ``rho``. With ``n`` labels and ``N`` unlabeled items, PPI++'s
variance at its power-tuned ``lam = rho s_Y / (s_f (1 + n/N))`` (clipped to
[0, 1], as :func:`judgecp.stats.ppi.ppi_mean` does) is

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
a similar population); a different run changes ``s2_Y`` and ``rho``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import chi2, norm

from judgecp.base.errors import InputError
from judgecp.stats.conformal import check_alpha

FloatArray = NDArray[np.float64]
#: The schema name of :func:`plan`'s result (``judgecp plan --json``).
SCHEMA = "judgecp.plan/1"
#: The largest label count a plan searches; beyond it the plan says it is not reachable.
MAX_LABELS = 10_000_000


def ppi_variance(n: int, *, sd_y: float, sd_f: float, rho: float, n_unlabeled: float) -> float:
    """PPI++'s variance with ``n`` labels and ``n_unlabeled`` items (``math.inf``: unbounded), lam clipped to [0, 1]."""
    ratio = 0.0 if math.isinf(n_unlabeled) else n / n_unlabeled
    cov = rho * sd_y * sd_f
    lam = 0.0 if sd_f == 0 else min(max(cov / (sd_f**2 * (1.0 + ratio)), 0.0), 1.0)
    extra = 0.0 if math.isinf(n_unlabeled) else lam**2 * sd_f**2 / n_unlabeled
    return (sd_y**2 - 2 * lam * cov + lam**2 * sd_f**2) / n + extra


def smallest_n(variance: Any, half_width: float, z: float) -> int | None:
    """The smallest ``n >= 2`` with ``z sqrt(variance(n)) <= half_width`` (``variance`` decreasing), else ``None``."""
    def ok(n: int) -> bool:
        return bool(z * math.sqrt(max(variance(n), 0.0)) <= half_width)

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


def plan(y: FloatArray, f: FloatArray, half_width: float, *, alpha: float = 0.1, n_unlabeled: float = math.inf,
         confidence: float = 0.9, source: str = "") -> dict[str, Any]:
    """Label counts for ``half_width`` (module docstring): ``labels.ppi``, ``labels.labeled_only`` and what was assumed."""
    alpha = check_alpha(alpha)
    if not (math.isfinite(half_width) and half_width > 0):
        raise InputError(f"--half-width must be a positive number, got {half_width}")
    if not (n_unlabeled > 0):
        raise InputError(f"--unlabeled must be a positive count, got {n_unlabeled}")
    rel = relationship(y, f, confidence=confidence)
    z = float(norm.ppf(1.0 - alpha / 2.0))

    def counts(sd_y: float, rho: float) -> dict[str, int | None]:
        def ppi(n: int) -> float:
            return ppi_variance(n, sd_y=sd_y, sd_f=rel["sd_proxy"], rho=rho, n_unlabeled=n_unlabeled)

        return {"ppi": smallest_n(ppi, half_width, z), "labeled_only": smallest_n(lambda n: sd_y**2 / n, half_width, z)}

    labels = counts(rel["sd_label_upper"], rel["correlation_lower"])
    out: dict[str, Any] = {
        "schema": SCHEMA, "half_width": half_width, "alpha": alpha, "labels": labels,
        "labels_at_estimates": counts(rel["sd_label"], rel["correlation"]),
        "assumed": {**rel, "n_unlabeled": None if math.isinf(n_unlabeled) else int(n_unlabeled), "from": source},
    }
    if labels["ppi"] and labels["labeled_only"]:
        out["label_saving"] = 1.0 - labels["ppi"] / labels["labeled_only"]
    out["curve"] = width_curve(rel, alpha=alpha, n_unlabeled=n_unlabeled)
    return out


def width_curve(rel: dict[str, Any], *, alpha: float, n_unlabeled: float, points: int = 24) -> dict[str, list[float]]:
    """Expected half-widths against the number of labels (at the conservative bounds), for the figure."""
    z = float(norm.ppf(1.0 - alpha / 2.0))
    top = 20_000 if math.isinf(n_unlabeled) else max(20, int(n_unlabeled))
    ns = sorted({int(v) for v in np.geomspace(10, top, points)})
    sd_y, rho = rel["sd_label_upper"], rel["correlation_lower"]
    return {"labels": [float(n) for n in ns],
            "ppi": [z * math.sqrt(ppi_variance(n, sd_y=sd_y, sd_f=rel["sd_proxy"], rho=rho, n_unlabeled=n_unlabeled))
                    for n in ns],
            "labeled_only": [z * sd_y / math.sqrt(n) for n in ns]}
