"""The ensemble kind object, assembled from its parts (registered by :mod:`judgecp.kinds.builtin`)."""


from __future__ import annotations

from judgecp.kinds.ensemble.command import EnsembleCommand
from judgecp.kinds.ensemble.study import EnsembleStudy
from judgecp.kinds.kind import Kind, Presenter


class EnsemblePresenter(Presenter):
    title = "Prompt ensembles"
    report_focus = "methods"


ENSEMBLE = Kind("ensemble", study=EnsembleStudy(), presenter=EnsemblePresenter(), command=EnsembleCommand())
