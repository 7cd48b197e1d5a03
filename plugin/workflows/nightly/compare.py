"""Two runs judged by the same judge: the judge-corrected difference of means, B - A (``judgecp compare``).

Each run has a judge proxy on every item (:func:`judgecp.workflows.nightly.runs.proxy_and_target`:
the expected score, the order-averaged P(A preferred), the predicted
option's probability) and zero or more human labels; the target is the
difference of the runs' mean human scores (win rates for pairwise judges,
accuracies for multiple choice). Three intervals, as for one run:

- **PPI++** (prediction-powered, power-tuned): valid whatever the judge's
  bias, as long as each run's labeled items are a random sample of its items;
- **labeled-only**: the labels alone;
- **judge-only**: the proxies alone, which is what a harness's stderr
  amounts to (it ignores the judge's bias, and a bias that differs between
  the runs moves it).

**Every label is used.** Each run's mean is its own PPI++ estimate over all
of its labels (stratified by ``--group`` when the label counts allow, as
``judgecp estimate`` is; rows without a judge proxy as their own stratum),
and the difference's variance is summed item by item
(:func:`judgecp.stats.ppi.difference`): an item both runs judged is one unit, its
deviation B's minus A's, so the covariance of the two estimates through the
shared items is kept, whatever the overlap of the labeled items (the same
items labeled in both runs, different ones, or some of both). The two runs'
``lam`` are tuned together for the difference.

*Paired* (``design``; the runs judged the same items, matched by id, the
default when at least half of each run's items are shared): the estimand is
the mean over the shared items of the difference; labels on items only one
run judged are counted in ``labels_unused``. *Two samples* (otherwise, or
``--paired no``): the runs are independent samples, and the estimand is the
mean of run B's items minus that of run A's. With ``cluster`` (a field: the
answers to one prompt, the turns of one conversation), the units are the
clusters, in both runs alike (a cluster's value names the same cluster in
both runs): cluster-robust variances.

Per group (``group``: a field such as ``task``; ``task`` by default when the
records have one) and pooled. ``difference.effective_labels`` is the number
of labels the labeled-only estimate would need for the PPI++ width. A
non-inferiority question ("B is not worse than A by more than 0.05") is
``difference.ppi.lower >= -0.05``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, unknown
from judgecp.stats.conformal import check_alpha
from judgecp.stats.ppi import NO_PROXY, MeanEstimate, stratification
from judgecp.stats.ppi_design import Design, design, difference, estimable, summarize
from judgecp.workflows.nightly.runs import (
    cluster_keys,
    item_ids,
    no_proxy_ids,
    no_proxy_labels,
    off_scale_note,
    proxy_and_target,
)
from judgecp.workflows.results import CompareResult, compare_degenerate

FloatArray = NDArray[np.float64]
INTERVALS = ("ppi", "labeled_only", "judge_only")
#: The schema name of :func:`compare`'s result (``judgecp compare --json``).
SCHEMA = "judgecp.compare/1"
__all__ = ["SCHEMA", "Run", "compare", "default_group", "difference_of", "item_ids"]


class Run:
    """One run's items, those without a judge proxy last (proxy NaN): labels (NaN where unlabeled), ids, group and
    cluster of every item."""

    def __init__(self, data: Any, group: str | None, cluster: str | None = None) -> None:
        f, y, self.target = proxy_and_target(data)
        y_np = no_proxy_labels(data)
        self.y = np.concatenate([y, y_np])
        self.f = np.concatenate([f, np.full(y_np.size, np.nan)])
        self.ids = np.concatenate([item_ids(data), no_proxy_ids(data)])
        self.kind = data.kind
        self.groups = None
        if group is not None:
            fields = getattr(data, "no_proxy_fields", None) or {}
            rest = (np.asarray(fields[group]).astype(str) if y_np.size and group in fields
                    else np.full(y_np.size, NO_PROXY))
            self.groups = np.concatenate([np.asarray(data.fields[group]).astype(str), rest])
        self.clusters = None if cluster is None else np.concatenate(cluster_keys(data, cluster))
        self.note = off_scale_note(data)
        self.info = {"source": str(data.source), "n": int(data.n_read or data.n), "n_items": int(self.y.size),
                     "n_labeled": int((~np.isnan(self.y)).sum()), "excluded": data.excluded.to_json()}
        if y_np.size:
            self.info["no_proxy"] = {"n": int(y_np.size), "n_labeled": int((~np.isnan(y_np)).sum())}
        hint = getattr(data.excluded, "notes", {}).get("label_off_scale")
        if hint:
            self.info["label_hint"] = hint


def default_group(a: Any, b: Any, group: str | None) -> str | None:
    """``group`` (checked in both runs), else ``task`` when both runs have it with more than one value."""
    if group is not None:
        for data in (a, b):
            if group not in data.fields:
                raise unknown("--group field", group, data.fields)
        return group
    if all("task" in d.fields for d in (a, b)):
        values = set(np.asarray(a.fields["task"]).astype(str)) | set(np.asarray(b.fields["task"]).astype(str))
        return "task" if len(values) > 1 else None
    return None


def _run_design(run: Run, rows: NDArray[np.int64], keys: NDArray[np.int64], stratify: str,
                name: str) -> tuple[Design, dict[str, Any], NDArray[np.int64]]:
    """One run's PPI++ design on ``rows`` (stratified as :func:`judgecp.workflows.nightly.estimate.estimate` is), its
    stratification, and
    the rows it keeps (items without a proxy need 2 labeled units)."""
    labeled = ~np.isnan(run.y[rows])
    if labeled.sum() < 2:
        raise InputError(f"run {name}: PPI needs at least 2 labeled items, got {int(labeled.sum())}{run.note}")
    rows = rows[estimable(run.y[rows], run.f[rows], keys[rows])]
    y, f = run.y[rows], run.f[rows]
    proxied = ~np.isnan(f)
    if (~np.isnan(y[proxied])).sum() < 2:
        raise InputError(f"run {name}: PPI needs at least 2 labeled items with a judge proxy, "
                         f"got {int((~np.isnan(y[proxied])).sum())}")
    groups = None if run.groups is None else run.groups[rows][proxied]
    chosen, info = stratification(groups, ~np.isnan(y[proxied]), stratify,
                                  None if run.clusters is None else keys[rows][proxied])
    strata = None
    if chosen is not None:
        strata = np.full(rows.size, NO_PROXY, dtype=object)
        strata[proxied] = chosen
    try:
        return design(y, f, strata=strata, keys=keys[rows]), info, rows
    except InputError as exc:
        raise InputError(f"run {name}: {exc}") from None


def _spread_notes(run: Run, rows: NDArray[np.int64], name: str) -> list[str]:
    """Why a run's part of the difference cannot be trusted: labels or proxies without spread."""
    notes = []
    y = run.y[rows][~np.isnan(run.y[rows])]
    if y.size and float(np.ptp(y)) == 0.0:
        notes.append(f"run {name}'s {y.size} labels are all {y[0]:g} (no spread: its variance is estimated as 0)")
    f = run.f[rows][~np.isnan(run.f[rows])]
    if f.size and float(np.ptp(f)) == 0.0:
        notes.append(f"run {name}'s judge proxy has no spread (every proxy {f[0]:g})")
    return notes


