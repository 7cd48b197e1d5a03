"""Document loaders that several task folders' ``utils.py`` share.

lm-eval loads a task's ``utils.py`` by path, so what two benchmarks read the
same way lives here (``judgecp.tasks._loaders``) and each ``utils.py`` keeps
only its own source (:class:`Source`), columns and prompt:

- :func:`load_pairs`: the pairwise tasks' ``load_docs`` (rows from a local copy
  or the hub, pairs from the rows, two documents per usable pair);
- :func:`vote_pairs`: Chatbot Arena's and MT-Bench's vote rows
  (``conversation_a``, ``conversation_b``, ``winner``) as pairs;
- :func:`load_image_questions`: AI2D's and ScienceQA-IMG's ``load_docs``
  (hub tables of single-image questions whose answer is an option index).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from judgecp.data import datasources
from judgecp.adapters.lm_eval.choice_task import documents_dataset, indexed_image_questions
from judgecp.adapters.lm_eval.pairwise_task import (
    Pair,
    conversation_turns,
    is_tie,
    left_out,
    pairwise_dataset,
    winner_label,
)
from judgecp.data.prompts import PAIRWISE_SYSTEM_CONVERSATION, PAIRWISE_SYSTEM_SINGLE_TURN

Row = Mapping[str, Any]


@dataclass(frozen=True)
class Source:
    """Where a task's documents come from: the hub dataset's split, or a local copy
    (``data_dir``, else the directory in the environment variable ``env_var``)."""

    hub_id: str
    split: str
    env_var: str
    config: str | None = None


def load_pairs(
    pairs_of: Callable[[list[Row | None]], list[Pair]], source: Source, *, name: str, data_dir: str | None,
    max_pairs: Any, data_seed: Any,
) -> Any:
    """``custom_dataset`` body of a pairwise task: ``pairs_of(rows)`` from the local copy or the hub split."""
    root = datasources.local_dir(data_dir, source.env_var)
    rows, where = datasources.rows_of(root, hub_id=source.hub_id, split=source.split, env_var=source.env_var)
    return pairwise_dataset(pairs_of(rows), what=f"{name} in {where}", max_pairs=max_pairs, data_seed=data_seed)


def vote_pairs(
    rows: list[Row | None], name: str, fields_of: Callable[[Row], dict[str, Any]], *,
    turn_of: Callable[[Row], int] | None = None, later_turns_system: str = PAIRWISE_SYSTEM_CONVERSATION,
) -> list[Pair]:
    """One pair per vote row, ``{name}/{index:05d}``; a row that cannot be judged stays as a left-out pair.

    The pair shows the first ``turn_of(row)`` turns of both conversations
    (then its fields get the judged ``turn``), or every turn they both have
    when ``turn_of`` is None; ``fields_of(row)`` gives the record fields. Left out: a malformed line, a tie
    vote (SCOPE's binary setting), conversations without those turns or
    whose questions differ. ``later_turns_system`` is the system prompt when
    more than one turn is shown.
    """
    pairs = []
    for index, row in enumerate(rows):
        pair_id = f"{name}/{index:05d}"
        if row is None:
            pairs.append(left_out(pair_id, "malformed_json_line"))
            continue
        fields = fields_of(row)
        winner = row.get("winner")
        if is_tie(winner):
            pairs.append(left_out(pair_id, "tie_label", winner, **fields))
            continue
        questions, first = conversation_turns(row.get("conversation_a") or [])
        questions_b, second = conversation_turns(row.get("conversation_b") or [])
        turns = min(len(first), len(second)) if turn_of is None else turn_of(row)
        if not 0 < turns <= min(len(first), len(second)) or questions[:turns] != questions_b[:turns]:
            pairs.append(left_out(pair_id, "conversation_incomplete", winner_label(winner), **fields))
            continue
        pairs.append(Pair(
            pair_id, questions[:turns], first[:turns], second[:turns], winner_label(winner),
            PAIRWISE_SYSTEM_SINGLE_TURN if turns == 1 else later_turns_system,
            fields if turn_of is None else {**fields, "turn": turns},
        ))
    return pairs


def load_image_questions(
    name: str, source: Source, *, title: str, data_dir: str | None, options: str, category: str | None = None,
    context: str | None = None,
) -> Any:
    """``custom_dataset`` body of a hub table of single-image questions (see ``indexed_image_questions``)."""
    hub_id, split, config = source.hub_id, source.split, source.config
    root = datasources.local_dir(data_dir, source.env_var)
    table = datasources.load_table(root, hub_id=hub_id, config=config, split=split, env_var=source.env_var)
    docs = indexed_image_questions(name, table, f"{name}:{root or hub_id}", options=options, category=category,
                                   context=context)
    where = str(root) if root else f"{hub_id} ({split})" if config is None else f"{hub_id} ({config}, {split})"
    return documents_dataset(docs, what=f"{title} in {where}")
