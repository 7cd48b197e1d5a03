"""Boosted conformal intervals (Xie, Barber & Candès, 2024): Boosted CQR and Boosted LCP.

Both start from a base conformity score with two functions of x and refine
them by gradient boosting so that the interval *after* conformalization is
short. The loss is the average conformalized length on the boosting data,
made differentiable with a smoothed quantile; the number of boosting rounds
is chosen by k-fold cross-validation on the exact (unsmoothed) conformalized
length (each fold stops after ``patience`` rounds without improvement). Everything happens on the fit part of the
calibration split; the
held-out part conformalizes the boosted score, which is what carries the
coverage guarantee, whatever the boosting did.

* Boosted LCP: score ``|y - mu(x)| / sigma(x)``, interval ``mu ± Q sigma``;
  base ``mu`` = the judge's expected score, base ``sigma`` = the mean
  absolute residual (a constant), boosted in ``(mu, log sigma)``.
* Boosted CQR: score ``max(q_lo(x) - y, y - q_hi(x))``, interval
  ``[q_lo - Q, q_hi + Q]``; base = gradient-boosted quantile regressors at
  ``alpha/2`` and ``1 - alpha/2``, boosted in ``(q_lo, q_hi)``.

Deviation: the paper boosts with XGBoost and a soft-sorting quantile; we use
depth-limited regression trees on the functional gradient and a
sigmoid-smoothed quantile (implicit differentiation), which keeps the core
free of extra dependencies. Only the length loss is implemented.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from judgecp.stats.conformal import (
    ConformalMethod,
    FloatArray,
    MethodOptions,
    Prediction,
    conformal_quantile,
)
from judgecp.stats.features import expected_score, judge_probabilities, model_features
from judgecp.stats.methods.quantile_regression import quantile_regressor

if TYPE_CHECKING:
    from typing_extensions import Unpack


def smooth_quantile(s: FloatArray, level: float, temperature: float) -> tuple[float, FloatArray]:
    """Smoothed ``level``-quantile of ``s`` and its gradient with respect to ``s``.

    ``Q`` solves ``mean(sigmoid((Q - s_j) / T)) = level``; by implicit
    differentiation ``dQ/ds_j = w_j / sum(w)`` with ``w_j`` the sigmoid's
    derivative at ``(Q - s_j) / T``. As ``T -> 0`` this is the empirical quantile.
    """
    from scipy.special import expit

    lo, hi = float(s.min()) - 10 * temperature, float(s.max()) + 10 * temperature
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if np.mean(expit((mid - s) / temperature)) < level:
            lo = mid
        else:
            hi = mid
    q = 0.5 * (lo + hi)
    z = expit((q - s) / temperature)
    w = z * (1.0 - z)
    total = w.sum()
    grad = w / total if total > 0 else np.full_like(s, 1.0 / s.size)
    return q, grad


def _tree_input(F: FloatArray) -> Any:
    """Features as sklearn's trees read them (float32, C order), checked here once.

    Features with a missing value (NaN) are returned as they are: the trees
    then take sklearn's checked path, which handles them.
    """
    F32 = np.ascontiguousarray(F, dtype=np.float32)
    return F32 if np.isfinite(F32).all() else F


def _fast(F: Any) -> bool:
    """Whether ``F`` came checked from :func:`_tree_input` (float32, finite): skip sklearn's checks."""
    return bool(F.dtype == np.float32)


