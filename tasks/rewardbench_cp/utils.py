"""RewardBench (chosen vs rejected) for judgecp: pairs from the ``filtered`` split, both orders.

Which response comes first in the forward prompt is random with a fixed
seed (``--metadata data_seed``, 0), half of the pairs each way, so the labels
are balanced. Documents come from a local copy (``data_dir`` or
``JUDGECP_REWARDBENCH_DIR``: ``DIR/filtered.jsonl`` or the hub's parquet
files) or from the public dataset ``allenai/reward-bench``. See README.md.
"""

from __future__ import annotations

import random
from typing import Any

from judgecp.adapters.lm_eval.pairwise_task import Pair, PairwiseJudgeTask, left_out
from judgecp.base.errors import InputError
from judgecp.tasks._loaders import Source, load_pairs

__all__ = ["RewardBenchTask", "load_docs"]

SOURCE = Source("allenai/reward-bench", "filtered", env_var="JUDGECP_REWARDBENCH_DIR")


class RewardBenchTask(PairwiseJudgeTask):
    """Chosen vs rejected responses; records carry the RewardBench subset as ``category``."""

    RECORD_FIELDS = ("category",)


def chosen_first(n: int, seed: int) -> list[bool]:
    """Whether the chosen response is shown first, per row: half True, half False, shuffled with ``seed``."""
    flags = [i < n // 2 for i in range(n)]
    random.Random(seed).shuffle(flags)
    return flags


def pairs_from_rows(rows: list[dict[str, Any] | None], seed: int) -> list[Pair]:
    pairs = []
    good = []
    for index, row in enumerate(rows):
        if row is None:
            pairs.append(left_out(f"rewardbench/line{index + 1}", "malformed_json_line"))
            continue
        if not all(isinstance(row.get(k), str) and row[k].strip() for k in ("prompt", "chosen", "rejected")):
            pairs.append(left_out(f"rewardbench/{row.get('id', index)}", "conversation_incomplete",
                                  category=row.get("subset")))
            continue
        good.append(row)
    for row, first in zip(good, chosen_first(len(good), seed), strict=True):
        a, b = (row["chosen"], row["rejected"]) if first else (row["rejected"], row["chosen"])
        pairs.append(Pair(
            f"rewardbench/{row.get('id')}", [row["prompt"]], [a], [b], "A" if first else "B",
            fields={"category": row.get("subset")},
        ))
    return pairs


def load_docs(data_dir: str | None = None, max_pairs: Any = None, data_seed: Any = 0, **_: Any) -> Any:
    """``custom_dataset`` hook: two documents (forward, reversed) per chosen/rejected pair."""

    def pairs_of(rows: list[dict[str, Any] | None]) -> list[Pair]:
        try:
            seed = int(data_seed)
        except (TypeError, ValueError) as exc:
            raise InputError(f"metadata data_seed must be an integer, got {data_seed!r}") from exc
        return pairs_from_rows(rows, seed)

    return load_pairs(pairs_of, SOURCE, name="RewardBench", data_dir=data_dir, max_pairs=max_pairs,
                      data_seed=data_seed)
