"""MLLM-as-a-Judge (score split) for judgecp: documents, the paper's prompt B.1, the task class.

Documents come from a local copy (``--metadata '{"data_dir": DIR}'`` or
``JUDGECP_MLLM_JUDGE_DIR``) or from the public dataset ``ONE-Lab/MLLM-as-a-Judge``
on the Hugging Face hub; both have the repository's layout:
``DIR/Benchmark/score.jsonl`` and ``DIR/image/<image_path>``. See README.md.
"""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path
from typing import Any

from judgecp.data import datasources, images
from judgecp.adapters.lm_eval.task import LikertJudgeTask
from judgecp.data.prompts import MLLM_JUDGE_PROMPT
from judgecp.data.tables import read_jsonl

logger = logging.getLogger("lm_eval.judgecp")

HUB_DATASET = "ONE-Lab/MLLM-as-a-Judge"
HUB_FILES = ("Benchmark/score.jsonl", "image/*")
ENV_VAR = "JUDGECP_MLLM_JUDGE_DIR"

#: Subtask suffix -> the ``original_dataset`` value (matched ignoring case and punctuation).
CATEGORIES = {
    "aesbench": "AesBench",
    "chartqa": "ChartQA",
    "coco": "coco",
    "concept_caption": "Concept Caption",
    "diffusiondb": "diffusiondb",
    "infographicsvqa": "infographicsVQA",
    "llava_bench": "llava_bench",
    "mathvista": "mathvista",
    "mind2web": "mind2web",
    "mm_vet": "mm-vet",
    "scienceqa": "ScienceQA",
    "textvqa": "textVQA",
    "visitbench": "VisitBench",
    "wit": "WIT",
}



class MLLMJudgeTask(LikertJudgeTask):
    """MLLM-as-a-Judge score split: 1-5 human scores; records carry the answering model as ``actor``."""

    RECORD_FIELDS = ("actor",)


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@functools.lru_cache(maxsize=4)
def _all_docs(root: str) -> tuple[dict[str, Any], ...]:
    base = Path(root)
    score_file = base / "Benchmark" / "score.jsonl"
    if not score_file.exists():
        raise FileNotFoundError(f"{score_file} not found: the MLLM-as-a-Judge directory needs Benchmark/score.jsonl and image/")
    docs = []
    for lineno, row in read_jsonl(score_file):
        if row is None:
            logger.warning("judgecp: %s:%d is not a JSON object; skipped", score_file, lineno)
            docs.append({"id": f"line{lineno}", "label": None, "group": None, "actor": None, "question": "",
                         "answer": "", "image_path": "", "image_error": "no image", "exclude": "malformed_json_line"})
            continue
        image_path = base / "image" / str(row.get("image_path", ""))
        docs.append({
            "id": datasources.text(row.get("score_id", f"line{lineno}")),
            "label": datasources.text(row.get("human")),
            "group": datasources.text(row.get("original_dataset")),
            "actor": datasources.text(row.get("name")),
            "question": datasources.text(row.get("instruction")) or "",
            "answer": datasources.text(row.get("answer")) or "",
            "image_path": str(image_path),
            "image_error": images.check_image_file(image_path),
            "exclude": None,
        })
    return tuple(docs)


def load_docs(data_dir: str | None = None, category: str | None = None, **_: Any) -> Any:
    """``custom_dataset`` hook: all documents, or one category's (``dataset_kwargs.category``)."""
    root = datasources.local_dir(data_dir, ENV_VAR) or datasources.hub_snapshot(HUB_DATASET, HUB_FILES, env_var=ENV_VAR)
    docs = list(_all_docs(str(root)))
    if category is not None:
        wanted = _norm(CATEGORIES[category])
        docs = [d for d in docs if d["group"] is not None and _norm(d["group"]) == wanted]
    what = f"category {CATEGORIES[category]!r}" if category else "MLLM-as-a-Judge"
    return datasources.as_dataset_dict(docs, what=f"{what} in {root}")


def doc_to_text(doc: dict[str, Any]) -> str:
    return "<image>\n" + MLLM_JUDGE_PROMPT.format(question=doc["question"], actor_answer=doc["answer"])


def doc_to_image(doc: dict[str, Any]) -> list[Any]:
    return [images.load_image(doc)]


def doc_to_target(doc: dict[str, Any]) -> str:
    return doc["label"] or ""
