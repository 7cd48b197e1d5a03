"""The public estimators: one per kind of judge, in the style of MAPIE v1 and scikit-learn.

Each has named stages that refuse to run out of order
(:class:`judgecp.base.errors.NotCalibratedError`), takes a public confidence or
risk level, stores learned state in attributes ending in ``_``, and returns
typed results:

* :class:`ScoreIntervals` (Likert): conformal intervals and label sets,
  ``fit`` -> ``conformalize`` -> ``predict`` (``calibrate`` does the first
  two on one calibration set, as the evaluation protocol does), Mondrian
  calibration by a ``groups`` argument; results are
  :class:`judgecp.stats.conformal.Prediction`.
* :class:`ChoiceSets` (multiple choice): conformal option sets;
  :class:`ChoicePrediction`.
* :class:`SelectiveJudge` (pairwise): SCOPE (or another risk controller)
  chooses when to accept a verdict so that the error among accepted
  verdicts stays at ``risk_level``; :class:`SelectivePrediction`.
* :class:`PromptReliability` (PARC): LAC thresholds fitted on labeled
  items, PARC's scores on any items.

Inputs are the validated data of :mod:`judgecp.data` (``ScoreIntervals``
also takes arrays). :func:`judgecp.evaluate` runs the repeated-split study.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecp.base.errors import InputError, NotCalibratedError
from judgecp.base.scale import LikertScale
from judgecp.data import PAD_LOGPROB, ChoiceData, PairData, ScoreData
from judgecp.kinds.choice.parc_study import (
    add_test_rows,
    cell_entry,
    certainties,
    fit_lac,
    parc_report,
    row_scores,
)
from judgecp.kinds.pairwise.study import make_controller
from judgecp.kinds.registry import (
    build_method,
    check_method_spec,
    controller_classes,
    saved_method_class,
)
from judgecp.stats.conformal import ConformalMethod, Prediction, check_alpha
from judgecp.stats.methods.mondrian import Mondrian
from judgecp.stats.saved_state import (
    RANGE_SLACK,
    StateReader,
    check_threshold,
    encode_float,
    encode_floats,
)
from judgecp.stats.signals import RANGES, signals, stored_signal

BoolArray = NDArray[np.bool_]


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
            est.method_ = method_class.from_state(reader.get("method"), alpha=alpha, scale=scale,
                                                  n_calibration=n_calibration, params=params, where=reader.path("method"))
            est.mondrian_ = None
        reader.finish()
        return est

    def predict(self, X: ScoreData | ArrayLike, *, groups: ArrayLike | str | None = None) -> Prediction:
        """Intervals (interval methods) and label sets for new rows, labeled or not."""
        if not hasattr(self, "method_") or (self.mondrian_ is None and not getattr(self.method_, "conformalized_", False)):
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


@dataclass(frozen=True)
class ChoicePrediction:
    """Conformal option sets of multiple-choice items."""

    ids: NDArray[np.str_]
    sets: BoolArray  # (n, K) over each item's options in display order (padding False)
    options: list[list[str]]

    def option_sets(self) -> list[list[str]]:
        """Each item's set as option letters."""
        return [[o for o, inside in zip(opts, row, strict=False) if inside] for opts, row in zip(self.options, self.sets, strict=True)]

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


@dataclass(frozen=True)
class SelectivePrediction:
    """Accept/abstain decisions on pairwise verdicts."""

    pair_ids: NDArray[np.str_]
    accept: BoolArray
    prediction: NDArray[np.int64]  # 1: the original A is preferred
    uncertainty: NDArray[np.float64]

    @property
    def coverage(self) -> float:
        """Share of verdicts accepted."""
        return float(self.accept.mean()) if self.accept.size else 0.0


