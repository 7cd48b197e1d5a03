"""Mondrian (group-conditional) calibration of any method."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.conformal import ConformalMethod, Prediction


class Mondrian:
    """Calibrate one copy of a method per value of a group field.

    Gives group-conditional coverage ``P(y in C(x) | G = g) >= 1 - alpha`` for
    every group seen in calibration. A group with too few calibration points
    for the level predicts the full range, flagged (as does a group never
    seen in calibration); :attr:`insufficient_groups_` names them.

    ``make_method(group_index)`` returns a fresh, unfitted method; give each
    group its own random state through the index.
    """

    def __init__(self, make_method: Callable[[int], ConformalMethod]) -> None:
        self.make_method = make_method

    def calibrate(self, X: ArrayLike, y: ArrayLike, groups: ArrayLike) -> Mondrian:
        Xa = np.asarray(X, dtype=np.float64)
        ya = np.asarray(y, dtype=np.float64)
        g = np.asarray(groups).astype(str)
        self.methods_: dict[str, ConformalMethod] = {}
        self.n_calibration_: dict[str, int] = {}
        self.insufficient_groups_: list[str] = []
        for i, value in enumerate(np.unique(g)):
            rows = np.flatnonzero(g == value)
            method = self.make_method(i)
            self.n_calibration_[str(value)] = int(rows.size)
            if method.fits_model and rows.size < 4:
                # Too few to split into fit and conformalize parts.
                self.insufficient_groups_.append(str(value))
                continue
            method.calibrate(Xa[rows], ya[rows])
            if method.insufficient_:
                self.insufficient_groups_.append(str(value))
            self.methods_[str(value)] = method
        self.output_ = self.make_method(0).output
        return self

    def predict(self, X: ArrayLike, groups: ArrayLike) -> Prediction:
        Xa = np.asarray(X, dtype=np.float64)
        g = np.asarray(groups).astype(str)
        parts: list[Prediction] = []
        order: list[NDArray[np.int64]] = []
        scale = self.make_method(0).scale
        for value in np.unique(g):
            rows = np.flatnonzero(g == value)
            method = self.methods_.get(str(value))
            if method is None:
                full = np.ones(rows.size, bool)
                nan = np.full(rows.size, -np.inf)
                if self.output_ == "interval":
                    parts.append(Prediction.from_interval(nan, -nan, scale, full))
                else:
                    parts.append(Prediction.from_sets(np.ones((rows.size, scale.k), bool), scale, full))
            else:
                parts.append(method.predict(Xa[rows]))
            order.append(rows)
        if not parts:
            return Prediction.from_sets(np.zeros((0, scale.k), bool), scale)
        return Prediction.concatenate(parts, np.concatenate(order))
