"""What a judge dataset is, independent of VLMEvalKit: name, kind, prompt, fields, scale.

A :class:`JudgeSpec` is all the VLMEvalKit dataset classes need to know about
a judge benchmark; keeping it here (no vlmeval import) lets the TSV builders,
the prediction reader and the post-hoc command use the same definitions in
CI, where VLMEvalKit is not installed.

Kinds:

* ``likert``: a score on a scale (MLLM-as-a-Judge scoring, Polaris); the core's
  conformal intervals and label sets;
* ``pairwise``: a verdict "A" or "B" on a pair of responses, every pair in both
  orders (MLLM-as-a-Judge pair comparison); SCOPE's selective risk control and
  bidirectional preference entropy;
* ``parc``: multiple-choice answers to prompt variations (the local PARC
  variation format, ``docs/parc_format.md``); PARC's reliability scores.

VLMEvalKit's own multiple-choice benchmarks are no judgecp datasets: their
records (kind ``mcq``) come from the ``-lp`` models' sidecar, and
:data:`MCQ_KIND` names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.scale import LikertScale
from judgecp.data.choice import has_text, row_options
from judgecp.data.prompts import (
    MLLM_JUDGE_PROMPT,
    PAIRWISE_PROMPT,
    POLARIS_PROMPT,
    multiple_choice_prompt,
)

#: VLMEvalKit ``TYPE`` of every judgecp judge dataset (none of VLMEvalKit's
#: model wrappers knows it, so none replaces the prompt with its own).
DATASET_TYPE = "JudgeCP"

#: Columns every judgecp TSV carries, so a prediction file (which keeps the
#: dataset's columns) says what it is without the dataset registry.
KIND_COLUMN = "judgecp_kind"
SCALE_COLUMN = "judgecp_scale"

#: The kind of the records a ``-lp`` model writes for VLMEvalKit's own multiple-choice datasets.
MCQ_KIND = "mcq"



@dataclass(frozen=True)
class JudgeSpec:
    """One judge benchmark as VLMEvalKit datasets see it.

    ``fields`` maps the prompt's placeholders to TSV columns; ``label`` is the
    TSV column holding the human label (VLMEvalKit's ``answer``; for pairwise
    judging the preference in the *original* order, ``preference``); ``group`` a
    column for per-group tables (``None``: no groups). ``letters`` are the
    answer tokens of a pairwise verdict; ``prefixes`` match dataset names
    chosen when the TSV is built (PARC: ``PARC_<name>``). ``continuous_label``
    is a TSV column with the unbinned human score (Polaris: ``score_mean`` on
    [0, 1]): the label when the dataset argument ``label_scale`` is given.
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
    letters: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    continuous_label: str | None = None
    #: The prompt is the item's own question and options (PARC), not a template over ``fields``.
    options_prompt: bool = False

    def matches(self, dataset_name: str) -> bool:
        return dataset_name in self.names or any(dataset_name.startswith(p) for p in self.prefixes)

    def answer_letters(self, row: Mapping[str, Any]) -> tuple[str, ...]:
        """The letters a verdict or answer is read among: the spec's, or the row's options."""
        return self.letters or tuple(letter for letter, _ in row_options(row))

    def render(self, row: Mapping[str, Any]) -> str:
        """The judge prompt for one TSV row (missing or NaN fields are an error naming them)."""
        if self.options_prompt:
            options = row_options(row)
            if len(options) < 2 or not has_text(row.get("question")):
                raise InputError(f"{self.key}: row {row.get('index')!r} needs a question and at least two options")
            return multiple_choice_prompt(str(row["question"]), options)
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
    continuous_label="score_mean",
    title="Polaris caption-quality judgments (Wada et al., CVPR 2024), test split",
    source="huggingface.co/datasets/yuwd/Polaris (polaris_test.csv, images.tar.gz)",
)

MLLM_JUDGE_PAIR = JudgeSpec(
    key="mllm_judge_pair",
    kind="pairwise",
    names=("MLLMJudgePair_CP", "MLLMJudgePair_CP_Lite"),
    prompt=PAIRWISE_PROMPT,
    fields={"question": "question", "response_a": "response_a", "response_b": "response_b"},
    label="preference",
    group="category",
    letters=("A", "B"),
    title="MLLM-as-a-Judge, pair-comparison split (Chen et al., ICML 2024), each pair in both orders",
    source=(
        "github.com/Dongping-Chen/MLLM-Judge (Dataset/Benchmark/pair.jsonl, Dataset/Benchmark_Lite/"
        "pair_lite.jsonl, Dataset/image/); the same files on huggingface.co/datasets/shuaishuaicdp/MLLM-Judge"
    ),
)

PARC = JudgeSpec(
    key="parc",
    kind="parc",
    names=(),  # no fixed name: each PARC_<name> is named when its TSV is built
    prompt="",
    fields={"question": "question"},
    label="answer",
    group="variation",
    prefixes=("PARC_",),
    options_prompt=True,
    title="PARC prompt variations (Schmalfuss et al., github.com/NVlabs/PARC) in the local variation format",
    source="a folder in the format of docs/parc_format.md (variations.jsonl + images/)",
)

SPECS: tuple[JudgeSpec, ...] = (MLLM_JUDGE, POLARIS, MLLM_JUDGE_PAIR, PARC)
#: The names of the prompt-ensemble datasets (:mod:`judgecp.adapters.vlmeval.ensemble`), any suffix.
ENSEMBLE_PREFIX = "ImagePrefEnsemble_"


def spec_for(dataset_name: str) -> JudgeSpec | None:
    """The spec of a judgecp dataset name, or ``None`` for any other dataset."""
    for spec in SPECS:
        if spec.matches(dataset_name):
            return spec
    return None


def dataset_names() -> list[str]:
    """The fixed dataset names (PARC datasets are named when built: ``PARC_<name>``)."""
    return [name for spec in SPECS for name in spec.names]
