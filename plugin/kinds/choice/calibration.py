"""A saved multiple-choice calibrator: conformal option sets (PARC records are calibrated as ``mcq``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.base.scale import LikertScale
from judgecp.data.choice import choice_probabilities
from judgecp.kinds.calibration import (
    MAX_LABELS,
    ApplyParts,
    Fitted,
    KindParts,
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
from judgecp.kinds.choice.estimator import ChoiceSets
from judgecp.kinds.kind import Calibration
from judgecp.kinds.metrics import Metric, set_summary_metrics
from judgecp.kinds.registry import check_method_spec
from judgecp.stats.saved_state import StateReader


class ChoiceCalibration(Calibration):
    """A :class:`judgecp.kinds.choice.estimator.ChoiceSets` saved as data; the PPI proxy is the predicted option's
    probability (the target: whether it is correct)."""

    ppi_target = "accuracy"
    default_method = "lac"

    def proxy_and_target(self, data: Any) -> tuple[Any, Any]:
        """The probability of the predicted option and whether it is correct."""
        rows = np.arange(data.n)
        f = choice_probabilities(data)[rows, data.prediction]
        correct = data.correct[rows, data.prediction].astype(np.float64)
        return f, np.where(data.labeled, correct, np.nan)

    def drift_statistic(self, data: Any, signal: str) -> tuple[str, Any]:
        return "top_option_probability", choice_probabilities(data).max(axis=1)

    def fit(self, data: Any, *, method: str | None, alpha: float, groups: str | None,
            random_state: int | None, signal: str, delta: float) -> Any:
        if groups:
            raise InputError("groups (Mondrian) are for Likert calibrators")
        check_size(alpha, data.n)
        spec = check_method_spec(method or self.default_method, kind="mcq", flag="--method")
        check_saveable(spec, alpha, LikertScale(1, max(data.k, 2)))
        est = ChoiceSets(spec, confidence_level=1.0 - alpha, random_state=random_state).calibrate(data)
        return Fitted(est, spec, options=sorted({o for opts in data.options for o in opts}))

    def parts(self, reader: Any, method: str, alpha: float, n: int) -> KindParts:
        """``options`` (every letter seen in calibration), a ChoiceSets state."""
        r: StateReader = reader
        null_fields(r, "scale", "groups")
        options = r.texts("options")
        if not 1 <= len(options) <= MAX_LABELS or len(set(options)) != len(options) or "" in options:
            r.fail("options", f"expected 1 to {MAX_LABELS} distinct, non-empty option names")
        check_spec_field(r, lambda: check_method_spec(method, kind="mcq", flag="method"))
        est = ChoiceSets.from_state(r.get("state"), method=method, confidence_level=1.0 - alpha, n_calibration=n,
                                    max_width=len(options), where=r.path("state"))
        return KindParts(est, None, options, None, "top_option_probability", (0.0, 1.0), (0.0, 1.0))

    def compatibility(self, cal: Any, data: Any) -> list[str]:
        width = int(cal.estimator.width_)
        if data.k > width:
            raise InputError(f"items with {data.k} options; the calibrator saw at most {width}")
        letters = sorted({o for opts in data.options for o in opts} - set(cal.options or []))
        return [f"options {letters} never seen in calibration (options {cal.options})"] if letters else []

    def apply(self, cal: Any, data: Any, *, groups: str | None) -> ApplyParts:
        """Option sets per item; coverage (a correct option in the set) on the run's labeled items."""
        choice = cal.estimator.predict(data)
        sets = choice.option_sets()
        covered = (choice.sets & data.correct[:, : choice.sets.shape[1]]).any(axis=1)
        labeled = data.labeled
        section = coverage_section(covered, labeled, cal.alpha, coverage_check(cal, data, covered)) \
            if labeled.any() else None
        # A row the calibrator could not use gets every option it knows: a set that covers.
        return ApplyParts(set_summary(choice.size, data.n), section, sets=sets,
                          outputs=set_outputs(data.ids, sets), unused={"set": list(cal.options or []) or None})

    def applied_metrics(self) -> list[Metric]:
        return set_summary_metrics()


def coverage_check(cal: Any, data: Any, covered: NDArray[np.bool_]) -> dict[str, Any]:
    """The beta-binomial coverage test of a multiple-choice calibrator's option sets on the run's labeled items."""
    labeled = data.labeled
    counts = set_counts({"all": cal.estimator.method_}, np.full(int(labeled.sum()), "all"), covered[labeled],
                         cal.alpha)
    return coverage_result(counts)
