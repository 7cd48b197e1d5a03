"""The pairwise kind: A/B verdicts judged in both orders, selective risk control (SCOPE).

Parts: :mod:`~judgecp.kinds.pairwise.reader`, :mod:`~judgecp.kinds.pairwise.study`,
:mod:`~judgecp.kinds.pairwise.calibration`, :mod:`~judgecp.kinds.pairwise.present` and its
:mod:`~judgecp.kinds.pairwise.figures`.
"""

from judgecp.kinds.kind import Kind
from judgecp.kinds.pairwise.calibration import PairwiseCalibration
from judgecp.kinds.pairwise.present import PairwisePresenter
from judgecp.kinds.pairwise.reader import PairwiseReader
from judgecp.kinds.pairwise.study import PairwiseStudy

PAIRWISE = Kind("pairwise", reader=PairwiseReader(), study=PairwiseStudy(), calibration=PairwiseCalibration(),
                presenter=PairwisePresenter(), calibrated_as="pairwise")

__all__ = ["PAIRWISE"]
