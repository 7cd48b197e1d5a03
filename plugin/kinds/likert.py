"""The Likert kind: a judge's scores on a rating scale, conformal intervals and label sets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from judgecp.errors import InputError
from judgecp.kinds import Kind

if TYPE_CHECKING:
    from judgecp.data.fields import Fields
    from judgecp.protocol import Protocol
    from judgecp.scalars import Metric
    from judgecp.tables import Table

#: The Likert judge's point metrics a headline shows (those the report has).
HEADLINE_POINT = ("pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae", "bias")


class LikertKind(Kind):
    """Scores on a rating scale: ``judgecp.record/1`` records of shape ``score`` (docs/records.md)."""

    name = "likert"
    record_shape = "score"
    title = "Likert judges: conformal label sets and intervals"
    noun = "rows"
    calibrated_as = "likert"
    default_methods = ("naive", "lac")
    reader_options = frozenset({"scale", "floor", "nan", "label_scale"})
    row_features = True
    example_group = "group"
    settings = frozenset({"alpha", "alphas", "methods", "splits", "seeds", "random_state", "cal_fraction",
                          "mondrian", "group", "jobs", "label_scale"})

    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        from judgecp.data.score import score_data

        self.check_reader_options(options)
        if "scale" in table.columns and options.get("scale") is None:
            options["scale"] = record_scale(table)
        if "label_scale" in table.columns and options.get("label_scale") is None:
            options["label_scale"] = record_label_scale(table)
        return score_data(table, fields, require_label=require_label, **options)

    def example(self, **options: Any) -> Any:
        from judgecp.simulate import simulate_likert_judge

        return simulate_likert_judge(scale=options.get("scale"))

    def study(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        from judgecp.evaluation.score import evaluate_scores

        return evaluate_scores(data, protocol)

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None) -> list[Metric]:
        from judgecp.scalars import likert_metrics

        if body is not None:
            protocol = protocol.with_(methods=tuple(body["methods"]) or None)
        return likert_metrics(protocol, interval={m: e.get("interval") is not None
                                                  for m, e in body["methods"].items()} if body is not None else None)

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        out = super().headline(body, protocol)
        point = body.get("point") or {}
        for key in HEADLINE_POINT:
            if key in point:
                out[key] = point[key]
        from judgecp.evaluation.metrics import headline_entry

        for name, entry in (body.get("methods") or {}).items():
            head = headline_entry(entry)  # continuous labels: no label set, the interval
            summary: dict[str, Any] = {"coverage": head["coverage"], "set_width": head["width"]}
            if entry.get("interval"):
                summary["interval_coverage"] = entry["interval"]["coverage"]
                summary["interval_width"] = entry["interval"]["width"]
            summary["full_range"] = entry.get("full_range")
            out[name] = summary
        return out

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        from judgecp.report import write_detail, write_table

        write_table(body, out)
        if detail is not None:
            write_detail(body, detail, out)

    def console_detail(self, body: Mapping[str, Any], requested: str | None) -> str | None:
        methods = list(body["methods"])
        detail = requested or (methods[0] if methods else None)
        if detail is not None and detail not in body["methods"]:
            raise InputError(f"--detail {detail!r} is not among the methods run: {', '.join(methods)}")
        return detail


def record_scale(table: Table) -> Any:
    """The scale score records carry (one for all of them), if any."""
    from judgecp.scale import LikertScale

    scales = {tuple(s) for s in table.columns["scale"] if isinstance(s, list) and len(s) == 2}
    if len(scales) > 1:
        raise InputError(f"{table.source}: the records have different scales {sorted(scales)}")
    return LikertScale(*scales.pop()) if scales else None


def record_label_scale(table: Table) -> Any:
    """The label scale score records carry (one for all of them; records without one are on the judge's)."""
    cells = [c for c in table.columns["label_scale"] if c is not None and c != ""]
    scales = {tuple(c) if isinstance(c, list) else c for c in cells}
    if len(scales) > 1 or (scales and len(cells) < table.n_rows):
        raise InputError(f"{table.source}: the records' label_scale differs between records "
                         f"({sorted(map(str, scales))[:3]}{', and none on some' if len(cells) < table.n_rows else ''})")
    from judgecp.scale import LabelScale

    return LabelScale.parse(scales.pop(), flag=f"{table.source}: label_scale") if scales else None
