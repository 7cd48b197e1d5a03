"""The prompt-ensemble kind: one judge's answers to every item under many prompts, pooled (docs/ensembles.md)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from judgecp.kinds import Kind

if TYPE_CHECKING:
    from judgecp.kinds.protocol import Protocol
    from judgecp.workflows.scalars import Metric


class EnsembleKind(Kind):
    """Prompt ensembles: records of any shape tied by ``meta.item``, read and evaluated by :mod:`judgecp.workflows.ensemble`.

    The study has its own flags (``judgecp evaluate --kind ensemble --clusters ...``), so the command runs
    it itself (:meth:`run_evaluate_command`).
    """

    name = "ensemble"
    title = "Prompt ensembles"
    settings = frozenset()

    def run_evaluate_command(self, args: argparse.Namespace) -> int | None:
        from judgecp.cli.ensemble import run

        return run(args)

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None, *,
                with_mixture: bool = False) -> list[Metric]:
        from judgecp.workflows.scalars import ensemble_metrics

        if body is not None:
            with_mixture = "mixture" in (body.get("methods") or {})
        return ensemble_metrics(with_mixture)
