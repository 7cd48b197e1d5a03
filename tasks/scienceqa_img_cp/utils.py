"""ScienceQA (image questions, test split) for judgecp: conformal option sets over the letters.

Documents come from a local copy (``--metadata '{"data_dir": DIR}'`` or
``JUDGECP_SCIENCEQA_DIR``) holding the hub's parquet files
(``DIR/ScienceQA-IMG/test-*.parquet``, or ``DIR/test-*.parquet``), or from
the public dataset ``lmms-lab/ScienceQA`` (config ``ScienceQA-IMG``, split
``test``). See README.md.
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lm_eval import data_sources
from judgecp.adapters.lm_eval.choice_task import (
    MultipleChoiceTask,
    doc_to_choice,
    doc_to_image,
    doc_to_target,
    documents_dataset,
    indexed_image_questions,
    seed_prompt,
)

__all__ = ["ScienceQATask", "doc_to_choice", "doc_to_image", "doc_to_target", "doc_to_text", "load_docs"]

HUB_DATASET = "lmms-lab/ScienceQA"
CONFIG = "ScienceQA-IMG"
SPLIT = "test"
ENV_VAR = "JUDGECP_SCIENCEQA_DIR"

class ScienceQATask(MultipleChoiceTask):
    """ScienceQA image questions; ``category`` is the item's subject (natural, social, language science)."""


def load_docs(data_dir: str | None = None, **_: Any) -> Any:
    """``custom_dataset`` hook: one document per image question; images stay in the table until judged."""
    root = data_sources.local_dir(data_dir, ENV_VAR)
    table = data_sources.load_table(root, hub_id=HUB_DATASET, config=CONFIG, split=SPLIT)
    docs = indexed_image_questions("scienceqa_img", table, f"scienceqa_img:{root or HUB_DATASET}", options="choices",
                                   category="subject", context="hint")
    where = str(root) if root else f"{HUB_DATASET} ({CONFIG}, {SPLIT})"
    return documents_dataset(docs, what=f"ScienceQA-IMG in {where}")


def doc_to_text(doc: dict[str, Any]) -> str:
    return seed_prompt(doc, "science")
