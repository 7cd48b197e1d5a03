"""What a judge's score-token logprobs say: probabilities, expected score, model features.

These are the only transformations of the judge's output that methods use,
so every method sees the judge the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.scale import LikertScale

FloatArray = NDArray[np.float64]

#: Log-probabilities below this are clipped in model features (about 2e-9):
#: differences further down the tail are numerical noise, not judge signal.
FEATURE_LOG_FLOOR = -20.0


#: Arrays whose log-softmax is computed once while :func:`log_softmax_once` holds them: id -> (array, k -> result).
_ONCE: dict[int, tuple[Any, dict[int, FloatArray]]] = {}


@contextmanager
def log_softmax_once(*arrays: FloatArray) -> Iterator[None]:
    """Within the block, :func:`judge_log_softmax` of each of these very arrays is computed once.

    A study's split hands the same calibration and test arrays to every
    method, and each method reads the judge's distribution from them; the
    result is kept (read-only) until the block ends. Only these objects are
    held, by identity, so an array built from them is computed as usual.
    """
    held = [id(a) for a in arrays if id(a) not in _ONCE]
    for a in arrays:
        _ONCE.setdefault(id(a), (a, {}))
    try:
        yield
    finally:
        for key in held:
            _ONCE.pop(key, None)


def judge_log_softmax(X: FloatArray, scale: LikertScale) -> FloatArray:
    """Log-softmax over the scale's score tokens (the first ``scale.k`` columns).

    Renormalising over the rating tokens is the judge's distribution over the
    labels, given that it emits a rating at the score position.
    """
    held = _ONCE.get(id(X))
    if held is not None and held[0] is X:
        done = held[1].get(scale.k)
        if done is None:
            done = held[1][scale.k] = _log_softmax(X, scale)
            done.flags.writeable = False
        return done
    return _log_softmax(X, scale)


def _log_softmax(X: FloatArray, scale: LikertScale) -> FloatArray:
    # Computed on the transpose: numpy reduces a short last axis row by row (a third of the speed),
    # and the column-wise sums add the same terms in the same order, so the output is identical.
    lp = np.asarray(X, dtype=np.float64)[:, : scale.k].T.copy()
    m = lp.max(axis=0)
    lp -= m + np.log(np.exp(lp - m).sum(axis=0))
    out: FloatArray = np.ascontiguousarray(lp.T)
    return out


def judge_probabilities(X: FloatArray, scale: LikertScale) -> FloatArray:
    """The judge's softmax over the scale's labels, ``(n, K)``."""
    return np.exp(judge_log_softmax(X, scale))


def expected_score(P: FloatArray, scale: LikertScale) -> FloatArray:
    """``sum_k k p_k``: the judge's expected rating."""
    return P @ scale.labels.astype(np.float64)


def score_std(P: FloatArray, scale: LikertScale) -> FloatArray:
    """Standard deviation of the judge's rating distribution."""
    labels = scale.labels.astype(np.float64)
    mean = P @ labels
    var = P @ labels**2 - mean**2
    return np.sqrt(np.clip(var, 0.0, None))


def model_features(X: FloatArray, scale: LikertScale) -> FloatArray:
    """Features for the models some methods fit on part of the calibration split.

    Clipped log-softmax of the judge's K score tokens, its expected score and
    spread, then any extra columns of ``X`` (other judges' features for fusion).
    """
    X = np.asarray(X, dtype=np.float64)
    ls = np.maximum(judge_log_softmax(X, scale), FEATURE_LOG_FLOOR)
    P = np.exp(ls)
    cols = [ls, expected_score(P, scale)[:, None], score_std(P, scale)[:, None]]
    if X.shape[1] > scale.k:
        cols.append(X[:, scale.k :])
    return np.hstack(cols)


#: Rows per call when a fitted model predicts many rows (:func:`predict_in_blocks`).
PREDICT_BLOCK = 8192


def predict_in_blocks(model: Any, F: FloatArray, block: int = PREDICT_BLOCK) -> FloatArray:
    """``model.predict(F)`` a block of rows at a time: the same numbers, faster for tree ensembles."""
    return predict_many_in_blocks([model], F, block)[0]


def predict_many_in_blocks(models: Sequence[Any], F: FloatArray, block: int = PREDICT_BLOCK) -> list[FloatArray]:
    """Each model's ``predict(F)``, bit for bit, computed a block of rows at a time.

    scikit-learn's gradient boosting predicts tree by tree, each tree passing
    over every row; at half a million rows the features no longer fit in the
    cache and every tree reads them from memory again. Blocks of 8,192 rows
    stay cached. Histogram gradient boosting (CQR's quantile models, the
    default regressor) goes further: its trees split only at its bin
    thresholds, so the rows are binned once (one byte a feature, shared by
    models with the same bins), rows whose bins repeat are predicted once
    (:func:`_distinct_rows`), and the trees walk the bins, as scikit-learn's
    own training does; each model's output is checked against ``predict`` on
    the first block and computed by ``predict`` if it differs. About 1.5x
    faster on a million distinct rows, far more where bins repeat; identical
    output (``tests/test_fast_paths.py``).
    """
    binned = [_BinnedTrees.of(m) for m in models]
    bins: dict[int, tuple[Any, Any, Any]] = {}  # the first model with these bins -> binned rows, distinct rows, inverse
    out: list[FloatArray] = []
    for i, (model, trees) in enumerate(zip(models, binned, strict=True)):
        values = None
        if trees is not None:
            owner = next(j for j, other in enumerate(binned[: i + 1]) if other is not None and trees.same_bins(other))
            if owner not in bins:
                B = trees.bin(F)
                bins[owner] = (B, *_distinct_rows(B, block))
            B, distinct, inverse = bins[owner]
            if np.array_equal(trees.predict(B[:block]), np.asarray(model.predict(F[:block]), dtype=np.float64)):
                rows = B if distinct is None else B[distinct]
                values = np.concatenate(
                    [trees.predict(rows[s : s + block]) for s in range(0, rows.shape[0], block)] or [np.empty(0)]
                )
                values = values if inverse is None else values[inverse]
            else:
                binned[i] = None  # not what predict gives (another scikit-learn): use predict
        if values is None:
            values = np.empty(F.shape[0])
            for start in range(0, F.shape[0], block):
                values[start : start + block] = np.asarray(model.predict(F[start : start + block]), dtype=np.float64)
        out.append(values)
    return out


