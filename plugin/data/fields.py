"""Which column holds which record field: the flags every kind shares, and the cell readers.

``--label``, ``--id``, ``--logprobs``, ``--prediction`` (``--parsed``),
``--group`` and ``--join`` mean the same for every kind. Left out, each
field is found under its record name (a ``judgecp.record/1`` file needs no
flag) or a kind's usual alternatives (:attr:`judgecp.kinds.Kind.columns`). A named column
that is not there is an error naming the flag, with "did you mean".

``--logprobs`` is either a column of ``{token: log-probability}`` objects
(or their JSON text) or a glob over one column per token (``'s2_lp*'``,
``'lp_*'``): the token is what follows the glob's fixed prefix, or, for a
Likert scale, the number that ends the column name.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, did_you_mean, unknown
from judgecp.data.tables import ArrowColumn, Table, arrow_pool, read_table

ID_CANDIDATES = ("id", "sample_id", "doc_id", "index")


#: The columns a plain table names each record field by, when a reader names none of its own.
DEFAULT_COLUMNS: Mapping[str, tuple[str, ...]] = {"label": ("label",), "prediction": ("prediction",),
                                                  "logprobs": ("logprobs",)}


def column_candidates(columns: Mapping[str, tuple[str, ...]], name: str) -> tuple[str, ...]:
    """The columns a reader's tables usually name a record field by (its ``columns``; else the name)."""
    return tuple(columns.get(name, (name,)))


#: Words in a column name that say it holds the judge's output (its score, verdict or logprobs), not a human's.
JUDGE_WORDS = re.compile(r"logprob|parsed|pred|judge|verdict|response|expected_score|(^|_)lp(_|\d|$)", re.I)


