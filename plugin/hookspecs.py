"""Hook specifications: the extension points of judgecp.

Built-in methods and the built-in score extractor are plugins too: they
register through these hooks exactly as a third-party package does (declare
an entry point in the ``judgecp`` group pointing at a module with
``@hookimpl`` functions). Every hook here is documented in
``docs/plugins.md``; a test fails when one is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from judgecp.extraction import ScoreExtraction
    from judgecp.scale import LikertScale

hookspec = pluggy.HookspecMarker("judgecp")
hookimpl = pluggy.HookimplMarker("judgecp")


@hookspec
def register_interval_methods() -> list[type[Any]]:  # type: ignore[empty-body]
    """Return conformal methods whose prediction is an interval on the rating scale.

    Each item is a subclass of :class:`judgecp.conformal.ConformalMethod` with
    ``output = "interval"`` and a unique ``name``. The method reports the
    continuous interval, its label set ``[ceil(l), floor(u)]`` and the expanded
    variant ``[floor(l), ceil(u)]``.
    """


@hookspec
def register_set_methods() -> list[type[Any]]:  # type: ignore[empty-body]
    """Return conformal methods whose prediction is a set of labels.

    Each item is a subclass of :class:`judgecp.conformal.ConformalMethod` with
    ``output = "set"`` and a unique ``name``. Set ``ordinal = False`` when the
    method does not rely on the labels being ordered, so it also applies to
    multiple-choice options.
    """


@hookspec
def register_risk_controllers() -> list[type[Any]]:  # type: ignore[empty-body]
    """Return selective risk controllers for pairwise (or any accept/abstain) judges.

    Each item is a subclass of :class:`judgecp.selective.RiskController` with
    a unique ``name`` and a ``thresholds(u_sorted, e_sorted, alpha, signal)``
    method that returns one acceptance threshold per calibration split
    (accept a judgment iff its uncertainty <= threshold; ``-inf`` abstains on
    everything). Set ``guaranteed = True`` only for controllers with a
    finite-sample guarantee, and test it.
    """


@hookspec(firstresult=True)
def extract_score_logprobs(
    tokens: Sequence[str],
    position_logprobs: Sequence[Mapping[str, float]],
    scale: LikertScale,
    floor: float,
) -> ScoreExtraction | None:
    """Locate the score in a judge's generated tokens and read log P(label) there.

    ``tokens`` are the generated token strings (raw, e.g. ``"Ġ4"`` or
    ``"▁4"``), ``position_logprobs[i]`` maps candidate token strings at
    position ``i`` to their log-probability (a top-k list or the rating
    tokens of the full vocabulary). Return a
    :class:`judgecp.extraction.ScoreExtraction`, or ``None`` to let the next
    implementation try. The first non-``None`` result wins; the built-in
    three-stage extractor runs last.
    """
