"""``judgecp plan``: how many labels a PPI++ estimate needs (:mod:`judgecp.stats.plan`), from what the user has.

The labeled pairs come from a calibrator's stored PPI pairs or from a pilot
table's labeled rows (:class:`LabeledPairs`); :func:`plan_labels` plans from
them, checks them against a run's judge proxies when one is given, and returns
the typed :class:`~judgecp.workflows.results.PlanResult` the command writes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.kinds import calibration_kind
from judgecp.stats.plan import plan
from judgecp.workflows.calibrators import Calibrator
from judgecp.workflows.nightly.runs import (
    cluster_keys,
    label_hint,
    off_scale_note,
    proxy_and_target,
)
from judgecp.workflows.results import PlanResult


@dataclass(frozen=True)
class LabeledPairs:
    """Labels and judge proxies of a calibrator's PPI pairs or of a pilot's labeled rows."""

    labels: NDArray[np.float64]
    proxies: NDArray[np.float64]
    source: str  #: what they are, for messages: "calibrator X (600 labeled items)"
    kind: str  #: the calibration kind of the judge they come from
    unlabeled_rows: int  #: a pilot's rows without a label (0 for a calibrator)
    excluded: list[dict[str, Any]] = field(default_factory=list)  #: a pilot's rows left out, counted
    label_hint: str = ""  #: a pilot's labels left out off the scale: what scale they look like
    clusters: NDArray[Any] | None = None  #: a pilot's labeled items' clusters (``cluster``)


def is_calibrator(path: Path) -> bool:
    """Whether ``path`` is a calibrator file (``judgecp calibrate -o``) rather than a table."""
    if path.suffix.lower() != ".json":
        return False
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(obj, dict) and str(obj.get("schema", "")).startswith("judgecp.calibrator")


def calibrator_pairs(path: Path, cluster: str | None = None) -> LabeledPairs:
    """The labeled PPI pairs a calibrator stores; a calibrator keeps no clusters (``cluster`` is an error)."""
    if cluster is not None:
        raise InputError(f"--cluster {cluster}: a calibrator keeps no clusters; give a pilot table with the field")
    cal = Calibrator.load(path)
    if cal.ppi_labels is None or cal.ppi_proxy is None:
        raise InputError(f"{path}: the calibrator stores no labeled PPI pairs (recalibrate with this version)")
    return LabeledPairs(np.asarray(cal.ppi_labels, dtype=np.float64), np.asarray(cal.ppi_proxy, dtype=np.float64),
                        f"calibrator {path} ({cal.ppi_labels.size} labeled items)", cal.kind, 0)


def pilot_pairs(data: Any, path: Path, cluster: str | None = None, minimum: int = 0) -> LabeledPairs:
    """A pilot's labeled rows with their judge proxies, and what else it says: its rows left out, its labeled
    items' clusters (``cluster``). Fewer than ``minimum`` labels (a plan's 4), or labels without spread while
    others were left out off the scale, are errors that name them."""
    f, y, _ = proxy_and_target(data)
    labeled = ~np.isnan(y)
    note = off_scale_note(data)
    if labeled.sum() < minimum:
        raise InputError(f"{path}: a plan needs at least {minimum} labeled items with a judge proxy, got "
                         f"{int(labeled.sum())}{note}")
    if note and labeled.any() and float(np.ptp(y[labeled])) == 0.0:
        raise InputError(f"{path}: every label is {y[labeled][0]:g}{note}: labels without spread say nothing of the "
                         "label's variance or the judge's error")
    return LabeledPairs(y[labeled], f[labeled], f"pilot {path} ({int(labeled.sum())} labeled rows)",
                        calibration_kind(data.kind).name, int((~labeled).sum()), data.excluded.to_json(),
                        label_hint(data).get("label_hint", ""),
                        None if cluster is None else cluster_keys(data, cluster)[0][labeled])


def same_kind(pairs: LabeledPairs, run: Any, what: str) -> None:
    """The labeled pairs are of the run's kind of judge, else one line naming both."""
    kind = calibration_kind(run.kind).name
    if pairs.kind != kind:
        raise InputError(f"{what}: {pairs.source} is of {pairs.kind} judges, the run {run.source} has {kind} records")


def plan_labels(pairs: LabeledPairs, half_width: float, *, alpha: float = 0.1, confidence: float = 0.9,
                mismatch: str = "refuse", run: Any = None, run_name: str | None = None,
                n_unlabeled: float | None = None, cluster: str | None = None) -> PlanResult:
    """The labels a PPI++ estimate of half-width ``half_width`` needs (:func:`judgecp.stats.plan.plan`).

    ``run``: the night's data (``run_name`` names it), whose unlabeled rows are counted and whose judge
    proxies are checked against the pairs'; else ``n_unlabeled`` (default: a pilot's unlabeled rows, else
    unlimited). ``mismatch``: ``"refuse"`` or ``"warn"`` when the run's proxies are unlike the pairs'.
    ``cluster``: the field whose clusters give the design effects."""
    run_proxy, run_clusters, run_source = None, None, "the run"
    if run is not None:
        same_kind(pairs, run, "--run")
        run_proxy, labels, _ = proxy_and_target(run)
        run_source, n_unlabeled = f"run {run_name}", int(np.isnan(labels).sum()) or math.inf
        run_clusters = None if cluster is None else cluster_keys(run, cluster)[0]
    if n_unlabeled is None:
        n_unlabeled = pairs.unlabeled_rows or math.inf
    out = plan(pairs.labels, pairs.proxies, half_width, alpha=alpha, n_unlabeled=n_unlabeled,
               confidence=confidence, source=pairs.source, run_proxy=run_proxy, run_source=run_source,
               mismatch=mismatch, clusters=pairs.clusters, run_clusters=run_clusters)
    out.update(excluded=pairs.excluded, cluster=cluster)
    if pairs.label_hint:
        out["label_hint"] = pairs.label_hint
    return PlanResult(out)
