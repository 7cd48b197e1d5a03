"""ECE, MCE, AUPRC, NLL and the error-coverage curve."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from judgecp.base.errors import InputError
from judgecp.stats.ensemble import metrics


def binary(p_first: np.ndarray) -> np.ndarray:
    return np.column_stack([p_first, 1 - p_first])


def test_ece_and_mce_by_hand():
    proba = binary(np.array([0.6, 0.4, 0.9, 0.1]))  # confidences .6, .6, .9, .9
    labels = np.array([0, 0, 0, 1])  # correct: yes, no, yes, yes
    # bins: {.6, .6} acc .5 conf .6; {.9, .9} acc 1 conf .9
    assert metrics.expected_calibration_error(proba, labels) == pytest.approx(0.5 * 0.1 + 0.5 * 0.1)
    assert metrics.maximum_calibration_error(proba, labels) == pytest.approx(0.1)
    assert metrics.negative_log_likelihood(proba, labels) == pytest.approx(
        -np.mean(np.log([0.6, 0.4, 0.9, 0.9]))
    )


def test_ece_is_small_for_a_calibrated_judge_and_large_for_an_overconfident_one():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.5, 1.0, size=20000)
    calibrated = rng.random(conf.size) < conf
    proba = binary(conf)
    # labels: class 0 when the answer is right
    assert metrics.expected_calibration_error(proba, np.where(calibrated, 0, 1)) < 0.02
    overconfident = rng.random(conf.size) < conf - 0.15
    assert metrics.expected_calibration_error(proba, np.where(overconfident, 0, 1)) == pytest.approx(0.15, abs=0.02)


def test_auprc_is_average_precision_of_correctness():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=200)
    labels = (rng.random(200) < 0.5).astype(int)
    proba = binary(p)
    conf, correct = proba.max(axis=1), proba.argmax(axis=1) == labels
    assert metrics.auprc(proba, labels) == pytest.approx(average_precision_score(correct, conf))
    assert np.isnan(metrics.auprc(proba, proba.argmax(axis=1)))  # all correct: undefined


def test_error_coverage_curve_by_hand():
    proba = binary(np.array([0.9, 0.8, 0.3, 0.55]))  # confidences .9, .8, .7, .55
    labels = np.array([0, 1, 1, 1])  # correct: yes, no, yes, no
    curve = metrics.error_coverage_curve(proba, labels)
    np.testing.assert_allclose(curve.coverage, [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(curve.error, [0, 1 / 2, 1 / 3, 2 / 4])
    assert curve.area == pytest.approx(np.mean([0, 1 / 2, 1 / 3, 2 / 4]))
    assert curve.error_at(0.5) == pytest.approx(0.5)
    summary = metrics.calibration_summary(proba, labels)
    assert set(summary) == {"ece", "mce", "auprc", "nll", "accuracy", "aurc"}
    assert summary["accuracy"] == 0.5


def test_bad_labels_are_named():
    with pytest.raises(InputError, match="class indices"):
        metrics.expected_calibration_error(binary(np.array([0.5])), np.array([2]))
