"""Which labels `apply`'s PPI++ estimate may use: the run's own, or the calibrator's carried over.

A run's human mean can be estimated from labels of two kinds:

* **the run's own labels** (a random sample of its items): PPI++ on them and
  the run's unlabeled items is valid whatever the judge does on this run.
  With at least :data:`MIN_RUN_LABELS` of them they are the only labeled
  sample (``labeled_from: "run"``). The calibrator's pairs set the power
  tuning ``lambda`` only (a ``lambda`` fixed independently of the run keeps
  the estimator unbiased; it covered better than one tuned on 10-30 labels).
* **the calibrator's labels** (``labeled_from: "calibrator"``, or
  ``"calibrator+run"`` with the run's few labels): valid only if the judge's
  bias on this run equals its bias on the calibration items
  (transportability), and their interval is for the mean of the population
  the calibration items came from. The summary states that assumption; a run
  whose checks say otherwise (drift, the per-run or across-nights martingale,
  the label-side check, a forced identity mismatch) gets no estimate:
  ``estimate`` is null and ``estimate_withheld`` says why.

Why not the rule "the calibration labels join when the label-side check
passes" (issue 26): with 30 run labels the check detects coco-only nights of
LLaVA-Critic (a residual shift of 0.33) in about a fifth of draws, and the
pooled interval then covered the night's mean in 16% of 400 draws against
91-92% for the run's own labels (docs/calibrators.md). No test on 30 labels
has the power that rule needs, so the run's labels stand alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgecp.kinds.calibration import proxy_and_target
from judgecp.stats.ppi import ppi_mean
from judgecp.workflows.results import with_degenerate

#: Run labels from which the run's PPI++ uses them alone (fewer: the interval's normal approximation
#: under-covers, 0.84-0.86 at 10 labels on LLaVA-Critic nights).
MIN_RUN_LABELS = 30
#: Warning kinds after which calibrator labels are not carried into the run (in this order of report).
WITHHOLDING = ("compatibility", "drift", "drift_sequential", "drift_history", "label_shift")
ASSUMPTION = ("labels from the calibrator: assumes the judge's bias on this run equals its bias on the "
              "calibration items, and estimates the mean of the population they came from")


def _calibrator_lambda(cal: Any, f_labeled: Any, f_unlabeled: Any) -> float | None:
    """PPI++'s power-tuned lambda with the covariance from the calibrator's pairs (None without pairs)."""
    if cal.ppi_labels is None or cal.ppi_proxy is None or cal.ppi_labels.size < 2:
        return None
    y, f = cal.ppi_labels, cal.ppi_proxy
    n, big_n = f_labeled.size, f_unlabeled.size
    var_f = float(np.var(np.concatenate([f_labeled, f_unlabeled]), ddof=1))
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    lam = 0.0 if var_f == 0.0 else cov / ((1.0 + n / big_n) * var_f)
    return min(max(lam, 0.0), 1.0)


def run_estimate(cal: Any, data: Any, *, failed: Sequence[str] = (), alpha: float | None = None
                 ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The PPI++ estimate of the run and, when there is none, why: ``(estimate, None)`` or ``(None, withheld)``.

    ``failed`` are the kinds of the warnings the run raised (module docstring).
    """

    level = cal.alpha if alpha is None else alpha
    proxy, target, name = proxy_and_target(data)
    unlabeled = np.isnan(target)
    if not unlabeled.any():
        return None, {"reason": "no_unlabeled", "message": "every applied record is labeled: their mean needs no PPI"}
    own = np.flatnonzero(~unlabeled)
    if own.size >= MIN_RUN_LABELS:
        lam = _calibrator_lambda(cal, proxy[own], proxy[unlabeled])
        out: dict[str, Any] = ppi_mean(target[own], proxy[own], proxy[unlabeled], alpha=level, lam=lam)
        out.update(target=name, labeled_from="run", lambda_from="run" if lam is None else "calibrator",
                   n_labeled_calibrator=0)
        return with_degenerate(out), None
    if cal.ppi_labels is None or cal.ppi_proxy is None:
        return None, {"reason": "no_labels", "message": (
            f"the calibrator holds no labeled pairs and the run has {own.size} labels (< {MIN_RUN_LABELS})")}
    reasons = [k for k in WITHHOLDING if k in failed]
    if reasons:
        return None, {"reason": reasons[0], "reasons": reasons, "message": (
            f"not carried over from the calibrator after {', '.join(reasons)}; label at least {MIN_RUN_LABELS} "
            f"of the run's items for an estimate of its own (it has {own.size})")}
    y = np.concatenate([cal.ppi_labels, target[own]])
    f = np.concatenate([cal.ppi_proxy, proxy[own]])
    out = ppi_mean(y, f, proxy[unlabeled], alpha=level)
    out.update(target=name, labeled_from="calibrator" if own.size == 0 else "calibrator+run",
               n_labeled_calibrator=int(cal.ppi_labels.size), assumption=ASSUMPTION)
    return with_degenerate(out), None


def calibrated_estimate(cal: Any, data: Any, alpha: float | None = None) -> dict[str, Any] | None:
    """:func:`run_estimate` with no failed check: the estimate, or ``None`` (kept for callers of round 2)."""
    return run_estimate(cal, data, alpha=alpha)[0]
