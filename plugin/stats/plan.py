"""How many labels give a target interval half-width, with PPI++ and with labels alone (``judgecp plan``).

From ``m`` labeled pairs ``(Y, f)`` (a calibrator's PPI pairs, or a pilot's
labeled items): the label's variance ``s2_Y``, the proxy's ``s2_f`` and their
correlation ``rho``. With ``n`` labels and ``N`` unlabeled items, PPI++'s
variance at its power-tuned ``lam = rho s_Y / (s_f (1 + n/N))`` (clipped to
[0, 1], as :func:`judgecp.stats.ppi.ppi_mean` does) is

    var(n) = (s2_Y - 2 lam cov + lam^2 s2_f) / n + lam^2 s2_f / N
           = s2_Y (1 - rho^2 / (1 + n/N)) / n          (lam not clipped),

and labels alone give ``s2_Y / n``. The plan is the smallest ``n`` with
``t_{n-1} sqrt(var(n)) <= half_width`` (Student's quantile, below). ``N``
unbounded is PPI++'s limit ``s2_Y (1 - rho^2) / n``.

The pilot's ``s2_Y`` and ``rho`` are estimates: planned at their values, the
interval is as wide as asked only half of the time. So the counts in
``labels`` plan at ``confidence`` (default 0.9) bounds: the one-sided
chi-square upper bound of ``s2_Y`` and the Fisher-z lower bound of ``rho``
(at 0 when it goes below); ``labels_at_estimates`` plans at the point
estimates. Those bounds cover the pilot's sampling error of ``s2_Y`` and
``rho`` only, not a run unlike the pilot: tonight's items are assumed to be
like the pilot's (the same judge, a similar population). Given the run
(``run_proxy``), the plan uses its size and its proxy's variance and checks
that assumption where it can, on the judge's scores: a two-sample
Kolmogorov-Smirnov test of the pilot's proxies against the run's at level
:data:`MISMATCH_LEVEL` (:func:`proxy_check`). When they differ the plan is
refused, naming the difference (or, with ``mismatch="warn"``, made with a
warning): a pilot of other items does not say how the judge relates to the
humans on the run's. Reweighting the pilot to the run's proxy distribution
does not rescue it: on LLaVA-Critic, with the first 400 rows of a file
sorted by task as the pilot (two tasks), it planned 217 labels (218 with
the t quantile) for a half-width of 0.1 that 0.13 was achieved with, and reweighting by proxy
decile made the correlation it assumed larger, not smaller (0.46 to 0.62,
against 0.41 on the run): the tasks differ in how the judge errs, not only
in their mix of scores. With clusters
(below) the test counts the pilot's and the run's clusters: each sample's
size is divided by the design effect of its judge scores' ranks. A pilot
of 40 prompts x 8 answers is not 320 independent items: checked as if it
were, 16% of such pilots of the run's own population are refused at level
0.01, counting the clusters 0.3% (docs/benchmarks.md).

The half-width is Student's ``t_{n-1}`` quantile times the standard error,
as ``judgecp estimate`` reports it.

Clustered labels (``clusters``: several answers to one prompt, turns of one
conversation, labeled together): the labels of a cluster are correlated and
each counts for less than an independent one. The pilot's *design effects*,
its cluster-robust variance of the mean over the independent one (of the
labels, for labels alone; of the residual ``Y - lam f`` at the pilot's
``lam``, for PPI++'s labeled term; of the proxy, for its unlabeled term,
measured on the run itself when it is given with its clusters), multiply the
variances above. Assumed: the run's labels come in clusters like the
pilot's (their sizes and within-cluster correlation).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import chi2, ks_2samp, kstwo, norm, rankdata

from judgecp.base.errors import InputError
from judgecp.stats.conformal import check_alpha
from judgecp.stats.ppi import quantile
from judgecp.stats.ppi_design import clustered_variance

FloatArray = NDArray[np.float64]
#: The schema name of :func:`plan`'s result (``judgecp plan --json``).
SCHEMA = "judgecp.plan/1"
#: The largest label count a plan searches; beyond it the plan says it is not reachable.
MAX_LABELS = 10_000_000
#: Level of the two-sample test of the pilot's judge scores against the run's (``apply``'s drift test has it too).
MISMATCH_LEVEL = 0.01
#: What the confidence of a plan's bounds covers (printed and written).
CONFIDENCE_COVERS = ("the pilot's sampling error of the label sd (chi-square bound) and of the correlation "
                     "(Fisher-z bound); not a run unlike the pilot")


def proxy_check(f_pairs: FloatArray, f_run: FloatArray, *, level: float = MISMATCH_LEVEL,
                clusters_pairs: NDArray[Any] | None = None, clusters_run: NDArray[Any] | None = None) -> dict[str, Any]:
    """Are the labeled pairs' judge scores like the run's? A two-sample Kolmogorov-Smirnov test of the proxies.

    ``mismatch`` is true when ``p < level``: under the hypothesis that the pairs
    are a sample of the run's population, it is so with probability at most
    ``level``. ``message`` says it in one phrase, with the medians. With
    clusters (either sample's), each sample counts as its size over its
    design effect (:func:`rank_design_effect`) in the asymptotic p-value.
    """
    a = np.asarray(f_pairs, dtype=np.float64)
    b = np.asarray(f_run, dtype=np.float64)
    keep_a, keep_b = np.isfinite(a), np.isfinite(b)
    a, b = a[keep_a], b[keep_b]
    if a.size == 0 or b.size == 0:
        raise InputError("no judge scores to compare the labeled items with the run")
    with warnings.catch_warnings():  # tied values: scipy falls back to the asymptotic p-value and says so
        warnings.filterwarnings("ignore", message="ks_2samp: Exact calculation unsuccessful")
        res = ks_2samp(a, b)
    p = float(res.pvalue)
    effects = None
    if clusters_pairs is not None or clusters_run is not None:
        ranks = rankdata(np.concatenate([a, b]))
        effects = [1.0 if c is None else rank_design_effect(r, np.asarray(c)[k])
                   for r, c, k in ((ranks[:a.size], clusters_pairs, keep_a), (ranks[a.size:], clusters_run, keep_b))]
        n_a, n_b = a.size / effects[0], b.size / effects[1]
        p = float(kstwo.sf(float(res.statistic), max(1, round(n_a * n_b / (n_a + n_b)))))
    mismatch = p < level
    med_a, med_b = float(np.median(a)), float(np.median(b))
    message = (f"KS p = {p:.2g} {'<' if mismatch else '>='} {level:g}; median judge score {med_a:.3f} on the "
               f"{a.size} labeled items, {med_b:.3f} on the run's {b.size}")
    out = {"test": "ks_2samp", "statistic_of": "the judge's proxy", "level": level, "statistic": float(res.statistic),
           "p_value": p, "mismatch": mismatch, "median_pairs": med_a, "median_run": med_b, "n_pairs": int(a.size),
           "n_run": int(b.size), "message": message}
    if effects is not None:
        out["design_effect"] = {"pairs": effects[0], "run": effects[1]}
    return out


def rank_design_effect(ranks: FloatArray, clusters: NDArray[Any]) -> float:
    """A sample's design effect for the KS test: of the mean of its judge scores' ranks, at least 1."""
    return max(cluster_effect(ranks, clusters), 1.0) if ranks.size > 1 else 1.0


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
    if sd_y == 0:
        raise InputError(f"every label is {y[0]:g}: labels without spread say nothing of the label's variance (a plan "
                         "from them would ask for 2 labels)")
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
    return {"labels": cluster_effect(y, units), "residual": cluster_effect(y - lam * f, units),
            "proxy": cluster_effect(f, units), "n_clusters": g, "mean_cluster_size": y.size / g}


def cluster_effect(z: FloatArray, clusters: NDArray[Any]) -> float:
    """The cluster-robust variance of the mean of ``z`` over the independent one (1 when ``z`` has no spread)."""
    iid = float(np.var(z, ddof=1)) / z.size
    return 1.0 if iid == 0 else clustered_variance(z, clusters) / iid


def plan(y: FloatArray, f: FloatArray, half_width: float, *, alpha: float = 0.1, n_unlabeled: float = math.inf,
         confidence: float = 0.9, source: str = "", run_proxy: FloatArray | None = None, run_source: str = "the run",
         mismatch: str = "refuse", clusters: NDArray[Any] | None = None,
         run_clusters: NDArray[Any] | None = None) -> dict[str, Any]:
    """Label counts for ``half_width`` (module docstring): ``labels.ppi``, ``labels.labeled_only`` and what was assumed.

    ``run_proxy``: the judge's proxy on every item of the run to plan for; its
    variance replaces the pilot's, and the pilot is checked against it
    (:func:`proxy_check`): a mismatch is refused (``mismatch="refuse"``) or
    planned with a warning (``"warn"``). ``clusters`` (the pilot's labeled
    items' clusters) give the design effects, ``run_clusters`` (the run's
    items') the proxy's on the run; both enter the check. ``degenerate`` says
    why a plan means nothing (a pilot whose proxies have no spread; labels
    without spread are refused).
    """
    alpha = check_alpha(alpha)
    if not (math.isfinite(half_width) and half_width > 0):
        raise InputError(f"--half-width must be a positive number, got {half_width}")
    if not (n_unlabeled > 0):
        raise InputError(f"--unlabeled must be a positive count, got {n_unlabeled}")
    if mismatch not in ("refuse", "warn"):
        raise InputError(f"--mismatch must be refuse or warn, got {mismatch!r}")
    rel = relationship(y, f, confidence=confidence)
    deff = None if clusters is None else design_effects(y, f, clusters)
    sd_f, run, warned = rel["sd_proxy"], None, []
    if run_proxy is not None:
        run_proxy = np.asarray(run_proxy, dtype=np.float64)
        check = proxy_check(f, run_proxy, clusters_pairs=clusters, clusters_run=run_clusters)
        if check["mismatch"]:
            what = f"the judge scores of {source or 'the labeled items'} are unlike {run_source}'s ({check['message']})"
            if mismatch == "refuse":
                raise InputError(f"{what}: a plan from them would assume the run is like them; label a random sample "
                                 "of the run and plan from it (or --mismatch warn)")
            warned.append(f"{what}: the plan assumes the run is like them and may well be optimistic")
        sd_f = float(np.std(run_proxy, ddof=1)) if run_proxy.size > 1 else sd_f
        run = {"from": run_source, "n_items": int(run_proxy.size), "sd_proxy": sd_f,
               "mean_proxy": float(np.mean(run_proxy)), "check": check}
        if deff is not None and run_clusters is not None and run_proxy.size > 1:
            deff = {**deff, "proxy": cluster_effect(run_proxy, np.asarray(run_clusters)), "proxy_from": run_source}
    labels_deff = 1.0 if deff is None else deff["labels"]
    ppi_deff = (1.0, 1.0) if deff is None else (deff["residual"], deff["proxy"])

    def counts(sd_y: float, rho: float) -> dict[str, int | None]:
        def ppi(n: int) -> float:
            return ppi_variance(n, sd_y=sd_y, sd_f=sd_f, rho=rho, n_unlabeled=n_unlabeled, design_effect=ppi_deff)

        return {"ppi": smallest_n(ppi, half_width, alpha),
                "labeled_only": smallest_n(lambda n: labels_deff * sd_y**2 / n, half_width, alpha)}

    labels = counts(rel["sd_label_upper"], rel["correlation_lower"])
    out: dict[str, Any] = {
        "schema": SCHEMA, "half_width": half_width, "alpha": alpha, "labels": labels,
        "labels_at_estimates": counts(rel["sd_label"], rel["correlation"]),
        "assumed": {**rel, "n_unlabeled": None if math.isinf(n_unlabeled) else int(n_unlabeled), "from": source,
                    "run": run},
        "confidence_covers": CONFIDENCE_COVERS, "warnings": warned,
    }
    if deff is not None:
        out["assumed"]["design_effect"] = deff
    if labels["ppi"] and labels["labeled_only"]:
        out["label_saving"] = 1.0 - labels["ppi"] / labels["labeled_only"]
    out["curve"] = width_curve({**rel, "sd_proxy": sd_f}, alpha=alpha, n_unlabeled=n_unlabeled,
                               design_effect=(labels_deff, *ppi_deff))
    out["degenerate"] = degenerate_pilot(f)
    return out


def degenerate_pilot(f: FloatArray) -> list[str]:
    """Why a pilot cannot plan: proxies without spread (labels without spread are refused, :func:`relationship`)."""
    if float(np.ptp(f)) == 0.0:
        return [f"the pilot's judge proxy has no spread (every proxy {f[0]:g}): its correlation is unknown"]
    return []


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
