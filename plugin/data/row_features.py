"""Row fields as model inputs: the task (or any group) one-hot and the judge's parsed score.

The fitted methods read every column of ``X`` after the K score-token
logprobs as extra features (:func:`judgecp.stats.features.model_features`).
:func:`with_row_features` appends, to a :class:`~judgecp.data.score.ScoreData`,
an indicator column per value of each named field and, optionally, the
judge's parsed score, so that CQR, CHR, LVD, the boosted methods, R2CCP and
the recalibrated label-set methods can use them. The features are functions
of a row alone (never of its label), so exchangeability, and every
guarantee, is untouched. Methods without a model ignore extra columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from judgecp.data.score import ScoreData


def one_hot(values: np.ndarray, categories: Sequence[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """Indicator columns of ``values`` (one per category, sorted unless given)."""
    v = np.asarray(values).astype(str)
    cats = sorted(set(v.tolist())) if categories is None else [str(c) for c in categories]
    return (v[:, None] == np.asarray(cats)[None, :]).astype(np.float64), cats


def with_row_features(data: ScoreData, fields: Sequence[str] = (), *, parsed: bool = False) -> ScoreData:
    """A copy of ``data`` whose ``X`` also holds one-hot ``fields`` and (``parsed=True``) the parsed score.

    Existing extra features are kept first; ``columns["row_features"]`` names
    the added columns in order.
    """
    cols: list[np.ndarray] = [] if data.extra_features is None else [data.extra_features]
    names: list[str] = []
    for name in fields:
        block, cats = one_hot(data.field(name, "row feature field"))
        cols.append(block)
        names += [f"{name}={c}" for c in cats]
    if parsed:
        cols.append(data.parsed.astype(np.float64)[:, None])
        names.append("parsed")
    if not names:
        return data
    columns = dict(data.columns)
    columns["row_features"] = names
    return replace(data, extra_features=np.hstack(cols), columns=columns)
