"""A saved Likert calibrator: label sets (and intervals) from a conformal method, fitted once, applied nightly."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.scale import LikertScale
from judgecp.kinds.calibration import (
    MAX_LABELS,
    ApplyParts,
    Fitted,
    KindParts,
    check_conformal_part,
    check_saveable,
    check_size,
    check_spec_field,
    coverage_result,
    coverage_section,
    null_fields,
    set_counts,
    set_outputs,
    set_summary,
)
from judgecp.kinds.kind import Calibration
from judgecp.kinds.likert.estimator import ScoreIntervals
from judgecp.kinds.metrics import Metric, set_summary_metrics
from judgecp.kinds.registry import check_method_spec
from judgecp.stats.features import expected_score, judge_probabilities
from judgecp.stats.saved_state import StateReader


class LikertCalibration(Calibration):
    """A :class:`judgecp.kinds.likert.estimator.ScoreIntervals` saved as data; the PPI proxy is the expected score."""

    ppi_target = "mean human score"
    default_method = "naive"

    def proxy_and_target(self, data: Any) -> tuple[Any, Any]:
        """The judge's expected score ``sum_k k p_k`` and the human score."""
        return expected_score(judge_probabilities(data.logprobs, data.scale), data.scale), data.labels.astype(
            np.float64
        )

    def drift_statistic(self, data: Any, signal: str) -> tuple[str, Any]:
        return "expected_score", self.proxy_and_target(data)[0]

    def fit(self, data: Any, *, method: str | None, alpha: float, groups: str | None,
            random_state: int | None, signal: str, delta: float) -> Any:
        check_size(alpha, data.n)
        spec = check_method_spec(method or self.default_method, kind="likert")
        check_saveable(spec, alpha, data.scale)
        est = ScoreIntervals(spec, confidence_level=1.0 - alpha, random_state=random_state)
        est.calibrate(data, groups=groups)
        check_conformal_part(spec, alpha, est.method_ if est.mondrian_ is None else None, data.n)
        return Fitted(est, spec, scale=(data.scale.minimum, data.scale.maximum))

    def parts(self, reader: Any, method: str, alpha: float, n: int) -> KindParts:
        """``scale`` [min, max], ``groups`` (the Mondrian field or null), a ScoreIntervals state."""
        r: StateReader = reader
        null_fields(r, "options")
        bounds = r.get("scale")
        if (not isinstance(bounds, list) or len(bounds) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)):
            r.fail("scale", f"expected [min, max] (two integers), found {bounds!r:.40}")
        if not 1 <= bounds[1] - bounds[0] < MAX_LABELS:
            r.fail("scale", f"{bounds} is not a scale of 2 to {MAX_LABELS} labels")
        scale = LikertScale(bounds[0], bounds[1])
        check_spec_field(r, lambda: check_method_spec(method, kind="likert", flag="method"))
        groups = r.optional_text("groups")
        est = ScoreIntervals.from_state(r.get("state"), method=method, confidence_level=1.0 - alpha, scale=scale,
                                        n_calibration=n, grouped=groups is not None, where=r.path("state"))
        span = (float(scale.minimum), float(scale.maximum))
        return KindParts(est, (scale.minimum, scale.maximum), None, groups, "expected_score", span, span)

    def compatibility(self, cal: Any, data: Any) -> list[str]:
        if cal.scale and (data.scale.minimum, data.scale.maximum) != tuple(cal.scale):
            return [f"scale {data.scale.minimum}:{data.scale.maximum} differs from the calibrator's "
                    f"{cal.scale[0]}:{cal.scale[1]}"]
        return []

    def apply(self, cal: Any, data: Any, *, groups: str | None) -> ApplyParts:
        """Label sets (and intervals) per item; coverage on the run's labeled items, checked against the
        calibration-conditional law (none for continuous labels and a set method: said so)."""
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
            section = coverage_section(covered, labeled, cal.alpha, coverage_check(cal, data, covered, by))
        # A row the calibrator could not use (no usable logprobs, ...) gets the whole scale: a set that covers.
        whole: dict[str, Any] = {"set": data.scale.labels.tolist()}
        if prediction.has_interval:
            whole["interval"] = [float(data.scale.minimum), float(data.scale.maximum)]
        return ApplyParts(summary, section, sets=sets, lower=lower, upper=upper,
                          outputs=set_outputs(data.ids, sets, lower, upper), unused=whole)

    def applied_metrics(self) -> list[Metric]:
        return set_summary_metrics()


def coverage_check(cal: Any, data: Any, covered: NDArray[np.bool_], by: str | None) -> dict[str, Any]:
    """The beta-binomial coverage test of a Likert calibrator's sets on the run's labeled items."""
    labeled = data.labeled
    mondrian = cal.estimator.mondrian_
    if mondrian is None:
        methods, groups = {"all": cal.estimator.method_}, np.full(int(labeled.sum()), "all")
    else:
        methods = dict(mondrian.methods_)
        groups = np.asarray(data.fields[by]).astype(str)[labeled] if by else np.full(int(labeled.sum()), "")
    return coverage_result(set_counts(methods, groups, covered[labeled], cal.alpha))
