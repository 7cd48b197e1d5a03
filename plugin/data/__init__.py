"""Layer 3, data: tables, readers and validated arrays.

The one table reader (:mod:`~judgecp.data.tables`: CSV/TSV/JSONL/Parquet), the record formats
adapters register (:mod:`~judgecp.data.formats`), the fields (:mod:`~judgecp.data.fields`) and each
shape's arrays: :class:`ScoreData` (Likert), :class:`PairData` (pairwise), :class:`ChoiceData`
(multiple choice and PARC), every row left out counted by reason in the data's ``excluded``. Reading a
file as a judge kind's data (``judgecp.load``) is :mod:`judgecp.kinds.reading`.
"""

from __future__ import annotations

from judgecp.data.choice import PAD_LOGPROB, ChoiceData
from judgecp.data.fields import Fields
from judgecp.data.pair import PairData
from judgecp.data.score import ScoreData

AnyData = ScoreData | PairData | ChoiceData

__all__ = [
    "PAD_LOGPROB",
    "AnyData",
    "ChoiceData",
    "Fields",
    "PairData",
    "ScoreData",
]
