"""Reading Likert judge outputs (CSV or JSONL) into arrays, counting every row left out.

A row needs a human label on the scale and the judge's K score-token
log-probabilities, either as K columns (``--logprobs 's2_lp*'``) or as one
JSON object column (``{"1": -3.2, ..., "5": -0.1}``). Rows that cannot be
used are excluded with a reason and counted (:class:`judgecp.Exclusions`);
problems with the file or the options raise :class:`judgecp.InputError`.

Exclusion reasons: ``label_missing``, ``label_not_numeric``,
``label_off_scale`` (not an integer label of the scale), ``logprob_missing``,
``logprob_not_numeric``, ``nan_logprob`` (unless ``nan="floor"``),
``logprob_infinite`` (+inf), ``no_score_logprobs`` (every label at the floor
or -inf: the extractor found no score), ``parse_failure`` (the judge's parsed
score is not a label), ``malformed_json_line``, ``group_missing``.
Flags (the row is kept): ``neg_inf_floored``, ``nan_floored``.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.errors import InputError
from judgecp.exclusions import Exclusions
from judgecp.extraction import DEFAULT_FLOOR
from judgecp.scale import LikertScale

LABEL_COLUMNS = ("label", "gt_score", "human_score", "human_label")
ID_COLUMNS = ("id", "sample_id", "doc_id", "index")
PARSED_COLUMNS = ("parsed", "parsed_score", "judge_score")
LOGPROB_JSON_COLUMNS = ("logprobs", "score_logprobs")


@dataclass
class LikertData:
    """Valid rows of a Likert judge evaluation as arrays."""

    ids: NDArray[np.str_]
    labels: NDArray[np.float64]
    logprobs: NDArray[np.float64]
    scale: LikertScale
    parsed: NDArray[np.int64]
    fields: dict[str, NDArray[np.str_]] = field(default_factory=dict)
    extra_features: NDArray[np.float64] | None = None
    excluded: Exclusions = field(default_factory=Exclusions)
    flags: Exclusions = field(default_factory=Exclusions)
    n_read: int = 0
    source: str = ""
    columns: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.labels.size)

    @property
    def X(self) -> NDArray[np.float64]:
        """Method input: the K score-token logprobs, then any extra features."""
        if self.extra_features is None:
            return self.logprobs
        return np.hstack([self.logprobs, self.extra_features])

    def field(self, name: str) -> NDArray[np.str_]:
        if name not in self.fields:
            raise InputError(f"no field {name!r}; available: {', '.join(sorted(self.fields)) or 'none'}")
        return self.fields[name]

    def take(self, index: NDArray[Any]) -> LikertData:
        return LikertData(
            ids=self.ids[index],
            labels=self.labels[index],
            logprobs=self.logprobs[index],
            scale=self.scale,
            parsed=self.parsed[index],
            fields={k: v[index] for k, v in self.fields.items()},
            extra_features=None if self.extra_features is None else self.extra_features[index],
            excluded=self.excluded,
            flags=self.flags,
            n_read=self.n_read,
            source=self.source,
            columns=self.columns,
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
    ) -> LikertData:
        """Build from in-memory arrays (already valid; use :func:`load_likert` for files)."""
        scale = scale or LikertScale()
        lp = np.asarray(logprobs, dtype=np.float64)
        y = np.asarray(labels, dtype=np.float64)
        n = y.size
        parsed_arr = (
            np.argmax(lp[:, : scale.k], axis=1) + scale.minimum
            if parsed is None
            else np.asarray(parsed, dtype=np.int64)
        )
        return cls(
            ids=np.asarray([str(i) for i in (ids if ids is not None else range(n))]),
            labels=y,
            logprobs=lp,
            scale=scale,
            parsed=parsed_arr.astype(np.int64),
            fields={k: np.asarray(v).astype(str) for k, v in (fields or {}).items()},
            n_read=n,
        )


# -- reading files ---------------------------------------------------------


def jsonl_objects(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """``(line number, object)`` for every non-blank JSONL line; ``None`` where the line is not a JSON object.

    The callers count the ``None`` lines (``malformed_json_line``); nothing is skipped silently.
    """
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            obj = None
        yield lineno, obj if isinstance(obj, dict) else None


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """:func:`jsonl_objects` over a UTF-8 file, read line by line."""
    with Path(path).open(encoding="utf-8") as handle:
        yield from jsonl_objects(handle)


def read_table(path: str | Path, excluded: Exclusions | None = None) -> tuple[list[str], list[dict[str, Any]]]:
    """Rows of a CSV (``.csv``/``.tsv``) or JSONL (``.jsonl``/``.json``) file as dicts.

    A JSONL line that is not a JSON object is excluded as ``malformed_json_line``
    (its line number is kept as an example), so one corrupted line of a
    harness output does not sink the evaluation; a file with no readable row
    is an error.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    excluded = excluded if excluded is not None else Exclusions()
    try:
        raw = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not a UTF-8 text file ({exc.reason})") from exc
    if not raw.strip():
        raise InputError(f"{p}: the file is empty")
    suffix = p.suffix.lower()
    rows: list[dict[str, Any]] = []
    columns: list[str] = []
    if suffix in (".jsonl", ".json", ".ndjson"):
        stripped = raw.lstrip()
        if suffix == ".json" and stripped.startswith("["):
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InputError(f"{p}: not valid JSON ({exc.msg}, line {exc.lineno})") from exc
            parsed_lines = list(enumerate(data, 1))
        else:
            parsed_lines = list(jsonl_objects(raw.splitlines()))
        for lineno, obj in parsed_lines:
            if not isinstance(obj, dict):
                excluded.add("malformed_json_line", f"line {lineno}")
                continue
            rows.append(obj)
            for key in obj:
                if key not in columns:
                    columns.append(key)
    else:
        dialect = "excel-tab" if suffix == ".tsv" else "excel"
        reader = csv.DictReader(raw.splitlines(), dialect=dialect)
        if not reader.fieldnames:
            raise InputError(f"{p}: no header row")
        columns = [c for c in reader.fieldnames if c is not None]
        if len(set(columns)) != len(columns):
            dup = sorted({c for c in columns if columns.count(c) > 1})
            raise InputError(f"{p}: duplicate column names {dup}")
        for row in reader:
            if None in row:  # more cells than header columns
                excluded.add("malformed_csv_row", f"line {reader.line_num}")
                continue
            rows.append(dict(row))
    if not rows:
        raise InputError(f"{p}: no rows to read")
    return columns, rows


