"""``--metadata '{"calibrator": PATH}'``: a task's metrics from a saved calibrator (docs/calibrators.md).

With a calibrator, a judgecp task does not run the repeated-split study (which
needs labels): it applies the calibrator to the task's records, labeled or
not, and reports per task

* ``n``, ``n_read``, ``excluded``;
* Likert and multiple choice: ``set_size`` (mean), ``singleton_share``,
  ``empty_sets``; pairwise: ``abstention_rate``;
* ``coverage_labeled`` (pairwise ``risk_labeled``: error among accepted) on
  the documents that have a label (NaN when none has);
* ``drift.p_value`` and ``drift.alarm``: the KS test of the run's judge
  statistic against the calibration items' (small: the run does not look like
  the calibration data);
* ``estimate.ppi.mean`` (with ``.se``, ``.lower``, ``.upper``): the PPI++ mean
  human score / win rate / accuracy, the calibrator's labeled items standing
  in for labels, next to ``estimate.judge_only.mean``, the judge's own mean,
  and ``estimate.labeled_only.*``. NaN when the estimate is degenerate or
  withheld (:meth:`judgecp.workflows.results.Result.untrusted`).

``calibrator_force: true`` applies a calibrator of another judge, prompt or
scale (warned); without it such a run's metrics are NaN (but ``n`` and
``excluded``) and the reason is logged, so ``judgecp gate`` fails it while
the run's results and samples are kept. The metrics' names and how each is read
from the summary are the core's (:func:`judgecp.workflows.results.calibrated_metrics`).
Nothing here imports lm-eval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judgecp.adapters.lm_eval.metrics import by_id, counted
from judgecp.base.errors import InputError, NoUsableRecords
from judgecp.base.scale import LikertScale
from judgecp.kinds import calibration_kind
from judgecp.kinds.reading import from_records
from judgecp.workflows.calibrators import Calibrator, apply
from judgecp.workflows.results import ApplyResult


def task_calibrator(metadata: Mapping[str, Any], kind: str) -> Any:
    """The calibrator ``--metadata`` names (checked against the task's kind), or ``None``."""
    path = metadata.get("calibrator")
    if not path:
        return None

    cal = Calibrator.load(str(path))
    if calibration_kind(kind).name != cal.kind:
        raise InputError(f"metadata calibrator {path}: a {cal.kind} calibrator, this task's records are {kind}")
    cal.extra["force"] = bool(metadata.get("calibrator_force", False))
    return cal


def calibrated_report(records: Sequence[Mapping[str, Any]], cal: Any, kind: str, *, task: str = "",
                      scale: LikertScale | None = None) -> Mapping[str, Any]:
    """:func:`judgecp.workflows.calibrators.apply`'s summary of the task's records (in id order)."""
    return _compute(by_id(records), cal, kind, task, scale)


def _compute(records: list[Mapping[str, Any]], cal: Any, kind: str, task: str,
             scale: LikertScale | None) -> Mapping[str, Any]:

    data = None
    try:
        data = from_records(records, kind, source=f"lm-eval task {task}".strip(), require_label=False, scale=scale)
        summary: dict[str, Any] = apply(cal, data, force=bool(cal.extra.get("force"))).summary
    except NoUsableRecords as exc:
        summary = {"kind": cal.kind, "error": str(exc), "n": exc.n_read, "n_applied": 0,
                   "excluded": exc.excluded.to_json()}
    except InputError as exc:  # another judge, prompt or scale: every metric NaN, the run's results kept
        if data is None:
            raise
        summary = {"kind": cal.kind, "error": str(exc), "n": data.n_read, "n_applied": 0,
                   "excluded": data.excluded.to_json()}
    return counted(ApplyResult(summary), task, log_excluded=False)
