"""Split-conformal building blocks shared by every method.

Conventions (also in docs/methods.md):

* The threshold is the ``ceil((n+1)(1-alpha))``-th smallest of ``n``
  calibration scores. When that index exceeds ``n`` there are too few points
  for the requested level: the threshold is ``+inf``, every prediction is the
  full range, and the rows are flagged ``full_range`` (never a silent finite
  value).
* A continuous interval ``[l, u]`` is clipped to the scale. Its *label set*
  is ``{k : l <= k <= u} = [ceil(l), floor(u)]``; for integer labels it has
  exactly the coverage of ``[l, u]`` and is never wider. The *expanded*
  variant ``[floor(l), ceil(u)]`` exists only to compare with published
  tables that used it, and is labelled so.
* Widths are on the scale's units: ``u - l`` for intervals, ``max - min``
  for label sets (an empty set has width 0 and is counted).
"""

from __future__ import annotations

import abc
import inspect
import math
from fractions import Fraction
from typing import Any, ClassVar, Literal, TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.base.errors import InputError, NotCalibratedError
from judgecp.base.scale import LikertScale
from judgecp.stats.prediction import Prediction as Prediction
from judgecp.stats.saved_state import (
    RANDOM_STATE_LIMIT,
    RANGE_SLACK,
    SEED_LIMIT,
    StateReader,
    check_threshold,
    encode_float,
    encode_floats,
    not_data,
)

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


def check_alpha(alpha: float) -> float:
    """Return ``alpha`` as a float, or raise if it is not in the open interval (0, 1)."""
    try:
        value = float(alpha)
    except (TypeError, ValueError) as exc:
        raise InputError(f"alpha must be a number in (0, 1), got {alpha!r}") from exc
    if not 0.0 < value < 1.0 or math.isnan(value):
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")
    return value


def conformal_rank(n: int, alpha: float) -> int:
    """1-based rank ``ceil((n+1)(1-alpha))`` of the split-conformal order statistic."""
    # The small tolerance keeps e.g. (9+1)*(1-0.1) = 9.000000000000002 at rank 9.
    return math.ceil((n + 1) * (1.0 - alpha) - 1e-9)