def _first_present(candidates: Sequence[str], columns: Sequence[str]) -> str | None:
    for c in candidates:
        if c in columns:
            return c
    return None


_TRAILING_INT = re.compile(r"^(.*?)(-?\d+)$")


def resolve_logprob_columns(pattern: str | None, columns: Sequence[str], scale: LikertScale) -> list[str]:
    """The K logprob columns, ordered by label, from a glob or by auto-detection.

    A glob must match exactly one column per label (the label is the number
    that ends the column name: ``s2_lp1``..``s2_lp5``); missing or extra
    columns are an error that names them.
    """
    if pattern is None:
        groups: dict[str, dict[int, str]] = {}
        for c in columns:
            m = _TRAILING_INT.match(c)
            if m:
                groups.setdefault(m.group(1), {})[int(m.group(2))] = c
        wanted = set(int(v) for v in scale.labels)
        found = [g for g in groups.values() if set(g) == wanted]
        if len(found) != 1:
            raise InputError(
                "cannot tell which columns hold the score-token logprobs"
                + (" (several candidates)" if found else "")
                + f"; pass --logprobs GLOB (e.g. 'lp*') or --logprobs-json COLUMN. Columns: {', '.join(columns)}"
            )
        g = found[0]
        return [g[int(v)] for v in scale.labels]
    matched = [c for c in columns if fnmatch.fnmatchcase(c, pattern)]
    if not matched:
        raise InputError(f"--logprobs {pattern!r} matches no column; columns: {', '.join(columns)}")
    by_label: dict[int, str] = {}
    unnumbered = []
    for c in matched:
        m = _TRAILING_INT.match(c)
        if m is None:
            unnumbered.append(c)
            continue
        label = int(m.group(2))
        if label in by_label:
            raise InputError(f"--logprobs {pattern!r}: columns {by_label[label]!r} and {c!r} both end in {label}")
        by_label[label] = c
    labels = [int(v) for v in scale.labels]
    missing = [v for v in labels if v not in by_label]
    extra = sorted(c for v, c in by_label.items() if v not in labels) + unnumbered
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"no column for label(s) {missing}")
        if extra:
            parts.append(f"column(s) {extra} are not labels of the scale {scale}")
        raise InputError(f"--logprobs {pattern!r}: " + "; ".join(parts))
    return [by_label[v] for v in labels]


