"""``judgecp select``: which unlabeled items of a run to label next (active inference, :mod:`judgecp.stats.active`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.stats.active import sampling_design
from judgecp.stats.conformal import check_alpha
from judgecp.workflows.nightly.runs import proxy_and_target

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Selection:
    """A draw of items to label: ``selected`` (row indices of the run), ``probability`` (every row's sampling
    probability; NaN on rows already labeled) and ``summary`` (the body of a ``judgecp.select/1`` result: expected
    and drawn numbers, expected widths against uniform sampling, the error model and why the mix, ``degenerate``)."""

    selected: NDArray[np.intp]
    probability: FloatArray
    summary: dict[str, Any]


def select(data: Any, budget: float, *, mix: float | None = None, alpha: float = 0.1, random_state: int = 0,
           labeled_pairs: tuple[FloatArray, FloatArray] | None = None, pairs_source: str = "the labeled items",
           clusters: NDArray[Any] | None = None) -> Selection:
    """Draw the items to label among the unlabeled rows of ``data`` (Poisson sampling, module docstring).

    ``labeled_pairs`` (labels and proxies of a calibrator or a pilot, never
    the run's) give the error model; without them the draw is uniform.
    ``mix``: the share of uniform sampling (``None``: chosen by
    cross-validation, :func:`judgecp.stats.active.choose_mix`); ``clusters``: every row's
    cluster, for the expected widths. The summary's ``degenerate`` says why the expected widths mean nothing
    (a judge proxy or error model without spread).
    """
    alpha = check_alpha(alpha)
    f, y, target = proxy_and_target(data)
    pool = np.flatnonzero(np.isnan(y))
    if pool.size == 0:
        raise InputError("every item of the run has a label: nothing to select")
    if mix is not None and not 0.0 <= mix <= 1.0:
        raise InputError(f"--mix must be in [0, 1], got {mix}")
    summary: dict[str, Any] = {"target": target, "n_items": int(pool.size), "budget": float(budget),
                               "random_state": random_state, "alpha": alpha,
                               "sampling": "Poisson: each item independently with its sampling_probability",
                               "already_labeled": int(data.n - pool.size)}
    pi, design = sampling_design(f, pool, budget, labeled_pairs=labeled_pairs, pairs_source=pairs_source, mix=mix,
                                 alpha=alpha, random_state=random_state, clusters=clusters)
    summary.update(design)
    if float(np.ptp(f[pool])) == 0.0:
        summary["degenerate"].insert(0, f"the judge's proxy has no spread over the {pool.size} items (every proxy "
                                        f"{f[pool][0]:g})")
    rng = np.random.default_rng(random_state)
    drawn = rng.random(pool.size) < pi
    probability = np.full(data.n, np.nan)
    probability[pool] = pi
    summary["n_selected"] = int(drawn.sum())
    return Selection(selected=pool[drawn], probability=probability, summary=summary)
