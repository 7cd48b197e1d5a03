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

The names above are imported when first used (PEP 562): ``import judgecp``
itself imports nothing heavy, so the ``judgecp`` command is inside its own
Ctrl-C handling (exit 130, one line) before numpy and scipy load.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as the type checker sees them; at run time each is imported when first used
    from judgecp.base.errors import (
        InputError,
        MissingDependencyError,
        NotCalibratedError,
        NoUsableRecords,
    )
    from judgecp.base.exclusions import Exclusions
    from judgecp.base.records import SCHEMA, choice_record, pair_record, score_record
    from judgecp.base.scale import LikertScale
    from judgecp.data import ChoiceData, Fields, PairData, ScoreData
    from judgecp.kinds.choice.estimator import ChoicePrediction, ChoiceSets, PromptReliability
    from judgecp.kinds.likert.estimator import ScoreIntervals
    from judgecp.kinds.pairwise.estimator import SelectiveJudge, SelectivePrediction
    from judgecp.kinds.protocol import Protocol, parse_settings
    from judgecp.kinds.reading import from_records, from_table, load
    from judgecp.stats.conformal import ConformalMethod, Prediction, conformal_quantile
    from judgecp.stats.ppi import ppi_mean
    from judgecp.synthetic.judges import (
        simulate_likert_judge,
        simulate_mcq_records,
        simulate_pairwise_judge,
        simulate_parc_records,
    )
    from judgecp.workflows.calibrators import Calibrator, calibrate
    from judgecp.workflows.study import evaluate

    __version__: str

#: Where each public name lives (imported on first use: :func:`__getattr__`).
_PUBLIC = {
    "ConformalMethod": "judgecp.stats.conformal",
    "Prediction": "judgecp.stats.conformal",
    "conformal_quantile": "judgecp.stats.conformal",
    "ChoiceData": "judgecp.data",
    "Fields": "judgecp.data",
    "PairData": "judgecp.data",
    "ScoreData": "judgecp.data",
    "from_records": "judgecp.kinds.reading",
    "from_table": "judgecp.kinds.reading",
    "load": "judgecp.kinds.reading",
    "InputError": "judgecp.base.errors",
    "MissingDependencyError": "judgecp.base.errors",
    "NotCalibratedError": "judgecp.base.errors",
    "NoUsableRecords": "judgecp.base.errors",
    "ChoicePrediction": "judgecp.kinds.choice.estimator",
    "ChoiceSets": "judgecp.kinds.choice.estimator",
    "PromptReliability": "judgecp.kinds.choice.estimator",
    "ScoreIntervals": "judgecp.kinds.likert.estimator",
    "SelectiveJudge": "judgecp.kinds.pairwise.estimator",
    "SelectivePrediction": "judgecp.kinds.pairwise.estimator",
    "evaluate": "judgecp.workflows.study",
    "Exclusions": "judgecp.base.exclusions",
    "Protocol": "judgecp.kinds.protocol",
    "parse_settings": "judgecp.kinds.protocol",
    "SCHEMA": "judgecp.base.records",
    "choice_record": "judgecp.base.records",
    "pair_record": "judgecp.base.records",
    "score_record": "judgecp.base.records",
    "LikertScale": "judgecp.base.scale",
    "simulate_likert_judge": "judgecp.synthetic.judges",
    "simulate_mcq_records": "judgecp.synthetic.judges",
    "simulate_pairwise_judge": "judgecp.synthetic.judges",
    "simulate_parc_records": "judgecp.synthetic.judges",
    # Saved calibrators and prediction-powered inference (docs/calibrators.md).
    "Calibrator": "judgecp.workflows.calibrators",
    "calibrate": "judgecp.workflows.calibrators",
    "ppi_mean": "judgecp.stats.ppi",
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("judgecp")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def __getattr__(name: str) -> Any:
    """A public name, or a submodule (``judgecp.workflows.calibrators``), imported on first use and kept."""
    if name == "__version__":
        value: Any = _version()
    elif name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
    elif not name.startswith("__"):
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC, "__version__"})


__all__ = [
    "SCHEMA",
    "Calibrator",
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
    "calibrate",
    "choice_record",
    "conformal_quantile",
    "evaluate",
    "from_records",
    "from_table",
    "load",
    "pair_record",
    "parse_settings",
    "ppi_mean",
    "score_record",
    "simulate_likert_judge",
    "simulate_mcq_records",
    "simulate_pairwise_judge",
    "simulate_parc_records",
]
