"""Reading multiple-choice judgments: choice records (options, correct option(s), option logprobs)."""

from __future__ import annotations

from typing import Any

from judgecp.data.choice import CHOICE_COLUMNS, choice_data
from judgecp.data.export import choice_records
from judgecp.data.fields import Fields
from judgecp.data.tables import Table
from judgecp.kinds.kind import Reader


class ChoiceReader(Reader):
    """Records of shape ``choice``; one reader serves ``mcq`` and ``parc`` (``kind``: the one asked for)."""

    record_shape = "choice"
    columns = CHOICE_COLUMNS

    def __init__(self, kind: str, example: Any) -> None:
        self.kind = kind
        self._example = example

    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        self.check_options(options, self.kind)
        return choice_data(table, fields, kind=None if detect else self.kind, require_label=require_label)

    def to_records(self, data: Any) -> list[dict[str, Any]]:
        return choice_records(data)

    def example(self, **options: Any) -> Any:
        self.check_options(options, self.kind)
        return self._example()
