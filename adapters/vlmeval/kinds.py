"""VLMEvalKit's side of each judge kind: how a prediction table becomes records, and where its metrics go.

The core's kinds (:mod:`judgecp.kinds`) say how records are read and
evaluated; this adapter adds what only VLMEvalKit needs, one class per kind
looked up by the kind's name (:func:`vlmeval_kind`): the records of a
prediction table, the metric file's suffix, the dataset argument that counts
the splits, the judge spec a file without a dataset name gets, and whether a
dataset's group column becomes per-group tables. Nothing here imports
VLMEvalKit.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from judgecp.base.errors import InputError

if TYPE_CHECKING:
    from judgecp.adapters.vlmeval.predictions import PredictionTable
    from judgecp.adapters.vlmeval.specs import JudgeSpec
    from judgecp.base.scale import LabelScale
    from judgecp.data.tables import Table


class VlmevalKind:
    """A kind as VLMEvalKit's files hold it (subclasses per kind; :data:`VLMEVAL_KINDS`)."""

    kind: ClassVar[str] = ""
    #: ``<stem><suffix>.json``: the file ``evaluate()`` writes beside the prediction file.
    metric_suffix: ClassVar[str] = ""
    #: The dataset argument that counts this kind's splits (the other one is ignored).
    splits_setting: ClassVar[str] = "seeds"
    #: Whether the dataset's group column becomes the report's per-group tables (and its Mondrian field).
    tabulates_spec_group: ClassVar[bool] = False

    def records(self, table: PredictionTable, spec: JudgeSpec | None, *, group: str | None,
                dataset: str | None = None, model: str | None = None, lmu_root: str | Path | None = None,
                label_scale: LabelScale | None = None) -> list[dict[str, Any]]:
        raise NotImplementedError

    def group_field(self, rows: Table, group: str | None) -> str | None:
        """The group the core reads the records by (None: the kind's reader needs none)."""
        return None

    def default_spec(self, table: PredictionTable) -> JudgeSpec | None:
        """The judge spec of a file of this kind that names no judgecp dataset (None: VLMEvalKit's own)."""
        return None

    def error_fields(self, spec: JudgeSpec | None) -> dict[str, Any]:
        """What a report that could not be computed still says of the dataset."""
        return {}

    def count_used(self, table: PredictionTable, records: list[dict[str, Any]], data: Any) -> None:
        """Note on ``table`` how many of its rows made it into ``data`` (for the run's summary)."""


class LikertVlmeval(VlmevalKind):
    kind = "likert"
    metric_suffix = "_cp"
    tabulates_spec_group = True

    def records(self, table: PredictionTable, spec: JudgeSpec | None, *, group: str | None,
                dataset: str | None = None, model: str | None = None, lmu_root: str | Path | None = None,
                label_scale: LabelScale | None = None) -> list[dict[str, Any]]:
        from judgecp.adapters.vlmeval.predictions import likert_records

        assert spec is not None
        return likert_records(table, spec, label_scale)

    def group_field(self, rows: Table, group: str | None) -> str | None:
        return group

    def default_spec(self, table: PredictionTable) -> JudgeSpec | None:
        from judgecp.adapters.vlmeval.specs import SCALE_COLUMN, JudgeSpec
        from judgecp.base.scale import LikertScale

        scales = {str(r.columns.get(SCALE_COLUMN)) for r in table.rows if r.columns.get(SCALE_COLUMN)}
        scale = LikertScale.parse(scales.pop()) if len(scales) == 1 else LikertScale()
        return JudgeSpec(key="likert", kind=self.kind, names=(), prompt="", fields={}, scale=scale,
                         group="category" if "category" in table.columns else None)

    def error_fields(self, spec: JudgeSpec | None) -> dict[str, Any]:
        return {} if spec is None else {"scale": [spec.scale.minimum, spec.scale.maximum]}


class PairwiseVlmeval(VlmevalKind):
    kind = "pairwise"
    metric_suffix = "_selective"
    splits_setting = "n_splits"

    def records(self, table: PredictionTable, spec: JudgeSpec | None, *, group: str | None,
                dataset: str | None = None, model: str | None = None, lmu_root: str | Path | None = None,
                label_scale: LabelScale | None = None) -> list[dict[str, Any]]:
        from judgecp.adapters.vlmeval.predictions import pairwise_records

        assert spec is not None
        return pairwise_records(table, spec, group if group in table.columns else None)

    def group_field(self, rows: Table, group: str | None) -> str | None:
        return group if group in rows.columns else None

    def default_spec(self, table: PredictionTable) -> JudgeSpec | None:
        from judgecp.adapters.vlmeval.specs import MLLM_JUDGE_PAIR

        return MLLM_JUDGE_PAIR

    def count_used(self, table: PredictionTable, records: list[dict[str, Any]], data: Any) -> None:
        used = set(data.pair_ids.tolist())
        table.rows_used = sum(1 for r in records if r["pair_id"].strip() in used)


class ChoiceVlmeval(VlmevalKind):
    """VLMEvalKit's own multiple-choice benchmarks, read post hoc from an ``-lp`` run."""

    kind = "mcq"
    metric_suffix = "_mcq"
    #: PARC's records also carry ``source_id``, ``variation`` and ``family``.
    variations: ClassVar[bool] = False

    def records(self, table: PredictionTable, spec: JudgeSpec | None, *, group: str | None,
                dataset: str | None = None, model: str | None = None, lmu_root: str | Path | None = None,
                label_scale: LabelScale | None = None) -> list[dict[str, Any]]:
        from judgecp.adapters.vlmeval.predictions import option_records

        return option_records(table, variations=self.variations, dataset=dataset, model=model, lmu_root=lmu_root)


class ParcVlmeval(ChoiceVlmeval):
    kind = "parc"
    metric_suffix = "_reliability"
    variations = True

    def default_spec(self, table: PredictionTable) -> JudgeSpec | None:
        from judgecp.adapters.vlmeval.specs import PARC

        return PARC


#: VLMEvalKit's part of each kind, by the kind's name.
VLMEVAL_KINDS: dict[str, VlmevalKind] = {cls.kind: cls() for cls in (LikertVlmeval, PairwiseVlmeval, ChoiceVlmeval,
                                                                      ParcVlmeval)}


def vlmeval_kind(kind: str) -> VlmevalKind:
    """VLMEvalKit's part of ``kind`` (an error when judgecp's VLMEvalKit datasets do not read that kind)."""
    if kind not in VLMEVAL_KINDS:
        raise InputError(f"judge kind {kind!r} has no VLMEvalKit reader yet (VLMEvalKit reads "
                         f"{', '.join(VLMEVAL_KINDS)})")
    return VLMEVAL_KINDS[kind]
