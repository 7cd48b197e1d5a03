"""Shared base for methods that work on a distribution over the labels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from judgecp.base.errors import InputError
from judgecp.stats.conformal import ConformalMethod, FloatArray, MethodOptions
from judgecp.stats.features import RecalibratedJudge, label_probabilities

if TYPE_CHECKING:
    from typing_extensions import Unpack

ProbabilitySource = Literal["judge", "recalibrated"]
PROBABILITY_SOURCES = ("judge", "recalibrated")


class ProbabilityOptions(MethodOptions, total=False):
    """The keywords a :class:`ProbabilityMethod` subclass passes on: the base's and ``probabilities``."""

    probabilities: ProbabilitySource


class ProbabilityMethod(ConformalMethod):
    """A method whose scores come from a distribution over the K labels.

    ``probabilities="judge"`` (default) uses the judge's own softmax over its
    score tokens: nothing is fitted and the whole calibration split sets the
    threshold. ``probabilities="recalibrated"`` first fits
    P(human label | judge logprobs) by multinomial logistic regression on a
    ``fit_fraction`` part of the calibration split (see
    :class:`judgecp.stats.features.RecalibratedJudge`), which helps when the
    judge's softmax is over-confident or biased.
    """

    def __init__(
        self,
        alpha: float = 0.1,
        *,
        probabilities: ProbabilitySource = "judge",
        **options: Unpack[MethodOptions],
    ) -> None:
        super().__init__(alpha, **options)
        if probabilities not in PROBABILITY_SOURCES:
            raise InputError(
                f"probabilities must be one of {PROBABILITY_SOURCES}, got {probabilities!r}"
            )
        self.probabilities = probabilities
        self.fits_model = probabilities == "recalibrated"

    def _fit(self, X: FloatArray, y: FloatArray) -> None:
        self.label_model_ = RecalibratedJudge(self.scale).fit(X, y)

    def is_saveable(self) -> bool:
        return self.probabilities == "judge"  # a recalibration model is a model, not numbers

    def score_bounds(self) -> tuple[float, float]:
        return (0.0, 1.0)  # a probability mass (LAC: 1 - p)

    def _proba(self, X: FloatArray) -> FloatArray:
        return label_probabilities(
            self.probabilities, X, self.scale, getattr(self, "label_model_", None)
        )
