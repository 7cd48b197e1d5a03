"""The Likert kind: a judge's scores on a rating scale, conformal intervals and label sets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from judgecp.errors import InputError
from judgecp.headline import PrimaryMetric
from judgecp.kinds import Kind
from judgecp.scalars import metric_suffix

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
    columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"label": ("label", "gt_score", "human_score", "human_label"),
               "prediction": ("prediction", "parsed", "parsed_score", "judge_score"),
               "logprobs": ("logprobs", "score_logprobs")}
    reader_options = frozenset({"scale", "floor", "nan", "label_scale"})
    row_features = True
    example_group = "group"
    settings = frozenset({"alpha", "alphas", "methods", "splits", "seeds", "random_state", "cal_fraction",
                          "mondrian", "group", "jobs", "label_scale"})

    ppi_target = "mean human score"
    default_calibration_method = "naive"

    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        from judgecp.data.score import score_data

        self.check_reader_options(options)
        if "scale" in table.columns and options.get("scale") is None:
            options["scale"] = record_scale(table)
        if "label_scale" in table.columns and options.get("label_scale") is None:
            options["label_scale"] = record_label_scale(table)
        return score_data(table, fields, require_label=require_label, **options)

    def to_records(self, data: Any) -> list[dict[str, Any]]:
        from judgecp.data.export import score_records

        return score_records(data)

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

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """The first method's label-set coverage and width (an interval's, for continuous labels).
        The coverage has a target, not a best value; the width reads worst (the whole scale) when
        the judge says nothing."""
        for key in flat:  # the methods keep the protocol's order
            if key.endswith("|coverage"):  # not |interval_coverage
                method = key[: -len("|coverage")]
                suffix = metric_suffix(method)
                return [PrimaryMetric(f"{method}|coverage", None, None, f"coverage_{suffix}"),
                        PrimaryMetric(f"{method}|set_width", False, 0.0, f"width_{suffix}")]
        return []

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


    # -- reports ---------------------------------------------------------------------------------
    def report_tables(self, runs: Any) -> list[Any]:
        from judgecp.reports import likert_tables

        return likert_tables(runs)

    def report_figures(self) -> tuple[Any, ...]:
        from judgecp.reports import figures as f

        return (f.reliability_map, f.likert_methods, f.likert_sweep, f.group_coverage, f.coverage_by_label,
                f.coverage_by_error, f.width_distribution, f.confusion, f.judge_reliability, f.rsg)

    def group_coverages(self, body: Mapping[str, Any]) -> list[tuple[str, str, Any, int, bool]]:
        from judgecp.evaluation.metrics import headline_entry

        mondrian = bool((body.get("protocol") or {}).get("mondrian"))
        return [(g, method, headline_entry(m)["coverage"], entry["n"], mondrian)
                for g, entry in (body.get("groups") or {}).items() for method, m in entry["methods"].items()]

    def sweep_entry(self, entry: Mapping[str, Any]) -> tuple[float, float]:
        from judgecp.evaluation.metrics import headline_entry

        head = headline_entry(entry)  # label sets; the interval for continuous labels
        return float(head["coverage"]), float(head["width"])

    # -- calibrators ------------------------------------------------------------------------------
    def proxy_and_target(self, data: Any) -> tuple[Any, Any]:
        """The judge's expected score ``sum_k k p_k`` and the human score."""
        import numpy as np

        from judgecp.features import expected_score, judge_probabilities

        return expected_score(judge_probabilities(data.logprobs, data.scale), data.scale), data.labels.astype(np.float64)

    def drift_statistic(self, data: Any, signal: str) -> tuple[str, Any]:
        return "expected_score", self.proxy_and_target(data)[0]

    def fit_calibrator(self, data: Any, *, method: str | None, alpha: float, groups: str | None,
                       random_state: int | None, signal: str, delta: float) -> Any:
        from judgecp.calibrators.fitting import (
            Fitted,
            check_conformal_part,
            check_saveable,
            check_size,
        )
        from judgecp.estimators import ScoreIntervals
        from judgecp.plugins import check_method_spec

        check_size(alpha, data.n)
        spec = check_method_spec(method or self.default_calibration_method)
        check_saveable(spec, alpha, data.scale)
        est = ScoreIntervals(spec, confidence_level=1.0 - alpha, random_state=random_state)
        est.calibrate(data, groups=groups)
        check_conformal_part(spec, alpha, est.method_ if est.mondrian_ is None else None, data.n)
        return Fitted(est, spec, scale=(data.scale.minimum, data.scale.maximum))

    def calibrator_parts(self, reader: Any, method: str, alpha: float, n: int) -> Any:
        from judgecp.calibrators.fileformat import likert_parts

        return likert_parts(reader, method, alpha, n)

    def compatibility(self, cal: Any, data: Any) -> list[str]:
        if cal.scale and (data.scale.minimum, data.scale.maximum) != tuple(cal.scale):
            return [f"scale {data.scale.minimum}:{data.scale.maximum} differs from the calibrator's "
                    f"{cal.scale[0]}:{cal.scale[1]}"]
        return []

    def apply_calibrator(self, cal: Any, data: Any, *, groups: str | None) -> Any:
        """Label sets (and intervals) per item; coverage on the run's labeled items, checked against the
        calibration-conditional law (none for continuous labels and a set method: said so)."""
        import numpy as np

        from judgecp.calibrators.applying import (
            ApplyParts,
            coverage_section,
            likert_coverage_check,
            set_outputs,
            set_summary,
        )

        by = groups or cal.groups
        est = cal.estimator
        prediction = est.predict(data, groups=by) if est.mondrian_ is not None else est.predict(data)
        sets = prediction.label_sets()
        summary: dict[str, Any] = {}
        lower = upper = None
        if prediction.has_interval:
            lower, upper = prediction.lower, prediction.upper
            summary["mean_interval_width"] = float(np.mean(upper - lower)) if data.n else None
        summary["full_range"] = int(prediction.full_range.sum())
        summary.update(set_summary(prediction.sets.sum(axis=1), data.n))
        labeled = data.labeled
        section = None
        if not prediction.has_interval and data.continuous_labels:  # label sets cannot hold continuous labels
            section = {"n": int(labeled.sum()), "coverage": None, "target": 1.0 - cal.alpha,
                       "reason": "continuous labels, and the calibrator's method predicts label sets"}
        elif labeled.any():
            covered = np.zeros(data.n, bool)
            covered[labeled] = prediction.take(np.flatnonzero(labeled)).covers(data.labels[labeled])
            section = coverage_section(covered, labeled, cal.alpha, likert_coverage_check(cal, data, covered, by))
        # A row the calibrator could not use (no usable logprobs, ...) gets the whole scale: a set that covers.
        whole: dict[str, Any] = {"set": data.scale.labels.tolist()}
        if prediction.has_interval:
            whole["interval"] = [float(data.scale.minimum), float(data.scale.maximum)]
        return ApplyParts(summary, section, sets=sets, lower=lower, upper=upper,
                          outputs=set_outputs(data.ids, sets, lower, upper), unused=whole)


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
