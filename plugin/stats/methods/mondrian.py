"""Mondrian (group-conditional) calibration of any method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.base.scale import LikertScale
from judgecp.stats.conformal import ConformalMethod, Prediction
from judgecp.stats.saved_state import StateReader


def too_few_to_fit(method: ConformalMethod, n: int) -> bool:
    """Whether a group of ``n`` rows is too small to split into fit and conformalize parts."""
    return method.fits_model and n < 4


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
            if too_few_to_fit(method, rows.size):
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

    # -- fitted state as data (a calibrator file) ------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``groups`` (each calibrated group's method state), ``n_calibration`` (rows per group, every group
        seen in calibration) and ``insufficient_groups`` (those predicting the full range)."""
        return {"groups": {g: m.state_dict() for g, m in self.methods_.items()},
                "n_calibration": dict(self.n_calibration_), "insufficient_groups": list(self.insufficient_groups_)}

    @classmethod
    def from_state(cls, state: Any, *, method_class: type[ConformalMethod], alpha: float, scale: LikertScale,
                   params: dict[str, Any], n_calibration: int, where: str) -> Mondrian:
        """Rebuild from :meth:`state_dict`'s data: the groups' sizes add up to ``n_calibration``, each
        calibrated group's method is checked (:meth:`ConformalMethod.from_state`) and the insufficient
        groups are the ones the sizes and thresholds give."""

        reader = StateReader(state, where)
        sizes_of = reader.child("n_calibration")
        sizes = {g: sizes_of.integer(g, low=1, high=n_calibration) for g in list(sizes_of.obj)}
        if not sizes or sum(sizes.values()) != n_calibration:
            reader.fail("n_calibration", f"the groups' sizes add up to {sum(sizes.values())}, "
                        f"not to the calibrator's n_calibration {n_calibration}")

        def make(i: int) -> ConformalMethod:
            return method_class(alpha, scale=scale, **params)

        groups = reader.child("groups")
        methods: dict[str, ConformalMethod] = {}
        insufficient: list[str] = []
        for group, n in sizes.items():
            if too_few_to_fit(make(0), n):
                insufficient.append(group)
                continue
            method = method_class.from_state(groups.get(group), alpha=alpha, scale=scale, n_calibration=n,
                                             params=params, where=groups.path(group))
            methods[group] = method
            if method.insufficient_:
                insufficient.append(group)
        groups.finish()
        stored = reader.texts("insufficient_groups")
        if sorted(stored) != sorted(insufficient):
            reader.fail("insufficient_groups", f"{sorted(stored)} are not the groups too small for the level "
                        f"({sorted(insufficient)})")
        reader.finish()
        mondrian = cls(make)
        mondrian.methods_, mondrian.n_calibration_, mondrian.insufficient_groups_ = methods, sizes, stored
        mondrian.output_ = make(0).output
        return mondrian
