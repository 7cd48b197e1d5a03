"""The report's figures, drawn from ``judgecp evaluate --json`` reports with headless matplotlib.

Every builder takes the runs of one kind (:class:`judgecp.present.runs.Run`)
and returns a :class:`Plot` (a matplotlib ``Figure`` with its id, title and
caption) or a :class:`Missing` that says which part of the report it would
need: nothing is drawn that the reports do not contain. With one report a
figure has one line per method (or controller, or signal); with several, one
line per report (judge) for the ``focus`` method.

Conventions: coverage and width of Likert methods are those of the label
sets (every method has them; for interval methods the coverage equals the
interval's), widths in scale points (``max - min`` of the set); the target
line is ``1 - alpha`` (coverage) or ``alpha`` (risk), dashed black and
labelled ``target ...``. Figures are built with ``matplotlib.figure.Figure``
on the Agg canvas (no pyplot, no display, no global state).

Modules: :mod:`~judgecp.present.figures` (what every figure shares),
:mod:`~judgecp.kinds.likert.figures`, :mod:`~judgecp.kinds.pairwise.figures`
and :mod:`~judgecp.kinds.choice.figures` (multiple choice and PARC); this
kind (:meth:`judgecp.kinds.Kind.report_figures`) lists its figures.
"""

from __future__ import annotations

from judgecp.kinds.choice.figures import (
    FAMILY_ORDER,
    mcq_groups,
    mcq_methods,
    mcq_sweep,
    parc_heatmaps,
    set_size_hist,
)
from judgecp.kinds.likert.figures import (
    confusion,
    coverage_by_error,
    coverage_by_label,
    group_coverage,
    judge_reliability,
    likert_entry,
    likert_methods,
    likert_sweep,
    reliability_map,
    rsg,
    width_distribution,
)
from judgecp.kinds.pairwise.figures import (
    accepted_share,
    risk_coverage,
    risk_vs_alpha,
    signal_reliability,
)
from judgecp.present.figures import Missing, Plot, Result
from judgecp.present.figures import (
    _matplotlib as _matplotlib,  # for judgecp.workflows.reports.write_report
)

__all__ = [
    "FAMILY_ORDER",
    "Missing",
    "Plot",
    "Result",
    "accepted_share",
    "confusion",
    "coverage_by_error",
    "coverage_by_label",
    "group_coverage",
    "judge_reliability",
    "likert_entry",
    "likert_methods",
    "likert_sweep",
    "mcq_groups",
    "mcq_methods",
    "mcq_sweep",
    "parc_heatmaps",
    "reliability_map",
    "risk_coverage",
    "risk_vs_alpha",
    "rsg",
    "set_size_hist",
    "signal_reliability",
    "width_distribution",
]
