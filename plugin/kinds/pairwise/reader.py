"""Reading pairwise judgments: pair records, one per (pair, order), joined by pair."""

from __future__ import annotations

from typing import Any

from judgecp.data.export import pair_records
from judgecp.data.fields import Fields
from judgecp.data.pair import PAIR_COLUMNS, pair_data
from judgecp.data.tables import Table
from judgecp.kinds.kind import Reader
from judgecp.synthetic.judges import simulate_pairwise_judge


class PairwiseReader(Reader):
    """Pairwise preferences: records of shape ``pair``, one per (pair, order)."""

    record_shape = "pair"
    columns = PAIR_COLUMNS

    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        self.check_options(options, "pairwise")
        return pair_data(table, fields, require_label=require_label)

    def to_records(self, data: Any) -> list[dict[str, Any]]:
        return pair_records(data)

    def example(self, **options: Any) -> Any:
        self.check_options(options, "pairwise")
        return simulate_pairwise_judge()
