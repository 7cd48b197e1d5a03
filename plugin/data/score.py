"""Likert judges: score records (or a table of them) as arrays, every row left out counted.

A row needs the judge's K score-token log-probabilities (K columns, or one
column of ``{"1": lp, ..., "5": lp}`` objects) and, for evaluation, a human
label on the scale (read unlabeled, a table without a label column is a run
whose every row is unlabeled). Exclusion reasons, in the order they are checked:
``<exclude>`` (a reason an adapter set), ``no_score`` (the extractor found no
score position), ``label_missing`` (unless unlabeled rows are wanted),
``label_not_numeric``, ``label_off_scale`` (not an integer label of the
scale; with a ``label_scale``, outside its ``LO..HI``), ``logprob_missing``,
``logprob_not_numeric``, ``logprob_infinite`` (+inf), ``nan_logprob``
(unless ``nan="floor"``), ``no_score_logprobs`` (every label at the floor or
-inf), ``parse_failure`` (the judge's parsed score is not a label),
``group_missing``, ``feature_missing``. Flags (the row is kept): the
record's own, ``neg_inf_floored``, ``nan_floored``.

Labels on another scale than the judge's (``label_scale``, the CLI's
``--label-scale LO:HI``) are mapped onto it by
:meth:`judgecp.base.scale.LabelScale.to_judge` and kept when not integers:
:attr:`ScoreData.continuous_labels` then says that only interval methods
apply (docs/beyond.md, "Continuous labels").
"""

from __future__ import annotations

import fnmatch
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, NoUsableRecords, unknown
from judgecp.base.exclusions import Exclusions
from judgecp.base.scale import LabelScale, LikertScale, label_scale_hint
from judgecp.data.extraction import DEFAULT_FLOOR
from judgecp.data.fields import (
    BLANK,
    NOT_A_NUMBER,
    NUMBER,
    FieldColumns,
    Fields,
    LogprobColumns,
    Rows,
    is_blank,
    join_tables,
    numbers,
    text_array,
    to_object,
)
from judgecp.data.score_columns import SCORE_COLUMNS, logprob_columns
from judgecp.data.tables import ArrowColumn, Table, arrow_pool

#: Record fields that are not groupable fields of a row.
_NOT_FIELDS = ("schema", "shape", "flags", "exclude")

@dataclass
class ScoreData(Rows):
    """Valid rows of a Likert judge as arrays (``labels`` NaN where a row is unlabeled)."""

    ids: NDArray[np.str_]
    labels: NDArray[np.float64]
    logprobs: NDArray[np.float64]
    scale: LikertScale
    parsed: NDArray[np.int64]
    fields: Mapping[str, NDArray[Any]] = field(default_factory=dict)
    extra_features: NDArray[np.float64] | None = None
    excluded: Exclusions = field(default_factory=Exclusions)
    flags: Exclusions = field(default_factory=Exclusions)
    n_read: int = 0
    source: str = ""
    columns: dict[str, Any] = field(default_factory=dict)
    kind: Literal["likert"] = "likert"
    #: Rows left out only for want of a judge proxy (no score logprobs): their labels, NaN where unlabeled.
    # : Not in the arrays above; PPI keeps them as their own stratum
    # (:func:`judgecp.workflows.nightly.estimate.estimate`).
    no_proxy_labels: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    #: The scale the labels were given on, when not the judge's (``labels`` are mapped onto ``scale``).
    label_scale: LabelScale | None = None
    #: The ids and fields of the rows of ``no_proxy_labels`` (matching them across runs, their groups, clusters).
    no_proxy_ids: NDArray[np.str_] | None = None
    no_proxy_fields: Mapping[str, NDArray[Any]] = field(default_factory=dict)

    @property
    def labeled(self) -> NDArray[np.bool_]:
        return ~np.isnan(self.labels)

    @property
    def continuous_labels(self) -> bool:
        """Whether some label is not an integer of the scale (only interval methods apply then)."""
        y = self.labels[self.labeled]
        return bool(np.any(y != np.round(y)))

    @property
    def X(self) -> NDArray[np.float64]:
        """Method input: the K score-token logprobs, then any extra features."""
        if self.extra_features is None:
            return self.logprobs
        return np.hstack([self.logprobs, self.extra_features])

    def field(self, name: str, setting: str = "field") -> NDArray[Any]:
        if name not in self.fields:
            raise unknown(setting, name, self.fields)
        return self.fields[name]

    def take(self, index: NDArray[Any]) -> ScoreData:
        return ScoreData(
            self.ids[index],
            self.labels[index],
            self.logprobs[index],
            self.scale,
            self.parsed[index],
            self.fields.take(index)
            if isinstance(self.fields, FieldColumns)
            else {k: v[index] for k, v in self.fields.items()},
            None if self.extra_features is None else self.extra_features[index],
            self.excluded,
            self.flags,
            self.n_read,
            self.source,
            self.columns,
            label_scale=self.label_scale,
        )

    @classmethod
    def from_arrays(
        cls,
        logprobs: Any,
        labels: Any,
        *,
        scale: LikertScale | None = None,
        ids: Sequence[Any] | None = None,
        parsed: Any = None,
        fields: dict[str, Any] | None = None,
    ) -> ScoreData:
        """Build from in-memory arrays (already valid; use :func:`judgecp.kinds.reading.load` for files)."""
        scale = scale or LikertScale()
        lp = np.asarray(logprobs, dtype=np.float64)
        y = np.asarray(labels, dtype=np.float64)
        parsed_arr = np.argmax(lp[:, : scale.k], axis=1) + scale.minimum if parsed is None else np.asarray(parsed)
        return cls(
            ids=text_array(ids if ids is not None else range(y.size)),
            labels=y,
            logprobs=lp,
            scale=scale,
            parsed=parsed_arr.astype(np.int64),
            fields={k: text_array(v) for k, v in (fields or {}).items()},
            n_read=int(y.size),
        )


