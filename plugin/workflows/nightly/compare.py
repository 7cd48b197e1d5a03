"""Two runs judged by the same judge: the judge-corrected difference of means, B - A (``judgecp compare``).

Each run has a judge proxy on every item (:func:`judgecp.stats.ppi.proxy_and_target`:
the expected score, the order-averaged P(A preferred), the predicted
option's probability) and zero or more human labels; the target is the
difference of the runs' mean human scores (win rates for pairwise judges,
accuracies for multiple choice). Three intervals, as for one run:

- **PPI++** (prediction-powered, power-tuned: :func:`judgecp.stats.ppi.ppi_mean`):
  valid whatever the judge's bias, as long as each run's labeled items are a
  random sample of its items;
- **labeled-only**: the labels alone;
- **judge-only**: the proxies alone, which is what a harness's stderr
  amounts to (it ignores the judge's bias, and a bias that differs between
  the runs moves it).

*Paired* (the runs judged the same items; matched by id, the default when at
least half of each run's items are shared): the per-item difference
``Y_B - Y_A`` with proxy ``f_B - f_A``; an item is labeled when both runs
label it (labels of one run only are counted as unused), and the estimand is
the mean difference over the shared items. Pairing removes the items'
own difficulty from the variance. *Two samples* (otherwise): PPI++ in each
run, the difference of the estimates, the variances added (the runs are
independent samples).

Per group (``group``: a field such as ``task``; ``task`` by default when the
records have one) and pooled; the pooled estimate is stratified by the group
when the label counts allow (:func:`judgecp.stats.proxies.choose_strata`).
``difference.effective_labels`` is the number of labels the labeled-only
estimate would need for the PPI++ width. A non-inferiority question ("B is
not worse than A by more than 0.05") is ``difference.ppi.lower >= -0.05``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.stats.conformal import check_alpha
from judgecp.stats.ppi import MeanEstimate, normal_interval, ppi_mean, proxy_and_target

FloatArray = NDArray[np.float64]
INTERVALS = ("ppi", "labeled_only", "judge_only")
#: The schema name of :func:`compare`'s result (``judgecp compare --json``).
SCHEMA = "judgecp.compare/1"


def item_ids(data: Any) -> NDArray[np.str_]:
    """The ids items are matched by: a pair's ``pair_id``, any other item's ``id``."""
    out: NDArray[np.str_] = np.asarray(getattr(data, "pair_ids", None) if hasattr(data, "pair_ids") else data.ids).astype(str)
    return out


class Run:
    """One run's proxies, labels (NaN where unlabeled), ids and group of every item."""

    def __init__(self, data: Any, group: str | None) -> None:
        self.f, self.y, self.target = proxy_and_target(data)
        self.ids = item_ids(data)
        self.kind = data.kind
        self.groups = None if group is None else np.asarray(data.fields[group]).astype(str)
        self.info = {"source": str(data.source), "n": int(data.n_read or data.n), "n_items": int(data.n),
                     "n_labeled": int((~np.isnan(self.y)).sum()), "excluded": data.excluded.to_json()}


def default_group(a: Any, b: Any, group: str | None) -> str | None:
    """``group`` (checked in both runs), else ``task`` when both runs have it with more than one value."""
    if group is not None:
        for data in (a, b):
            if group not in data.fields:
                from judgecp.base.errors import unknown

                raise unknown("--group field", group, data.fields)
        return group
    if all("task" in d.fields for d in (a, b)):
        values = set(np.asarray(a.fields["task"]).astype(str)) | set(np.asarray(b.fields["task"]).astype(str))
        return "task" if len(values) > 1 else None
    return None


