"""judgecp's headline where VLMEvalKit's own summary tools look: ``|overall`` keys and ``_score.csv``.

VLMEvalKit's ``scripts/summarize.py`` (and ``run.py``'s closing table) reads
only ``status.json``: each dataset's flattened ``metrics`` and, for the
primary metric, the dataset class's ``report_primary_metric``. That class is
found in ``vlmeval.dataset.DATASET_CLASSES``; in a process where judgecp is
not registered (judgecp not installed there, or its startup hook turned off)
VLMEvalKit falls back to ``ImageBaseDataset``'s choice by name: a key equal
to ``overall``, then one ending in ``|overall``, then one containing
``overall``, then ``acc``, then ``score``; ties go to the name that sorts
first. Without help it picks ``exact_accuracy`` (Likert) or
``bpe|accuracy`` (pairwise), which are not judgecp's primary metrics.

So the headline carries its primary metrics once more under names ending in
``|overall`` (:func:`with_overall`): ``<method>|coverage|overall`` and
``<method>|set_width|overall`` (Likert, the first method),
``scope|coverage|overall`` and ``scope|risk|overall`` (pairwise), PARC's own
``reliability|overall`` and ``accuracy|overall``, and for a saved calibrator
``set_size|overall`` and ``coverage_labeled|overall`` (pairwise
``abstention_rate|overall`` and ``risk_labeled|overall``). judgecp's datasets
report exactly those keys as the primary metric, in name order
(:func:`primary_keys`), so the fallback's single pick is always judgecp's
first primary metric: the summary reads the same with and without judgecp.

:func:`write_score_file` writes the flattened headline as
``<model>_<dataset>_score.csv`` beside the prediction file, VLMEvalKit's own
layout for a dict of scores (one row, a column per metric, primary metrics
first), next to the full report (``_cp.json``, ``_selective.json``,
``_reliability.json``, ``_calibrated.json``).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgecp.base.jsonio import to_strict
from judgecp.kinds.metrics import flatten
from judgecp.workflows.headline import primary_metrics

#: The suffix VLMEvalKit's fallback ranks highest after a key equal to ``overall``.
OVERALL = "|overall"
#: ``<model>_<dataset>_score.csv``: VLMEvalKit's name for a dataset's score table.
SCORE_SUFFIX = "_score"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


#: A headline's counts: integers in JSON (``24``, not ``24.0``).
COUNTS = ("n", "n_read", "excluded")


def strict_headline(headline: Mapping[str, Any]) -> dict[str, Any]:
    """``headline`` as strict JSON: NaN and inf become ``None`` (``null``), whole-number counts integers."""
    out = to_strict(dict(headline))
    assert isinstance(out, dict)
    for key in COUNTS:
        value = out.get(key)
        if isinstance(value, float) and value.is_integer():
            out[key] = int(value)
    return out


def with_overall(headline: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """``headline`` plus its kind's primary metrics again as ``<key>|overall``, before ``error``.

    The primary metrics are :func:`judgecp.workflows.headline.primary_metrics` (``kind``
    ``"calibrated"``: a saved calibrator's). Only numbers get a copy: an undefined one (a
    risk with no verdict accepted) is not a primary metric of the run.
    """
    flat = flatten(headline)
    copies = {f"{m.key}{OVERALL}": flat[m.key] for m in primary_metrics(headline, kind)
              if not m.key.endswith(OVERALL) and _number(flat.get(m.key))}
    out = {k: v for k, v in headline.items() if k != "error"}
    out.update(copies)
    if "error" in headline:
        out["error"] = headline["error"]
    return out


def primary_keys(metrics: Mapping[str, Any] | None) -> list[str]:
    """judgecp's primary metrics in ``status.json``'s flattened metrics: the numeric ``...|overall`` keys, by name.

    In name order, as VLMEvalKit's fallback breaks ties, so its one pick is the first of these.
    """
    if not isinstance(metrics, Mapping):
        return []
    return sorted(k for k, v in metrics.items() if str(k).endswith(OVERALL) and _number(v))


def score_path(prediction_file: str | Path) -> Path:
    p = Path(prediction_file)
    return p.with_name(p.stem + SCORE_SUFFIX + ".csv")


def write_score_file(prediction_file: str | Path, headline: Mapping[str, Any] | None) -> Path:
    """``<model>_<dataset>_score.csv``: the flattened headline, one row, primary metrics first.

    ``None`` (an evaluation without metrics) removes a score file left by an earlier run
    (``--reuse`` copies a run's files forward) and writes nothing.
    """
    path = score_path(prediction_file)
    if headline is None:
        path.unlink(missing_ok=True)
        return path
    flat = {k: v for k, v in flatten(headline).items() if k != "error"}
    first = primary_keys(flat)
    columns = first + [k for k in flat if k not in first]
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        writer.writerow(["" if flat[k] is None else flat[k] for k in columns])
    return path