def _ids(table: Table, id_col: str | None) -> list[str]:
    """The rows' ids (stripped); a blank or a repeated id is an error naming it."""
    if id_col is None:
        return [str(i) for i in range(table.n_rows)]
    column = table.columns[id_col]
    if isinstance(column, ArrowColumn):
        import pyarrow.compute as pc

        pool = arrow_pool()
        filled = pc.coalesce(column.array, "", memory_pool=pool)  # fill_null, in judgecp's pool
        ids: list[str] = pc.utf8_trim_whitespace(filled, memory_pool=pool).to_pylist()
        del filled
    else:
        ids = [("" if v is None else str(v)).strip() for v in column]
    if not all(ids):
        blank = [i for i, v in enumerate(ids) if not v]
        raise InputError(f"{table.source}: {len(blank)} row(s) have no {id_col!r} (first at row {blank[0] + 1})")
    if len(set(ids)) < len(ids):
        dups = sorted(v for v, c in Counter(ids).items() if c > 1)
        raise InputError(
            f"{table.source}: duplicate ids in {id_col!r}: {dups[:5]}{' ...' if len(dups) > 5 else ''}; ids must be "
            "unique"
        )
    return ids


class RowReasons:
    """Why each row is left out (the first reason found, in the order the rules are checked)."""

    def __init__(self, ids: list[str], excluded: Exclusions) -> None:
        self.ids = np.asarray(ids, dtype=object)
        self.excluded = excluded
        self.open = np.ones(len(ids), bool)

    def mark(self, mask: Any, reason: str) -> NDArray[np.bool_]:
        """Leave out the rows of ``mask`` that no earlier rule left out, counted under ``reason``; returns them."""
        hit: NDArray[np.bool_] = np.asarray(mask, bool) & self.open
        if hit.any():
            self.excluded.add_rows(reason, hit, self.ids)
            self.open &= ~hit
        return hit

    def kept(self) -> NDArray[np.int64]:
        return np.flatnonzero(self.open)


def _record_exclusions(rows: RowReasons, exclude: Any, flags: Any) -> NDArray[np.bool_]:
    """A reason an adapter set (``exclude``), then ``no_score`` (a record flag: the extractor found no score).

    Returns the rows left out as ``no_score``.
    """
    if exclude is not None:
        reasons = [None if is_blank(v) else str(v) for v in exclude]
        for reason in sorted({r for r in reasons if r is not None}):
            rows.mark(np.asarray([r == reason for r in reasons]), reason)
    if flags is not None:
        return rows.mark(np.asarray([isinstance(f, (list, tuple)) and "no_score" in f for f in flags]), "no_score")
    return np.zeros(rows.open.size, bool)


def _record_flags(flags: Exclusions, column: Any, keep: NDArray[np.int64], ids: list[str]) -> None:
    """The records' own flags, counted over the kept rows."""
    if column is None:
        return
    for i in keep.tolist():
        cell = column[i]
        if isinstance(cell, (list, tuple)):
            for f in cell:
                flags.add(str(f), ids[i])