class _BoostedMethod(ConformalMethod):
    output = "interval"
    fits_model = True

    def __init__(
        self,
        alpha: float = 0.1,
        *,
        max_rounds: int = 60,
        learning_rate: float = 0.1,
        max_depth: int = 2,
        n_folds: int = 3,
        patience: int = 10,
        temperature: float = 0.1,
        **options: Unpack[MethodOptions],
    ) -> None:
        super().__init__(alpha, **options)
        self.max_rounds = max_rounds
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.n_folds = n_folds
        self.patience = patience
        self.temperature = temperature

    # -- per-method pieces ----------------------------------------------
    def _base(self, X: FloatArray) -> FloatArray:
        """Base function values ``(n, 2)``."""
        raise NotImplementedError

    def _fit_base(self, X: FloatArray, y: FloatArray) -> None:
        return None

    @staticmethod
    def _scores(G: FloatArray, y: FloatArray) -> FloatArray:
        raise NotImplementedError

    @staticmethod
    def _length(G: FloatArray, q: float) -> float:
        raise NotImplementedError

    def _gradient(self, G: FloatArray, y: FloatArray) -> FloatArray:
        raise NotImplementedError

    def _interval(self, G: FloatArray, q: float) -> tuple[FloatArray, FloatArray]:
        raise NotImplementedError

    # -- boosting -------------------------------------------------------
    def _boost(
        self,
        F: FloatArray,
        G0: FloatArray,
        y: FloatArray,
        rounds: int,
        eval_sets: list[tuple[FloatArray, FloatArray, FloatArray]] | None = None,
    ) -> tuple[list[tuple[Any, Any]], list[list[float]]]:
        from sklearn import config_context
        from sklearn.tree import DecisionTreeRegressor

        # Trees read float32 features (as sklearn converts them on every call): converted once here,
        # and fit/predict skip sklearn's per-call input checks. Same trees, same predictions.
        F = _tree_input(F)
        eval_sets = [(_tree_input(Fv), g, yv) for Fv, g, yv in eval_sets or []]
        G = G0.copy()
        trees: list[tuple[Any, Any]] = []
        # Trees break ties between equally good splits at random: seed them.
        tree_seed = int(self._rng_.integers(2**31 - 1))
        evals = [list[float]() for _ in eval_sets or []]
        eval_G = [g.copy() for _, g, _ in eval_sets or []]

        def record() -> None:
            for i, (_, _, yv) in enumerate(eval_sets or []):
                q = conformal_quantile(self._scores(eval_G[i], yv), self.alpha)
                evals[i].append(self._length(eval_G[i], q) if np.isfinite(q) else np.inf)

        record()
        with config_context(skip_parameter_validation=True):
            for _ in range(rounds):
                if evals and self._stalled(evals[0]):
                    break
                grad = self._gradient(G, y)
                pair = []
                for c in range(2):
                    # Normalized functional gradient step: each round moves the
                    # function by about learning_rate, whatever the loss scale.
                    rms = float(np.sqrt(np.mean(grad[:, c] ** 2)))
                    target = -grad[:, c] / rms if rms > 0 else np.zeros(y.size)
                    tree = DecisionTreeRegressor(max_depth=self.max_depth, min_samples_leaf=20, random_state=tree_seed)
                    tree.fit(F, target, check_input=not _fast(F))
                    G[:, c] += self.learning_rate * tree.predict(F, check_input=not _fast(F))
                    for i, (Fv, _, _) in enumerate(eval_sets):
                        eval_G[i][:, c] += self.learning_rate * tree.predict(Fv, check_input=not _fast(Fv))
                    pair.append(tree)
                trees.append((pair[0], pair[1]))
                record()
        return trees, evals

    def _stalled(self, curve: list[float]) -> bool:
        """No improvement of the validation length in the last ``patience`` rounds."""
        return len(curve) > self.patience and min(curve[-self.patience :]) >= min(curve[: -self.patience])

    def _fit(self, X: FloatArray, y: FloatArray) -> None:
        from sklearn.model_selection import KFold

        self._fit_base(X, y)
        F = model_features(X, self.scale)
        G0 = self._base(X)
        n_folds = min(self.n_folds, max(2, y.size // 20))
        curves = np.zeros(self.max_rounds + 1)
        if y.size >= 40:
            kf = KFold(n_splits=n_folds, shuffle=True, random_state=int(self._rng_.integers(2**31 - 1)))
            for tr, va in kf.split(F):
                _, (curve,) = self._boost(F[tr], G0[tr], y[tr], self.max_rounds, [(F[va], G0[va], y[va])])
                # A fold stopped early keeps its last value for the rounds it did not run.
                curves += np.asarray(curve + [curve[-1]] * (self.max_rounds + 1 - len(curve)))
            self.rounds_ = int(np.argmin(curves))
        else:
            self.rounds_ = 0
        self.trees_, _ = self._boost(F, G0, y, self.rounds_)

    def boosted(self, X: FloatArray) -> FloatArray:
        """The boosted function values ``(n, 2)``."""
        G: FloatArray = self._base(X).copy()
        if self.trees_:
            F = _tree_input(model_features(X, self.scale))
            for t0, t1 in self.trees_:
                G[:, 0] += self.learning_rate * t0.predict(F, check_input=not _fast(F))
                G[:, 1] += self.learning_rate * t1.predict(F, check_input=not _fast(F))
        return G

    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        self.quantile_ = self._quantile(self._scores(self.boosted(X), y))

    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        lower, upper = self._interval(self.boosted(X), self.quantile_)
        return Prediction.from_interval(lower, upper, self.scale)


class BoostedLCP(_BoostedMethod):
    """Boosted local (normalized-residual) conformal prediction."""

    name = "boosted_lcp"
    reference = "Xie, Barber & Candès (2024), NeurIPS"

    def _fit_base(self, X: FloatArray, y: FloatArray) -> None:
        mu = expected_score(judge_probabilities(X, self.scale), self.scale)
        self.base_log_sigma_ = float(np.log(max(float(np.mean(np.abs(y - mu))), 1e-3)))

    def _base(self, X: FloatArray) -> FloatArray:
        mu = expected_score(judge_probabilities(X, self.scale), self.scale)
        return np.column_stack([mu, np.full(mu.size, self.base_log_sigma_)])

    @staticmethod
    def _scores(G: FloatArray, y: FloatArray) -> FloatArray:
        return np.abs(y - G[:, 0]) / np.exp(G[:, 1])

    @staticmethod
    def _length(G: FloatArray, q: float) -> float:
        return float(2.0 * q * np.mean(np.exp(G[:, 1])))

    def _gradient(self, G: FloatArray, y: FloatArray) -> FloatArray:
        sigma = np.exp(G[:, 1])
        s = np.abs(y - G[:, 0]) / sigma
        q, dq = smooth_quantile(s, 1.0 - float(self.alpha), self.temperature * max(float(s.std()), 1e-6))
        m = sigma.mean()
        d_mu = 2.0 * m * dq * (-np.sign(y - G[:, 0]) / sigma)
        d_eta = 2.0 * q * sigma / y.size + 2.0 * m * dq * (-s)
        return np.column_stack([d_mu, d_eta])

    def _interval(self, G: FloatArray, q: float) -> tuple[FloatArray, FloatArray]:
        sigma = np.exp(G[:, 1])
        return G[:, 0] - q * sigma, G[:, 0] + q * sigma

    complexity = (
        "(n_folds + 1) x max_rounds x 2 depth-limited trees on the fit part, O(n log n) each; O(n rounds) prediction",
        "O(n)",
    )


class BoostedCQR(_BoostedMethod):
    """Boosted conformalized quantile regression."""

    name = "boosted_cqr"
    reference = "Xie, Barber & Candès (2024), NeurIPS"

    def _fit_base(self, X: FloatArray, y: FloatArray) -> None:
        F = model_features(X, self.scale)
        seed = int(self._rng_.integers(2**31 - 1))
        a = float(self.alpha)
        self.lower_model_ = quantile_regressor("gbm", a / 2, seed).fit(F, y)
        self.upper_model_ = quantile_regressor("gbm", 1 - a / 2, seed).fit(F, y)

    def _base(self, X: FloatArray) -> FloatArray:
        F = model_features(X, self.scale)
        lo = self.lower_model_.predict(F)
        hi = self.upper_model_.predict(F)
        return np.column_stack([np.minimum(lo, hi), np.maximum(lo, hi)]).astype(np.float64)

    @staticmethod
    def _scores(G: FloatArray, y: FloatArray) -> FloatArray:
        return np.maximum(G[:, 0] - y, y - G[:, 1])

    @staticmethod
    def _length(G: FloatArray, q: float) -> float:
        return float(np.mean(np.maximum(G[:, 1] - G[:, 0] + 2.0 * q, 0.0)))

    def _gradient(self, G: FloatArray, y: FloatArray) -> FloatArray:
        lower_err, upper_err = G[:, 0] - y, y - G[:, 1]
        s = np.maximum(lower_err, upper_err)
        _, dq = smooth_quantile(s, 1.0 - float(self.alpha), self.temperature * max(float(s.std()), 1e-6))
        lower_active = lower_err >= upper_err
        n = y.size
        d_lo = -1.0 / n + 2.0 * dq * lower_active
        d_hi = 1.0 / n - 2.0 * dq * (~lower_active)
        return np.column_stack([d_lo, d_hi])

    def _interval(self, G: FloatArray, q: float) -> tuple[FloatArray, FloatArray]:
        return G[:, 0] - q, G[:, 1] + q

    complexity = ("as boosted_lcp, after two quantile fits as cqr", "O(n)")
