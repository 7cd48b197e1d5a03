"""The likert kind object, assembled from its parts (registered by :mod:`judgecp.kinds.builtin`)."""


from judgecp.kinds.kind import Kind
from judgecp.kinds.likert.calibration import LikertCalibration
from judgecp.kinds.likert.present import LikertPresenter
from judgecp.kinds.likert.reader import LikertReader
from judgecp.kinds.likert.study import LikertStudy

LIKERT = Kind("likert", reader=LikertReader(), study=LikertStudy(), calibration=LikertCalibration(),
              presenter=LikertPresenter(), calibrated_as="likert")
