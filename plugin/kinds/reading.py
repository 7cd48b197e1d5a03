"""Any source as a judge kind's data: a file, a table or records in memory, read by the kind's reader.

:func:`load` reads a file (CSV/TSV/JSONL/Parquet, or a format an adapter
registers, e.g. an lm-eval samples file), :func:`from_records` takes records
in memory; both go through :func:`from_table`, which maps the table's columns
onto record fields (:class:`judgecp.data.fields.Fields`) and validates them
into the kind's arrays (:mod:`judgecp.data`). The kind of a
``judgecp.record/1`` file is its records' ``shape`` (no guessing from
columns); a plain table is read as the kind asked for (:data:`TABLE_KIND`
when none is). Every row left out is counted by reason in the data's
``excluded``. :func:`to_records` writes any kind's data back as records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from judgecp.base.errors import InputError, NoUsableRecords
from judgecp.base.memory import release_freed_memory
from judgecp.data import AnyData
from judgecp.data.fields import Fields
from judgecp.data.formats import record_format, sniff_format
from judgecp.data.tables import Table, read_table, table_from_rows
from judgecp.kinds.registry import get_kind, kind_of_shape, kinds_of_shape

#: The kind a plain table (no ``shape``) is read as when no kind is asked for (``--kind`` says otherwise).
TABLE_KIND = "likert"


def resolve_kind(table: Table, kind: str | None) -> str:
    """The kind to read ``table`` as: the records' shape, checked against ``kind`` when both are there."""
    if kind is not None:
        get_kind(kind)  # an unknown kind is an error naming the kinds there are
    if len(table.shapes) > 1:
        raise InputError(f"{table.source}: the records mix shapes ({', '.join(table.shapes)}); read one kind at a time")
    if table.shapes:
        shape = table.shapes[0]
        if kind is None:
            return kind_of_shape(shape).name
        if get_kind(kind).reader.record_shape != shape:
            readers = kinds_of_shape(shape)
            raise InputError(
                f"{table.source}: these are {shape} records; --kind {kind} reads "
                f"{get_kind(kind).reader.record_shape if get_kind(kind).reads_tables else 'no'} records (use --kind "
                f"{' or '.join(readers) or '?'})"
            )
        return kind
    return kind or TABLE_KIND


def from_table(
    table: Table,
    kind: str | None = None,
    fields: Fields | None = None,
    *,
    require_label: bool = True,
    **options: Any,
) -> AnyData:
    """Validate a table as the arrays of its kind (``options``: the kind's reader options, e.g. Likert's
    ``scale``, ``floor`` and ``nan``; :meth:`judgecp.kinds.kind.Reader.read`)."""
    options = {k: v for k, v in options.items() if v is not None}
    data: AnyData = get_kind(resolve_kind(table, kind)).reader.read(table, fields, require_label=require_label,
                                                             detect=kind is None, **options)
    return data


def load(
    path: str | Path,
    kind: str | None = None,
    fields: Fields | None = None,
    *,
    format: str | None = None,
    **options: Any,
) -> AnyData:
    """Read and validate a file of judge outputs (see :func:`from_table`).

    ``format`` names a reader an adapter registered (``lm-eval`` samples
    files, ``vlmeval`` prediction files; ``judgecp evaluate --format``) or
    ``"table"`` (CSV/TSV/JSONL/JSON/Parquet); ``None`` or ``"auto"``
    recognises the file by its content.
    """
    if format in (None, "auto"):
        format = sniff_format(Path(path))
    if format != "table":
        batch = record_format(format).read(Path(path), kind=kind)
        table, kind = batch.table(), kind or batch.kind
    else:
        table = read_table(path)
    data = from_table(table, kind, fields, **options)
    del table  # the parsed cells: a large file's are most of what was allocated, and are freed here
    release_freed_memory()
    return data


def from_records(
    records: Iterable[Mapping[str, Any]],
    kind: str | None = None,
    fields: Fields | None = None,
    *,
    source: str = "records",
    **options: Any,
) -> AnyData:
    """Validate records in memory (``judgecp.record/1`` dicts, or any rows with the right columns)."""
    table = table_from_rows(list(records), source=source)
    if table.n_rows == 0:
        raise NoUsableRecords(source, table.excluded, table.n_read)
    return from_table(table, kind, fields, **options)


def to_records(data: Any) -> list[dict[str, Any]]:
    """One record per row (per pair and order for pairwise data): the data's kind writes them
    (:meth:`judgecp.kinds.kind.Reader.to_records`)."""
    records: list[dict[str, Any]] = get_kind(data.kind).reader.to_records(data)
    return records
