"""The built-in kinds, registered through the ``register_kinds`` hook like a plugin's (``pyproject.toml``'s
``judgecp`` entry point ``kinds``)."""

from __future__ import annotations

from judgecp.base.hookspecs import hookimpl
from judgecp.kinds.choice import MCQ, PARC
from judgecp.kinds.ensemble import ENSEMBLE
from judgecp.kinds.kind import Kind
from judgecp.kinds.likert import LIKERT
from judgecp.kinds.pairwise import PAIRWISE

BUILTIN_KINDS = (LIKERT, PAIRWISE, MCQ, PARC, ENSEMBLE)


@hookimpl
def register_kinds() -> list[Kind]:
    """The built-in kinds (this module is a plugin of judgecp, like the methods)."""
    return list(BUILTIN_KINDS)
