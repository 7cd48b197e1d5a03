"""Chatbot Arena conversations (pairwise) for judgecp: non-tied votes, both orders.

Documents come from a local copy (``data_dir`` or
``JUDGECP_CHATBOT_ARENA_DIR``: ``DIR/train.jsonl`` or the hub's parquet
files) or from the public, gated dataset ``lmsys/chatbot_arena_conversations``
(split ``train``; accept its terms on the hub and log in first). Tie votes
(``tie``, ``tie (bothbad)``) are not judged (SCOPE's binary setting): each
stays as one placeholder document, counted in ``excluded``. See README.md.
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lm_eval import data_sources
from judgecp.adapters.lm_eval.pairwise_task import (
    SYSTEM_CONVERSATION,
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

__all__ = ["ChatbotArenaTask", "doc_to_choice", "doc_to_target", "doc_to_text", "load_docs"]

HUB_DATASET = "lmsys/chatbot_arena_conversations"
SPLIT = "train"
ENV_VAR = "JUDGECP_CHATBOT_ARENA_DIR"


class ChatbotArenaTask(PairwiseJudgeTask):
    """Crowd votes on two anonymous models' conversations; records carry the detected ``language``."""

    RECORD_FIELDS = ("language",)


def pairs_from_rows(rows: list[dict[str, Any] | None]) -> list[Pair]:
    """One pair per vote; the whole conversation is judged (the multi-turn prompt when it has several turns)."""
    pairs = []
    for index, row in enumerate(rows):
        pair_id = f"chatbot_arena/{index:05d}"
        if row is None:
            pairs.append(left_out(pair_id, "malformed_json_line"))
            continue
        fields = {"language": row.get("language")}
        if is_tie(row.get("winner")):
            pairs.append(left_out(pair_id, "tie_label", row.get("winner"), **fields))
            continue
        questions, first = conversation_turns(row.get("conversation_a") or [])
        questions_b, second = conversation_turns(row.get("conversation_b") or [])
        turns = min(len(first), len(second))
        if turns == 0 or questions[:turns] != questions_b[:turns]:
            pairs.append(left_out(pair_id, "conversation_incomplete", winner_label(row.get("winner")), **fields))
            continue
        pairs.append(Pair(
            pair_id, questions[:turns], first[:turns], second[:turns], winner_label(row.get("winner")),
            SYSTEM_SINGLE_TURN if turns == 1 else SYSTEM_CONVERSATION,
            fields,
        ))
    return pairs


def load_docs(data_dir: str | None = None, max_pairs: Any = None, data_seed: Any = 0, **_: Any) -> Any:
    """``custom_dataset`` hook: two documents (forward, reversed) per non-tied vote."""
    root = data_sources.local_dir(data_dir, ENV_VAR)
    rows, where = data_sources.rows_of(root, hub_id=HUB_DATASET, split=SPLIT)
    return pairwise_dataset(pairs_from_rows(rows), what=f"Chatbot Arena conversations in {where}",
                            max_pairs=max_pairs, data_seed=data_seed)