def _to_float(value: Any) -> float | None:
    """Number, NaN for explicit NaN text, ``None`` for unreadable."""
    if value is None:
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


@dataclass
class _Join:
    path: str
    prefix: str = ""


def parse_join(spec: str) -> _Join:
    """``FILE`` or ``FILE:PREFIX`` (prefix prepended to the joined columns)."""
    path, sep, prefix = spec.rpartition(":") if ":" in Path(spec).name else (spec, "", "")
    return _Join(path if sep else spec, prefix)


def load_likert(
    path: str | Path,
    *,
    label: str | None = None,
    logprobs: str | None = None,
    logprobs_json: str | None = None,
    id_column: str | None = None,
    parsed: str | None = None,
    group: str | None = None,
    joins: Sequence[str] = (),
    features: str | None = None,
    scale: LikertScale | None = None,
    floor: float = DEFAULT_FLOOR,
    nan: str = "exclude",
) -> LikertData:
    """Read a Likert judge file; see the module docstring for the rules."""
    excluded = Exclusions()
    columns, rows = read_table(path, excluded)
    return likert_from_rows(
        columns, rows, source=str(path), excluded=excluded, label=label, logprobs=logprobs,
        logprobs_json=logprobs_json, id_column=id_column, parsed=parsed, group=group, joins=joins,
        features=features, scale=scale, floor=floor, nan=nan,
    )


def likert_from_records(records: Sequence[dict[str, Any]], *, source: str = "records", **options: Any) -> LikertData:
    """Build :class:`LikertData` from record dicts (the adapters' currency).

    A Likert record is ``{"id", "label", "logprobs": {"1": lp, ...}, "parsed",
    "group", "flags": [...]}``; the same rules as :func:`load_likert` apply
    (options: ``label``, ``group``, ``scale``, ``floor``, ``nan``, ...). A
    record whose ``flags`` contain ``no_score`` (the extractor found no score
    position) is excluded as ``no_score``; its other flags are counted.
    """
    if not records:
        raise InputError(f"{source}: no records")
    columns: list[str] = []
    for r in records:
        for key in r:
            if key not in columns:
                columns.append(key)
    return likert_from_rows(columns, [dict(r) for r in records], source=source, **options)


