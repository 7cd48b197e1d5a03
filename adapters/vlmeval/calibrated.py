"""A saved calibrator applied to a VLMEvalKit prediction file (the judge datasets' ``calibrator`` argument).

``calibrated_evaluation(prediction_file, calibrator)`` reads the prediction
file (with its logprob sidecars) as :func:`judgecp.adapters.vlmeval.evaluation.prediction_batch`
does, applies the calibrator (:func:`judgecp.workflows.calibrators.apply`) to every
row, labeled or not, writes the summary beside the prediction file as
``<stem>_calibrated.json`` and returns the plain-number headline VLMEvalKit
logs (:func:`judgecp.workflows.headline.calibrated_headline`: ``n``, ``excluded``,
``set_size`` and ``singleton_share`` (pairwise ``abstention_rate``),
``coverage_labeled`` (pairwise ``risk_labeled``), ``drift.p_value``,
``drift.alarm``, ``estimate.ppi.mean`` with ``.lower`` / ``.upper``, and
``estimate.judge_only.mean``; docs/calibrators.md). Nothing here imports
VLMEvalKit.

The headline is strict JSON (undefined numbers ``None``, counts integers),
with its primary metrics again as ``...|overall`` keys
(:mod:`~judgecp.adapters.vlmeval.summary`), and is also written as
``<stem>_score.csv``.

A calibrator that does not fit the run (another judge, task or scale than
it was fitted on) is refused, naming what differs and the dataset setting
that applies it anyway: ``"force": true`` next to ``"calibrator"`` in the
dataset's entry of ``--data-config`` or ``--config`` (the ``force``
argument here). A calibrator of another kind is refused in any case.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecp.adapters.vlmeval.evaluation import prediction_batch
from judgecp.adapters.vlmeval.summary import strict_headline, with_overall, write_score_file
from judgecp.base.errors import InputError
from judgecp.base.outputs import atomic_write_text
from judgecp.kinds import calibration_kind
from judgecp.kinds.reading import from_table
from judgecp.workflows.calibrators import Calibrator, apply, check_compatible
from judgecp.workflows.headline import calibrated_headline
from judgecp.workflows.results import ApplyResult

#: Suffix of the summary file written beside the prediction file.
SUFFIX = "_calibrated"
#: How a VLMEvalKit user applies a calibrator that does not fit (the dataset setting, not a CLI flag).
FORCE_HINT = (
    'set "force": true next to "calibrator" in the dataset\'s --data-config or --config entry to apply it anyway'
)


def calibrated_evaluation(
    prediction_file: str | Path,
    calibrator: Any,
    *,
    dataset: str | None = None,
    sidecars: Sequence[str | Path] | None = None,
    force: bool = False,
    write: bool = True,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The headline and the full summary of ``calibrator`` (a path or a Calibrator) on a prediction file.

    ``force``: apply a calibrator fitted on another judge, task or scale (the dataset setting
    ``"force": true``); without it such a calibrator is an :class:`~judgecp.base.errors.InputError`
    naming what differs and that setting.
    """

    cal = calibrator if isinstance(calibrator, Calibrator) else Calibrator.load(str(calibrator))
    kind = cal.kind
    batch = prediction_batch(prediction_file, kind=kind, sidecars=sidecars, dataset=dataset)
    if batch.kind is not None and calibration_kind(batch.kind).name != kind:
        raise InputError(f"{prediction_file}: a {batch.kind} prediction file; the calibrator is for {cal.kind} judges")
    data = from_table(batch.table(), kind, require_label=False)
    if not force:
        problems = check_compatible(cal, data, force=True)  # what differs; another kind still raises
        if problems:
            raise InputError(f"{dataset or Path(prediction_file).name}: the calibrator does not fit this run: "
                             + "; ".join(problems) + f" ({FORCE_HINT})")
    summary = apply(cal, data, force=force).summary
    summary["vlmeval"] = batch.info.get("vlmeval")
    head = with_overall(strict_headline(calibrated_headline(summary)), "calibrated")
    if write:
        p = Path(prediction_file)
        atomic_write_text(p.with_name(p.stem + SUFFIX + ".json"), ApplyResult(summary).dumps())
        write_score_file(p, head)
    return head, summary