def is_judge_column(name: str, columns: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether a column holds the judge's output: a usual prediction or logprob column of the reader, or a
    name with :data:`JUDGE_WORDS` (``parsed_score``, ``s2_lp3``, ``judge_score``)."""
    usual = column_candidates(columns, "prediction") + column_candidates(columns, "logprobs")
    return name in usual or bool(JUDGE_WORDS.search(name))


class Rows:
    """The data of a kind with one ``labels`` entry a row (:class:`~judgecp.data.ScoreData`,
    :class:`~judgecp.data.PairData`)."""

    labels: NDArray[Any]

    @property
    def n(self) -> int:
        """The number of rows."""
        return int(self.labels.size)


@dataclass(frozen=True)
class Fields:
    """Column names for the record fields (``None``: the record name or the kind's usual ones).

    ``joins`` are ``FILE`` or ``FILE:PREFIX`` specs whose columns are added
    by id; ``features`` a glob of extra numeric columns for fitted Likert
    methods (multi-judge fusion). ``flags`` says how to name a field in an
    error (the CLI's ``--label``; lm-eval's ``metadata label``).
    """

    label: str | None = None
    id: str | None = None
    logprobs: str | None = None
    prediction: str | None = None
    group: str | None = None
    joins: tuple[str, ...] = ()
    features: str | None = None
    flags: Mapping[str, str] = field(default_factory=dict)

    def flag(self, name: str) -> str:
        return self.flags.get(name, f"--{name}")

    def pick(self, table: Table, name: str, columns: Mapping[str, tuple[str, ...]]) -> str | None:
        """The column of field ``name``: the one given (checked), else the first usual one present."""
        given = getattr(self, name)
        if given is not None and name == "label" and given not in table.columns:
            # never propose the judge's own output as the human label ("did you mean 'parsed_score'?")
            humans = [c for c in table.columns if not is_judge_column(c, columns)]
            shown = ", ".join(sorted(table.columns)[:40]) + (" ..." if len(table.columns) > 40 else "")
            raise InputError(f"unknown {self.flag(name)} column {given!r}{did_you_mean(given, humans)}; "
                             f"available: {shown or 'none'}")
        if given is not None:
            table.column(given, self.flag(name))
            return str(given)
        candidates = ID_CANDIDATES if name == "id" else column_candidates(columns, name)
        return next((c for c in candidates if c in table.columns), None)

    def label_column(self, table: Table, columns: Mapping[str, tuple[str, ...]], *, required: bool) -> str | None:
        """The label column; none found is an error naming the flag when labels are ``required``."""
        column = self.pick(table, "label", columns)
        if column is None and required:
            names = [c for c in table.columns if not c.startswith("_")]
            shown = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
            raise InputError(
                f"{table.source}: no label column (looked for {', '.join(column_candidates(columns, 'label'))}; "
                f"read as a table with columns {shown}); pass {self.flag('label')} COLUMN"
            )
        return column


# -- cells ---------------------------------------------------------------------------------


def is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def to_float(value: Any) -> float | None:
    """A number (NaN for NaN text), or ``None`` when blank or unreadable (a bool is not a number)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # a JSON integer of 400 digits: infinite as a float, as its text would be
            return math.inf if value > 0 else -math.inf
    text = str(value).strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def to_object(value: Any) -> dict[str, Any] | str | None:
    """A ``{key: value}`` cell (a dict, or its JSON text); ``None`` when blank, ``"unreadable"`` otherwise."""
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # RecursionError: a cell nested thousands deep
            return "unreadable"
    if value is None:
        return None
    if not isinstance(value, dict):
        return "unreadable"
    return {str(k).strip(): v for k, v in value.items()}


def to_list(value: Any) -> list[str] | None:
    """A list cell (a list, or ``"B"``/``"B,C"``/``"B C"`` text); ``None`` when empty."""
    import re

    if value is None:
        return None
    if isinstance(value, (list, tuple, set)):
        items = [str(v).strip() for v in value]
    else:
        text = str(value).strip()
        if not text:
            return None
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, list):
                return to_list(parsed)
        items = [t.strip() for t in re.split(r"[,;|\s]+", text) if t.strip()]
    return [i for i in items if i] or None


def text_array(values: Any) -> Any:
    """Strings as an object array: a 50 MB cell costs its own size, not 50 MB times the rows."""
    out = np.empty(len(values), dtype=object)
    out[:] = [str(v) for v in values]
    return out


#: Status of a cell read as a number (:func:`numbers`).
NUMBER, BLANK, NOT_A_NUMBER = 0, 1, 2


def numbers(cells: Any) -> tuple[Any, Any]:
    """A column as float64 values and a status per cell: :data:`NUMBER` (NaN for NaN text),
    :data:`BLANK` (missing) or :data:`NOT_A_NUMBER` (text, a bool, an object).

    Numeric arrays (a columnar reader's; a masked array marks its missing
    cells) are taken as they are; other columns are read cell by cell.
    """
    if isinstance(cells, np.ma.MaskedArray) and cells.dtype.kind in "fiu":
        status = np.where(np.ma.getmaskarray(cells), BLANK, NUMBER).astype(np.int8)
        return np.asarray(cells.data, dtype=np.float64), status
    if isinstance(cells, np.ndarray) and cells.dtype.kind in "fiu":
        return cells.astype(np.float64), np.zeros(cells.shape[0], np.int8)
    if isinstance(cells, ArrowColumn):
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            cast = pc.cast(cells.array, pa.float64(), memory_pool=arrow_pool())
        except pa.ArrowInvalid:  # a cell Arrow does not read as a number: the cell-by-cell rules decide
            cells = cells.cells()
        else:
            blank = cast.is_null().to_numpy(zero_copy_only=False)
            return cast.to_numpy(zero_copy_only=False), np.where(blank, BLANK, NUMBER).astype(np.int8)
    if isinstance(cells, list) and cells and all(type(c) is str for c in cells):
        try:  # every cell text of a number (a CSV column): numpy parses them at once
            return np.array(cells, dtype=np.float64), np.zeros(len(cells), np.int8)
        except ValueError:
            pass
    n = len(cells)
    values = np.full(n, np.nan)
    status = np.zeros(n, np.int8)
    for i, cell in enumerate(cells):
        if is_blank(cell):
            status[i] = BLANK
            continue
        number = to_float(cell)
        if number is None:
            status[i] = NOT_A_NUMBER
        else:
            values[i] = number
    return values, status


class FieldColumns(Mapping[str, Any]):
    """The groupable fields of kept rows, turned into text arrays only when a field is asked for.

    A report names one or two fields (``--group``, ``--mondrian``); converting
    every column of a million rows up front would cost seconds and memory.
    """

    def __init__(self, columns: Mapping[str, Any], rows: Any, names: Sequence[str]) -> None:
        self._names = list(names)
        self._columns = {n: columns[n] for n in self._names}  # not the table's other columns (logprobs...)
        self._rows = np.asarray(rows)
        self._cache: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._cache:
            cells = self._columns[name]
            if isinstance(cells, ArrowColumn):
                cells = cells.cells()
            self._cache[name] = text_array(["" if is_blank(cells[i]) else cells[i] for i in self._rows.tolist()])
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def take(self, index: Any) -> FieldColumns:
        return FieldColumns(self._columns, self._rows[index], self._names)


def finite_or_none(value: Any) -> float:
    number = to_float(value)
    return math.nan if number is None else number


# -- logprob columns -------------------------------------------------------------------------


@dataclass(frozen=True)
class LogprobColumns:
    """Where the log-probabilities are: one object column, or one column per token."""

    object_column: str | None = None
    by_token: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> Any:
        """The report's ``input.columns.logprobs``: the token columns in order, or ``{"json": column}``."""
        return list(self.by_token.values()) if self.by_token else {"json": self.object_column}

    def cells(self, table: Table, row: int, tokens: Sequence[str] | None = None) -> dict[str, Any] | str | None:
        """``{token: cell}`` of one row (an object cell parsed; ``None``/``"unreadable"`` as :func:`to_object`)."""
        if self.object_column is not None:
            return to_object(table.columns[self.object_column][row])
        wanted = tokens if tokens is not None else list(self.by_token)
        return {t: table.columns[self.by_token[t]][row] for t in wanted if t in self.by_token}


def token_columns(table: Table, fields: Fields, tokens: Sequence[str] | None = None) -> LogprobColumns | None:
    """Where a row's token log-probabilities are (``None``: none; the kind may read probabilities instead).

    ``--logprobs`` names an object column or a glob of per-token columns;
    otherwise a ``logprobs`` column, else the ``lp_<token>`` columns (only
    those of ``tokens`` when given, e.g. a pairwise verdict's ``A``, ``B``).
    """
    if fields.logprobs is not None:
        if fields.logprobs in table.columns:
            return LogprobColumns(object_column=fields.logprobs)
        return LogprobColumns(by_token=glob_columns(fields.logprobs, table.names, fields.flag("logprobs")))
    if "logprobs" in table.columns:
        return LogprobColumns(object_column="logprobs")
    found = {c[3:]: c for c in table.names if c.startswith("lp_") and (tokens is None or c[3:] in tokens)}
    return LogprobColumns(by_token=found) if found else None


def glob_columns(pattern: str, columns: Sequence[str], flag: str) -> dict[str, str]:
    """``{token: column}`` for the columns a glob matches; the token is what the glob's fixed prefix leaves."""
    matched = [c for c in columns if fnmatch.fnmatchcase(c, pattern)]
    if not matched:
        raise InputError(
            f"{flag} {pattern!r} matches no column{did_you_mean(pattern, columns)}; columns: {', '.join(columns)}"
        )
    prefix = pattern.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0]
    return {c[len(prefix):] or c: c for c in matched}


