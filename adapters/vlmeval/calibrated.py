"""A saved calibrator applied to a VLMEvalKit prediction file (the judge datasets' ``calibrator`` argument).

``calibrated_evaluation(prediction_file, calibrator)`` reads the prediction
file (with its logprob sidecars) as :func:`judgecp.adapters.vlmeval.evaluation.prediction_batch`
does, applies the calibrator (:func:`judgecp.calibrators.apply`) to every
row, labeled or not, writes the summary beside the prediction file as
``<stem>_calibrated.json`` and returns the plain-number headline VLMEvalKit
logs: ``n``, ``excluded``, ``set_size`` and ``singleton_share`` (pairwise
``abstention_rate``), ``coverage_labeled`` (pairwise ``risk_labeled``),
``drift_p_value``, ``corrected_score`` with ``corrected_score_lower`` /
``_upper``, and ``judge_score`` (docs/calibrators.md). Nothing here imports
VLMEvalKit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecp.errors import InputError

#: Suffix of the summary file written beside the prediction file.
SUFFIX = "_calibrated"


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def headline(summary: dict[str, Any]) -> dict[str, float]:
    """The summary's plain numbers (NaN where undefined: no labels, no unlabeled rows)."""
    labeled = summary.get("labeled") or {}
    est = (summary.get("estimate") or {}).get("estimate") or {}
    ppi, judge = est.get("ppi") or {}, est.get("judge_only") or {}
    out: dict[str, float] = {"n": float(summary["n_applied"]), "excluded": float(sum(e["count"] for e in summary["excluded"]))}
    if summary["kind"] == "pairwise":
        out["abstention_rate"] = _number(summary.get("abstention_rate"))
        out["risk_labeled"] = _number(labeled.get("error_among_accepted"))
    else:
        out["set_size"] = _number(summary.get("mean_set_size"))
        out["singleton_share"] = _number(summary.get("singleton_share"))
        out["coverage_labeled"] = _number(labeled.get("coverage"))
    out["drift_p_value"] = _number(summary["drift"].get("p_value"))
    for key, source in (("corrected_score", "mean"), ("corrected_score_lower", "lower"), ("corrected_score_upper", "upper")):
        out[key] = _number(ppi.get(source))
    out["judge_score"] = _number(judge.get("mean"))
    return out


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
    from judgecp.report import dumps

    cal = calibrator if isinstance(calibrator, Calibrator) else Calibrator.load(str(calibrator))
    kind = {"likert": "likert", "pairwise": "pairwise", "mcq": "mcq"}[cal.kind]
    batch = prediction_batch(prediction_file, kind=kind, sidecars=sidecars, dataset=dataset)
    if batch.kind not in (None, kind) and not (batch.kind == "parc" and kind == "mcq"):
        raise InputError(f"{prediction_file}: a {batch.kind} prediction file; the calibrator is for {cal.kind} judges")
    data = from_table(batch.table(), kind, require_label=False)
    summary = apply(cal, data, force=force).summary
    summary["vlmeval"] = batch.info.get("vlmeval")
    if write:
        p = Path(prediction_file)
        p.with_name(p.stem + SUFFIX + ".json").write_text(dumps(summary) + "\n", encoding="utf-8")
    return headline(summary), summary