def likert_from_rows(
    columns: list[str],
    rows: list[dict[str, Any]],
    *,
    source: str,
    excluded: Exclusions | None = None,
    label: str | None = None,
    logprobs: str | None = None,
    logprobs_json: str | None = None,
    id_column: str | None = None,
    parsed: str | None = None,
    group: str | None = None,
    joins: Sequence[str] = (),
    features: str | None = None,
    scale: LikertScale | None = None,
    floor: float = DEFAULT_FLOOR,
    nan: str = "exclude",
) -> LikertData:
    """The validation shared by files and records."""
    scale = scale or LikertScale()
    if nan not in ("exclude", "floor"):
        raise InputError(f"nan must be 'exclude' or 'floor', got {nan!r}")
    excluded = excluded if excluded is not None else Exclusions()
    flags = Exclusions()
    n_read = len(rows) + excluded.total

    # ids
    id_col = id_column or _first_present(ID_COLUMNS, columns)
    if id_column and id_column not in columns:
        raise InputError(f"--id {id_column!r} is not a column; columns: {', '.join(columns)}")
    ids = [str(r.get(id_col, "")).strip() if id_col else str(i) for i, r in enumerate(rows)]
    if id_col:
        blank = [i for i, v in enumerate(ids) if not v]
        if blank:
            raise InputError(f"{len(blank)} row(s) have no {id_col!r} (first at row {blank[0] + 1})")
    dups = sorted(v for v, c in Counter(ids).items() if c > 1)
    if dups:
        raise InputError(f"duplicate ids in {id_col!r}: {dups[:5]}{' ...' if len(dups) > 5 else ''}; ids must be unique")

    # joins
    join_info = []
    for spec in joins:
        j = parse_join(spec)
        jcols, jrows = read_table(j.path)
        jid = id_col if id_col in jcols else _first_present(ID_COLUMNS, jcols)
        if jid is None:
            raise InputError(f"--join {j.path}: no id column (looked for {id_col or ID_COLUMNS})")
        index: dict[str, dict[str, Any]] = {}
        for r in jrows:
            key = str(r.get(jid, "")).strip()
            if key in index:
                raise InputError(f"--join {j.path}: duplicate id {key!r}")
            index[key] = r
        added = [j.prefix + c for c in jcols if c != jid and (j.prefix + c) not in columns]
        skipped = [c for c in jcols if c != jid and (j.prefix + c) in columns]
        matched = 0
        for rid, r in zip(ids, rows, strict=True):
            other = index.get(rid)
            if other is not None:
                matched += 1
            for c in jcols:
                if c != jid and (j.prefix + c) in added:
                    r[j.prefix + c] = None if other is None else other.get(c)
        columns = columns + added
        join_info.append({"file": str(j.path), "matched": matched, "unmatched": len(rows) - matched,
                          "added_columns": added, "kept_from_main": skipped})

    label_col = label or _first_present(LABEL_COLUMNS, columns)
    if label_col is None or label_col not in columns:
        raise InputError(
            f"no label column {label!r}; pass --label COLUMN. Columns: {', '.join(columns)}"
            if label else f"no label column (looked for {', '.join(LABEL_COLUMNS)}); pass --label COLUMN"
        )
    if logprobs and logprobs_json:
        raise InputError("give --logprobs or --logprobs-json, not both")
    json_col = logprobs_json
    if json_col is None and logprobs is None:
        json_col = _first_present(LOGPROB_JSON_COLUMNS, columns)
        if json_col is not None and rows and not isinstance(rows[0].get(json_col), (dict, str)):
            json_col = None
    if json_col is not None and json_col not in columns:
        raise InputError(f"--logprobs-json {json_col!r} is not a column; columns: {', '.join(columns)}")
    lp_cols = None if json_col else resolve_logprob_columns(logprobs, columns, scale)
    parsed_col = parsed or _first_present(PARSED_COLUMNS, columns)
    if parsed and parsed not in columns:
        raise InputError(f"--parsed {parsed!r} is not a column")
    if group and group not in columns:
        raise InputError(f"--group {group!r} is not a column; columns: {', '.join(columns)}")
    feature_cols: list[str] = []
    if features:
        feature_cols = [c for c in columns if fnmatch.fnmatchcase(c, features) and c not in (lp_cols or [])]
        if not feature_cols:
            raise InputError(f"--features {features!r} matches no column")

    keep_ids: list[str] = []
    keep_y: list[float] = []
    keep_lp: list[list[float]] = []
    keep_parsed: list[int] = []
    keep_rows: list[dict[str, Any]] = []
    keep_feat: list[list[float]] = []
    label_set = {int(v) for v in scale.labels}
    tokens = scale.tokens
    for rid, r in zip(ids, rows, strict=True):
        record_flags = r.get("flags")
        if isinstance(record_flags, (list, tuple)):
            if "no_score" in record_flags:
                excluded.add("no_score", rid)
                continue
            for f in record_flags:
                flags.add(str(f), rid)
        raw_label = r.get(label_col)
        if _is_blank(raw_label):
            excluded.add("label_missing", rid)
            continue
        y = _to_float(raw_label)
        if y is None:
            excluded.add("label_not_numeric", rid)
            continue
        if math.isnan(y) or y != round(y) or int(y) not in label_set:
            excluded.add("label_off_scale", rid)
            continue
        # logprobs
        cells: list[Any]
        if json_col is not None:
            obj = r.get(json_col)
            if isinstance(obj, str):
                try:
                    obj = json.loads(obj) if obj.strip() else None
                except json.JSONDecodeError:
                    obj = "unreadable"
            if obj is None:
                excluded.add("logprob_missing", rid)
                continue
            if not isinstance(obj, dict):
                excluded.add("logprob_not_numeric", rid)
                continue
            by_token = {str(k).strip(): v for k, v in obj.items()}
            cells = [by_token.get(t) for t in tokens]
        else:
            assert lp_cols is not None
            cells = [r.get(c) for c in lp_cols]
        if any(_is_blank(c) for c in cells):
            excluded.add("logprob_missing", rid)
            continue
        floats = [_to_float(c) for c in cells]
        if any(v is None for v in floats):
            excluded.add("logprob_not_numeric", rid)
            continue
        vals = [float(v) for v in floats if v is not None]
        if any(v == math.inf for v in vals):
            excluded.add("logprob_infinite", rid)
            continue
        if any(math.isnan(v) for v in vals):
            if nan == "exclude":
                excluded.add("nan_logprob", rid)
                continue
            flags.add("nan_floored", rid)
            vals = [floor if math.isnan(v) else v for v in vals]
        finite = [v for v in vals if v > -math.inf]
        if not finite or (len(set(vals)) == 1 and vals[0] <= floor + 1e-9):
            excluded.add("no_score_logprobs", rid)
            continue
        if len(finite) < len(vals):
            flags.add("neg_inf_floored", rid)
            vals = [max(v, floor) if v == -math.inf else v for v in vals]
        # the judge's own parsed score
        if parsed_col is not None:
            p = _to_float(r.get(parsed_col))
            if p is None or math.isnan(p) or p != round(p) or int(p) not in label_set:
                excluded.add("parse_failure", rid)
                continue
            parsed_value = int(p)
        else:
            parsed_value = int(np.argmax(vals)) + scale.minimum
        if group is not None and _is_blank(r.get(group)):
            excluded.add("group_missing", rid)
            continue
        if feature_cols:
            fv = [_to_float(r.get(c)) for c in feature_cols]
            if any(v is None or not math.isfinite(v) for v in fv):
                excluded.add("feature_missing", rid)
                continue
            keep_feat.append([float(v) for v in fv if v is not None])
        keep_ids.append(rid)
        keep_y.append(y)
        keep_lp.append(vals)
        keep_parsed.append(parsed_value)
        keep_rows.append(r)

    if not keep_ids:
        reasons = ", ".join(f"{k}: {v}" for k, v in excluded.counts.items())
        raise InputError(f"{source}: no usable rows ({reasons})")
    special = {label_col, parsed_col, json_col, "flags", *(lp_cols or [])}
    fields = {
        c: np.asarray(["" if _is_blank(r.get(c)) else str(r.get(c)) for r in keep_rows])
        for c in columns
        if c not in special and not isinstance(keep_rows[0].get(c), (dict, list))
    }
    return LikertData(
        ids=np.asarray(keep_ids),
        labels=np.asarray(keep_y, dtype=np.float64),
        logprobs=np.asarray(keep_lp, dtype=np.float64),
        scale=scale,
        parsed=np.asarray(keep_parsed, dtype=np.int64),
        fields=fields,
        extra_features=np.asarray(keep_feat, dtype=np.float64) if feature_cols else None,
        excluded=excluded,
        flags=flags,
        n_read=n_read,
        source=source,
        columns={
            "label": label_col,
            "logprobs": lp_cols if lp_cols else {"json": json_col},
            "id": id_col,
            "parsed": parsed_col,
            "group": group,
            "features": feature_cols,
            "joins": join_info,
        },
    )
