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

from judgecp.adapters.lm_eval.pairwise_task import Pair, PairwiseJudgeTask
from judgecp.tasks._loaders import Source, load_pairs, vote_pairs

__all__ = ["ChatbotArenaTask", "load_docs"]

SOURCE = Source("lmsys/chatbot_arena_conversations", "train", env_var="JUDGECP_CHATBOT_ARENA_DIR")


class ChatbotArenaTask(PairwiseJudgeTask):
    """Crowd votes on two anonymous models' conversations; records carry the detected ``language``."""

    RECORD_FIELDS = ("language",)


def pairs_from_rows(rows: list[dict[str, Any] | None]) -> list[Pair]:
    """One pair per vote; the whole conversation is judged (the multi-turn prompt when it has several turns)."""
    return vote_pairs(rows, "chatbot_arena", lambda row: {"language": row.get("language")})


def load_docs(data_dir: str | None = None, max_pairs: Any = None, data_seed: Any = 0, **_: Any) -> Any:
    """``custom_dataset`` hook: two documents (forward, reversed) per non-tied vote."""
    return load_pairs(pairs_from_rows, SOURCE, name="Chatbot Arena conversations", data_dir=data_dir,
                      max_pairs=max_pairs, data_seed=data_seed)
