"""The pairwise kind object, assembled from its parts (registered by :mod:`judgecp.kinds.builtin`)."""


from judgecp.kinds.kind import Kind
from judgecp.kinds.pairwise.calibration import PairwiseCalibration
from judgecp.kinds.pairwise.present import PairwisePresenter
from judgecp.kinds.pairwise.reader import PairwiseReader
from judgecp.kinds.pairwise.study import PairwiseStudy

PAIRWISE = Kind("pairwise", reader=PairwiseReader(), study=PairwiseStudy(), calibration=PairwiseCalibration(),
                presenter=PairwisePresenter(), calibrated_as="pairwise")
