"""Hook specifications: the extension points of judgecp.

Built-in methods, the built-in score extractor and judgecp's harness
adapters are plugins too: they register through these hooks exactly as a
third-party package does (declare an entry point in the ``judgecp`` group
pointing at a module with ``@hookimpl`` functions). Every hook here is documented in
``docs/plugins.md``; a test fails when one is not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from judgecp.base.scale import LikertScale
    from judgecp.data.extraction import ScoreExtraction

hookspec = pluggy.HookspecMarker("judgecp")
hookimpl = pluggy.HookimplMarker("judgecp")


@hookspec
def register_interval_methods() -> list[type[Any]]:  # type: ignore[empty-body]
    """Return conformal methods whose prediction is an interval on the rating scale.

    Each item is a subclass of :class:`judgecp.stats.conformal.ConformalMethod` with
    ``output = "interval"`` and a unique ``name``. The method reports the
    continuous interval, its label set ``[ceil(l), floor(u)]`` and the expanded
    variant ``[floor(l), ceil(u)]``.
    """


@hookspec
def register_set_methods() -> list[type[Any]]:  # type: ignore[empty-body]
    """Return conformal methods whose prediction is a set of labels.

    Each item is a subclass of :class:`judgecp.stats.conformal.ConformalMethod` with
    ``output = "set"`` and a unique ``name``. Set ``ordinal = False`` when the
    method does not rely on the labels being ordered, so it also applies to
    multiple-choice options.
    """


@hookspec
def register_kinds() -> list[type[Any]]:  # type: ignore[empty-body]
    """Return judge kinds, as :class:`judgecp.kinds.Kind` subclasses with a unique ``name``.

    A kind says how its records are read (``record_shape``, ``read``), what
    its repeated-split study reports (``study``), the flat metric names a
    harness and ``judgecp gate`` read (``metrics``), its console table and
    headline, and which kind's saved calibrator serves it
    (``calibrated_as``). judgecp's own kinds (``likert``, ``pairwise``,
    ``mcq``, ``parc``, ``ensemble``) register through this hook; every
    command looks a kind up by name (:func:`judgecp.kinds.get_kind`).
    """


@hookspec
def register_risk_controllers() -> list[type[Any]]:  # type: ignore[empty-body]
    """Return selective risk controllers for pairwise (or any accept/abstain) judges.

    Each item is a subclass of :class:`judgecp.stats.selective.RiskController` with
    a unique ``name`` and a ``thresholds(u_sorted, e_sorted, alpha, signal)``
    method that returns one acceptance threshold per calibration split
    (accept a judgment iff its uncertainty <= threshold; ``-inf`` abstains on
    everything); ``thresholds_at_levels`` (optional) answers every level at
    once. Set ``guaranteed = True`` only for controllers with a
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
    :class:`judgecp.data.extraction.ScoreExtraction`, or ``None`` to let the next
    implementation try. The first non-``None`` result wins; the built-in
    three-stage extractor runs last.
    """


@hookspec
def register_commands(commands: Any, benchmarks: Any) -> None:
    """Add subcommands to the ``judgecp`` command line.

    ``commands`` is the ``argparse`` sub-parser action of ``judgecp``,
    ``benchmarks`` that of ``judgecp bench``: call ``add_parser(name,
    help=...)`` on either, add arguments, and ``set_defaults(func=callable)``
    where ``callable(args) -> int`` is the exit status. Errors meant for the
    user are :class:`judgecp.base.errors.InputError`: the command line prints them
    on one line and exits with status 2. judgecp's harness adapters add their
    commands (``lm-eval``, ``tasks-path``, ``vlmeval``, ``bench capture``)
    through this hook; the core imports no adapter.
    """


@hookspec
def register_record_formats() -> list[Any]:  # type: ignore[empty-body]
    """Return readers of harness output files, as :class:`judgecp.data.formats.RecordFormat` objects.

    A format has a ``name`` (``judgecp evaluate --format NAME``), a
    ``description``, ``read(path, **options) -> judgecp.data.formats.RecordBatch``
    (the file's judgments as ``judgecp.record/1`` records, what could not be
    read counted by reason) and ``sniff(path) -> bool`` (whether a file is of
    this format, for ``--format auto``). judgecp's adapters register
    ``lm-eval`` (samples files) and ``vlmeval`` (prediction files).
    """
