"""AI2D (science diagrams, test split) for judgecp: conformal option sets over the letters.

Documents come from a local copy (``--metadata '{"data_dir": DIR}'`` or
``JUDGECP_AI2D_DIR``) holding the hub's parquet files
(``DIR/data/test-*.parquet``), or from the public dataset ``lmms-lab/ai2d``
(split ``test``). See README.md.
"""

from __future__ import annotations

from typing import Any

from judgecp.adapters.lm_eval.choice_task import MultipleChoiceTask, seed_prompt
from judgecp.tasks._loaders import Source, load_image_questions

__all__ = ["AI2DTask", "doc_to_text", "load_docs"]

SOURCE = Source("lmms-lab/ai2d", "test", env_var="JUDGECP_AI2D_DIR")


class AI2DTask(MultipleChoiceTask):
    """AI2D diagram questions (no categories in this release)."""


def load_docs(data_dir: str | None = None, **_: Any) -> Any:
    """``custom_dataset`` hook: one document per diagram question; images stay in the table until judged."""
    return load_image_questions("ai2d", SOURCE, title="AI2D", data_dir=data_dir, options="options")


def doc_to_text(doc: dict[str, Any]) -> str:
    return seed_prompt(doc, "scientific diagram")