def _distinct_rows(B: Any, block: int) -> tuple[Any, Any]:
    """Indices of one row per distinct binned row and each row's index among them, or ``(None, None)``.

    A judge whose outputs repeat (rounded API logprobs, a saturated token,
    a simulator with one latent) has far fewer distinct binned rows than
    rows; each is predicted once. When the first block's rows are mostly
    distinct, sorting would not pay and every row is predicted.
    """
    n, k = B.shape
    if n <= block:
        return None, None
    keys: NDArray[Any]
    if k <= 8:
        packed = np.zeros((n, 8), dtype=np.uint8)
        packed[:, :k] = B
        keys = packed.view(np.uint64).ravel()
    else:
        keys = np.ascontiguousarray(B).view(np.dtype((np.void, k))).ravel()
    head = np.unique(keys[:block])
    if head.size > block // 2:
        return None, None
    if keys.dtype != np.uint64:
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        return first, inverse.ravel()
    # 64-bit keys: each row's place among the first block's distinct keys by binary search (a few
    # thousand keys), not a sort of every row; keys first seen later join the table and the search
    # is repeated. ``first`` holds some row of each key, the one the last write left there.
    where = np.searchsorted(head, keys)
    np.minimum(where, head.size - 1, out=where)
    unseen = head[where] != keys
    if unseen.any():
        head = np.union1d(head, keys[unseen])
        where = np.searchsorted(head, keys)
    first = np.empty(head.size, dtype=np.intp)
    first[where] = np.arange(n)
    return first, where


class _BinnedTrees:
    """A fitted single-output ``HistGradientBoostingRegressor`` predicted from binned rows.

    ``predict`` is the baseline plus each tree's leaf value, added tree by
    tree in scikit-learn's order; a tree compares a row's bin with its split's
    bin, which is the same as comparing the value with the bin's threshold.
    """

    def __init__(self, model: Any) -> None:
        self.mapper = model._bin_mapper
        self.missing = self.mapper.missing_values_bin_idx_
        self.trees = [predictors[0] for predictors in model._predictors]
        self.baseline = float(np.asarray(model._baseline_prediction).ravel()[0])
        from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

        self.n_threads = _openmp_effective_n_threads()  # as predict uses (OMP_NUM_THREADS, cgroup quotas)

    @classmethod
    def of(cls, model: Any) -> _BinnedTrees | None:
        """The binned form of ``model``, or ``None`` for any other model (predicted by ``predict``)."""
        from sklearn.ensemble import HistGradientBoostingRegressor

        try:
            if (type(model) is not HistGradientBoostingRegressor or model._preprocessor is not None
                    or model.n_trees_per_iteration_ != 1 or type(model._loss.link).__name__ != "IdentityLink"):
                return None  # not fitted here, categorical features, several outputs or a link to invert
            return cls(model)
        except (AttributeError, ImportError, IndexError, TypeError):
            return None

    def same_bins(self, other: _BinnedTrees) -> bool:
        a, b = self.mapper.bin_thresholds_, other.mapper.bin_thresholds_
        return self.mapper is other.mapper or (
            len(a) == len(b)
            and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
            and self.missing == other.missing
        )

    def bin(self, rows: FloatArray) -> Any:
        return self.mapper.transform(rows)

    def predict(self, binned: Any) -> FloatArray:
        raw = np.zeros(binned.shape[0]) + self.baseline
        for tree in self.trees:
            raw += tree.predict_binned(binned, self.missing, self.n_threads)
        return raw


class RecalibratedJudge:
    """P(human label | judge logprobs) by multinomial logistic regression.

    Used by methods with ``probabilities="recalibrated"`` and by CHR as its
    conditional-histogram estimator. It is always fitted on the fit part of
    the calibration split, never on the points that set a threshold.
    """

    def __init__(self, scale: LikertScale, C: float = 1.0) -> None:
        self.scale = scale
        self.C = C

    def fit(self, X: FloatArray, y: FloatArray) -> RecalibratedJudge:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        idx = self.scale.index(np.round(y))
        self.classes_ = np.unique(idx)
        if self.classes_.size == 1:
            self.model_: Any = None
        else:
            self.model_ = make_pipeline(
                StandardScaler(), LogisticRegression(C=self.C, max_iter=2000)
            ).fit(model_features(X, self.scale), idx)
        return self

    def predict_proba(self, X: FloatArray) -> FloatArray:
        out = np.zeros((X.shape[0], self.scale.k))
        if self.model_ is None:
            out[:, self.classes_[0]] = 1.0
        else:
            out[:, self.classes_] = self.model_.predict_proba(model_features(X, self.scale))
        return out


def label_probabilities(
    source: str, X: FloatArray, scale: LikertScale, model: RecalibratedJudge | None
) -> FloatArray:
    """Label distribution from ``source``: ``"judge"`` softmax or the fitted ``"recalibrated"`` model."""
    if source == "judge":
        return judge_probabilities(X, scale)
    if model is None:  # pragma: no cover - guarded by the methods
        raise RuntimeError("recalibrated probabilities need a fitted model")
    return model.predict_proba(X)
