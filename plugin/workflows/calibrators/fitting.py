"""Fitting a calibrator on labeled records: :func:`calibrate`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from judgecp.workflows.calibrators.fileformat import Calibrator
from judgecp.workflows.calibrators.statistics import _identity, calibration_conformity
from judgecp.base.errors import InputError


@dataclass
class Fitted:
    """A kind's fitted estimator for a calibrator (:meth:`judgecp.kinds.Kind.fit_calibrator`)."""

    estimator: Any
    #: The method as the file names it (a canonical conformal method spec, or a risk controller).
    method: str
    scale: tuple[int, int] | None = None
    options: list[str] | None = None


def _calibration_kind(data: Any, kind: str | None) -> Any:
    """The kind whose calibrator serves ``data`` (``--kind``, when given, must be the data's or serve it)."""
    from judgecp.kinds import calibration_kind, get_kind

    own = calibration_kind(data.kind)
    if kind is not None and calibration_kind(get_kind(kind).name).name != own.name:
        raise InputError(f"--kind {kind}: the records are {data.kind} records")
    return own


def label_scale_entry(data: Any) -> dict[str, Any]:
    """``{"label_scale": [LO, HI]}`` for Likert labels read on their own scale (``apply`` reads runs' labels
    on it by default), else nothing: the file is unchanged for labels on the judge's scale."""
    own = getattr(data, "label_scale", None)
    return {} if own is None else {"label_scale": own.to_json()}


def check_size(alpha: float, n: int) -> None:
    """A level no calibration of ``n`` items can reach is refused before fitting (every set would be the full range)."""
    from judgecp.stats.conformal import min_calibration_size

    need = min_calibration_size(alpha)
    if need > n:
        shown = f"{need:,}" if need < 10**15 else f"about {float(need):.3g}"
        raise InputError(f"alpha {alpha:g} needs at least {shown} calibration items for a finite threshold, "
                         f"and there are {n}: every set would be the full range; choose a larger alpha")


def check_saveable(spec: str, alpha: float, scale: Any) -> None:
    """A method whose fitted state is a model (not numbers) is refused before any fitting."""
    from judgecp.base.plugins import build_method
    from judgecp.stats.saved_state import not_data, saved_method_class

    saved_method_class(spec)
    if not build_method(spec, alpha=alpha, scale=scale).is_saveable():
        raise not_data(spec)


def check_conformal_part(spec: str, alpha: float, method: Any, n: int) -> None:
    """A method that fits a model conformalizes on part of the items: too few there for the level is refused too."""
    from judgecp.stats.conformal import min_calibration_size

    if method is not None and getattr(method, "insufficient_", False):
        raise InputError(f"alpha {alpha:g}: {spec} fits its model on part of the {n} items and sets its threshold on "
                         f"the other {method.n_conformalize_}, which needs at least "
                         f"{min_calibration_size(method._rank_alpha()):,}: every set would be the full range; "
                         "give more items or choose a larger alpha")


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
    from judgecp.stats.conformal import check_alpha
    from judgecp.stats.ppi import proxy_and_target

    if isinstance(data, (str, Path)):
        from judgecp.data import load

        data = load(data)  # its kind from the file; checked against ``kind`` below
    alpha = check_alpha(alpha)
    calibration = _calibration_kind(data, kind)
    if data.n == 0 or not data.labeled.all():
        raise InputError(f"calibrate needs labeled records; {int((~data.labeled).sum())} of {data.n} are unlabeled")
    name, sample = calibration.drift_statistic(data, signal)
    fitted = calibration.fit_calibrator(data, method=method, alpha=alpha, groups=groups, random_state=random_state,
                                        signal=signal, delta=delta)
    spec, est = fitted.method, fitted.estimator
    proxy, target, _ = proxy_and_target(data)
    try:
        est.state_dict()  # refuse now, not at save time, a fitted state that is not plain data
    except InputError as exc:
        raise InputError(f"{spec}: {str(exc).partition(': ')[2]}") from None
    # Sorted, as the file stores it: a fitted and a loaded calibrator test drift on the same sequence.
    return Calibrator(kind=calibration.name, method=spec, alpha=alpha, estimator=est, n_calibration=int(data.n),
                      identity=_identity(data), drift_sample=np.sort(np.asarray(sample, dtype=np.float64)),
                      drift_statistic=name, scale=fitted.scale, options=fitted.options, groups=groups,
                      source=str(data.source), ppi_labels=target, ppi_proxy=proxy,
                      conformity=calibration_conformity(est), extra=label_scale_entry(data))
