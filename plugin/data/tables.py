"""The one table reader: CSV, TSV, JSONL/JSON and Parquet files (and in-memory records) as columns.

Every input judgecp evaluates becomes a :class:`Table`, whatever its kind:
a CSV of logprob columns, a JSONL of ``judgecp.record/1`` records (their
``meta`` keys lifted to columns), an lm-eval samples file or a VLMEvalKit
prediction file once an adapter has turned it into records. The shape
readers (:mod:`judgecp.data`) then map columns onto record fields with the
same flags for every kind (:class:`judgecp.fields.Fields`).

Rows that cannot be read are counted, never dropped silently: a JSONL line
that is not a JSON object is ``malformed_json_line``, a CSV row with more
cells than the header ``malformed_csv_row``, a record that fails the
schema's structural check its :func:`judgecp.base.records.problem`. A file with
no readable row, no header or the wrong encoding is an :class:`InputError`
naming it, and so is a path that is a folder, a broken symbolic link or a
file that cannot be read. A UTF-8 byte-order mark (Excel's "CSV UTF-8") is
read as the mark it is, not as part of the first column's name; a JSON line
nested too deeply to parse is a ``malformed_json_line`` like any other.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from judgecp.base.errors import InputError, require, unknown
from judgecp.base.exclusions import Exclusions
from judgecp.base.outputs import atomic_writer
from judgecp.base.progress import progress
from judgecp.base.records.schema import SCHEMA, flatten, problem
from judgecp.base.schemas import describe_file, describe_lines
from judgecp.base.textfiles import not_text, read_text, text_lines

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
CSV_SUFFIXES = {".csv": ",", ".tsv": "\t"}
#: Files this large get a progress line while read (when the command line enables it); every N rows.
PROGRESS_BYTES = 8 << 20
PROGRESS_ROWS = 50_000


@dataclass
class Table:
    """Rows of one input as columns (name -> cells in row order), with what could not be read."""

    columns: dict[str, list[Any]]
    n_rows: int
    source: str
    excluded: Exclusions = field(default_factory=Exclusions)
    #: Rows (lines) read, the unreadable ones included.
    n_read: int = 0
    #: Record shapes found when the rows are ``judgecp.record/1`` records (empty for plain tables).
    shapes: tuple[str, ...] = ()
    #: A reader's own account (a harness reader's files, repairs, ...), added to reports under its keys.
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def column(self, name: str, flag: str | None = None) -> list[Any]:
        """The cells of ``name``; a missing column is an error naming the flag and the columns there are."""
        if name not in self.columns:
            what = f"{flag} column" if flag else "column"
            raise unknown(what, name, self.columns) from None
        return self.columns[name]

    def get(self, name: str | None) -> list[Any] | None:
        return None if name is None else self.columns.get(name)

    def row(self, i: int) -> dict[str, Any]:
        return {name: cells[i] for name, cells in self.columns.items()}

    def take(self, rows: Sequence[int]) -> Table:
        return Table({k: [v[i] for i in rows] for k, v in self.columns.items()}, len(rows), self.source,
                     self.excluded, self.n_read, self.shapes, self.info)


def table_from_rows(
    rows: Iterable[Any],
    *,
    source: str,
    excluded: Exclusions | None = None,
    n_read: int | None = None,
) -> Table:
    """A table from dict rows (``None`` or a non-dict row is counted as ``malformed_json_line``).

    Rows that are ``judgecp.record/1`` records (they carry ``schema``) are
    checked (:func:`judgecp.base.records.problem`, counted by reason) and
    flattened (``meta`` keys become columns).
    """
    excluded = excluded if excluded is not None else Exclusions()
    kept: list[dict[str, Any]] = []
    shapes: list[str] = []
    count = 0
    for i, row in enumerate(rows):
        count += 1
        if not isinstance(row, dict):
            excluded.add("malformed_json_line", f"line {i + 1}")
            continue
        if "schema" in row:
            why = problem(row)
            if why is not None:
                excluded.add(why, row.get("id") or f"line {i + 1}")
                continue
            if row["shape"] not in shapes:
                shapes.append(row["shape"])
            row = flatten(row)
        kept.append(row)
    names: dict[str, None] = {}
    for row in kept:
        for key in row:
            names.setdefault(str(key), None)
    columns = {name: [row.get(name) for row in kept] for name in names}
    return Table(columns, len(kept), source, excluded, count if n_read is None else n_read, tuple(shapes))


def jsonl_objects(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """``(line number, object)`` for every non-blank JSONL line; ``None`` where the line is not a JSON object.

    The callers count the ``None`` lines (``malformed_json_line``); nothing is skipped silently.
    """
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: a line nested thousands deep
            obj = None
        yield lineno, obj if isinstance(obj, dict) else None


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """:func:`jsonl_objects` over a UTF-8 file (a byte-order mark allowed), read line by line."""
    yield from jsonl_objects(text_lines(path))


def _read_text(path: Path) -> str:
    raw = read_text(path)
    if not raw.strip():
        raise InputError(f"{path}: the file is empty")
    return raw


def _read_json(path: Path, excluded: Exclusions) -> Table:
    raw = _read_text(path)
    if path.suffix.lower() == ".json" and raw.lstrip().startswith("["):
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{path}: not valid JSON ({exc})") from exc
        return table_from_rows(data, source=str(path), excluded=excluded)
    texts = raw.splitlines()
    bar = progress(len(texts), f"reading {path.name} (lines)") if len(raw) >= PROGRESS_BYTES else None
    lines = []
    for i, item in enumerate(jsonl_objects(texts)):
        lines.append(item)
        if bar is not None and i % PROGRESS_ROWS == PROGRESS_ROWS - 1:
            bar.update(PROGRESS_ROWS)
    if bar is not None:
        bar.close()
    return table_from_rows((obj if obj is not None else lineno for lineno, obj in lines), source=str(path),
                           excluded=excluded)


def _csv_header(path: Path, delimiter: str) -> list[str]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        try:
            header = next(csv.reader(handle, delimiter=delimiter), None)
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not a UTF-8 text file ({exc.reason})") from exc
    if not header or not any(h.strip() for h in header):
        if path.stat().st_size < (1 << 20) and not path.read_bytes().strip():
            raise InputError(f"{path}: the file is empty")
        raise InputError(f"{path}: no header row")
    duplicated = sorted({n for n in header if header.count(n) > 1})
    if duplicated:
        raise InputError(f"{path}: duplicate column names {duplicated}")
    return list(header)


def _read_csv(path: Path, delimiter: str, excluded: Exclusions) -> Table:
    """The standard library's reader: every cell a string. A row with more or fewer cells than the
    header is ``malformed_csv_row`` (which cell is missing is not for the reader to guess)."""
    raw = _read_text(path)
    csv.field_size_limit(sys.maxsize)  # one huge cell (a long judge answer) is data, not an error
    reader = csv.reader(io.StringIO(raw, newline=""), delimiter=delimiter)
    names = next(reader)
    columns: dict[str, list[Any]] = {n: [] for n in names}
    n_read = 0
    # Lines, not rows (a quoted cell may hold newlines): the line only shows that work goes on.
    bar = progress(raw.count("\n"), f"reading {path.name} (lines)") if len(raw) >= PROGRESS_BYTES else None
    for cells in reader:
        if not cells:
            continue
        n_read += 1
        if bar is not None and n_read % PROGRESS_ROWS == 0:
            bar.update(PROGRESS_ROWS)
        if len(cells) != len(names):
            excluded.add("malformed_csv_row", f"line {reader.line_num}")
            continue
        for name, cell in zip(names, cells, strict=True):
            columns[name].append(cell)
    if bar is not None:
        bar.close()
    return Table(columns, len(columns[names[0]]), str(path), excluded, n_read)


def arrow_pool() -> Any:
    """The memory pool of judgecp's pyarrow work: the system allocator's.

    pyarrow's default (mimalloc) keeps freed pages for reuse, so the CSV's
    parsed copy and every cast stay resident after they are dropped (about
    150 MB at a million rows); the system allocator gives them back. Calls
    that take a pool are given it; the CSV reader and ``combine_chunks``,
    which allocate from the default pool, run with this one as the default,
    and the process's own is put back after.
    """
    import pyarrow as pa

    return pa.system_memory_pool()


class ArrowColumn(Sequence[Any]):
    """A column of strings read by pyarrow, kept in Arrow memory: a million numbers cost 8 MB, not
    a million Python strings. Cells come out as ``str`` or ``None`` (a missing cell);
    :func:`judgecp.data.fields.numbers` casts the whole column at once."""

    def __init__(self, array: Any) -> None:
        self.array = array
        self._cells: list[Any] | None = None

    def __len__(self) -> int:
        return len(self.array)

    def cells(self) -> list[Any]:
        if self._cells is None:
            self._cells = self.array.to_pylist()
        return self._cells

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, (int, np.integer)):
            return self.array[int(index)].as_py()
        return self.cells()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.cells())


def _read_csv_arrow(path: Path, delimiter: str, excluded: Exclusions) -> Table | None:
    """pyarrow's multithreaded reader, every column as strings (ids keep their zeros); ``None`` when
    pyarrow is missing or gives up (a row longer than a block), and the standard reader takes over."""
    try:
        import pyarrow as pa
        from pyarrow import csv as pa_csv
    except ImportError:
        return None
    names = _csv_header(path, delimiter)
    bad: list[str] = []

    def skip(row: Any) -> str:
        bad.append(f"line {row.number}" if row.number is not None else "a row")
        return "skip"

    block = max(1 << 20, min(path.stat().st_size + 1, 1 << 28))
    default_pool = pa.default_memory_pool()
    pa.set_memory_pool(arrow_pool())
    try:
        table = pa_csv.read_csv(
            path,
            read_options=pa_csv.ReadOptions(block_size=block, use_threads=True),
            parse_options=pa_csv.ParseOptions(delimiter=delimiter, newlines_in_values=True, invalid_row_handler=skip),
            convert_options=pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()), null_values=[""],
                                                  strings_can_be_null=True, quoted_strings_can_be_null=False),
        )
        columns: dict[str, Any] = {n: ArrowColumn(table.column(n).combine_chunks()) for n in names}
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None
    finally:
        pa.set_memory_pool(default_pool)
    for example in bad:
        excluded.add("malformed_csv_row", example)
    n_rows = table.num_rows
    del table  # the chunked copy: at a million rows, ~100 MB handed back to the system now
    return Table(columns, n_rows, str(path), excluded, n_rows + len(bad))


def _read_parquet(path: Path, excluded: Exclusions) -> Table:
    pq: Any = require("pyarrow.parquet", "parquet", "reading Parquet files")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises its own types for damaged files
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from exc
    rows = table.to_pylist()
    return table_from_rows(rows, source=str(path), excluded=excluded)


def _read_xlsx(path: Path, excluded: Exclusions) -> Table:
    """The first sheet of an Excel file (VLMEvalKit's default prediction format); blank rows are skipped."""
    openpyxl: Any = require("openpyxl", "vlmeval", "reading .xlsx files")
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # zipfile/openpyxl errors on a damaged file
        raise InputError(f"{path}: not a readable .xlsx file ({exc})") from exc
    try:
        cells = book.worksheets[0].iter_rows(values_only=True)
        header = next(cells, None)
        if header is None:
            raise InputError(f"{path}: the file is empty")
        names = ["" if h is None else str(h) for h in header]
        rows = [{n: v for n, v in zip(names, values, strict=False) if n} for values in cells
                if values is not None and any(v is not None for v in values)]
    finally:
        book.close()
    table = table_from_rows(rows, source=str(path), excluded=excluded)
    table.columns = {n: table.columns.get(n, [None] * table.n_rows) for n in names if n}
    return table


def read_table(path: str | Path, *, engine: str = "auto") -> Table:
    """Rows of a CSV/TSV, JSONL/JSON (one object per line, or one array), Parquet or Excel (.xlsx) file.

    CSV/TSV: with ``engine="auto"`` pyarrow reads them when it is installed
    (columnar and multithreaded: a million rows in a second, numbers kept
    out of Python objects), else the standard library's reader, with the
    same rules and results (``engine="python"`` forces it; the tests run both).
    """
    if engine not in ("auto", "python"):
        raise InputError(f"engine must be 'auto' or 'python', got {engine!r}")
    p = Path(path)
    check_readable(p)
    excluded = Exclusions()
    suffix = p.suffix.lower()
    if suffix in CSV_SUFFIXES or suffix in JSONL_SUFFIXES:
        problem = not_text(p)  # a gzip-compressed CSV, an .npz named .jsonl: what it is, in one line
        if problem is not None:
            raise problem
    if suffix in CSV_SUFFIXES:
        delimiter = CSV_SUFFIXES[suffix]
        _csv_header(p, delimiter)
        fast = _read_csv_arrow(p, delimiter, excluded) if engine != "python" else None
        table = fast if fast is not None else _read_csv(p, delimiter, excluded)
    elif suffix == ".parquet":
        table = _read_parquet(p, excluded)
    elif suffix in JSONL_SUFFIXES:
        table = _read_json(p, excluded)
    elif suffix == ".xlsx":
        table = _read_xlsx(p, excluded)
    else:
        raise InputError(f"{p}: unknown file type {suffix!r}; judgecp reads .csv, .tsv, .jsonl, .json, .parquet, .xlsx")
    if table.n_rows == 0:

        what = (describe_file(p) or describe_lines(p)) if suffix in JSONL_SUFFIXES else None
        if what is not None:
            raise InputError(f"{p}: {what}, not a table or records of judge outputs")
        reasons = ", ".join(f"{e['reason']}: {e['count']}" for e in excluded.to_json())
        raise InputError(f"{p}: no rows to read" + (f" ({reasons})" if reasons else ""))
    return table


def check_readable(path: str | Path) -> None:
    """A path that is not a readable file is an :class:`InputError` saying why (before any reading)."""
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise InputError(f"{p}: a symbolic link to a missing file ({os.readlink(p)})")
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.is_dir():
        raise InputError(f"{p}: a directory, not a file")
    try:
        mode = p.stat().st_mode
    except OSError as exc:
        raise InputError(f"{p}: cannot be read ({exc.strerror or exc})") from exc
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # /dev/zero, /dev/urandom: endless bytes
        raise InputError(f"{p}: a device, not a file")
    try:
        with p.open("rb"):
            pass
    except OSError as exc:
        raise InputError(f"{p}: cannot be read ({exc.strerror or exc})") from exc


def write_records(path: str | Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Write records as JSONL (strict JSON, one per line), atomically; returns how many. A non-finite number
    an input row held (a label of 1e400) is written as the records write one: ``"inf"``, ``"-inf"``, ``"nan"``."""

    count = 0
    with atomic_writer(path) as handle:
        for record in records:
            try:
                line = json.dumps(record, ensure_ascii=False, allow_nan=False)
            except ValueError:
                line = json.dumps(_finite(record), ensure_ascii=False, allow_nan=False)
            handle.write(line + "\n")
            count += 1
    return count


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not np.isfinite(value):
        return repr(value)  # 'inf', '-inf', 'nan'
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    return [_finite(v) for v in value] if isinstance(value, (list, tuple)) else value


def is_record_table(table: Table) -> bool:
    """Whether the rows were ``judgecp.record/1`` records."""
    return bool(table.shapes) or SCHEMA in set(table.columns.get("schema", []))
