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
from typing import Any, ClassVar

from judgecp.adapters.vlmeval.predictions import (
    PredictionTable,
    _why_no_records,
    likert_records,
    option_records,
    pairwise_records,
)
from judgecp.adapters.vlmeval.specs import (
    KIND_COLUMN,
    MLLM_JUDGE_PAIR,
    PARC,
    SCALE_COLUMN,
    JudgeSpec,
    dataset_names,
    spec_for,
)
from judgecp.base.errors import InputError
from judgecp.base.scale import LabelScale, LikertScale
from judgecp.data.tables import Table
from judgecp.kinds import get_kind, kind_of_shape


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
        assert spec is not None
        return likert_records(table, spec, label_scale)

    def group_field(self, rows: Table, group: str | None) -> str | None:
        return group

    def default_spec(self, table: PredictionTable) -> JudgeSpec | None:
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
        assert spec is not None
        return pairwise_records(table, spec, group if group in table.columns else None)

    def group_field(self, rows: Table, group: str | None) -> str | None:
        return group if group in rows.columns else None

    def default_spec(self, table: PredictionTable) -> JudgeSpec | None:
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
        return option_records(table, variations=self.variations, dataset=dataset, model=model, lmu_root=lmu_root)


class ParcVlmeval(ChoiceVlmeval):
    kind = "parc"
    metric_suffix = "_reliability"
    variations = True

    def default_spec(self, table: PredictionTable) -> JudgeSpec | None:
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


# -- what a prediction file holds ------------------------------------------------------------------


def resolve_kind(table: PredictionTable, kind: str | None = None) -> tuple[str, JudgeSpec | None]:
    """The kind of a prediction file and its judge spec (``None`` for VLMEvalKit's own multiple choice).

    In order: ``kind`` when given; the dataset name (judgecp's datasets);
    the ``judgecp_kind`` column a judgecp TSV carries; the kind of the
    records' shape (an ``-lp`` model on VLMEvalKit's multiple-choice
    benchmarks writes ``choice`` records into the sidecar: ``mcq``).
    """
    if kind is not None:
        get_kind(kind)  # an unknown kind is an error naming the kinds
    found = spec_for(table.dataset) if table.dataset is not None else None
    if found is None and table.record_dataset() is not None:
        found = spec_for(str(table.record_dataset()))
    columns = {str(r.columns.get(KIND_COLUMN)) for r in table.rows if r.columns.get(KIND_COLUMN)}
    if kind is None:
        if found is not None:
            kind = found.kind
        elif len(columns) == 1:
            kind = columns.pop()
        elif not columns and KIND_COLUMN in table.columns:
            kind = "likert"
        else:
            record_kinds = {kind_of_shape(r.record["shape"]).name for r in table.rows if r.record}
            if len(record_kinds) == 1:
                kind = record_kinds.pop()
    if kind is None:
        raise InputError(
            f"{table.path}: cannot tell what this prediction file holds: its name does not end in one of "
            f"{', '.join(dataset_names())} (or PARC_<name>), it has no {KIND_COLUMN} column, and "
            f"{_why_no_records(table)}. Give --kind mcq to read it as multiple choice anyway."
        )
    if found is not None and found.kind == kind:
        return kind, found
    return kind, vlmeval_kind(kind).default_spec(table)


def resolve_spec(table: PredictionTable, spec: JudgeSpec | None = None) -> JudgeSpec:
    """The judge spec of a table of one of judgecp's judge datasets (see :func:`resolve_kind`)."""
    if spec is not None:
        return spec
    kind, found = resolve_kind(table)
    if found is None:
        raise InputError(
            f"{table.path}: a prediction file of a VLMEvalKit multiple-choice benchmark (kind {kind}), "
            "not of a judgecp judge dataset; evaluate it with `judgecp evaluate --format vlmeval --kind mcq`"
        )
    return found
