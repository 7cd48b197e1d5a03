"""Fitting a calibrator on labeled records: :func:`calibrate`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from judgecp.base.errors import InputError
from judgecp.kinds import calibration_kind, get_kind
from judgecp.kinds.calibration import proxy_and_target
from judgecp.kinds.reading import load
from judgecp.stats.conformal import check_alpha
from judgecp.workflows.calibrators.fileformat import Calibrator
from judgecp.workflows.calibrators.statistics import _identity, calibration_conformity


def _calibration_kind(data: Any, kind: str | None) -> Any:
    """The kind whose calibrator serves ``data`` (``--kind``, when given, must be the data's or serve it)."""

    own = calibration_kind(data.kind)
    if kind is not None and calibration_kind(get_kind(kind).name).name != own.name:
        raise InputError(f"--kind {kind}: the records are {data.kind} records")
    return own


def label_scale_entry(data: Any) -> dict[str, Any]:
    """``{"label_scale": [LO, HI]}`` for Likert labels read on their own scale (``apply`` reads runs' labels
    on it by default), else nothing: the file is unchanged for labels on the judge's scale."""
    own = getattr(data, "label_scale", None)
    return {} if own is None else {"label_scale": own.to_json()}


def calibrate(
    data: Any,
    *,
    kind: str | None = None,
    method: str | None = None,
    alpha: float = 0.1,
    groups: str | None = None,
    random_state: int | None = 0,
    delta: float = 0.1,
    signal: str = "bpe",
) -> Calibrator:
    """Fit a calibrator on labeled data (:func:`judgecp.load` output, or a path).

    Parameters
    ----------
    data : ScoreData, ChoiceData, PairData, str or Path
        Labeled judge outputs; unlabeled rows are an error.
    kind : str, optional
        ``likert``, ``mcq`` or ``pairwise``; checked against the data.
    method : str, optional
        Likert: a conformal method spec (default ``naive``); multiple choice:
        a set method (default ``lac``); pairwise: a risk controller
        (default ``scope``).
    alpha : float
        Miscoverage (Likert, multiple choice) or the risk level (pairwise).
    groups : str, optional
        Likert: a field for Mondrian (per-group) calibration.

    Examples
    --------
    >>> from judgecp import simulate_likert_judge
    >>> cal = calibrate(simulate_likert_judge(n=300, seed=1), method="naive", alpha=0.1)
    >>> cal.kind, cal.n_calibration
    ('likert', 300)
    """

    if isinstance(data, (str, Path)):
        data = load(data)  # its kind from the file; checked against ``kind`` below
    alpha = check_alpha(alpha)
    own = _calibration_kind(data, kind)
    if data.n == 0 or not data.labeled.all():
        raise InputError(f"calibrate needs labeled records; {int((~data.labeled).sum())} of {data.n} are unlabeled")
    name, sample = own.calibration.drift_statistic(data, signal)
    fitted = own.calibration.fit(data, method=method, alpha=alpha, groups=groups, random_state=random_state,
                                signal=signal, delta=delta)
    spec, est = fitted.method, fitted.estimator
    proxy, target, _ = proxy_and_target(data)
    try:
        est.state_dict()  # refuse now, not at save time, a fitted state that is not plain data
    except InputError as exc:
        raise InputError(f"{spec}: {str(exc).partition(': ')[2]}") from None
    # Sorted, as the file stores it: a fitted and a loaded calibrator test drift on the same sequence.
    return Calibrator(kind=own.name, method=spec, alpha=alpha, estimator=est, n_calibration=int(data.n),
                      identity=_identity(data), drift_sample=np.sort(np.asarray(sample, dtype=np.float64)),
                      drift_statistic=name, scale=fitted.scale, options=fitted.options, groups=groups,
                      source=str(data.source), ppi_labels=target, ppi_proxy=proxy,
                      conformity=calibration_conformity(est), extra=label_scale_entry(data))
