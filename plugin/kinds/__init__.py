"""Layer 4, judge kinds: each kind is a small package of parts, looked up by name.

A *kind* is what a judge answers and how judgecp treats it (:mod:`judgecp.kinds.kind`: a
:class:`Kind` made of a reader, a study, a calibration and a presenter). The built-in kinds are
``likert``, ``pairwise``, ``mcq``, ``parc`` (:mod:`judgecp.kinds.choice`) and ``ensemble``, registered
by :mod:`judgecp.kinds.builtin` through the ``register_kinds`` hook; :mod:`judgecp.kinds.registry`
looks kinds, methods and risk controllers up by name. Shared by the kinds: the evaluation protocol
(:mod:`~judgecp.kinds.protocol`), the public estimators live with their kinds (``judgecp.kinds.likert.estimator``, ...),
reading
any source as a kind's data (:mod:`~judgecp.kinds.reading`), metric names (:mod:`~judgecp.kinds.metrics`),
the alpha sweep (:mod:`~judgecp.kinds.sweep`) and a calibrator's kind parts
(:mod:`~judgecp.kinds.calibration`). Every layer above looks a kind up instead of branching on its name.
"""

from judgecp.kinds.kind import Calibration, Command, Kind, Presenter, Reader, Study
from judgecp.kinds.registry import (
    calibration_kind,
    calibration_kinds,
    get_kind,
    kind_names,
    kind_of_shape,
    kinds,
    kinds_of_shape,
    record_shapes,
    table_kinds,
)

__all__ = [
    "Calibration",
    "Command",
    "Kind",
    "Presenter",
    "Reader",
    "Study",
    "calibration_kind",
    "calibration_kinds",
    "get_kind",
    "kind_names",
    "kind_of_shape",
    "kinds",
    "kinds_of_shape",
    "record_shapes",
    "table_kinds",
]
