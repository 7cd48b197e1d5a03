"""Judge outputs as validated arrays, one reader for every kind and every source.

:func:`load` reads a file (CSV/TSV/JSONL/Parquet, or a format an adapter
registers, e.g. an lm-eval samples file), :func:`from_records` takes records
in memory; both go through :func:`from_table`, which maps the table's columns
onto record fields (:class:`Fields`) and validates them into the kind's
arrays: :class:`ScoreData` (Likert), :class:`PairData` (pairwise),
:class:`ChoiceData` (multiple choice and PARC). The kind of a
``judgecp.record/1`` file is its records' ``shape`` (no guessing from
columns); a plain table is read as the kind asked for (``likert`` when none
is). Every row left out is counted by reason in the data's ``excluded``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from judgecp.data.choice import PAD_LOGPROB, ChoiceData, choice_data
from judgecp.data.fields import Fields
from judgecp.data.pair import PairData, pair_data
from judgecp.data.score import ScoreData, score_data
from judgecp.errors import InputError
from judgecp.memory import release_freed_memory
from judgecp.scale import LabelScale, LikertScale
from judgecp.tables import Table, read_table, table_from_rows

AnyData = ScoreData | PairData | ChoiceData

#: ``judgecp evaluate --kind`` values and the record shape each reads.
KINDS = ("likert", "pairwise", "mcq", "parc")
SHAPE_OF_KIND = {"likert": "score", "pairwise": "pair", "mcq": "choice", "parc": "choice"}
KIND_OF_SHAPE = {"score": "likert", "pair": "pairwise", "choice": "mcq"}


def resolve_kind(table: Table, kind: str | None) -> str:
    """The kind to read ``table`` as: the records' shape, checked against ``kind`` when both are there."""
    if kind is not None and kind not in KINDS:
        raise InputError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    if len(table.shapes) > 1:
        raise InputError(f"{table.source}: the records mix shapes ({', '.join(table.shapes)}); read one kind at a time")
    if table.shapes:
        shape = table.shapes[0]
        if kind is None:
            return KIND_OF_SHAPE[shape]
        if SHAPE_OF_KIND[kind] != shape:
            raise InputError(
                f"{table.source}: these are {shape} records; --kind {kind} reads {SHAPE_OF_KIND[kind]} records "
                f"(use --kind {KIND_OF_SHAPE[shape]}{' or parc' if shape == 'choice' else ''})"
            )
        return kind
    return kind or "likert"


def from_table(
    table: Table,
    kind: str | None = None,
    fields: Fields | None = None,
    *,
    scale: LikertScale | None = None,
    require_label: bool = True,
    **options: Any,
) -> AnyData:
    """Validate a table as the arrays of its kind (``options``: Likert ``floor`` and ``nan``)."""
    resolved = resolve_kind(table, kind)
    if resolved == "likert":
        if "scale" in table.columns and scale is None:
            scale = _record_scale(table)
        if "label_scale" in table.columns and options.get("label_scale") is None:
            options["label_scale"] = _record_label_scale(table)
        return score_data(table, fields, scale=scale, require_label=require_label, **options)
    if options:
        raise InputError(f"{', '.join(sorted(options))}: options of Likert judges, not of --kind {resolved}")
    if resolved == "pairwise":
        return pair_data(table, fields, require_label=require_label)
    return choice_data(table, fields, kind=kind, require_label=require_label)


def _record_scale(table: Table) -> LikertScale | None:
    """The scale score records carry (one for all of them), if any."""
    scales = {tuple(s) for s in table.columns["scale"] if isinstance(s, list) and len(s) == 2}
    if len(scales) > 1:
        raise InputError(f"{table.source}: the records have different scales {sorted(scales)}")
    return LikertScale(*scales.pop()) if scales else None


def _record_label_scale(table: Table) -> LabelScale | None:
    """The label scale score records carry (one for all of them; records without one are on the judge's)."""
    cells = [c for c in table.columns["label_scale"] if c is not None and c != ""]
    scales = {tuple(c) if isinstance(c, list) else c for c in cells}
    if len(scales) > 1 or (scales and len(cells) < table.n_rows):
        raise InputError(f"{table.source}: the records' label_scale differs between records "
                         f"({sorted(map(str, scales))[:3]}{', and none on some' if len(cells) < table.n_rows else ''})")
    return LabelScale.parse(scales.pop(), flag=f"{table.source}: label_scale") if scales else None


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
    files, ``vlmeval`` prediction files; ``judgecp evaluate --format``);
    ``None`` or ``"table"`` reads CSV/TSV/JSONL/JSON/Parquet.
    """
    if format not in (None, "table"):
        from judgecp.plugins import record_format

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
        from judgecp.errors import NoUsableRecords

        raise NoUsableRecords(source, table.excluded, table.n_read)
    return from_table(table, kind, fields, **options)


__all__ = [
    "KINDS",
    "PAD_LOGPROB",
    "AnyData",
    "ChoiceData",
    "Fields",
    "PairData",
    "ScoreData",
    "from_records",
    "from_table",
    "load",
    "resolve_kind",
]
