"""The Likert kind: a judge's scores on a rating scale, conformal intervals and label sets.

Parts: :mod:`~judgecp.kinds.likert.reader`, :mod:`~judgecp.kinds.likert.study` (with
:mod:`~judgecp.kinds.likert.continuous` for labels on their own scale),
:mod:`~judgecp.kinds.likert.calibration`, :mod:`~judgecp.kinds.likert.present` and its
:mod:`~judgecp.kinds.likert.figures`.
"""

from judgecp.kinds.kind import Kind
from judgecp.kinds.likert.calibration import LikertCalibration
from judgecp.kinds.likert.present import LikertPresenter
from judgecp.kinds.likert.reader import LikertReader
from judgecp.kinds.likert.study import LikertStudy

LIKERT = Kind("likert", reader=LikertReader(), study=LikertStudy(), calibration=LikertCalibration(),
              presenter=LikertPresenter(), calibrated_as="likert")

__all__ = ["LIKERT"]
