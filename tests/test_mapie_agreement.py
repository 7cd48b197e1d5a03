"""Split CP, LAC and APS agree with MAPIE 1.x on the same data and split.

MAPIE is a test-only dependency. Both libraries get the judge's own
distribution through a pre-fitted estimator, so any difference is in the
conformal step itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from judgecp.base.scale import LikertScale
from judgecp.stats.conformal import conformal_quantile
from judgecp.stats.features import expected_score, judge_probabilities
from judgecp.stats.methods import APS, LAC, NaiveSplit
from judgecp.stats.methods.sets import aps_scores, sets_at, true_label_scores
from tests.helpers import judge_draw

mapie = pytest.importorskip("mapie", minversion="1.0")
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin  # noqa: E402

SCALE = LikertScale()


class ExpectedScore(RegressorMixin, BaseEstimator):
    """Pre-fitted regressor: the judge's expected score."""

    fitted_ = True

    def fit(self, X, y):
        return self

    def predict(self, X):
        return expected_score(judge_probabilities(np.asarray(X), SCALE), SCALE)

    def __sklearn_is_fitted__(self) -> bool:
        return True


class JudgeSoftmax(ClassifierMixin, BaseEstimator):
    """Pre-fitted classifier: the judge's softmax over the labels."""

    classes_ = SCALE.labels

    def fit(self, X, y):
        return self

    def predict_proba(self, X):
        return judge_probabilities(np.asarray(X), SCALE)

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def __sklearn_is_fitted__(self) -> bool:
        return True


@pytest.fixture(params=[0, 1, 2])
def split(request: pytest.FixtureRequest) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(request.param)
    Xc, yc = judge_draw(700, rng)
    Xt, yt = judge_draw(900, rng)
    return Xc, yc.astype(int), Xt, yt.astype(int)


@pytest.mark.parametrize("alpha", [0.1, 0.25])
def test_naive_split_matches_mapie(split: tuple[np.ndarray, ...], alpha: float) -> None:
    from mapie.regression import SplitConformalRegressor

    Xc, yc, Xt, _ = split
    ours = NaiveSplit(alpha).conformalize(Xc, yc)
    ref = SplitConformalRegressor(ExpectedScore(), confidence_level=1 - alpha, conformity_score="absolute", prefit=True)
    ref.conformalize(Xc, yc)
    _, bounds = ref.predict_interval(Xt)
    pred = ours.predict(Xt)
    np.testing.assert_allclose(pred.lower, np.clip(bounds[:, 0, 0], 1, 5), atol=1e-12)
    np.testing.assert_allclose(pred.upper, np.clip(bounds[:, 1, 0], 1, 5), atol=1e-12)


@pytest.mark.parametrize("alpha", [0.1, 0.25])
def test_lac_matches_mapie(split: tuple[np.ndarray, ...], alpha: float) -> None:
    from mapie.classification import SplitConformalClassifier

    Xc, yc, Xt, _ = split
    ours = LAC(alpha).conformalize(Xc, yc).predict(Xt)
    ref = SplitConformalClassifier(JudgeSoftmax(), confidence_level=1 - alpha, conformity_score="lac", prefit=True)
    ref.conformalize(Xc, yc)
    _, sets = ref.predict_set(Xt)
    np.testing.assert_array_equal(ours.sets, sets[:, :, 0])


@pytest.mark.parametrize("alpha", [0.1, 0.25])
def test_aps_matches_mapie(split: tuple[np.ndarray, ...], alpha: float) -> None:
    """Randomised APS with MAPIE's uniforms: same scores, threshold and sets.

    MAPIE draws its calibration uniforms with ``RandomState(seed).uniform(n_cal)``
    and its prediction uniforms with ``RandomState(seed).uniform((n_test, 1))``;
    we feed the same draws to judgecp's score functions.
    """
    from mapie.classification import SplitConformalClassifier

    Xc, yc, Xt, _ = split
    seed = 123
    ref = SplitConformalClassifier(
        JudgeSoftmax(), confidence_level=1 - alpha, conformity_score="aps", prefit=True, random_state=seed
    )
    ref.conformalize(Xc, yc)
    _, sets = ref.predict_set(Xt, conformity_score_params={"include_last_label": "randomized"})

    u_cal = np.random.RandomState(seed).uniform(size=yc.size)
    u_test = np.random.RandomState(seed).uniform(size=(yt_size := Xt.shape[0], 1))[:, 0]
    Pc, Pt = judge_probabilities(Xc, SCALE), judge_probabilities(Xt, SCALE)
    threshold = conformal_quantile(true_label_scores(aps_scores(Pc, u_cal), SCALE.index(yc)), alpha)
    ours = sets_at(aps_scores(Pt, u_test), threshold)
    assert ours.shape == (yt_size, SCALE.k)
    np.testing.assert_array_equal(ours, sets[:, :, 0])


@pytest.mark.parametrize("alpha", [0.1, 0.25])
def test_aps_class_with_mapies_uniforms_gives_mapies_sets(split: tuple[np.ndarray, ...], alpha: float) -> None:
    """The APS class itself (not its score functions), handed MAPIE's uniforms where it draws its own, predicts
    MAPIE's randomised sets: the expectation comes from MAPIE, not from the class's threshold or seed."""
    from mapie.classification import SplitConformalClassifier

    Xc, yc, Xt, _ = split
    seed = 7
    ref = SplitConformalClassifier(
        JudgeSoftmax(), confidence_level=1 - alpha, conformity_score="aps", prefit=True, random_state=seed
    )
    ref.conformalize(Xc, yc)
    _, sets = ref.predict_set(Xt, conformity_score_params={"include_last_label": "randomized"})
    draws = [np.random.RandomState(seed).uniform(size=yc.size),
             np.random.RandomState(seed).uniform(size=(Xt.shape[0], 1))[:, 0]]
    method = APS(alpha, random_state=0)
    method._uniforms = lambda n, rng: draws.pop(0)  # type: ignore[method-assign]
    ours = method.conformalize(Xc, yc).predict(Xt).sets
    assert not draws  # both draws were taken: one to conformalize, one to predict
    np.testing.assert_array_equal(ours, sets[:, :, 0])
