"""judgecp: how far can a model judge be trusted?

Distribution-free reliability metrics for (vision-)language-model judges,
from their answer-token log-probabilities: conformal intervals and label
sets for Likert scores, conformal option sets for multiple choice, selective
risk control (SCOPE) for pairwise verdicts, PARC's reliability across prompt
variations, and the judge diagnostics of "VLM Judges Can Rank but Cannot
Score" (Kumar et al., 2026).

The Python API (docs/api.md):

* records: :func:`score_record`, :func:`pair_record`, :func:`choice_record`
  build ``judgecp.record/1`` records; :func:`load` and :func:`from_records`
  read and validate them (or any table, with :class:`Fields`);
* estimators: :class:`ScoreIntervals`, :class:`ChoiceSets`,
  :class:`SelectiveJudge`, :class:`PromptReliability`;
* the repeated-split study: :func:`evaluate` with a :class:`Protocol`.

The core imports numpy, scipy, scikit-learn, pluggy and pyyaml only; torch
is imported lazily by the one method that needs it (R2CCP). Harness
integrations live in :mod:`judgecp.adapters` and are never imported from here.
"""

from __future__ import annotations

from judgecp.base.errors import (
    InputError,
    MissingDependencyError,
    NotCalibratedError,
    NoUsableRecords,
)
from judgecp.base.exclusions import Exclusions
from judgecp.base.records import SCHEMA, choice_record, pair_record, score_record
from judgecp.base.scale import LikertScale
from judgecp.base.version import __version__
from judgecp.data import ChoiceData, Fields, PairData, ScoreData
from judgecp.kinds.choice.estimator import ChoicePrediction, ChoiceSets, PromptReliability
from judgecp.kinds.likert.estimator import ScoreIntervals
from judgecp.kinds.pairwise.estimator import SelectiveJudge, SelectivePrediction
from judgecp.kinds.protocol import Protocol, parse_settings
from judgecp.kinds.reading import from_records, from_table, load
from judgecp.stats.conformal import ConformalMethod, Prediction, conformal_quantile
from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_pairwise_judge,
    simulate_parc_records,
)
from judgecp.workflows.study import evaluate

__all__ = [
    "SCHEMA",
    "ChoiceData",
    "ChoicePrediction",
    "ChoiceSets",
    "ConformalMethod",
    "Exclusions",
    "Fields",
    "InputError",
    "LikertScale",
    "MissingDependencyError",
    "NoUsableRecords",
    "NotCalibratedError",
    "PairData",
    "Prediction",
    "PromptReliability",
    "Protocol",
    "ScoreData",
    "ScoreIntervals",
    "SelectiveJudge",
    "SelectivePrediction",
    "__version__",
    "choice_record",
    "conformal_quantile",
    "evaluate",
    "from_records",
    "from_table",
    "load",
    "pair_record",
    "parse_settings",
    "score_record",
    "simulate_likert_judge",
    "simulate_mcq_records",
    "simulate_pairwise_judge",
    "simulate_parc_records",
]

# Saved calibrators and prediction-powered inference (docs/calibrators.md).
from judgecp.stats.ppi import ppi_mean
from judgecp.workflows.calibrators import Calibrator, calibrate

__all__ += ["Calibrator", "calibrate", "ppi_mean"]