def join_tables(table: Table, joins: Sequence[str], id_column: str | None, ids: list[str]) -> list[dict[str, Any]]:
    """Add the columns of each ``FILE[:PREFIX]`` to ``table`` by id; returns what each join did (for the report).

    The join key is the main id column when the joined file has it, else its
    first usual id column; a duplicated id in a joined file is an error.
    Rows without a match get empty cells (counted as ``unmatched``).
    """
    info: list[dict[str, Any]] = []
    for spec in joins:
        path, prefix = _parse_join(spec)
        other = read_table(path)
        key = id_column if id_column in other.columns else next((c for c in ID_CANDIDATES if c in other.columns), None)
        if key is None:
            raise InputError(f"--join {path}: no id column (looked for {id_column or ', '.join(ID_CANDIDATES)})")
        index: dict[str, int] = {}
        for i, value in enumerate(other.columns[key]):
            k = str(value if value is not None else "").strip()
            if k in index:
                raise InputError(f"--join {path}: duplicate id {k!r}")
            index[k] = i
        added = [prefix + c for c in other.columns if c != key and (prefix + c) not in table.columns]
        kept = [c for c in other.columns if c != key and (prefix + c) in table.columns]
        rows = [index.get(rid) for rid in ids]
        for c in other.columns:
            if c != key and prefix + c in added:
                cells = other.columns[c]
                table.columns[prefix + c] = [None if r is None else cells[r] for r in rows]
        matched = sum(r is not None for r in rows)
        info.append({"file": str(path), "matched": matched, "unmatched": len(ids) - matched,
                     "added_columns": added, "kept_from_main": kept})
    return info


def _parse_join(spec: str) -> tuple[str, str]:
    """``FILE`` or ``FILE:PREFIX`` (the prefix is prepended to the joined columns)."""
    if ":" in Path(spec).name:
        path, _, prefix = spec.rpartition(":")
        return path, prefix
    return spec, ""


def require_column(table: Table, name: str | None, flag: str) -> None:
    if name is not None and name not in table.columns:
        raise unknown(f"{flag} column", name, table.columns)
