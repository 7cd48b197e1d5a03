"""The Likert estimator: :class:`ScoreIntervals`, conformal intervals and label sets in the style of MAPIE v1.

Named stages that refuse to run out of order (:class:`judgecp.base.errors.NotCalibratedError`):
``fit`` -> ``conformalize`` -> ``predict`` (``calibrate`` does the first two on one calibration set, as
the evaluation protocol does), Mondrian calibration by a ``groups`` argument; results are
:class:`judgecp.stats.conformal.Prediction`. Takes the validated data of :mod:`judgecp.data` or arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.base.errors import InputError, NotCalibratedError
from judgecp.base.scale import LikertScale
from judgecp.data import ScoreData
from judgecp.kinds.registry import build_method, check_method_spec, saved_method_class
from judgecp.stats.conformal import ConformalMethod, Prediction, check_alpha
from judgecp.stats.methods.mondrian import Mondrian
from judgecp.stats.saved_state import StateReader


def _alpha(confidence_level: float) -> float:
    return check_alpha(1.0 - float(confidence_level))


class ScoreIntervals:
    """Conformal intervals and label sets for a Likert judge.

    Parameters
    ----------
    method : str
        A registered method spec, e.g. ``"naive"``, ``"lac(probabilities=recalibrated)"``.
    confidence_level : float
        Target coverage ``1 - alpha`` (default 0.9).
    scale : LikertScale, optional
        The rating scale when arrays are given (data carry their own).
    random_state : int, optional

    Examples
    --------
    >>> from judgecp import ScoreIntervals, simulate_likert_judge
    >>> data = simulate_likert_judge(n=400, seed=1)
    >>> cal, test = data.take(np.arange(200)), data.take(np.arange(200, 400))
    >>> pred = ScoreIntervals("naive", confidence_level=0.9, random_state=0).calibrate(cal).predict(test)
    >>> 0.8 < pred.covers(test.labels).mean() <= 1.0
    True
    """

    def __init__(
        self, method: str = "naive", *, confidence_level: float = 0.9, scale: LikertScale | None = None,
        random_state: int | None = None,
    ) -> None:
        self.method = method
        self.confidence_level = confidence_level
        self.scale = scale
        self.random_state = random_state

    def _xy(self, X: ScoreData | ArrayLike, y: ArrayLike | None) -> tuple[Any, Any, LikertScale]:
        """Features, labels and scale of labeled rows (data, or arrays with ``y``)."""
        if isinstance(X, ScoreData):
            if y is None and not X.labeled.all():
                raise InputError(f"{int((~X.labeled).sum())} row(s) are unlabeled; fit and calibrate on labeled rows")
            return X.X, X.labels if y is None else y, X.scale
        if y is None:
            raise InputError("labels y are needed with arrays")
        return np.asarray(X, dtype=np.float64), y, self.scale or LikertScale()

    def _new_method(self, scale: LikertScale, random_state: int | None) -> ConformalMethod:
        spec = check_method_spec(self.method, kind="likert")
        return build_method(spec, alpha=_alpha(self.confidence_level), scale=scale, random_state=random_state)

    def fit(self, X: ScoreData | ArrayLike, y: ArrayLike | None = None) -> ScoreIntervals:
        """Fit the method's model on labeled rows (a no-op for methods without one)."""
        Xa, ya, scale = self._xy(X, y)
        self.method_ = self._new_method(scale, self.random_state).fit(Xa, ya)
        self.mondrian_: Mondrian | None = None
        return self

    def conformalize(self, X: ScoreData | ArrayLike, y: ArrayLike | None = None) -> ScoreIntervals:
        """Set the conformal threshold(s) on held-out labeled rows (after :meth:`fit`)."""
        if not hasattr(self, "method_"):
            raise NotCalibratedError("ScoreIntervals: call fit() before conformalize(), or use calibrate()")
        Xa, ya, _ = self._xy(X, y)
        self.method_.conformalize(Xa, ya)
        return self

    def calibrate(
        self, X: ScoreData | ArrayLike, y: ArrayLike | None = None, *, groups: ArrayLike | str | None = None
    ) -> ScoreIntervals:
        """Fit on a part of the labeled rows and conformalize on the rest; per group with ``groups``.

        ``groups`` (an array, or a field name of the data) gives
        group-conditional (Mondrian) coverage; :meth:`predict` then needs the
        groups of its rows too.
        """
        Xa, ya, scale = self._xy(X, y)
        if groups is None:
            self.method_ = self._new_method(scale, self.random_state).calibrate(Xa, ya)
            self.mondrian_ = None
            return self
        seed = 0 if self.random_state is None else int(self.random_state)

        def make(i: int) -> ConformalMethod:
            return self._new_method(scale, int(np.random.SeedSequence([seed, i]).generate_state(1)[0]))

        self.mondrian_ = Mondrian(make).calibrate(Xa, ya, _groups(X, groups))
        self.method_ = make(0)
        return self

    def state_dict(self) -> dict[str, Any]:
        """The fitted state as JSON data: ``{"method": ...}`` (:meth:`ConformalMethod.state_dict`), or
        ``{"mondrian": ...}`` (:meth:`Mondrian.state_dict`) when calibrated per group."""
        if not hasattr(self, "method_"):
            raise NotCalibratedError("ScoreIntervals: calibrate() before state_dict()")
        if self.mondrian_ is not None:
            return {"mondrian": self.mondrian_.state_dict()}
        return {"method": self.method_.state_dict()}

    @classmethod
    def from_state(cls, state: Any, *, method: str, confidence_level: float, scale: LikertScale,
                   n_calibration: int, grouped: bool, where: str = "state") -> ScoreIntervals:
        """The calibrated estimator :meth:`state_dict` describes (``method``: the spec), every field checked."""

        reader = StateReader(state, where)
        est = cls(method, confidence_level=confidence_level, scale=scale)
        method_class, params = saved_method_class(method)
        alpha = _alpha(confidence_level)
        if grouped:
            est.mondrian_ = Mondrian.from_state(reader.get("mondrian"), method_class=method_class, alpha=alpha,
                                                scale=scale, params=params, n_calibration=n_calibration,
                                                where=reader.path("mondrian"))
            est.method_ = est._new_method(scale, None)
        else:
            est.method_ = method_class.from_state(
                reader.get("method"),
                alpha=alpha,
                scale=scale,
                n_calibration=n_calibration,
                params=params,
                where=reader.path("method"),
            )
            est.mondrian_ = None
        reader.finish()
        return est

    def predict(self, X: ScoreData | ArrayLike, *, groups: ArrayLike | str | None = None) -> Prediction:
        """Intervals (interval methods) and label sets for new rows, labeled or not."""
        if not hasattr(self, "method_") or (
            self.mondrian_ is None and not getattr(self.method_, "conformalized_", False)
        ):
            raise NotCalibratedError("ScoreIntervals: call calibrate() (or fit() and conformalize()) first")
        Xa = X.X if isinstance(X, ScoreData) else np.asarray(X, dtype=np.float64)
        if self.mondrian_ is not None:
            if groups is None:
                raise InputError("ScoreIntervals was calibrated per group: predict() needs groups=")
            return self.mondrian_.predict(Xa, _groups(X, groups))
        return self.method_.predict(Xa)


def _groups(X: Any, groups: ArrayLike | str) -> NDArray[Any]:
    if isinstance(groups, str):
        if not isinstance(X, ScoreData):
            raise InputError("groups given by field name need ScoreData, not arrays")
        return X.field(groups, "groups field")
    return np.asarray(groups).astype(str)