def _stratified_ppi(y: FloatArray, f: FloatArray, groups: NDArray[Any] | None, alpha: float,
                    stratify: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """PPI++ of one sample (labels NaN where unlabeled), stratified as :func:`judgecp.stats.ppi.stratification` says."""
    from judgecp.stats.ppi import stratification

    labeled = ~np.isnan(y)
    if labeled.sum() < 2:
        raise InputError(f"PPI needs at least 2 labeled items, got {int(labeled.sum())}")
    strata, info = stratification(groups, labeled, stratify)
    gl, gu = (None, None) if strata is None else (strata[labeled], strata[~labeled])
    return ppi_mean(y[labeled], f[labeled], f[~labeled], alpha=alpha, groups_labeled=gl, groups_unlabeled=gu), info


def _difference(a: dict[str, Any], b: dict[str, Any], alpha: float, n_labels: int) -> dict[str, Any]:
    """B - A of two independent estimates (two samples): means subtracted, variances added."""
    out: dict[str, Any] = {}
    for name in INTERVALS:
        ea, eb = a["estimate"][name], b["estimate"][name]
        out[name] = normal_interval(eb["mean"] - ea["mean"], ea["se"] ** 2 + eb["se"] ** 2, alpha).to_dict()
    return _with_effective_labels(out, n_labels)


def _with_effective_labels(out: dict[str, Any], n_labels: int) -> dict[str, Any]:
    ppi, lab = out["ppi"]["se"], out["labeled_only"]["se"]
    out["effective_labels"] = n_labels * lab**2 / ppi**2 if ppi > 0 else math.inf
    out["n_labels"] = n_labels
    return out


def _paired(a: Run, b: Run, ia: NDArray[np.int64], ib: NDArray[np.int64], alpha: float, stratify: str) -> dict[str, Any]:
    y = b.y[ib] - a.y[ia]  # NaN unless both runs label the item
    f = b.f[ib] - a.f[ia]
    both = int((~np.isnan(y)).sum())
    if both < 2:
        raise InputError(f"paired: {both} of the {ia.size} shared items are labeled in both runs (2 are needed); "
                         "label the same items in both runs, or compare them as two samples (--paired no)")
    groups = None if a.groups is None else a.groups[ia]
    res, info = _stratified_ppi(y, f, groups, alpha, stratify)
    est = res["estimate"]
    out = {name: dict(est[name]) for name in INTERVALS}
    diff = _with_effective_labels(out, int((~np.isnan(y)).sum()))
    one_side = int((np.isnan(b.y[ib]) != np.isnan(a.y[ia])).sum())
    return {"difference": diff, "n_items": int(ia.size), "n_labeled_pairs": diff["n_labels"],
            "labels_unused": one_side, "lambda": res["lambda"], "stratification": info}


def _two_sample(a: Run, b: Run, ia: NDArray[np.int64], ib: NDArray[np.int64], alpha: float,
                stratify: str) -> dict[str, Any]:
    ga = None if a.groups is None else a.groups[ia]
    gb = None if b.groups is None else b.groups[ib]
    ra, info_a = _stratified_ppi(a.y[ia], a.f[ia], ga, alpha, stratify)
    rb, info_b = _stratified_ppi(b.y[ib], b.f[ib], gb, alpha, stratify)
    n_labels = ra["n_labeled"] + rb["n_labeled"]
    return {"difference": _difference(ra, rb, alpha, n_labels), "means": {"a": ra["estimate"], "b": rb["estimate"]},
            "n_items": {"a": int(ia.size), "b": int(ib.size)}, "n_labeled": {"a": ra["n_labeled"], "b": rb["n_labeled"]},
            "lambda": {"a": ra["lambda"], "b": rb["lambda"]}, "stratification": {"a": info_a, "b": info_b}}


def compare(a: Any, b: Any, *, alpha: float = 0.1, group: str | None = None, paired: str = "auto",
            stratify: str = "auto") -> dict[str, Any]:
    """The difference B - A of two runs (module docstring), pooled and per group.

    ``paired`` is ``"auto"`` (paired when at least half of each run's items
    are shared), ``"yes"`` or ``"no"``; ``stratify`` as in
    :func:`judgecp.stats.ppi.estimate`.
    """
    alpha = check_alpha(alpha)
    if paired not in ("auto", "yes", "no") or stratify not in ("auto", "yes", "no"):
        raise InputError(f"--paired and --stratify are auto, yes or no (got {paired!r}, {stratify!r})")
    if a.kind != b.kind and {a.kind, b.kind} != {"mcq", "parc"}:
        raise InputError(f"run A has {a.kind} records, run B {b.kind} records: compare runs of one kind of judge")
    group = default_group(a, b, group)
    ra, rb = Run(a, group), Run(b, group)
    shared, ia, ib = np.intersect1d(ra.ids, rb.ids, assume_unique=True, return_indices=True)
    is_paired = paired == "yes" or (paired == "auto" and shared.size >= 0.5 * max(ra.ids.size, rb.ids.size))
    if is_paired and shared.size < 2:
        raise InputError(f"--paired yes: the runs share {shared.size} item ids; pairing needs items judged in both")
    if not is_paired:
        ia, ib = np.arange(ra.ids.size), np.arange(rb.ids.size)
    one = _paired if is_paired else _two_sample
    out: dict[str, Any] = {
        "schema": SCHEMA, "kind": a.kind, "target": f"difference in {ra.target} (B - A)", "alpha": alpha,
        "design": "paired" if is_paired else "two-sample", "runs": {"a": ra.info, "b": rb.info},
        "matching": {"shared": int(shared.size), "only_a": int(ra.ids.size - shared.size),
                     "only_b": int(rb.ids.size - shared.size)},
        "estimand": (f"mean over the {shared.size} items both runs judged of the difference in {ra.target}"
                     if is_paired else f"{ra.target} of run B's items minus that of run A's items"),
        **one(ra, rb, ia, ib, alpha, stratify),
    }
    out["group"] = group
    if group is not None:
        out["by_group"] = _by_group(ra, rb, ia, ib, one, alpha)
        assert ra.groups is not None and rb.groups is not None
        in_a, in_b = set(ra.groups[ia].tolist()), set(rb.groups[ib].tolist())
        out["groups_only_in"] = {"a": sorted(in_a - in_b), "b": sorted(in_b - in_a)}
    return out


def _by_group(a: Run, b: Run, ia: NDArray[np.int64], ib: NDArray[np.int64], one: Any, alpha: float) -> dict[str, Any]:
    """The comparison within each group both runs have (one with too few labels says why it has no interval)."""
    assert a.groups is not None and b.groups is not None
    by: dict[str, Any] = {}
    in_a, in_b = set(a.groups[ia].tolist()), set(b.groups[ib].tolist())
    for name in sorted(in_a & in_b):
        if one is _paired:
            keep = a.groups[ia] == name
            sub_a, sub_b = ia[keep], ib[keep]
        else:
            sub_a, sub_b = ia[a.groups[ia] == name], ib[b.groups[ib] == name]
        try:
            res = one(a, b, sub_a, sub_b, alpha, "no")
        except InputError as exc:
            by[name] = {"error": str(exc)}
            continue
        res.pop("stratification", None)
        by[name] = res
    return by


def difference_of(out: dict[str, Any], name: str = "ppi") -> MeanEstimate:
    """The pooled difference of one interval as a :class:`~judgecp.stats.ppi.MeanEstimate`."""
    e = out["difference"][name]
    return MeanEstimate(e["mean"], e["se"], e["lower"], e["upper"])
