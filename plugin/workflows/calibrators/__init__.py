"""Calibrate once, apply to every run: fitted estimators saved as data (``judgecp.calibrator/2``).

A *calibrator* is one of the public estimators (``ScoreIntervals``, ``ChoiceSets``, ``SelectiveJudge``: each in its
kind's ``estimator`` module)
(:class:`~judgecp.kinds.likert.estimator.ScoreIntervals` for Likert judges,
:class:`~judgecp.kinds.choice.estimator.ChoiceSets` for multiple choice,
:class:`~judgecp.kinds.pairwise.estimator.SelectiveJudge` for pairwise verdicts), fitted on
labeled records and written as JSON: the conformal thresholds (or the SCOPE
threshold) as numbers, the method spec that rebuilds the estimator around
them, the scale or options, the judge/prompt/task identity of the
calibration records, the calibration size, and a sample of a label-free judge
statistic for drift checks, and a content digest. Loading it never executes
code (no pickle): each estimator rebuilds itself from its own state
(``from_state``), which checks every field against the invariants (a
threshold must be the conformal quantile of the stored calibration scores),
and a file whose digest does not match its content is refused. Methods whose
fitted state is a model object (``probabilities=recalibrated``, the
quantile-regression methods, ...) are refused at :func:`calibrate` time with
an error that names the methods that can be saved.

:func:`apply` puts the calibrator on new records, labeled or not: per item
the label set (and interval), option set, or accept/abstain, and a summary
(mean set size, singletons, abstention rate, coverage where the run has
labels, the drift test). Records of another kind, scale, judge or prompt are
refused unless ``force=True``.

Drift: under exchangeability of the calibration items and the run's items,
the run's label-free judge statistic (Likert: the expected score
``sum_k k p_k``; multiple choice: the top option probability; pairwise: the
uncertainty signal the threshold applies to, BPE by default) has the same
distribution as the calibrator's stored sample, so the two-sample
Kolmogorov-Smirnov p-value is valid (its size is at most the level) and a
small p-value says the guarantees of the calibrator may no longer hold; a
conformal test martingale (:mod:`judgecp.stats.drift`) checks the same with the
run in a seeded random order, and across nights with a history file
(:mod:`judgecp.workflows.nightly.history`). With labels in the run, the summary also tests the
observed coverage against its calibration-conditional (beta-binomial) law
or, for pairs, the error among accepted ones by permutation, and the judge's
residuals against the calibration's (:mod:`~judgecp.stats.checks`);
:mod:`~judgecp.workflows.calibrators.transport` decides which labels the PPI++
estimate may use.

Modules: :mod:`~judgecp.workflows.calibrators.fileformat` (the file format and
:class:`Calibrator`), :mod:`~judgecp.workflows.calibrators.fitting` (:func:`calibrate`),
:mod:`~judgecp.workflows.calibrators.applying` (:func:`apply`),
:mod:`~judgecp.stats.checks` (the tests with the run's labels),
:mod:`~judgecp.workflows.calibrators.transport` (which labels the estimate uses),
:mod:`~judgecp.workflows.calibrators.statistics` (the label-free statistics both use).
"""

from __future__ import annotations

from judgecp.workflows.calibrators.applying import (
    DRIFT_LEVEL,
    Applied,
    annotate,
    apply,
    calibrated_estimate,
    check_compatible,
    drift_test,
)
from judgecp.workflows.calibrators.fileformat import (
    SCHEMA,
    SUMMARY_QUANTILES,
    Calibrator,
    content_digest,
)
from judgecp.workflows.calibrators.fitting import calibrate
from judgecp.workflows.calibrators.statistics import (
    IDENTITY_FIELDS,
    conformity_scores,
    drift_statistic,
)

__all__ = [
    "DRIFT_LEVEL",
    "IDENTITY_FIELDS",
    "SCHEMA",
    "SUMMARY_QUANTILES",
    "Applied",
    "Calibrator",
    "annotate",
    "apply",
    "calibrate",
    "calibrated_estimate",
    "check_compatible",
    "conformity_scores",
    "content_digest",
    "drift_statistic",
    "drift_test",
]
