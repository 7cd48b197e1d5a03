"""The choice kind object, assembled from its parts (registered by :mod:`judgecp.kinds.builtin`)."""


from __future__ import annotations

from typing import Any

from judgecp.kinds.choice.calibration import ChoiceCalibration
from judgecp.kinds.choice.parc_study import ParcStudy
from judgecp.kinds.choice.present import ChoicePresenter, ParcPresenter
from judgecp.kinds.choice.reader import ChoiceReader
from judgecp.kinds.choice.study import ChoiceStudy
from judgecp.kinds.kind import Kind
from judgecp.kinds.reading import from_records
from judgecp.synthetic.judges import simulate_mcq_records, simulate_parc_records


def _mcq_example() -> Any:
    return from_records(simulate_mcq_records(), source="example: synthetic MCQ model")


def _parc_example() -> Any:
    return from_records(simulate_parc_records(), source="example: synthetic PARC records")


MCQ = Kind("mcq", reader=ChoiceReader("mcq", _mcq_example), study=ChoiceStudy(), calibration=ChoiceCalibration(),
           presenter=ChoicePresenter(), calibrated_as="mcq")
PARC = Kind("parc", reader=ChoiceReader("parc", _parc_example), study=ParcStudy(), presenter=ParcPresenter(),
            calibrated_as="mcq")
