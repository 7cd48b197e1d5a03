"""``judgecp estimate``: the mean human score of one run (PPI++ with the run's own labels, stratified when
the counts allow, items without a proxy as their own stratum), or of labels drawn by ``judgecp select``
(the active estimate); both as a typed :class:`judgecp.workflows.results.EstimateResult` body."""

from __future__ import annotations

from typing import Any

import numpy as np

from judgecp.base.errors import InputError
from judgecp.stats import proxies
from judgecp.stats.active import active_mean
from judgecp.stats.ppi import NO_PROXY, estimand, ppi_items, stratification
from judgecp.workflows.nightly.runs import (
    cluster_keys,
    group_column,
    label_hint,
    no_proxy_labels,
    off_scale_note,
    proxy_and_target,
    proxy_features,
    sampling_probabilities,
)


def estimate(data: Any, *, alpha: float = 0.1, groups: str | None = None, lam: float | None = None,
             clip: bool = True, stratify: str = "auto", proxy: str = "auto", random_state: int = 0,
             cluster: str | None = None) -> dict[str, Any]:
    """PPI++ on one set of records: the labeled rows are the labeled sample, the unlabeled rows the rest.

    ``data`` comes from :func:`judgecp.load` with ``require_label=False``.
    ``groups`` names a field to stratify by (default: ``task`` when the
    records have one); ``stratify`` is ``"auto"`` (stratify when the label
    counts allow, :func:`judgecp.stats.proxies.choose_strata`), ``"yes"`` (every
    group its own stratum) or ``"no"``. ``proxy`` is ``"judge"`` (the
    judge's own proxy), ``"crossfit"`` (:func:`judgecp.stats.proxies.crossfit_proxy`)
    or ``"auto"`` (cross-fitted when the records carry extra feature columns
    and at least 100 labels, else the judge's). Rows with a label but no
    proxy form their own stratum (module docstring). ``cluster`` names a
    field whose equal values are one cluster (cluster-robust variances).
    Labels with a ``sampling_probability`` (``judgecp select``) are estimated
    by inverse-probability weighting (:func:`judgecp.stats.active.active_mean`).
    """
    if stratify not in ("auto", "yes", "no") or proxy not in ("auto", "judge", "crossfit"):
        raise InputError(f"stratify is auto, yes or no (got {stratify!r}); proxy auto, judge or crossfit (got {proxy!r})")
    f, y, target = proxy_and_target(data)
    labeled = ~np.isnan(y)
    if labeled.sum() < 2:
        raise InputError(f"PPI needs labeled records: {int(labeled.sum())} of {data.n} have a label"
                         f"{off_scale_note(data)}")
    common = {"kind": data.kind, "target": target, "excluded": data.excluded.to_json(),
              "n": int(data.n_read or data.n), "source": str(data.source), "cluster": cluster,
              **label_hint(data)}
    clusters = None if cluster is None else cluster_keys(data, cluster)
    probabilities = sampling_probabilities(data)
    if probabilities is not None:
        res = active_mean(y, f, probabilities, alpha=alpha, clusters=None if clusters is None else clusters[0])
        return {**res, **common, "groups": None}
    groups, col = group_column(data, groups)
    strata, strata_info = stratification(col, labeled, stratify, None if clusters is None else clusters[0])
    extra = getattr(data, "extra_features", None) is not None
    use_crossfit = proxy == "crossfit" or (proxy == "auto" and extra and labeled.sum() >= proxies.CROSSFIT_MIN_LABELS)
    if use_crossfit:
        f = proxies.crossfit_proxy(y, proxy_features(data, f, col), labeled, random_state=random_state,
                                   clusters=None if clusters is None else clusters[0])
    y_np = no_proxy_labels(data)
    out = ppi_items(np.concatenate([y, y_np]), np.concatenate([f, np.full(y_np.size, np.nan)]), alpha=alpha,
                    strata=None if strata is None else np.concatenate([strata, np.full(y_np.size, NO_PROXY)]),
                    keys=None if clusters is None else np.concatenate(clusters), lam=lam, clip=clip)
    out.update(common, groups=groups, stratification=strata_info,
               proxy="cross-fitted (ridge, 10 folds)" if use_crossfit else "judge")
    out["estimand"] = estimand(out, target)
    return out
