"""The embedded demo: synthetic judging items (see judgecp.adapters.lm_eval.demo). Not real data."""

from __future__ import annotations

from typing import Any

from judgecp.data import datasources
from judgecp.adapters.lm_eval.demo import demo_items
from judgecp.adapters.lm_eval.task import LikertJudgeTask

PROMPT = """Please serve as an unbiased judge of the answer below, on a scale from 1 (poor) to 5 (excellent).

[The Start of User Instruction] {question} [The End of User Instruction]

[The Start of Assistant's Answer] {answer} [The End of Assistant's Answer]

At the end, write your score as "Score: X" where X is a single integer from 1 to 5."""


class DemoTask(LikertJudgeTask):
    """Synthetic 1-5 judging items in three groups."""


def load_docs(group: str | None = None, **_: Any) -> Any:
    docs = [{k: v for k, v in item.items() if k != "recorded_logprobs"} for item in demo_items()]
    if group is not None:
        docs = [d for d in docs if d["group"] == group]
    return datasources.as_dataset_dict(docs)


def doc_to_text(doc: dict[str, Any]) -> str:
    return PROMPT.format(question=doc["question"], answer=doc["answer"])


def doc_to_target(doc: dict[str, Any]) -> str:
    return doc["label"]
