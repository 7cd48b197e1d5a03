"""ScienceQA (image questions, test split) for judgecp: conformal option sets over the letters.

Documents come from a local copy (``--metadata '{"data_dir": DIR}'`` or
``JUDGECP_SCIENCEQA_DIR``) holding the hub's parquet files
(``DIR/ScienceQA-IMG/test-*.parquet``, or ``DIR/test-*.parquet``), or from
the public dataset ``lmms-lab/ScienceQA`` (config ``ScienceQA-IMG``, split
``test``). See README.md.
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lm_eval.choice_task import MultipleChoiceTask, seed_prompt
from judgecp.tasks._loaders import Source, load_image_questions

__all__ = ["ScienceQATask", "doc_to_text", "load_docs"]

SOURCE = Source("lmms-lab/ScienceQA", "test", env_var="JUDGECP_SCIENCEQA_DIR", config="ScienceQA-IMG")

class ScienceQATask(MultipleChoiceTask):
    """ScienceQA image questions; ``category`` is the item's subject (natural, social, language science)."""


def load_docs(data_dir: str | None = None, **_: Any) -> Any:
    """``custom_dataset`` hook: one document per image question; images stay in the table until judged."""
    return load_image_questions("scienceqa_img", SOURCE, title="ScienceQA-IMG", data_dir=data_dir, options="choices",
                                category="subject", context="hint")


def doc_to_text(doc: dict[str, Any]) -> str:
    return seed_prompt(doc, "science")
