"""The result of the repeated-split study (``judgecp evaluate``): ``judgecp.report/1``, any kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgecp.base.errors import InputError
from judgecp.base.schemas import describe, describe_schema
from judgecp.kinds.kind import Presenter
from judgecp.kinds.metrics import MetricError, metric_value
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.registry import get_kind, kind_names
from judgecp.workflows.results.base import Result
from judgecp.workflows.results.calibrated import ApplyResult, EstimateResult


class StudyResult(Result):
    """The repeated-split study of ``judgecp evaluate`` (any kind): ``judgecp.report/1``."""

    schema = "judgecp.report/1"
    description = describe_schema(schema) or ""
    command = "judgecp evaluate --json"

    def metric_list(self) -> list[Any]:
        if not self.kind:
            raise MetricError("the report names no kind; a judgecp evaluate report has one")
        return get_kind(self.kind, flag="report kind").study.metrics(Protocol(), self)

    def scalars(self) -> dict[str, float | None]:
        return {m.name: metric_value(self, m) for m in self.metric_list()}

    @classmethod
    def _from_checked(cls, obj: Mapping[str, Any], source: str) -> Result:
        if obj.get("schema") is None and "kind" not in obj:
            kind = infer_kind(dict(obj))
            if kind is None:
                raise InputError(f"{source}: not a judgecp evaluate report (no schema, kind, methods or controllers)")
            obj = {**obj, "kind": kind}
        return super()._from_checked(obj, source)


def report_kinds() -> list[str]:
    """The kinds ``judgecp report`` shows: those that name figures or tables
    (:meth:`judgecp.kinds.kind.Presenter.report_figures`)."""
    return [name for name in kind_names()
            if get_kind(name).presenter.report_figures()
            or type(get_kind(name).presenter).report_tables is not Presenter.report_tables]


def other_file(obj: dict[str, Any]) -> str | None:
    """What a judgecp JSON that is not an evaluate report is (a calibrator, an apply summary, ...), else ``None``."""
    if obj.get("schema") != StudyResult.schema and (what := describe(obj)) is not None:
        return what
    # Files of the nightly commands written before results carried their schema.
    if "n_applied" in obj and "drift" in obj:
        return ApplyResult.description
    if "n_labeled" in obj and "estimate" in obj:
        return EstimateResult.description
    if "results" in obj and "configs" in obj:
        return "an lm-eval results file"
    return None


def infer_kind(report: dict[str, Any]) -> str | None:
    if other_file(report) is not None:
        return None
    kind = report.get("kind")
    if isinstance(kind, str) and kind in report_kinds():
        return str(kind)
    if isinstance(kind, str):  # a kind with no figures yet (e.g. ensemble)
        return None
    if "controllers" in report:
        return "pairwise"
    if "cells" in report.get("reliability", {}) or "reliability" in report:
        return "parc"
    if "confusion" in report:
        return "likert"
    if "methods" in report:
        return "mcq"
    return None