class SelectiveJudge:
    """Accept a pairwise verdict only when its uncertainty is low enough, with the error among accepted ones controlled.

    ``controller="scope"`` (SCOPE, eq. 4-6) keeps the expected error rate
    among accepted verdicts at most ``risk_level`` under exchangeability;
    ``signal="bpe"`` is the bidirectional preference entropy (both orders).
    """

    def __init__(self, controller: str = "scope", *, risk_level: float = 0.1, signal: str = "bpe", delta: float = 0.1) -> None:
        self.controller = controller
        self.risk_level = risk_level
        self.signal = signal
        self.delta = delta

    def _signal(self, data: PairData) -> Any:

        sigs = signals(data)
        if self.signal not in sigs:
            raise InputError(f"signal {self.signal!r} is not available; the records support {', '.join(sigs)}")
        return sigs[self.signal]

    def calibrate(self, data: PairData) -> SelectiveJudge:
        check_alpha(self.risk_level)
        if not data.labeled.all():
            raise InputError("SelectiveJudge.calibrate needs labeled pairs")
        sig = self._signal(data)
        order = np.argsort(sig.uncertainty, kind="stable")
        self.uncertainty_ = sig.uncertainty[order]
        self.errors_ = (sig.prediction != data.labels)[order]
        self.threshold_ = self._threshold(self.uncertainty_, self.errors_, sig)
        self.n_calibration_ = data.n
        return self

    def _threshold(self, u_sorted: NDArray[np.float64], errors: BoolArray, signal: Any) -> float:

        ctrl = make_controller(self.controller, self.delta)
        return float(ctrl.thresholds(u_sorted[None, :], errors[None, :], self.risk_level, signal)[0])

    def state_dict(self) -> dict[str, Any]:
        """``controller``, ``signal``, ``delta``, ``threshold`` and what sets it: the calibration pairs'
        ``uncertainty`` (ascending, full precision) and ``errors`` (1: the verdict was wrong), in that order."""

        if not hasattr(self, "threshold_"):
            raise NotCalibratedError("SelectiveJudge: calibrate() before state_dict()")
        return {"controller": self.controller, "signal": self.signal, "delta": self.delta,
                "threshold": encode_float(self.threshold_), "uncertainty": encode_floats(self.uncertainty_),
                "errors": [int(e) for e in self.errors_]}

    @classmethod
    def from_state(cls, state: Any, *, controller: str, risk_level: float, n_calibration: int,
                   where: str = "state") -> SelectiveJudge:
        """The calibrated judge :meth:`state_dict` describes; the threshold must be the one the controller
        gives on the stored uncertainties and errors (so ``threshold: inf`` on a SCOPE file is refused)."""

        reader = StateReader(state, where)
        if reader.text("controller", choices=controller_classes()) != controller:
            reader.fail("controller", f"{reader.get('controller')!r} is not the calibrator's method {controller!r}")
        signal = reader.text("signal", choices=RANGES)
        low, high, _ = RANGES[signal]
        est = cls(controller, risk_level=check_alpha(risk_level), signal=signal,
                  delta=reader.number("delta", low=0.0, high=1.0, open_interval=True))
        u = reader.floats("uncertainty", size=n_calibration, low=low - RANGE_SLACK, high=high + RANGE_SLACK,
                          ascending=True)
        errors = reader.floats("errors", size=n_calibration, low=0.0, high=1.0)
        if not np.isin(errors, (0.0, 1.0)).all():
            reader.fail("errors", "holds a value that is neither 0 nor 1")
        threshold, recomputed = reader.number("threshold", infinite=True), est._threshold(u, errors.astype(bool),
                                                                                            stored_signal(signal, u))
        check_threshold(reader, "threshold", threshold, recomputed, tolerance=1e-12)
        reader.finish()
        # The recomputed threshold (the stored one within rounding): an edit below the tolerance changes nothing.
        est.uncertainty_, est.errors_, est.threshold_, est.n_calibration_ = u, errors.astype(bool), recomputed, n_calibration
        return est

    def predict(self, data: PairData) -> SelectivePrediction:
        if not hasattr(self, "threshold_"):
            raise NotCalibratedError("SelectiveJudge: call calibrate() first")
        sig = self._signal(data)
        return SelectivePrediction(data.pair_ids, sig.uncertainty <= self.threshold_, sig.prediction, sig.uncertainty)


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
        for key in sorted({(m, d, v) for m, d, v in zip(rs.model[rs.usable], rs.dataset[rs.usable], rs.variation[rs.usable], strict=True)}):
            rows = np.flatnonzero(rs.usable & (rs.model == key[0]) & (rs.dataset == key[1]) & (rs.variation == key[2]))
            self.thresholds_[key] = fit_lac(data, rows, _alpha(self.confidence_level), None)
        return self

    def score(self, data: ChoiceData) -> dict[str, Any]:

        if not hasattr(self, "thresholds_"):
            raise NotCalibratedError("PromptReliability: call fit() first")
        rs = row_scores(data)
        cells: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for key in sorted({(m, d, v) for m, d, v in zip(rs.model[rs.usable], rs.dataset[rs.usable], rs.variation[rs.usable], strict=True)}):
            rows = np.flatnonzero(rs.usable & (rs.model == key[0]) & (rs.dataset == key[1]) & (rs.variation == key[2]))
            ref = (key[0], key[1], "O") if self.reference == "original" else key
            lac = self.thresholds_.get(ref)
            add_test_rows(cells[key], rs, rows, certainties(data, lac, rows) if lac is not None else None)
        table = {f"{m}|{d}|{v}": cell_entry(m, d, v, c) for (m, d, v), c in sorted(cells.items())}
        info = {"alpha": _alpha(self.confidence_level), "reference": self.reference, "fitted": True}
        return parc_report(data, table, rs.excluded, info, int(rs.usable.sum()))
