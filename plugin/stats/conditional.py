"""Conditional coverage of Likert predictions: by human label, by group, by judge error.

Marginal coverage (the share of test rows whose label set holds the human
label) can sit at 0.90 while the items the judge gets badly wrong are
covered far less often. This module breaks the label-set coverage of one
method down into cells and names the worst one:

* ``by_label``: by the human label ``y``;
* ``by_group``: by the value of the report's group (or Mondrian) field,
  when there is one;
* ``by_judge_error``: by ``|round(E[score]) - y|``, the distance between the
  judge's expected score ``sum_k k p_k`` rounded to a label and the human
  label (the parsed-score version stays in ``coverage_by_error``).

Each cell holds ``n`` (test rows pooled over every split), ``n_per_split``
(``n`` over the number of splits), ``coverage`` (label-set coverage pooled
over the splits), ``coverage_se`` (its binomial standard error
``sqrt(c (1 - c) / n)``; rows of different splits overlap, so read it as a
guide) and ``width`` (mean label-set width). ``worst`` names the cell of
lowest coverage among cells with at least :data:`MIN_CELL` pooled rows
(smaller cells are listed but too noisy to name): ``{by, cell, n, coverage,
coverage_se, width}``. For integer labels the label set's coverage equals
the interval's, so one number serves interval and set methods alike.
Continuous labels (``--label-scale``) have no label set: the cells hold the
interval's coverage and width, and ``by_label`` / ``by_judge_error`` bin each
label to its nearest scale point (the caller passes the binned labels).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.scale import LikertScale
from judgecp.stats.coverage import RowMetrics, pooled, stratum_means
from judgecp.stats.features import expected_score, judge_probabilities

#: Fewest pooled test rows for a cell to be named the worst (about 2 per split at 10 splits).
MIN_CELL = 20


def judge_error(logprobs: NDArray[np.float64], labels: NDArray[np.float64], scale: LikertScale) -> NDArray[np.int64]:
    """``|round(E[score]) - y|`` per row, with E the judge's expected score (rounded half to even)."""
    expected = expected_score(judge_probabilities(logprobs, scale), scale)
    out: NDArray[np.int64] = np.abs(np.round(expected) - np.asarray(labels, dtype=np.float64)).astype(np.int64)
    return out


def cells(covered: NDArray[np.bool_], width: NDArray[Any], strata: NDArray[Any], n_splits: int) -> dict[str, Any]:
    """Coverage, its standard error and width within each value of ``strata`` (sorted)."""
    out: dict[str, Any] = {}
    for value, means in stratum_means(strata, None, {"coverage": covered, "width": width}).items():
        n, c = int(means["n"]), means["coverage"]
        out[str(value)] = {
            "n": n,
            "n_per_split": n / n_splits,
            "coverage": c,
            "coverage_se": float(np.sqrt(c * (1.0 - c) / n)),
            "width": means["width"],
        }
    return out


def worst_cell(tables: dict[str, dict[str, Any]], min_n: int = MIN_CELL) -> dict[str, Any] | None:
    """The cell of lowest coverage (ties: the larger cell) among cells with ``n >= min_n``."""
    best: dict[str, Any] | None = None
    for by, table in tables.items():
        for cell, v in table.items():
            if v["n"] < min_n:
                continue
            key = (v["coverage"], -v["n"])
            if best is None or key < (best["coverage"], -best["n"]):
                best = {"by": by, "cell": cell, **{k: v[k] for k in ("n", "coverage", "coverage_se", "width")}}
    return best


def conditional_coverage(
    per_seed: Sequence[RowMetrics],
    labels: NDArray[np.float64],
    error: NDArray[np.int64],
    groups: NDArray[Any] | None = None,
) -> dict[str, Any]:
    """One method's conditional coverage table (module docstring); inputs pooled over splits in split order."""
    rows = list(per_seed)
    prediction = "labels" if rows[0].labels_covered is not None else "interval"  # continuous labels: no sets
    covered, width = pooled(rows, f"{prediction}_covered"), pooled(rows, f"{prediction}_width")
    tables: dict[str, dict[str, Any]] = {
        "by_label": cells(covered, width, np.asarray(labels).astype(np.int64), len(rows)),
    }
    if groups is not None:
        tables["by_group"] = cells(covered, width, np.asarray(groups).astype(str), len(rows))
    tables["by_judge_error"] = cells(covered, width, np.asarray(error), len(rows))
    return {**tables, "min_cell": MIN_CELL, "worst": worst_cell(tables)}
