"""Conformalized quantile regression: symmetric (CQR) and asymmetric."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from judgecp.base.errors import InputError
from judgecp.stats.conformal import ConformalMethod, FloatArray, MethodOptions, Prediction
from judgecp.stats.features import model_features, predict_many_in_blocks

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: Rows the quantile regressors are fitted on at most (the fit parts of ../shared/data are under 2,200).
MAX_FIT_ROWS = 20_000


def quantile_regressor(kind: str, quantile: float, random_state: int) -> Any:
    if kind == "gbm":
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(
            loss="quantile",
            quantile=quantile,
            max_iter=100,
            max_depth=3,
            learning_rate=0.05,
            random_state=random_state,
        )
    from sklearn.linear_model import QuantileRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), QuantileRegressor(quantile=quantile, alpha=0.0, solver="highs"))


class CQR(ConformalMethod):
    """CQR: quantile regressors at ``alpha/2`` and ``1 - alpha/2``, one symmetric correction.

    Score ``max(q_lo(x) - y, y - q_hi(x))``; interval
    ``[q_lo(x) - Q, q_hi(x) + Q]`` with ``Q`` the conformal quantile at
    ``alpha``. The quantile regressors (``quantile_model="gbm"``, gradient
    boosting with the pinball loss, or ``"linear"``) are fitted on a
    ``fit_fraction`` part of the calibration split, subsampled (seeded) to
    ``max_fit_rows`` rows beyond that: a quantile of a 1-5 score needs no more,
    and fitting stays bounded at a million records (prediction is O(n)).
    """

    name = "cqr"
    output = "interval"
    fits_model = True
    reference = "Romano, Patterson & Candès (2019), NeurIPS"

    def __init__(
        self,
        alpha: float = 0.1,
        *,
        quantile_model: Literal["gbm", "linear"] = "gbm",
        max_fit_rows: int = MAX_FIT_ROWS,
        **options: Unpack[MethodOptions],
    ) -> None:
        super().__init__(alpha, **options)
        self.max_fit_rows = max_fit_rows
        if quantile_model not in ("gbm", "linear"):
            raise InputError(f"{self.name}: quantile_model must be 'gbm' or 'linear', got {quantile_model!r}")
        self.quantile_model = quantile_model

    def _fit(self, X: FloatArray, y: FloatArray) -> None:
        seed = int(self._rng_.integers(2**31 - 1))
        if y.size > self.max_fit_rows:  # its own generator: the draws above stay those of smaller data
            keep = np.sort(np.random.default_rng(seed).choice(y.size, size=self.max_fit_rows, replace=False))
            X, y = X[keep], y[keep]
        F = model_features(X, self.scale)  # row by row: the kept rows' features, computed for them alone
        a = float(self.alpha)
        self.lower_model_ = quantile_regressor(self.quantile_model, a / 2, seed).fit(F, y)
        self.upper_model_ = quantile_regressor(self.quantile_model, 1 - a / 2, seed).fit(F, y)

    def quantiles(self, X: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The fitted lower and upper quantile predictions (before conformalization)."""
        F = model_features(X, self.scale)
        lo, hi = predict_many_in_blocks([self.lower_model_, self.upper_model_], F)
        return np.minimum(lo, hi), np.maximum(lo, hi)

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        lo, hi = self.quantiles(X)
        self.correction_ = self._quantile(np.maximum(lo - y, y - hi))

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        lo, hi = self.quantiles(X)
        return Prediction.from_interval(lo - self.correction_, hi + self.correction_, self.scale)

    complexity = ("two gradient-boosted quantile fits on at most max_fit_rows rows, O(n) prediction", "O(n)")


class AsymmetricCQR(CQR):
    """Asymmetric CQR: each side corrected separately at ``alpha/2``.

    ``Q_lo`` is the conformal quantile of ``q_lo(x) - y`` and ``Q_hi`` of
    ``y - q_hi(x)``, each at level ``alpha/2``; the interval
    ``[q_lo - Q_lo, q_hi + Q_hi]`` covers with probability >= 1 - alpha
    (union bound), and can shift when the errors are skewed.
    """

    name = "cqr_asym"
    reference = "Sesia & Candès (2020), Stat; Romano et al. (2019), sec. 6"

    def _rank_alpha(self) -> float:
        return float(self.alpha) / 2

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        lo, hi = self.quantiles(X)
        half = float(self.alpha) / 2
        self.correction_lower_ = self._quantile(lo - y, half)
        self.correction_upper_ = self._quantile(y - hi, half)

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        lo, hi = self.quantiles(X)
        return Prediction.from_interval(
            lo - self.correction_lower_, hi + self.correction_upper_, self.scale
        )

    complexity = ("as cqr", "O(n)")
