"""Selective prediction: conformal p-values and Benjamini-Yekutieli FDR control."""

from __future__ import annotations

import numpy as np
import pytest

from judgecp.base.errors import InputError
from judgecp.stats.ensemble.selection import (
    conformal_pvalues,
    select_by_confidence,
    select_by_fdr,
    step_up,
)
from tests.helpers import FALSE_FAILURE, binomial_at_most, mean_margin

ALPHA = 0.1


def judge_draw(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """An overconfident judge whose most confident answers are right.

    Confidence c ~ U(.5, 1); wrong with probability min(1, 4 (1 - c)) when
    c < .97, never above. Among answers with c >= .9 the error rate is .182.
    """
    confidence = rng.uniform(0.5, 1.0, size=n)
    error = np.where(confidence < 0.97, np.minimum(1.0, 4.0 * (1.0 - confidence)), 0.0)
    return confidence, rng.random(n) >= error


def test_step_up_by_hand():
    p = np.array([0.01, 0.04, 0.05, 0.9])
    # BH: k alpha / m = .025, .05, .075, .1 -> the three smallest pass.
    np.testing.assert_array_equal(step_up(p, ALPHA, "bh"), [True, True, True, False])
    # BY: divided by c(4) = 25/12 -> .012, .024, .036, .048: only the first.
    np.testing.assert_array_equal(step_up(p, ALPHA, "by"), [True, False, False, False])
    assert not step_up(np.array([0.5, 0.9]), ALPHA).any()
    with pytest.raises(InputError, match="alpha"):
        step_up(p, 1.5)


def test_conformal_pvalue_by_hand():
    cal = np.array([0.6, 0.7, 0.8, 0.9])
    correct = np.array([False, True, False, True])
    # wrong calibration answers at .6 and .8; n = 4
    np.testing.assert_allclose(conformal_pvalues(cal, correct, np.array([0.5, 0.7, 0.85])), [3 / 5, 2 / 5, 1 / 5])


@pytest.mark.slow
def test_pvalues_are_valid_for_wrong_answers():
    # P(p <= t and the answer is wrong) <= t, over 2,000 exchangeable draws.
    rng = np.random.default_rng(0)
    hits = {t: 0 for t in (0.05, 0.1, 0.2)}
    reps = 2000
    for _ in range(reps):
        conf, correct = judge_draw(201, rng)
        p = conformal_pvalues(conf[:200], correct[:200], conf[200:])[0]
        for t in hits:
            hits[t] += int(p <= t and not correct[200])
    for t, count in hits.items():  # Binomial(reps, <= t): each of the three checks at a third of 1e-3
        assert count <= binomial_at_most(t, reps, FALSE_FAILURE / len(hits)), (t, count / reps)


@pytest.mark.slow
@pytest.mark.parametrize("procedure", ["by", "bh"])
def test_fdr_stays_at_its_level_over_many_seeds(procedure):
    rng = np.random.default_rng(1)
    fdp, selected = [], []
    for _ in range(400):
        # BY needs a large calibration set: its smallest threshold is
        # alpha / (m c(m)), and a conformal p-value is at least 1 / (n + 1).
        cal_conf, cal_correct = judge_draw(2000, rng)
        test_conf, test_correct = judge_draw(500, rng)
        chosen = select_by_fdr(cal_conf, cal_correct, test_conf, ALPHA, procedure)
        fdp.append(chosen.false_discovery_proportion(test_correct))
        selected.append(chosen.n_selected)
    mean, margin = np.mean(fdp), mean_margin(fdp)
    # FDR <= alpha, within a one-sided t margin at the suite's false-failure probability (tests/helpers.py).
    assert mean <= ALPHA + margin, (mean, margin)
    # Not vacuous: it selects a few dozen answers on average.
    assert np.mean(selected) > 10


@pytest.mark.slow
def test_naive_confidence_threshold_exceeds_the_level():
    # Negative control: "confidence >= 1 - alpha" on the same overconfident
    # judge has an error rate of about .18 among the answers it keeps.
    rng = np.random.default_rng(2)
    fdp = []
    for _ in range(400):
        conf, correct = judge_draw(500, rng)
        keep = select_by_confidence(conf, ALPHA)
        fdp.append((keep & ~correct).sum() / max(keep.sum(), 1))
    mean, margin = np.mean(fdp), mean_margin(fdp)
    assert mean > ALPHA + margin + 0.01, (mean, margin)


def test_by_is_more_conservative_than_bh():
    rng = np.random.default_rng(3)
    cal_conf, cal_correct = judge_draw(1000, rng)
    test_conf, _ = judge_draw(1000, rng)
    by = select_by_fdr(cal_conf, cal_correct, test_conf, ALPHA, "by")
    bh = select_by_fdr(cal_conf, cal_correct, test_conf, ALPHA, "bh")
    assert by.n_selected <= bh.n_selected
    assert not (by.selected & ~bh.selected).any()
