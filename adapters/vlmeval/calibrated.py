"""A saved calibrator applied to a VLMEvalKit prediction file (the judge datasets' ``calibrator`` argument).

``calibrated_evaluation(prediction_file, calibrator)`` reads the prediction
file (with its logprob sidecars) as :func:`judgecp.adapters.vlmeval.evaluation.prediction_batch`
does, applies the calibrator (:func:`judgecp.calibrators.apply`) to every
row, labeled or not, writes the summary beside the prediction file as
``<stem>_calibrated.json`` and returns the plain-number headline VLMEvalKit
logs (:func:`judgecp.headline.calibrated_headline`: ``n``, ``excluded``,
``set_size`` and ``singleton_share`` (pairwise ``abstention_rate``),
``coverage_labeled`` (pairwise ``risk_labeled``), ``drift.p_value``,
``drift.alarm``, ``estimate.ppi.mean`` with ``.lower`` / ``.upper``, and
``estimate.judge_only.mean``; docs/calibrators.md). Nothing here imports
VLMEvalKit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecp.errors import InputError
from judgecp.headline import calibrated_headline
from judgecp.outputs import atomic_write_text

#: Suffix of the summary file written beside the prediction file.
SUFFIX = "_calibrated"


def calibrated_evaluation(
    prediction_file: str | Path,
    calibrator: Any,
    *,
    dataset: str | None = None,
    sidecars: Sequence[str | Path] | None = None,
    force: bool = False,
    write: bool = True,
) -> tuple[dict[str, float], dict[str, Any]]:
    """The headline and the full summary of ``calibrator`` (a path or a Calibrator) on a prediction file."""
    from judgecp.adapters.vlmeval.evaluation import prediction_batch
    from judgecp.calibrators import Calibrator, apply
    from judgecp.data import from_table
    from judgecp.kinds import calibration_kind
    from judgecp.report import dumps

    cal = calibrator if isinstance(calibrator, Calibrator) else Calibrator.load(str(calibrator))
    kind = cal.kind
    batch = prediction_batch(prediction_file, kind=kind, sidecars=sidecars, dataset=dataset)
    if batch.kind is not None and calibration_kind(batch.kind).name != kind:
        raise InputError(f"{prediction_file}: a {batch.kind} prediction file; the calibrator is for {cal.kind} judges")
    data = from_table(batch.table(), kind, require_label=False)
    summary = apply(cal, data, force=force).summary
    summary["vlmeval"] = batch.info.get("vlmeval")
    if write:
        p = Path(prediction_file)
        atomic_write_text(p.with_name(p.stem + SUFFIX + ".json"), dumps(summary) + "\n")
    return calibrated_headline(summary), summary
