"""Stronger proxies for prediction-powered inference: strata chosen by counts, cross-fitted proxies.

**Strata** (:func:`choose_strata`). Stratified PPI++ (:func:`judgecp.stats.ppi.ppi_mean`
with groups) removes the between-group part of the judge's error: each
stratum's labeled mean is corrected by its own proxy means, combined with
the strata's shares of all items. With labels drawn at random from the
whole run (not per stratum), it is post-stratification: given how many
labels fell into each stratum, the labeled items of a stratum are a random
sample of it, so the interval keeps its level. It needs enough labels per
stratum for each stratum's variance (about 10: with 14 strata of about 21
labels, LLaVA-Critic covers at 0.904 over 2,000 draws). The choice uses the
*counts* of labels only, never their values, so it cannot bias the
interval: strata with fewer than ``min_labels`` labels are merged, the
smallest first, into the next smallest, until every stratum has enough (one
stratum left: no stratification).

**Cross-fitted proxy** (:func:`crossfit_proxy`; Zrnic & Candes 2024,
"Cross-prediction-powered inference", PNAS). A model of the human label from
the row's features (the judge's log-probabilities, expected score and spread,
extra feature columns, the group) is fitted on the labeled items in ``K``
folds: a labeled item's proxy comes from the model fitted without its fold,
an unlabeled item's proxy is the average of the ``K`` models. PPI++ on these
proxies is valid as the plain one is (the bias term removes what the model
gets wrong; power tuning keeps it no wider than labeled-only
asymptotically); it helps when the features carry information the judge's
expected score does not (other judges' scores, per-group calibration). On
LLaVA-Critic alone (300 labels) it gives no gain over the expected score
(width ratio 0.91 either way): the expected score is already the best
linear summary there, and stratification by task is what helps.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError

FloatArray = NDArray[np.float64]

#: Labels a stratum needs before it is kept on its own (fewer: merged, see the module docstring).
MIN_STRATUM_LABELS = 10
#: Folds of the cross-fitted proxy, and the labels it needs (every fold model sees 90 or more).
CROSSFIT_FOLDS = 10
CROSSFIT_MIN_LABELS = 100


def choose_strata(groups: NDArray[Any], labeled: NDArray[np.bool_], *, min_labels: int = MIN_STRATUM_LABELS,
                  units: NDArray[Any] | None = None) -> tuple[NDArray[np.str_] | None, dict[str, Any]]:
    """Strata from a group column, merged by label counts; ``None`` when one stratum is left.

    Returns the stratum of every item (merged names joined with ``+``) and a
    report: the strata kept, those merged, and why there is no
    stratification when there is none. With ``units`` (clusters), a group's
    count is its labeled clusters (labels of one cluster are not independent).
    """
    col = np.asarray(groups).astype(str)
    if units is None:
        labels = Counter(col[labeled].tolist())
    else:
        labels = Counter(g for g, _ in set(zip(col[labeled].tolist(), np.asarray(units)[labeled].astype(str).tolist(),
                                               strict=True)))
    for name in np.unique(col).tolist():
        labels.setdefault(name, 0)
    members = {name: [name] for name in labels}
    while len(members) > 1:
        small = sorted(members, key=lambda m: (labels[m], m))
        if labels[small[0]] >= min_labels:
            break
        into = small[1]
        merged = f"{into}+{small[0]}" if into < small[0] else f"{small[0]}+{into}"
        members[merged] = members.pop(small[0]) + members.pop(into)
        labels[merged] = labels.pop(small[0]) + labels.pop(into)
    info: dict[str, Any] = {"min_labels": min_labels, "n_groups": int(np.unique(col).size)}
    if len(members) == 1:
        info["stratified"] = False
        info["reason"] = (f"fewer than {min_labels} labels in all groups but one" if np.unique(col).size > 1
                          else "one group")
        return None, info
    lookup = {g: name for name, gs in members.items() for g in gs}
    info["stratified"] = True
    info["strata"] = {name: {"groups": sorted(gs), "n_labeled": labels[name]} for name, gs in sorted(members.items())}
    info["merged"] = sorted(name for name, gs in members.items() if len(gs) > 1)
    out: NDArray[np.str_] = np.asarray([lookup[g] for g in col.tolist()]).astype(str)
    return out, info


def one_hot(values: NDArray[Any]) -> FloatArray:
    col = np.asarray(values).astype(str)
    names = np.unique(col)
    out: FloatArray = (col[:, None] == names[None, :]).astype(np.float64)
    return out


def crossfit_proxy(y: FloatArray, features: FloatArray, labeled: NDArray[np.bool_], *,
                   folds: int = CROSSFIT_FOLDS, random_state: int = 0, ridge: float = 1.0,
                   clusters: NDArray[Any] | None = None) -> FloatArray:
    """The cross-fitted proxy of every item (module docstring): out-of-fold on labeled items, averaged elsewhere.

    The model is ridge regression on standardised features (``ridge`` its
    penalty); ``y`` is read on the labeled items only. With ``clusters`` the
    folds are whole clusters (a model never sees a label of its item's
    cluster, whose labels are correlated with the item's).
    """
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GroupKFold, KFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rows = np.flatnonzero(labeled)
    if rows.size < max(folds, CROSSFIT_MIN_LABELS):
        raise InputError(f"a cross-fitted proxy needs at least {CROSSFIT_MIN_LABELS} labeled items, got {rows.size}")
    X = np.asarray(features, dtype=np.float64)
    if not np.isfinite(X).all():
        raise InputError("a cross-fitted proxy needs finite features")
    out = np.zeros(X.shape[0])
    others = np.flatnonzero(~labeled)
    if clusters is None:
        split = KFold(folds, shuffle=True, random_state=random_state).split(rows)
    elif np.unique(np.asarray(clusters)[rows]).size < folds:
        raise InputError(f"a cross-fitted proxy with clusters needs labels in at least {folds} clusters")
    else:
        split = GroupKFold(folds).split(rows, groups=np.asarray(clusters)[rows])
    for train, test in split:
        model = make_pipeline(StandardScaler(), Ridge(alpha=ridge)).fit(X[rows[train]], y[rows[train]])
        out[rows[test]] = model.predict(X[rows[test]])
        if others.size:
            out[others] += model.predict(X[others]) / folds
    return out