def _difference_of(a: Run, b: Run, ia: NDArray[np.int64], ib: NDArray[np.int64], keys: tuple[NDArray[np.int64], ...],
                   alpha: float, stratify: str, paired: bool) -> dict[str, Any]:
    """The comparison of rows ``ia`` of run A with rows ``ib`` of run B (matched by position when paired)."""
    da, info_a, kept_a = _run_design(a, ia, keys[0], stratify, "A")
    db, info_b, kept_b = _run_design(b, ib, keys[1], stratify, "B")
    diff = difference(da, db, alpha=alpha)
    n_a, n_b = da.n_labeled, db.n_labeled
    lab_se, ppi_se = diff["labeled_only"]["se"], diff["ppi"]["se"]
    out: dict[str, Any] = {
        "difference": {**{name: diff[name] for name in INTERVALS}, "n_labels": n_a + n_b,
                       "effective_labels": (n_a + n_b) * lab_se**2 / ppi_se**2 if ppi_se > 0 else float("inf")},
        "n_labeled": {"a": n_a, "b": n_b}, "lambda": diff["lambda"], "df": diff["df"],
        "means": {"a": summarize(da, alpha=alpha)["estimate"], "b": summarize(db, alpha=alpha)["estimate"]},
        "stratification": {"a": info_a, "b": info_b},
        "degenerate": _spread_notes(a, kept_a, "A") + _spread_notes(b, kept_b, "B"),
    }
    dropped = int((~np.isnan(a.y[ia])).sum()) - n_a + int((~np.isnan(b.y[ib])).sum()) - n_b
    if paired:
        both = ~np.isnan(a.y[ia]) & ~np.isnan(b.y[ib])
        out.update(n_items=int(ia.size), n_labeled_pairs=int(both.sum()))
    else:
        out.update(n_items={"a": int(ia.size), "b": int(ib.size)})
    out["labels_left_out"] = dropped  # labeled items without a proxy, too few of them to estimate
    return out


