"""MT-Bench human judgments (pairwise) for judgecp: pairs from the ``human`` split, both orders.

Documents come from a local copy (``--metadata '{"data_dir": DIR}'`` or
``JUDGECP_MT_BENCH_HUMAN_DIR``: ``DIR/human.jsonl`` or the hub's parquet
files) or from the public dataset ``lmsys/mt_bench_human_judgments`` (split
``human``). Tie votes are left out (SCOPE's binary setting) and counted.
See README.md.
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lm_eval import data_sources
from judgecp.adapters.lm_eval.pairwise_task import (
    SYSTEM_SECOND_TURN,
    SYSTEM_SINGLE_TURN,
    Pair,
    PairwiseJudgeTask,
    conversation_turns,
    doc_to_choice,
    doc_to_target,
    doc_to_text,
    is_tie,
    left_out,
    pairwise_dataset,
    winner_label,
)

__all__ = ["MTBenchHumanTask", "doc_to_choice", "doc_to_target", "doc_to_text", "load_docs"]

HUB_DATASET = "lmsys/mt_bench_human_judgments"
SPLIT = "human"
ENV_VAR = "JUDGECP_MT_BENCH_HUMAN_DIR"

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


def pairs_from_rows(rows: list[dict[str, Any] | None]) -> list[Pair]:
    """One pair per vote; turn 1 shows the first question, turn 2 both (MT-Bench's multi-turn prompt).

    A row that cannot be judged (a tie vote, a malformed line, a conversation
    without the judged turn) stays as a left-out pair with its reason.
    """
    pairs = []
    for index, row in enumerate(rows):
        pair_id = f"mt_bench_human/{index:05d}"
        if row is None:
            pairs.append(left_out(pair_id, "malformed_json_line"))
            continue
        fields = {"category": category(row.get("question_id")), "turn": row.get("turn")}
        if is_tie(row.get("winner")):
            pairs.append(left_out(pair_id, "tie_label", row.get("winner"), **fields))
            continue
        try:
            turn = int(row.get("turn") or 1)
        except (TypeError, ValueError):
            turn = 0
        questions, first = conversation_turns(row.get("conversation_a") or [])
        questions_b, second = conversation_turns(row.get("conversation_b") or [])
        if turn not in (1, 2) or len(first) < turn or len(second) < turn or questions[:turn] != questions_b[:turn]:
            pairs.append(left_out(pair_id, "conversation_incomplete", winner_label(row.get("winner")), **fields))
            continue
        pairs.append(Pair(
            pair_id, questions[:turn], first[:turn], second[:turn], winner_label(row.get("winner")),
            SYSTEM_SINGLE_TURN if turn == 1 else SYSTEM_SECOND_TURN,
            {**fields, "turn": turn},
        ))
    return pairs


def load_docs(data_dir: str | None = None, max_pairs: Any = None, data_seed: Any = 0, **_: Any) -> Any:
    """``custom_dataset`` hook: two documents (forward, reversed) per non-tied vote."""
    root = data_sources.local_dir(data_dir, ENV_VAR)
    rows, where = data_sources.rows_of(root, hub_id=HUB_DATASET, split=SPLIT)
    return pairwise_dataset(pairs_from_rows(rows), what=f"MT-Bench human judgments in {where}",
                            max_pairs=max_pairs, data_seed=data_seed)