def _logprob_matrix(rows: RowReasons, table: Table, lp: LogprobColumns, scale: LikertScale) -> NDArray[np.float64]:
    """The ``(n, K)`` logprobs, leaving out rows with a missing or unreadable one."""
    n = table.n_rows
    if lp.object_column is not None:
        cells = [to_object(v) for v in table.columns[lp.object_column]]
        rows.mark(np.asarray([c is None for c in cells]), "logprob_missing")
        rows.mark(np.asarray([isinstance(c, str) for c in cells]), "logprob_not_numeric")
        per_token = [[c.get(t) if isinstance(c, dict) else None for c in cells] for t in scale.tokens]
    else:
        per_token = [table.columns[lp.by_token[t]] for t in scale.tokens]
    read = [numbers(column) for column in per_token]
    vals = np.column_stack([v for v, _ in read]) if read else np.zeros((n, 0))
    status = np.column_stack([s for _, s in read]) if read else np.zeros((n, 0), np.int8)
    rows.mark((status == BLANK).any(axis=1), "logprob_missing")
    rows.mark((status == NOT_A_NUMBER).any(axis=1), "logprob_not_numeric")
    out: NDArray[np.float64] = vals
    return out


def _floor_logprobs(
    rows: RowReasons, vals: NDArray[np.float64], nan: str, floor: float
) -> tuple[NDArray[np.float64], dict[str, NDArray[np.bool_]]]:
    """+inf, NaN (excluded or floored), no score at all, -inf (floored): the rules of the module docstring."""
    rows.mark((vals == np.inf).any(axis=1), "logprob_infinite")
    nan_rows = np.isnan(vals).any(axis=1)
    floored: dict[str, NDArray[np.bool_]] = {}
    if nan == "exclude":
        rows.mark(nan_rows, "nan_logprob")
    else:
        floored["nan_floored"] = nan_rows & rows.open
        vals = np.where(np.isnan(vals), floor, vals)
    finite = vals > -np.inf
    flat = (vals == vals[:, :1]).all(axis=1) & (vals[:, 0] <= floor + 1e-9)
    rows.mark(~finite.any(axis=1) | flat, "no_score_logprobs")
    floored["neg_inf_floored"] = (~finite).any(axis=1) & rows.open
    return np.where(finite, vals, np.maximum(vals, floor)), floored


def looks_like_scale(labels: NDArray[np.float64], off_scale: int, scale: LikertScale) -> str:
    """``labels look like 0..1: --label-scale 0:1?`` when a tenth or more of the numeric labels are off the
    judge's scale and all of them fit a usual other scale (0..1, 0..10, 0..100); else nothing."""
    y = labels[np.isfinite(labels)]
    if not y.size or 10 * off_scale < y.size:
        return ""
    for low, high in ((0, 1), (0, 10), (0, 100)):
        if y.min() >= low and y.max() <= high and (low, high) != (scale.minimum, scale.maximum):
            return f"labels look like {low}..{high}: --label-scale {low}:{high}?"
    return f"labels run from {y.min():g} to {y.max():g}: --label-scale {y.min():g}:{y.max():g}?"


def _no_labels(n: int) -> tuple[NDArray[np.float64], NDArray[np.int8]]:
    """A table without a label column read as unlabeled: every label blank."""
    return np.full(n, np.nan), np.full(n, BLANK, np.int8)