def min_calibration_size(alpha: float) -> int:
    """Smallest ``n`` for which the split-conformal threshold is finite (``conformal_rank(n, alpha) <= n``):
    ``n >= (1 - alpha - 1e-9) / alpha`` in exact rationals, then :func:`conformal_rank`'s float rounding settled
    by bisection. Logarithmic time at any level (about ``1e300`` at ``alpha = 1e-300``)."""
    alpha = check_alpha(alpha)
    n = max(1, math.ceil((1 - Fraction(alpha) - Fraction(1e-9)) / Fraction(alpha)))
    if n >= 2**52:  # no data set is this large, and float ranks no longer count by ones
        return n

    def fits(m: int) -> bool:  # monotone: (m + 1)(1 - alpha) - m falls as m grows
        return conformal_rank(m, alpha) <= m

    lo, hi = 0, n  # the answer is in (lo, hi] once fits(hi): float ranks drift by up to 1e11 sizes near 1e-14
    while not fits(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # bisect
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


def conformal_quantile(scores: ArrayLike, alpha: float) -> float:
    """Split-conformal threshold: the ``ceil((n+1)(1-alpha))``-th smallest score.

    Returns ``+inf`` when that rank exceeds ``n`` (too few calibration points
    for the level); callers turn that into a flagged full-range prediction.
    NaN scores are an error: a method must never produce them silently.
    """
    alpha = check_alpha(alpha)
    s = np.asarray(scores, dtype=np.float64).ravel()
    if np.isnan(s).any():
        raise ValueError("conformity scores contain NaN")
    n = s.size
    k = conformal_rank(n, alpha)
    if n == 0 or k > n:
        return math.inf
    return float(np.partition(s, k - 1)[k - 1])


def init_parameters(cls: type) -> list[inspect.Parameter]:
    """The named parameters of ``cls.__init__`` and its bases' (a subclass's first, each name once).

    Methods may pass their bases' parameters on through ``**kwargs``, so the
    parameters a method takes are those of every ``__init__`` in its MRO.
    """
    params: dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if klass is object or init is None:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                params.setdefault(p.name, p)
    return list(params.values())


class MethodOptions(TypedDict, total=False):
    """The keywords every method takes from :class:`ConformalMethod` (besides ``alpha``).

    A method's ``__init__`` declares its own parameters and passes these on
    as ``**options: Unpack[MethodOptions]``, so their types and defaults live
    in one place; :func:`init_parameters` (``get_params``, ``--methods``
    checks) finds them on the base.
    """

    scale: LikertScale | None
    fit_fraction: float
    random_state: int | np.random.Generator | None


class ConformalMethod(abc.ABC):
    """Base class of every interval and set method.

    Stages (MAPIE-style): :meth:`fit` the method's model (if it has one) ->
    :meth:`conformalize` on held-out data -> :meth:`predict`. :meth:`calibrate`
    does the first two on one calibration split, fitting on a
    ``fit_fraction`` part and conformalizing on the rest, so a fitted model
    never sees the points that set its threshold, nor any test point.

    ``X`` is an ``(n, d)`` float array whose first ``scale.k`` columns are the
    judge's score-token log-probabilities log P("min")..log P("max"); further
    columns are extra features (e.g. other judges', for fusion). ``y`` are
    labels on the scale. Subclasses set the class attributes and implement
    ``_conformalize`` and ``_predict`` (and ``_fit`` when ``fits_model``).
    """

    #: Registry name (CLI ``--methods``, JSON ``methods.<name>``).
    name: ClassVar[str]
    #: ``"interval"``: continuous interval + label set; ``"set"``: label set only.
    output: ClassVar[Literal["interval", "set"]]
    #: Whether the method fits a model on part of the calibration split
    #: (a class default; parameters such as ``probabilities=`` may change it).
    fits_model: bool = False
    #: Whether the method relies on the labels being ordered (Likert only).
    ordinal: ClassVar[bool] = True
    #: Optional packages as ``(module, extra)``; imported lazily.
    requires: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: Citation shown in ``judgecp methods`` and docs/methods.md.
    reference: ClassVar[str] = ""
    #: ``(time, memory)`` of one split at n rows, as implemented (``judgecp bench scale`` prints it).
    complexity: ClassVar[tuple[str, str]] = ("not stated", "not stated")

    def __init__(
        self,
        alpha: float = 0.1,
        *,
        scale: LikertScale | None = None,
        fit_fraction: float = 0.5,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.alpha = alpha
        self.scale = scale if scale is not None else LikertScale()
        self.fit_fraction = fit_fraction
        self.random_state = random_state

    # -- parameters -----------------------------------------------------
    def get_params(self) -> dict[str, Any]:
        """Constructor arguments (scikit-learn convention), for specs and reports."""
        names = [p.name for p in init_parameters(type(self))]
        return {n: getattr(self, n) for n in names if hasattr(self, n)}

    # -- stages ---------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike) -> ConformalMethod:
        """Fit the method's model (no-op for methods without one)."""
        Xa, ya = self._check_xy(X, y)
        self._rng_ = np.random.default_rng(self.random_state)
        if self.fits_model:
            if Xa.shape[0] < 2:
                raise InputError(f"{self.name}: need at least 2 points to fit, got {Xa.shape[0]}")
            self._fit(Xa, ya)
        self.fitted_ = True
        return self

    def conformalize(self, X: ArrayLike, y: ArrayLike) -> ConformalMethod:
        """Compute the conformal threshold(s) on held-out points."""
        if not getattr(self, "fitted_", False):
            if self.fits_model:
                raise NotCalibratedError(f"{self.name}: call fit() before conformalize()")
            self._rng_ = np.random.default_rng(self.random_state)
            self.fitted_ = True
        self.alpha = check_alpha(self.alpha)
        Xa, ya = self._check_xy(X, y)
        self.n_conformalize_ = int(Xa.shape[0])
        self.insufficient_ = conformal_rank(self.n_conformalize_, self._rank_alpha()) > (
            self.n_conformalize_
        )
        self._conformalize(Xa, ya)
        self._predict_seed_ = int(self._rng_.integers(2**63 - 1))
        self.conformalized_ = True
        return self

    def calibrate(self, X: ArrayLike, y: ArrayLike) -> ConformalMethod:
        """Fit (on a ``fit_fraction`` part, if the method has a model) and conformalize."""
        Xa, ya = self._check_xy(X, y)
        if not self.fits_model:
            return self.conformalize(Xa, ya)
        if not 0.0 < self.fit_fraction < 1.0:
            raise InputError(f"fit_fraction must be in (0, 1), got {self.fit_fraction!r}")
        rng = np.random.default_rng(self.random_state)
        perm = rng.permutation(Xa.shape[0])
        n_fit = self.fit_size(Xa.shape[0])
        fit_idx, conf_idx = perm[:n_fit], perm[n_fit:]
        self.alpha = check_alpha(self.alpha)
        if conformal_rank(conf_idx.size, self._rank_alpha()) > conf_idx.size:
            # Too few points left for the level: the prediction is the full range whatever the model,
            # so none is fitted (at alpha 1e-17 a quantile model at 1 - alpha/2 = 1.0 cannot even be).
            self._rng_ = np.random.default_rng(self.random_state)
            self.fitted_ = self.conformalized_ = self.insufficient_ = self.model_skipped_ = True
            self.n_conformalize_ = int(conf_idx.size)
            return self
        self.fit(Xa[fit_idx], ya[fit_idx])
        return self.conformalize(Xa[conf_idx], ya[conf_idx])

    def fit_size(self, n: int) -> int:
        """Rows of an ``n``-row calibration split that :meth:`calibrate` fits the model on (0 without one)."""
        if not self.fits_model:
            return 0
        return min(max(round(self.fit_fraction * n), 1), n - 1) if n > 1 else n

    def predict(self, X: ArrayLike) -> Prediction:
        """Intervals and/or label sets for new points."""
        if not getattr(self, "conformalized_", False):
            raise NotCalibratedError(f"{self.name}: call calibrate() or conformalize() first")
        Xa = self._check_x(X)
        if getattr(self, "model_skipped_", False):
            full = np.ones(Xa.shape[0], bool)
            if self.output == "interval":
                return Prediction.from_interval(np.full(Xa.shape[0], -np.inf), np.full(Xa.shape[0], np.inf),
                                                self.scale, full)
            return Prediction.from_sets(np.ones((Xa.shape[0], self.scale.k), bool), self.scale, full)
        pred = self._predict(Xa, np.random.default_rng(self._predict_seed_))
        if self.insufficient_:
            full = np.ones(Xa.shape[0], bool)
            if self.output == "interval":
                return Prediction.from_interval(pred.lower, pred.upper, self.scale, full)
            return Prediction.from_sets(pred.sets, self.scale, full)
        return pred

    # -- fitted state as data (a calibrator file): judgecp.stats.saved_state ---
    threshold_attribute: ClassVar[str] = "threshold_"  # its state field: the name without the "_"

    def state_dict(self) -> dict[str, Any]:
        """The fitted state as plain JSON data (:func:`judgecp.stats.conformal.method_state_dict`)."""
        return method_state_dict(self)

    @classmethod
    def from_state(cls, state: Any, *, alpha: float, scale: LikertScale, n_calibration: int,
                   params: dict[str, Any] | None = None, where: str = "state") -> ConformalMethod:
        """The method ``state`` describes, every field checked (:func:`judgecp.stats.conformal.method_from_state`)."""
        return method_from_state(cls, state, alpha=alpha, scale=scale, n_calibration=n_calibration,
                                 params=params or {}, where=where)

    def is_saveable(self) -> bool:
        """Whether the fitted state is numbers (a method that sets ``scores_`` overrides this)."""
        return False

    def score_bounds(self) -> tuple[float, float]:
        """The range of the conformity scores (stored scores outside it are refused)."""
        return (-math.inf, math.inf)

    # Hooks of a method whose state is numbers: its own fitted numbers as JSON and back (``state``: a StateReader);
    # the random draws ``_fit`` and ``_conformalize`` make (they call these: a saved seed can be replayed).
    def _fitted_state(self) -> dict[str, Any]:
        return {}

    def _load_fitted(self, state: Any, n_fit: int, fit_draw: Any) -> None:
        return None

    def _fit_draws(self, rng: np.random.Generator, n: int) -> Any:
        return None

    def _conformalize_draws(self, rng: np.random.Generator, n: int) -> Any:
        return None

    # -- to implement ---------------------------------------------------
    def _fit(self, X: FloatArray, y: FloatArray) -> None:  # pragma: no cover - optional
        raise NotImplementedError

    @abc.abstractmethod
    def _conformalize(self, X: FloatArray, y: FloatArray) -> None:
        """Compute thresholds from held-out conformity scores."""

    @abc.abstractmethod
    def _predict(self, X: FloatArray, rng: np.random.Generator) -> Prediction:
        """Build predictions from the thresholds."""

    def _rank_alpha(self) -> float:
        """Miscoverage each threshold is computed at (alpha/2 for two-sided corrections)."""
        return float(self.alpha)

    # -- helpers --------------------------------------------------------
    def _quantile(self, scores: ArrayLike, alpha: float | None = None) -> float:
        return conformal_quantile(scores, self.alpha if alpha is None else alpha)

    def _check_x(self, X: ArrayLike) -> FloatArray:
        Xa = np.asarray(X, dtype=np.float64)
        if Xa.ndim != 2:
            raise InputError(f"{self.name}: X must be 2-D (n, d), got shape {Xa.shape}")
        if Xa.shape[1] < self.scale.k:
            raise InputError(
                f"{self.name}: X needs the {self.scale.k} score-token logprobs of scale "
                f"{self.scale} in its first columns, got {Xa.shape[1]} columns"
            )
        if not np.isfinite(Xa).all():
            raise InputError(
                f"{self.name}: X contains NaN or infinite values; floor or exclude them first"
            )
        return Xa

    def _check_xy(self, X: ArrayLike, y: ArrayLike) -> tuple[FloatArray, FloatArray]:
        Xa = self._check_x(X)
        ya = np.asarray(y, dtype=np.float64).ravel()
        if ya.shape[0] != Xa.shape[0]:
            raise InputError(f"{self.name}: X has {Xa.shape[0]} rows but y has {ya.shape[0]}")
        if not np.isfinite(ya).all():
            raise InputError(f"{self.name}: y contains NaN or infinite values")
        if ((ya < self.scale.minimum) | (ya > self.scale.maximum)).any():
            bad = ya[(ya < self.scale.minimum) | (ya > self.scale.maximum)][:5]
            raise InputError(f"{self.name}: labels off the scale {self.scale}: {bad.tolist()}")
        if self.output == "set" and not np.all(ya == np.round(ya)):
            raise InputError(f"{self.name}: set methods need integer labels, and these are continuous "
                             "(e.g. mapped by --label-scale): use an interval method (naive, cqr, lvd, r2ccp, ...)")
        return Xa, ya

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


# -- a method's fitted state as data (judgecp.stats.saved_state reads it) ------------------------------


def method_state_dict(method: ConformalMethod) -> dict[str, Any]:
    """A conformalized method's state: ``method`` (its registry name), ``random_state`` (an integer, or
    null when the randomness was not seeded), ``scores`` (the calibration conformity scores that set the
    threshold, ascending, full precision), the threshold (``quantile`` or ``threshold``), ``predict_seed``
    and the method's own fitted numbers (RAPS ``lam``, ``k_reg``; LVD its kernel)."""
    if not getattr(method, "conformalized_", False):
        raise NotCalibratedError(f"{method.name}: calibrate() before state_dict()")
    scores = getattr(method, "scores_", None)
    if not method.is_saveable() or scores is None:
        raise not_data(method.name)
    seed = method.random_state
    return {
        "method": method.name,
        "random_state": int(seed) if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None,
        "scores": encode_floats(np.sort(scores)),
        method.threshold_attribute.rstrip("_"): encode_float(getattr(method, method.threshold_attribute)),
        "predict_seed": int(method._predict_seed_),
        **method._fitted_state(),
    }


def method_from_state(cls: type[ConformalMethod], state: Any, *, alpha: float, scale: LikertScale,
                      n_calibration: int, params: dict[str, Any], where: str) -> ConformalMethod:
    """Rebuild ``cls`` (with the spec's ``params``) from :func:`method_state_dict`'s data, checking that
    the method is the stored one, the scores are ``n_calibration`` minus the fit part's rows, in range and
    ascending, the threshold is their conformal quantile (the same bits), and, for a seeded method, that
    the predict seed is the one its seed gives."""
    reader = StateReader(state, where)
    name = reader.text("method")
    if name != cls.name:
        reader.fail("method", f"{name!r} is stored, but the calibrator's method is {cls.name!r}")
    seed_value = reader.get("random_state")
    seed = None if seed_value is None else reader.integer("random_state", low=0, high=RANDOM_STATE_LIMIT)
    try:
        method = cls(check_alpha(alpha), scale=scale, random_state=seed, **params)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: the {cls.name} method cannot be rebuilt ({exc})") from exc
    if not method.is_saveable():
        raise not_data(cls.name)
    n_fit = method.fit_size(n_calibration)
    n = n_calibration - n_fit
    # A seeded method's random draws are replayed: what its fit drew, and the predict seed it then drew.
    fit_draw = replayed_seed = None
    if seed is not None:
        rng = np.random.default_rng(seed)
        fit_draw = method._fit_draws(rng, n_fit) if method.fits_model else None
        method._conformalize_draws(rng, n)
        replayed_seed = int(rng.integers(SEED_LIMIT))
    method._load_fitted(reader, n_fit, fit_draw)
    low, high = method.score_bounds()
    scores = reader.floats("scores", size=n, low=low - RANGE_SLACK, high=high + RANGE_SLACK, ascending=True)
    key = method.threshold_attribute.rstrip("_")
    threshold = reader.number(key, infinite=True)
    check_threshold(reader, key, threshold, conformal_quantile(scores, method._rank_alpha()))
    predict_seed = reader.integer("predict_seed", low=0, high=SEED_LIMIT - 1)
    if replayed_seed is not None and predict_seed != replayed_seed:
        reader.fail("predict_seed", f"{predict_seed} is not the seed random_state {seed} gives; "
                    "the file was edited or corrupted")
    reader.finish()
    vars(method).update({"scores_": scores, method.threshold_attribute: threshold, "n_conformalize_": n,
                         "insufficient_": conformal_rank(n, method._rank_alpha()) > n,
                         "_predict_seed_": predict_seed, "fitted_": True, "conformalized_": True})
    return method
