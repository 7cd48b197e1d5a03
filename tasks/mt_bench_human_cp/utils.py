"""MT-Bench human judgments (pairwise) for judgecp: pairs from the ``human`` split, both orders.

Documents come from a local copy (``--metadata '{"data_dir": DIR}'`` or
``JUDGECP_MT_BENCH_HUMAN_DIR``: ``DIR/human.jsonl`` or the hub's parquet
files) or from the public dataset ``lmsys/mt_bench_human_judgments`` (split
``human``). Tie votes are left out (SCOPE's binary setting) and counted.
See README.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgecp.adapters.lm_eval.pairwise_task import Pair, PairwiseJudgeTask
from judgecp.data.prompts import PAIRWISE_SYSTEM_SECOND_TURN
from judgecp.tasks._loaders import Source, load_pairs, vote_pairs

__all__ = ["MTBenchHumanTask", "load_docs"]

SOURCE = Source("lmsys/mt_bench_human_judgments", "human", env_var="JUDGECP_MT_BENCH_HUMAN_DIR")

#: MT-Bench's eight categories, ten questions each, by question_id (81-160).
CATEGORIES = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")


class MTBenchHumanTask(PairwiseJudgeTask):
    """Expert votes on MT-Bench answers; records carry the question's category and the judged turn."""

    RECORD_FIELDS = ("category", "turn")


def category(question_id: Any) -> str | None:
    try:
        index = (int(question_id) - 81) // 10
    except (TypeError, ValueError):
        return None
    return CATEGORIES[index] if 0 <= index < len(CATEGORIES) else None


def judged_turn(row: Mapping[str, Any]) -> int:
    """The vote's ``turn`` (1 when absent); 0 (not judged) for anything but 1 or 2."""
    try:
        turn = int(row.get("turn") or 1)
    except (TypeError, ValueError):
        return 0
    return turn if turn in (1, 2) else 0


def pairs_from_rows(rows: list[dict[str, Any] | None]) -> list[Pair]:
    """One pair per vote; turn 1 shows the first question, turn 2 both (MT-Bench's multi-turn prompt).

    A row that cannot be judged (a tie vote, a malformed line, a conversation
    without the judged turn) stays as a left-out pair with its reason.
    """
    return vote_pairs(rows, "mt_bench_human",
                      lambda row: {"category": category(row.get("question_id")), "turn": row.get("turn")},
                      turn_of=judged_turn, later_turns_system=PAIRWISE_SYSTEM_SECOND_TURN)


def load_docs(data_dir: str | None = None, max_pairs: Any = None, data_seed: Any = 0, **_: Any) -> Any:
    """``custom_dataset`` hook: two documents (forward, reversed) per non-tied vote."""
    return load_pairs(pairs_from_rows, SOURCE, name="MT-Bench human judgments", data_dir=data_dir,
                      max_pairs=max_pairs, data_seed=data_seed)
