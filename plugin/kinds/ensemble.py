"""The prompt-ensemble kind: one judge's answers to every item under many prompts, pooled (docs/ensembles.md)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from judgecp.headline import PrimaryMetric
from judgecp.kinds import Kind

if TYPE_CHECKING:
    from judgecp.protocol import Protocol
    from judgecp.scalars import Metric

#: The scores of each ensemble method a headline shows (VLMEvalKit's ``<method>|<score>``).
HEADLINE_SCORES = ("ece", "mce", "auprc", "nll", "accuracy")


class EnsembleKind(Kind):
    """Prompt ensembles: records of any shape tied by ``meta.item``, read and evaluated by :mod:`judgecp.ensemble`.

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
        from judgecp.scalars import ensemble_metrics

        if body is not None:
            with_mixture = "mixture" in (body.get("methods") or {})
        return ensemble_metrics(with_mixture)

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        """Per method (``uniform``, ``bpe``, and ``mixture`` when it had clusters: item
        embeddings) its ECE, MCE, AUPRC, NLL and accuracy on the held-out items, then
        ``n_items`` and ``n_prompts`` (floats, as VLMEvalKit's headline had them)."""
        clustered = int((body.get("settings") or {}).get("clusters") or 1) > 1
        out: dict[str, Any] = {name: {k: entry.get(k) for k in HEADLINE_SCORES}
                               for name, entry in (body.get("methods") or {}).items()
                               if name != "mixture" or clustered}
        out.update({key: float(body.get(key, 0)) for key in ("n_items", "n_prompts")})
        return out

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """The BPE-weighted ensemble's accuracy and NLL. Not its ECE: a judge that says 50/50 on
        every item is perfectly calibrated (ECE 0) and useless; its NLL is log 2, its accuracy a
        coin's."""
        return [PrimaryMetric("bpe|accuracy", True, 1.0, "accuracy_bpe"),
                PrimaryMetric("bpe|nll", False, 0.0, "nll_bpe")]