def _keys(a: Run, b: Run, ia: NDArray[np.int64], ib: NDArray[np.int64],
          paired: bool) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The units as integer codes: clusters (one name space for both runs), else the items, matched by id (rows
    ``ia`` of A with rows ``ib`` of B) when paired."""
    if a.clusters is not None and b.clusters is not None:
        _, codes = np.unique(np.concatenate([a.clusters, b.clusters]).astype(str), return_inverse=True)
        codes = codes.ravel().astype(np.int64)
        return codes[: a.ids.size], codes[a.ids.size :]
    if paired:
        ka, kb = np.full(a.ids.size, -1, np.int64), np.full(b.ids.size, -2, np.int64)
        ka[ia], kb[ib] = np.arange(ia.size), np.arange(ib.size)
        return ka, kb
    return np.arange(a.ids.size, dtype=np.int64), a.ids.size + np.arange(b.ids.size, dtype=np.int64)


def compare(a: Any, b: Any, *, alpha: float = 0.1, group: str | None = None, paired: str = "auto",
            stratify: str = "auto", cluster: str | None = None) -> CompareResult:
    """The difference B - A of two runs (module docstring), pooled and per group.

    ``paired`` is ``"auto"`` (paired when at least half of each run's items
    are shared), ``"yes"`` or ``"no"``; ``stratify`` as in
    :func:`judgecp.workflows.nightly.estimate.estimate`; ``cluster`` a field naming every item's
    cluster (cluster-robust variances).
    """
    alpha = check_alpha(alpha)
    if paired not in ("auto", "yes", "no") or stratify not in ("auto", "yes", "no"):
        raise InputError(f"--paired and --stratify are auto, yes or no (got {paired!r}, {stratify!r})")
    if a.kind != b.kind and {a.kind, b.kind} != {"mcq", "parc"}:
        raise InputError(f"run A has {a.kind} records, run B {b.kind} records: compare runs of one kind of judge")
    group = default_group(a, b, group)
    ra, rb = Run(a, group, cluster), Run(b, group, cluster)
    for run, name in ((ra, "A"), (rb, "B")):
        if np.unique(run.ids).size < run.ids.size and paired != "no":
            raise InputError(f"run {name}: item ids repeat; items are matched by id (--id), or give --paired no")
    shared, ia, ib = np.intersect1d(ra.ids, rb.ids, assume_unique=True, return_indices=True)
    is_paired = paired == "yes" or (paired == "auto" and shared.size >= 0.5 * max(ra.ids.size, rb.ids.size))
    if is_paired and shared.size < 2:
        raise InputError(f"--paired yes: the runs share {shared.size} item ids; pairing needs items judged in both")
    if not is_paired:
        ia, ib = np.arange(ra.ids.size), np.arange(rb.ids.size)
    keys = _keys(ra, rb, ia, ib, is_paired)
    res = _difference_of(ra, rb, ia, ib, keys, alpha, stratify, is_paired)
    unused = 0
    if is_paired:
        unused = ra.info["n_labeled"] - int((~np.isnan(ra.y[ia])).sum()) + rb.info["n_labeled"] - int(
            (~np.isnan(rb.y[ib])).sum())
    out: dict[str, Any] = {
        "schema": SCHEMA, "kind": a.kind, "target": f"difference in {ra.target} (B - A)", "alpha": alpha,
        "design": "paired" if is_paired else "two-sample", "runs": {"a": ra.info, "b": rb.info},
        "matching": {"shared": int(shared.size), "only_a": int(ra.ids.size - shared.size),
                     "only_b": int(rb.ids.size - shared.size)},
        "estimand": (f"mean over the {shared.size} items both runs judged of the difference in {ra.target}"
                     if is_paired else f"{ra.target} of run B's items minus that of run A's items"),
        "cluster": cluster, **res, "labels_unused": unused,
    }
    if cluster is not None:
        out["clusters"] = {"a": int(np.unique(keys[0][ia]).size), "b": int(np.unique(keys[1][ib]).size)}
    out["group"] = group
    if group is not None:
        out["by_group"] = _by_group(ra, rb, ia, ib, keys, alpha, is_paired)
        assert ra.groups is not None and rb.groups is not None
        in_a, in_b = set(ra.groups[ia].tolist()) - {NO_PROXY}, set(rb.groups[ib].tolist()) - {NO_PROXY}
        out["groups_only_in"] = {"a": sorted(in_a - in_b), "b": sorted(in_b - in_a)}
    out["degenerate"] = compare_degenerate(out)
    return CompareResult(out)


def _by_group(a: Run, b: Run, ia: NDArray[np.int64], ib: NDArray[np.int64], keys: tuple[NDArray[np.int64], ...],
              alpha: float, paired: bool) -> dict[str, Any]:
    """The comparison within each group both runs have (one with too few labels says why it has no interval)."""
    assert a.groups is not None and b.groups is not None
    by: dict[str, Any] = {}
    in_a, in_b = set(a.groups[ia].tolist()) - {NO_PROXY}, set(b.groups[ib].tolist()) - {NO_PROXY}
    for name in sorted(in_a & in_b):
        if paired:
            keep = a.groups[ia] == name
            sub_a, sub_b = ia[keep], ib[keep]
        else:
            sub_a, sub_b = ia[a.groups[ia] == name], ib[b.groups[ib] == name]
        try:
            res = _difference_of(a, b, sub_a, sub_b, keys, alpha, "no", paired)
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
