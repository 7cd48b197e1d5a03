"""``judgecp estimate``: the mean human score of one run (PPI++ with the run's own labels, stratified when
the counts allow, items without a proxy as their own stratum), or of labels drawn by ``judgecp select``
(the active estimate); both as a typed :class:`judgecp.workflows.results.EstimateResult` body."""

from __future__ import annotations

from typing import Any

import numpy as np

from judgecp.base.errors import InputError, short_repr
from judgecp.stats import proxies
from judgecp.stats.active import active_mean
from judgecp.stats.ppi import NO_PROXY, estimand, ppi_items, stratification
from judgecp.workflows.nightly.runs import (
    cluster_keys,
    group_column,
    item_ids,
    label_hint,
    no_proxy_labels,
    off_scale_note,
    proxy_and_target,
    proxy_features,
    sampling_probabilities,
)
from judgecp.workflows.results import EstimateResult, with_degenerate


def estimate(data: Any, *, alpha: float = 0.1, groups: str | None = None, lam: float | None = None,
             clip: bool = True, stratify: str = "auto", proxy: str = "auto", random_state: int = 0,
             cluster: str | None = None) -> EstimateResult:
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
        raise InputError(
            f"stratify is auto, yes or no (got {stratify!r}); proxy auto, judge or crossfit (got {proxy!r})"
        )
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
        return EstimateResult(with_degenerate({**res, **common, "groups": None}))
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
    return EstimateResult(with_degenerate(out))


def estimate_drawn(labeled: Any, run: Any, *, alpha: float = 0.1, groups: str | None = None,
                   cluster: str | None = None, names: tuple[str, str] = ("--labeled", "--unlabeled")) -> EstimateResult:
    """The active estimate over ``run``'s items from ``labeled``: labels drawn by ``judgecp select`` (every row with
    its ``sampling_probability``), each weighted by its inverse probability; the run's other items keep the labels
    they already had (known before the draw, they count with probability 1). ``names`` name the two inputs in
    errors."""
    f_l, y_l, target = proxy_and_target(labeled)
    f_u, y_u, _ = proxy_and_target(run)
    pi = sampling_probabilities(labeled)
    if pi is None:
        raise InputError(f"{names[0]}: no sampling_probability column: labels drawn by `judgecp select` carry one")
    check_drawn_from(item_ids(labeled), item_ids(run), names)
    rest = ~np.isin(item_ids(run), item_ids(labeled))  # the run's other items (the labeled file's are in it)
    y = np.concatenate([y_l, y_u[rest]])
    clusters = None
    if cluster:
        clusters = np.concatenate([cluster_keys(labeled, cluster)[0], cluster_keys(run, cluster)[0][rest]])
    out: dict[str, Any] = active_mean(y, np.concatenate([f_l, f_u[rest]]),
                                      np.concatenate([pi, np.full(int(rest.sum()), np.nan)]), alpha=alpha,
                                      clusters=clusters)
    # n: the rows read, as a one-file estimate's (gate reads it): the labels drawn by select are the run's own
    out.update(kind=labeled.kind, target=target, groups=groups,
               excluded=labeled.excluded.to_json() + run.excluded.to_json(), cluster=cluster,
               n=int(run.n_read or run.n), **label_hint(labeled, run))
    return EstimateResult(with_degenerate(out))


def estimate_split(labeled: Any, unlabeled: Any, *, alpha: float = 0.1, groups: str | None = None,
                   cluster: str | None = None, rows_read: int | None = None) -> EstimateResult:
    """PPI++ of ``labeled``'s labels (read with ``require_label=True``: rows without a label left out and counted)
    with ``unlabeled``'s proxies (the other items); ``groups`` stratifies, ``cluster`` clusters, as in
    :func:`estimate`. ``rows_read``: the rows of both files read (default: as the two data say)."""
    if labeled.kind != unlabeled.kind:
        raise InputError(f"--labeled has {labeled.kind} records, --unlabeled {unlabeled.kind} records")
    f_l, y_l, target = proxy_and_target(labeled)
    f_u, _, _ = proxy_and_target(unlabeled)
    np_l, np_u = no_proxy_labels(labeled), no_proxy_labels(unlabeled)
    y = np.concatenate([y_l, np.full(f_u.size, np.nan), np_l, np.full(np_u.size, np.nan)])
    f = np.concatenate([f_l, f_u, np.full(np_l.size + np_u.size, np.nan)])
    strata = keys = None
    if groups:
        strata = np.concatenate([labeled.field(groups, "--group field").astype(str),
                                 unlabeled.field(groups, "--group field").astype(str),
                                 np.full(np_l.size + np_u.size, NO_PROXY)])
    if cluster:
        (kl, kl_np), (ku, ku_np) = cluster_keys(labeled, cluster), cluster_keys(unlabeled, cluster)
        keys = np.concatenate([kl, ku, kl_np, ku_np])
    out = ppi_items(y, f, alpha=alpha, strata=strata, keys=keys)
    n = rows_read if rows_read is not None else int(labeled.n_read or labeled.n) + int(unlabeled.n_read or unlabeled.n)
    out.update(kind=labeled.kind, target=target, groups=groups,
               excluded=labeled.excluded.to_json() + unlabeled.excluded.to_json(), cluster=cluster, n=n,
               **label_hint(labeled, unlabeled))
    out["estimand"] = estimand(out, target)
    return EstimateResult(with_degenerate(out))


def check_drawn_from(labeled: Any, run: Any, names: tuple[str, str]) -> None:
    """Labels drawn by ``judgecp select`` (with their ``sampling_probability``) are weighted over the run they
    were drawn from: every labeled item must be one of the run's, or the estimand would silently become
    the mean over a run with those items added."""
    foreign = ~np.isin(labeled, run)
    if foreign.any():
        first = str(labeled[int(np.flatnonzero(foreign)[0])])
        raise InputError(f"{names[0]}: {int(foreign.sum())} of its {labeled.size} items are not in "
                         f"{names[1]} (the first: {short_repr(first)}); labels drawn by `judgecp "
                         "select` are weighted over the run they were drawn from: give that whole run as --unlabeled")
