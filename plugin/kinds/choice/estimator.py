"""The multiple-choice estimators: :class:`ChoiceSets` (conformal option sets) and
:class:`PromptReliability` (PARC: LAC thresholds fitted on labeled items, PARC's scores on any items)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, NotCalibratedError
from judgecp.base.scale import LikertScale
from judgecp.data import PAD_LOGPROB, ChoiceData
from judgecp.kinds.choice.parc_study import (
    add_test_rows,
    cell_entry,
    certainties,
    fit_lac,
    parc_report,
    row_scores,
)
from judgecp.kinds.registry import build_method, check_method_spec, saved_method_class
from judgecp.stats.conformal import check_alpha
from judgecp.stats.saved_state import StateReader

BoolArray = NDArray[np.bool_]


def _alpha(confidence_level: float) -> float:
    return check_alpha(1.0 - float(confidence_level))


@dataclass(frozen=True)
class ChoicePrediction:
    """Conformal option sets of multiple-choice items."""

    ids: NDArray[np.str_]
    sets: BoolArray  # (n, K) over each item's options in display order (padding False)
    options: list[list[str]]

    def option_sets(self) -> list[list[str]]:
        """Each item's set as option letters."""
        return [
            [o for o, inside in zip(opts, row, strict=False) if inside]
            for opts, row in zip(self.options, self.sets, strict=True)
        ]

    @property
    def size(self) -> NDArray[np.int64]:
        out: NDArray[np.int64] = self.sets.sum(axis=1)
        return out


class ChoiceSets:
    """Conformal option sets for multiple-choice answers (LAC, APS, RAPS, margin, ...).

    Items may have any number of options; several correct options count as
    one merged class (PARC's convention), so coverage means one correct
    option is in the set. Calibrate on labeled items, predict any.
    """

    def __init__(self, method: str = "lac", *, confidence_level: float = 0.9, random_state: int | None = None) -> None:
        self.method = method
        self.confidence_level = confidence_level
        self.random_state = random_state

    def calibrate(self, data: ChoiceData) -> ChoiceSets:
        spec = check_method_spec(self.method, kind="mcq")
        if not data.labeled.all():
            raise InputError("ChoiceSets.calibrate needs labeled items (every item's correct options)")
        X, _, truth = data.merged()
        self.width_ = max(data.k, 2)
        self.method_ = build_method(spec, alpha=_alpha(self.confidence_level), scale=LikertScale(1, self.width_),
                                    random_state=self.random_state).calibrate(X, truth + 1.0)
        return self

    def state_dict(self) -> dict[str, Any]:
        """``width`` (the most options of a calibration item) and the set method's state."""
        if not hasattr(self, "method_"):
            raise NotCalibratedError("ChoiceSets: calibrate() before state_dict()")
        return {"width": int(self.width_), "method": self.method_.state_dict()}

    @classmethod
    def from_state(cls, state: Any, *, method: str, confidence_level: float, n_calibration: int, max_width: int,
                   where: str = "state") -> ChoiceSets:
        """The calibrated estimator :meth:`state_dict` describes; ``width`` at most ``max_width`` (the options
        seen in calibration), checked before anything of that width is allocated."""

        reader = StateReader(state, where)
        est = cls(method, confidence_level=confidence_level)
        est.width_ = reader.integer("width", low=2, high=max(max_width, 2))
        method_class, params = saved_method_class(method)
        est.method_ = method_class.from_state(reader.get("method"), alpha=_alpha(confidence_level),
                                              scale=LikertScale(1, est.width_), n_calibration=n_calibration,
                                              params=params, where=reader.path("method"))
        reader.finish()
        return est

    def predict(self, data: ChoiceData) -> ChoicePrediction:
        if not hasattr(self, "method_"):
            raise NotCalibratedError("ChoiceSets: call calibrate() first")
        if data.k > self.width_:
            raise InputError(f"items with {data.k} options, more than any calibration item ({self.width_})")
        # Unlabeled items have no merged class: their own options are the classes.
        X, valid, _ = data.merged() if data.labeled.all() else (data.logprobs, data.valid, None)
        pad = self.width_ - X.shape[1]
        if pad:

            X = np.hstack([X, np.full((X.shape[0], pad), PAD_LOGPROB)])
            valid = np.hstack([valid, np.zeros((valid.shape[0], pad), bool)])
        sets = self.method_.predict(X).sets & valid
        return ChoicePrediction(data.ids, sets[:, : data.k], data.options)


class PromptReliability:
    """PARC's scores with certainty from LAC sets fitted on labeled items.

    ``fit`` sets one LAC threshold per (model, dataset, variation) from the
    given items (``reference="original"``: the original prompt's threshold
    for every variation of that model and dataset); ``score`` returns the
    per-cell table of :func:`judgecp.workflows.study.evaluate_parc` (accuracy,
    certainty, consistency, reliability, raw and calibrated) on other items.
    """

    def __init__(self, *, confidence_level: float = 0.9, reference: str = "variation") -> None:
        self.confidence_level = confidence_level
        self.reference = reference

    def fit(self, data: ChoiceData) -> PromptReliability:

        if self.reference not in ("variation", "original"):
            raise InputError(f"reference must be 'variation' or 'original', got {self.reference!r}")
        rs = row_scores(data)
        self.thresholds_: dict[tuple[str, str, str], Any] = {}
        for key in sorted(
            {
                (m, d, v)
                for m, d, v in zip(rs.model[rs.usable], rs.dataset[rs.usable], rs.variation[rs.usable], strict=True)
            }
        ):
            rows = np.flatnonzero(rs.usable & (rs.model == key[0]) & (rs.dataset == key[1]) & (rs.variation == key[2]))
            self.thresholds_[key] = fit_lac(data, rows, _alpha(self.confidence_level), None)
        return self

    def score(self, data: ChoiceData) -> dict[str, Any]:

        if not hasattr(self, "thresholds_"):
            raise NotCalibratedError("PromptReliability: call fit() first")
        rs = row_scores(data)
        cells: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for key in sorted(
            {
                (m, d, v)
                for m, d, v in zip(rs.model[rs.usable], rs.dataset[rs.usable], rs.variation[rs.usable], strict=True)
            }
        ):
            rows = np.flatnonzero(rs.usable & (rs.model == key[0]) & (rs.dataset == key[1]) & (rs.variation == key[2]))
            ref = (key[0], key[1], "O") if self.reference == "original" else key
            lac = self.thresholds_.get(ref)
            add_test_rows(cells[key], rs, rows, certainties(data, lac, rows) if lac is not None else None)
        table = {f"{m}|{d}|{v}": cell_entry(m, d, v, c) for (m, d, v), c in sorted(cells.items())}
        info = {"alpha": _alpha(self.confidence_level), "reference": self.reference, "fitted": True}
        return parc_report(data, table, rs.excluded, info, int(rs.usable.sum()))