def score_data(
    table: Table,
    fields: Fields | None = None,
    *,
    scale: LikertScale | None = None,
    floor: float = DEFAULT_FLOOR,
    nan: Literal["exclude", "floor"] = "exclude",
    require_label: bool = True,
    label_scale: LabelScale | None = None,
) -> ScoreData:
    """Validate a table of Likert rows (see the module docstring for the rules)."""
    fields = fields or Fields()
    scale = scale or LikertScale()
    if nan not in ("exclude", "floor"):
        raise InputError(f"nan must be 'exclude' or 'floor', got {nan!r}")
    if not (math.isfinite(floor) and floor < 0):
        raise InputError(f"--floor must be a negative log-probability (the default is log 1e-5 = {DEFAULT_FLOOR:.2f}), "
                         f"got {floor}: a floored label must not become the likeliest")
    excluded, flags = table.excluded, Exclusions()
    id_col = fields.pick(table, "id", SCORE_COLUMNS)
    ids = _ids(table, id_col)
    join_info = join_tables(table, fields.joins, id_col, ids)
    label_col = fields.label_column(table, SCORE_COLUMNS, required=require_label)
    lp = logprob_columns(table, fields, scale)
    parsed_col = fields.pick(table, "prediction", SCORE_COLUMNS)
    if fields.group is not None:
        table.column(fields.group, fields.flag("group"))
    feature_cols: list[str] = []
    if fields.features:
        feature_cols = [
            c for c in table.names if fnmatch.fnmatchcase(c, fields.features) and c not in lp.by_token.values()
        ]
        if not feature_cols:
            raise unknown(f"{fields.flag('features')} glob", fields.features, table.names)

    rows = RowReasons(ids, excluded)
    col = table.columns
    no_proxy = _record_exclusions(rows, col.get("exclude"), col.get("flags"))
    label_set = scale.labels.astype(np.float64)
    y, status = numbers(col[label_col]) if label_col is not None else _no_labels(table.n_rows)
    if require_label:
        rows.mark(status == BLANK, "label_missing")
    rows.mark(status == NOT_A_NUMBER, "label_not_numeric")
    with np.errstate(invalid="ignore"):
        if label_scale is None:
            on_scale = np.isfinite(y) & (y == np.round(y)) & np.isin(y, label_set)
        else:
            on_scale = np.isfinite(y) & (y >= label_scale.low) & (y <= label_scale.high)
            y = np.clip(label_scale.to_judge(y, scale), scale.minimum, scale.maximum)
    off = rows.mark((status == NUMBER) & ~on_scale, "label_off_scale")
    if label_scale is None and off.any():
        hint = looks_like_scale(y[status == NUMBER], int(off.sum()), scale)
        if hint:
            excluded.notes["label_off_scale"] = hint
    before_logprobs = rows.open.copy()
    vals = _logprob_matrix(rows, table, lp, scale)
    if rows.open.any():
        vals, floored = _floor_logprobs(rows, vals, nan, floor)
    else:
        floored = {}
    no_proxy |= before_logprobs & ~rows.open  # left out by a logprob rule, label valid or blank
    if parsed_col is not None:
        p, p_status = numbers(col[parsed_col])
        with np.errstate(invalid="ignore"):
            ok = (p_status == NUMBER) & np.isfinite(p) & (p == np.round(p)) & np.isin(p, label_set)
        rows.mark(~ok, "parse_failure")
        parsed = np.where(ok, p, 0).astype(np.int64)
    else:
        parsed = np.argmax(vals, axis=1) + scale.minimum
    if fields.group is not None:
        rows.mark(np.asarray([is_blank(v) for v in col[fields.group]]), "group_missing")
    features = None
    if feature_cols:
        features = np.column_stack([numbers(col[c])[0] for c in feature_cols])
        statuses = np.column_stack([numbers(col[c])[1] for c in feature_cols])
        rows.mark(((statuses != NUMBER) | ~np.isfinite(features)).any(axis=1), "feature_missing")
    keep = rows.kept()
    if not keep.size:
        off_scale = label_scale is None and 2 * excluded.counts.get("label_off_scale", 0) > table.n_read
        raise NoUsableRecords(table.source, excluded, table.n_read, label_scale_hint(scale) if off_scale else "")
    for name, mask in floored.items():
        flags.add_rows(name, mask[keep], rows.ids[keep])
    _record_flags(flags, col.get("flags"), keep, ids)
    # Every scalar column is a field a group or Mondrian calibration can name (the label and the
    # judge's own score included: label- or score-conditional tables); not the logprobs.
    special = {lp.object_column, *_NOT_FIELDS, *lp.by_token.values()}
    first = int(keep[0])
    names = [c for c in table.names if c not in special and not isinstance(col[c][first], (dict, list))]
    return ScoreData(
        ids=text_array([ids[i] for i in keep.tolist()]),
        labels=np.where(status[keep] == NUMBER, y[keep], np.nan),
        logprobs=vals[keep],
        scale=scale,
        parsed=parsed[keep],
        fields=FieldColumns(col, keep, names),
        extra_features=None if features is None else features[keep],
        excluded=excluded,
        flags=flags,
        n_read=table.n_read,
        source=table.source,
        columns={
            "label": label_col,
            "logprobs": lp.describe(),
            "id": id_col,
            "parsed": parsed_col,
            "group": fields.group,
            "features": feature_cols,
            "joins": join_info,
        },
        no_proxy_labels=np.where((status == NUMBER) & on_scale, y, np.nan)[no_proxy],
        no_proxy_ids=text_array([ids[i] for i in np.flatnonzero(no_proxy).tolist()]),
        no_proxy_fields=FieldColumns(col, np.flatnonzero(no_proxy), names),
        label_scale=label_scale,
    )
