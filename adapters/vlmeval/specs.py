"""What a judge dataset is, independent of VLMEvalKit: name, kind, prompt, fields, scale.

A :class:`JudgeSpec` is all the VLMEvalKit dataset classes need to know about
a judge benchmark; keeping it here (no vlmeval import) lets the TSV builders,
the prediction reader and the post-hoc command use the same definitions in
CI, where VLMEvalKit is not installed.

Kinds: ``likert`` now. ``pairwise`` (both orders, SCOPE) and ``parc``
(prompt variations) come with the core's pairwise and PARC metrics; a spec of
those kinds only needs a prompt, fields and a record builder (see
``docs/vlmeval.md``, "Adding a judge dataset").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judgecp.adapters.vlmeval.prompts import MLLM_JUDGE_PROMPT, POLARIS_PROMPT
from judgecp.errors import InputError
from judgecp.scale import LikertScale

#: VLMEvalKit ``TYPE`` of every judgecp judge dataset (none of VLMEvalKit's
#: model wrappers knows it, so none replaces the prompt with its own).
DATASET_TYPE = "JudgeCP"

#: Columns every judgecp TSV carries, so a prediction file (which keeps the
#: dataset's columns) says what it is without the dataset registry.
KIND_COLUMN = "judgecp_kind"
SCALE_COLUMN = "judgecp_scale"


@dataclass(frozen=True)
class JudgeSpec:
    """One judge benchmark as VLMEvalKit datasets see it.

    ``fields`` maps the prompt's placeholders to TSV columns; ``label`` is the
    TSV column holding the human label (VLMEvalKit's ``answer``); ``group`` a
    column for per-group tables (``None``: no groups).
    """

    key: str
    kind: str
    names: tuple[str, ...]
    prompt: str
    fields: Mapping[str, str]
    scale: LikertScale = field(default_factory=LikertScale)
    label: str = "answer"
    group: str | None = None
    title: str = ""
    source: str = ""

    def render(self, row: Mapping[str, Any]) -> str:
        """The judge prompt for one TSV row (missing or NaN fields are an error naming them)."""
        values: dict[str, str] = {}
        missing = []
        for placeholder, column in self.fields.items():
            value = row.get(column)
            if value is None or (isinstance(value, float) and value != value):
                missing.append(column)
                continue
            values[placeholder] = str(value)
        if missing:
            raise InputError(f"{self.key}: row {row.get('index')!r} has no {', '.join(missing)}")
        return self.prompt.format(**values)


MLLM_JUDGE = JudgeSpec(
    key="mllm_judge",
    kind="likert",
    names=("MLLMJudge_CP", "MLLMJudge_CP_Lite"),
    prompt=MLLM_JUDGE_PROMPT,
    fields={"question": "question", "actor_answer": "response"},
    group="category",
    title="MLLM-as-a-Judge, scoring split (Chen et al., ICML 2024), 14 task categories",
    source=(
        "github.com/Dongping-Chen/MLLM-Judge (Dataset/Benchmark/score.jsonl, Dataset/image/); "
        "the same files on huggingface.co/datasets/shuaishuaicdp/MLLM-Judge (Benchmark/, image/)"
    ),
)

POLARIS = JudgeSpec(
    key="polaris",
    kind="likert",
    names=("Polaris_CP",),
    prompt=POLARIS_PROMPT,
    fields={"caption": "caption"},
    group=None,
    title="Polaris caption-quality judgments (Wada et al., CVPR 2024), test split",
    source="huggingface.co/datasets/yuwd/Polaris (polaris_test.csv, images.tar.gz)",
)

SPECS: tuple[JudgeSpec, ...] = (MLLM_JUDGE, POLARIS)


def spec_for(dataset_name: str) -> JudgeSpec | None:
    """The spec of a judgecp dataset name, or ``None`` for any other dataset."""
    for spec in SPECS:
        if dataset_name in spec.names:
            return spec
    return None


def dataset_names() -> list[str]:
    return [name for spec in SPECS for name in spec.names]
