"""The built-in kinds, registered through the ``register_kinds`` hook like a plugin's (``pyproject.toml``'s
``judgecp`` entry point ``kinds``)."""

from __future__ import annotations

from judgecp.base.hookspecs import hookimpl
from judgecp.kinds.choice.kind import MCQ, PARC
from judgecp.kinds.ensemble.kind import ENSEMBLE
from judgecp.kinds.kind import Kind
from judgecp.kinds.likert.kind import LIKERT
from judgecp.kinds.pairwise.kind import PAIRWISE

BUILTIN_KINDS = (LIKERT, PAIRWISE, MCQ, PARC, ENSEMBLE)


@hookimpl
def register_kinds() -> list[Kind]:
    """The built-in kinds (this module is a plugin of judgecp, like the methods)."""
    return list(BUILTIN_KINDS)
