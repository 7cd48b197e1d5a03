"""``--judge NAME``: name the judge of records that name none, so records and calibrators made from a table carry it.

Records from lm-eval and VLMEvalKit name their judge (``judge``: the model a
judgecp model class loaded); a table (CSV, ...) usually does not, and then a
calibrator of one judge could be applied to another judge's table without a
word. ``--judge`` on ``records``, ``evaluate``, ``calibrate``, ``apply`` and
``estimate`` fills it in. A row that names another judge is an error: the
name would silently replace it.
"""

from __future__ import annotations

from typing import Any

from judgecp.base.errors import InputError
from judgecp.data.choice import FIELD_COLUMNS
from judgecp.data.fields import is_blank
from judgecp.data.tables import Table

#: The columns a reader takes the judge's name from, first found first (multiple choice also reads ``model``).
JUDGE_COLUMNS: tuple[str, ...] = FIELD_COLUMNS["judge"]


def _named(value: Any) -> bool:
    """Whether a cell names a judge (blank, ``None`` and ``nan`` do not, as calibrators read identities)."""
    return not is_blank(value) and str(value) not in ("None", "nan")


def _check_name(judge: str, flag: str) -> None:
    if not judge.strip():
        raise InputError(f"{flag}: give the judge's name")


def name_judge(table: Table, judge: str, *, flag: str = "--judge") -> None:
    """Give every row of ``table`` the judge ``judge`` (its ``info`` records it too, for reports).

    The first of :data:`JUDGE_COLUMNS` the table has must name no other judge (a ``model`` column of a
    table without a ``judge`` column counts: multiple-choice readers take it as the judge).
    """
    _check_name(judge, flag)
    column = next((c for c in JUDGE_COLUMNS if c in table.columns), None)
    if column is not None:
        others = sorted({str(c) for c in table.columns[column] if _named(c) and str(c) != judge})
        if others:
            more = f" (and {len(others) - 1} more)" if len(others) > 1 else ""
            raise InputError(f"{flag} {judge}: {table.source} names the judge {others[0]!r}{more} in its {column!r} "
                             "column; leave --judge out, or give that name")
    table.columns["judge"] = [judge] * table.n_rows
    table.info["judge"] = judge


def name_judge_in_records(records: list[dict[str, Any]], judge: str, *, flag: str = "--judge") -> None:
    """:func:`name_judge` for records as a harness file's reader returns them (``judgecp.record/1`` dicts)."""
    _check_name(judge, flag)
    others = sorted({str(r["judge"]) for r in records if _named(r.get("judge")) and str(r["judge"]) != judge})
    if others:
        raise InputError(
            f"{flag} {judge}: the records name the judge {others[0]!r}; leave --judge out, or give that name"
        )
    for record in records:
        record["judge"] = judge
