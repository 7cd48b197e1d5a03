"""Naive split conformal on a point predictor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from judgecp.base.errors import InputError
from judgecp.stats.conformal import ConformalMethod, FloatArray, MethodOptions, Prediction
from judgecp.stats.features import (
    expected_score,
    judge_probabilities,
    model_features,
    predict_in_blocks,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack


def default_regressor(random_state: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(
        max_iter=100, max_depth=3, learning_rate=0.05, random_state=random_state
    )


class NaiveSplit(ConformalMethod):
    """Split CP with the absolute residual ``|y - ŷ(x)|``: interval ``ŷ ± q``.

    ``predictor="expected"`` (default) takes ŷ = the judge's expected score
    ``sum_k k p_k``: nothing is fitted, so every calibration point sets the
    threshold. ``predictor="regressor"`` fits a regressor of the human label
    on the judge features (``regressor``, any scikit-learn regressor; default
    a small gradient-boosted tree model) on a ``fit_fraction`` part first.
    """

    name = "naive"
    output = "interval"
    threshold_attribute = "quantile_"
    reference = "Papadopoulos et al. (2002); Lei et al. (2018), JASA"

    def __init__(
        self,
        alpha: float = 0.1,
        *,
        predictor: Literal["expected", "regressor"] = "expected",
        regressor: Any = None,
        **options: Unpack[MethodOptions],
    ) -> None:
        super().__init__(alpha, **options)
        if predictor not in ("expected", "regressor"):
            raise InputError(f"naive: predictor must be 'expected' or 'regressor', got {predictor!r}")
        self.predictor = predictor
        self.regressor = regressor
        self.fits_model = predictor == "regressor"

    def _fit(self, X: FloatArray, y: FloatArray) -> None:
        from sklearn.base import clone

        seed = int(self._rng_.integers(2**31 - 1))
        model = default_regressor(seed) if self.regressor is None else clone(self.regressor)
        self.model_ = model.fit(model_features(X, self.scale), y)

    def point(self, X: FloatArray) -> FloatArray:
        """The point prediction ŷ(x)."""
        if self.predictor == "expected":
            return expected_score(judge_probabilities(X, self.scale), self.scale)
        return predict_in_blocks(self.model_, model_features(X, self.scale))

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        self.scores_ = np.abs(y - self.point(X))
        self.quantile_ = self._quantile(self.scores_)

    def is_saveable(self) -> bool:
        return self.predictor == "expected"  # a fitted regressor is a model, not numbers

    def score_bounds(self) -> tuple[float, float]:
        return (0.0, float(self.scale.span))

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        yhat = self.point(X)
        return Prediction.from_interval(yhat - self.quantile_, yhat + self.quantile_, self.scale)

    complexity = ("O(n)", "O(n)")
