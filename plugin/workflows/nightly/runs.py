"""A run as the nightly commands read it: its judge proxies and labels (by its kind), the ids items are matched
by, the items without a proxy, clusters, sampling probabilities and the group to stratify by.

The numbers (PPI++, its designs, active sampling, plans) take arrays: :mod:`judgecp.stats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, unknown
from judgecp.data import ScoreData
from judgecp.data.fields import BLANK, numbers
from judgecp.kinds.calibration import proxy_and_target
from judgecp.stats.features import model_features
from judgecp.stats.proxies import one_hot

FloatArray = NDArray[np.float64]

__all__ = ["cluster_keys", "group_column", "item_ids", "label_hint", "no_proxy_ids", "no_proxy_labels",
           "off_scale_note", "proxy_and_target", "proxy_features", "sampling_probabilities"]


def label_hint(*datas: Any) -> dict[str, str]:
    """``{"label_hint": ...}`` when labels were left out off the judge's scale and look like another scale."""
    for data in datas:
        hint = getattr(getattr(data, "excluded", None), "notes", {}).get("label_off_scale")
        if hint:
            return {"label_hint": hint}
    return {}


def off_scale_note(data: Any) -> str:
    """`` (left out: label_off_scale 148; labels look like 0..1: --label-scale 0:1?)`` for an error about too few
    labels, when labels were left out off the judge's scale; else nothing."""
    excluded = getattr(data, "excluded", None)
    count = excluded.counts.get("label_off_scale", 0) if excluded is not None else 0
    if not count or excluded is None:
        return ""
    hint = excluded.notes.get("label_off_scale")
    return f" (left out: label_off_scale {count}" + (f"; {hint})" if hint else ")")


def item_ids(data: Any) -> NDArray[np.str_]:
    """The ids items are matched by: a pair's ``pair_id``, any other item's ``id``."""
    out: NDArray[np.str_] = np.asarray(
        getattr(data, "pair_ids", None) if hasattr(data, "pair_ids") else data.ids
    ).astype(str)
    return out


def no_proxy_labels(data: Any) -> FloatArray:
    """Likert: the labels (NaN where unlabeled) of rows left out for want of score logprobs; other kinds: none."""
    out: FloatArray = np.asarray(getattr(data, "no_proxy_labels", np.zeros(0)), dtype=np.float64)
    return out


def no_proxy_ids(data: Any) -> NDArray[np.str_]:
    """The ids of the rows without a proxy (:func:`no_proxy_labels`); made up, never matching, where not read."""
    n = no_proxy_labels(data).size
    ids = getattr(data, "no_proxy_ids", None)
    if ids is not None and np.asarray(ids).size == n:
        return np.asarray(ids).astype(str)
    return np.asarray([f"\x00no-proxy-{i}" for i in range(n)]).astype(str)


def cluster_keys(data: Any, column: str) -> tuple[NDArray[np.str_], NDArray[np.str_]]:
    """``--cluster COLUMN``: the cluster of every item with a proxy, and of every item without one (each its own
    cluster where the reader kept no fields for them). A blank cell is an error naming the item."""
    if column not in data.fields:
        raise unknown("--cluster field", column, data.fields)
    keys = np.asarray(data.fields[column]).astype(str)
    blank = np.flatnonzero(np.char.strip(keys) == "")
    if blank.size:
        raise InputError(f"{data.source}: --cluster {column}: {blank.size} items have no value (item "
                         f"{str(item_ids(data)[blank[0]])!r} first); every item needs its cluster")
    n_np = no_proxy_labels(data).size
    fields = getattr(data, "no_proxy_fields", None) or {}
    if n_np and column in fields:
        np_keys = np.asarray(fields[column]).astype(str)
        np_keys = np.where(np.char.strip(np_keys) == "", np.char.add("\x00no-proxy-", no_proxy_ids(data)), np_keys)
    else:
        np_keys = np.char.add("\x00no-proxy-", no_proxy_ids(data)) if n_np else np.zeros(0, str)
    return keys, np.asarray(np_keys).astype(str)


def sampling_probabilities(data: Any) -> FloatArray | None:
    """The ``sampling_probability`` field of actively selected items (``judgecp select``), NaN where blank.

    A cell that is not a probability in (0, 1] is an error naming its row.
    """
    if "sampling_probability" not in data.fields:
        return None
    values, status = numbers(list(np.asarray(data.fields["sampling_probability"]).astype(str)))
    with np.errstate(invalid="ignore"):
        bad = (status != BLANK) & ~((values > 0) & (values <= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        cell = np.asarray(data.fields["sampling_probability"])[i]
        raise InputError(f"{data.source}: item {str(item_ids(data)[i])!r}: sampling_probability {str(cell)!r} is not a "
                         f"probability in (0, 1] ({int(bad.sum())} such rows)")
    out: FloatArray = np.where(status == BLANK, np.nan, values)
    return out


def group_column(data: Any, groups: str | None) -> tuple[str | None, NDArray[np.str_] | None]:
    """The field to stratify by (``groups``, else ``task`` when the records have several tasks) and its values."""
    if groups is None and "task" in data.fields and np.unique(np.asarray(data.fields["task"])).size > 1:
        groups = "task"
    if groups is None:
        return None, None
    if groups not in data.fields:
        raise unknown("--group field", groups, data.fields)
    return groups, np.asarray(data.fields[groups]).astype(str)


def proxy_features(data: Any, proxy: FloatArray, groups: NDArray[Any] | Sequence[Any] | None) -> FloatArray:
    """The features a cross-fitted proxy is fitted on: the kind's own (:func:`_likert_features`), the group."""
    cols = [_likert_features(data)] if isinstance(data, ScoreData) else [proxy[:, None]]
    if groups is not None:
        cols.append(one_hot(np.asarray(groups)))
    return np.hstack(cols)


def _likert_features(data: Any) -> FloatArray:
    """Likert: the judge's clipped log-softmax, expected score, spread, then any extra feature columns."""
    out: FloatArray = model_features(data.X, data.scale)
    return out
