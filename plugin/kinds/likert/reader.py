"""Reading Likert judgments: score records (or a table of them) as :class:`judgecp.data.score.ScoreData`."""

from __future__ import annotations

from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.scale import LabelScale, LikertScale
from judgecp.data.export import score_records
from judgecp.data.fields import Fields
from judgecp.data.score import score_data
from judgecp.data.score_columns import SCORE_COLUMNS
from judgecp.data.tables import Table
from judgecp.kinds.kind import Reader
from judgecp.synthetic.judges import simulate_likert_judge


class LikertReader(Reader):
    """Scores on a rating scale: ``judgecp.record/1`` records of shape ``score`` (docs/records.md)."""

    record_shape = "score"
    columns = SCORE_COLUMNS
    options = frozenset({"scale", "floor", "nan", "label_scale"})
    row_features = True

    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        self.check_options(options, "likert")
        if "scale" in table.columns and options.get("scale") is None:
            options["scale"] = record_scale(table)
        if "label_scale" in table.columns and options.get("label_scale") is None:
            options["label_scale"] = record_label_scale(table)
        return score_data(table, fields, require_label=require_label, **options)

    def to_records(self, data: Any) -> list[dict[str, Any]]:
        return score_records(data)

    def example(self, **options: Any) -> Any:
        return simulate_likert_judge(scale=options.get("scale"))


def record_scale(table: Table) -> LikertScale | None:
    """The scale score records carry (one for all of them), if any."""
    scales = {tuple(s) for s in table.columns["scale"] if isinstance(s, list) and len(s) == 2}
    if len(scales) > 1:
        raise InputError(f"{table.source}: the records have different scales {sorted(scales)}")
    return LikertScale(*scales.pop()) if scales else None


def record_label_scale(table: Table) -> LabelScale | None:
    """The label scale score records carry (one for all of them; records without one are on the judge's)."""
    cells = [c for c in table.columns["label_scale"] if c is not None and c != ""]
    scales = {tuple(c) if isinstance(c, list) else c for c in cells}
    if len(scales) > 1 or (scales and len(cells) < table.n_rows):
        raise InputError(f"{table.source}: the records' label_scale differs between records "
                         f"({sorted(map(str, scales))[:3]}{', and none on some' if len(cells) < table.n_rows else ''})")
    return LabelScale.parse(scales.pop(), flag=f"{table.source}: label_scale") if scales else None
