"""judgecp: how far can a model judge be trusted?

Distribution-free reliability metrics for (vision-)language-model judges:
conformal prediction intervals and label sets for Likert scores, computed from
the judge's score-token log-probabilities, plus the judge diagnostics of
"VLM Judges Can Rank but Cannot Score" (Kumar et al., 2026).

The core (this package) imports numpy, scipy, scikit-learn, pluggy and pyyaml
only; torch is imported lazily by the one method that needs it (R2CCP).
Harness integrations live in :mod:`judgecp.adapters` and are never imported
from here.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from judgecp.conformal import ConformalMethod, Prediction, conformal_quantile
from judgecp.data import LikertData, load_likert
from judgecp.errors import InputError, MissingDependencyError
from judgecp.exclusions import Exclusions
from judgecp.scale import LikertScale

try:
    __version__ = version("judgecp")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "ConformalMethod",
    "Exclusions",
    "InputError",
    "LikertData",
    "LikertScale",
    "MissingDependencyError",
    "Prediction",
    "__version__",
    "conformal_quantile",
    "load_likert",
]
