"""The repeated-split study of a judge: :func:`evaluate` runs a protocol on any kind's data.

One entry point for every kind; the data's ``kind`` picks the study:
``likert`` (:func:`evaluate_scores`: conformal intervals and label sets),
``pairwise`` (:func:`evaluate_pairs`: uncertainty quality and selective risk
control), ``mcq`` (:func:`evaluate_choices`: conformal option sets) and
``parc`` (:func:`evaluate_parc`: PARC's reliability). Evaluation needs
labels: unlabeled rows are left out and counted as ``label_missing``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TextIO

import numpy as np

from judgecp.base.errors import InputError
from judgecp.data import AnyData, PairData
from judgecp.kinds.choice.parc_study import evaluate_parc
from judgecp.kinds.choice.study import evaluate_choices
from judgecp.kinds.likert.study import evaluate_scores
from judgecp.kinds.pairwise.study import evaluate_pairs
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.registry import get_kind
from judgecp.workflows.results import StudyResult
from judgecp.workflows.study.warnings import add_warnings


def labeled_only(data: AnyData) -> AnyData:
    """The labeled rows (the unlabeled ones counted in a copy of ``excluded`` as ``label_missing``)."""
    labeled = data.labeled
    if labeled.all():
        return data
    excluded = copy.deepcopy(data.excluded)
    ids = data.pair_ids if isinstance(data, PairData) else data.ids
    for rid in ids[~labeled][:5].tolist():
        excluded.add("label_missing", rid)
    excluded.add("label_missing", count=int((~labeled).sum()) - min(5, int((~labeled).sum())))
    out = data.take(np.flatnonzero(labeled))
    out.excluded = excluded
    return out


def evaluate(data: AnyData, protocol: Protocol | None = None, **extra: Any) -> StudyResult:
    """Run ``protocol`` (default: :class:`Protocol`'s defaults) on ``data`` and return the report.

    The data's kind runs its study (:meth:`judgecp.kinds.kind.Study.run`); the
    report is a frozen :class:`judgecp.workflows.results.StudyResult` (a read-only
    mapping over the JSON body, docs/cli.md "The JSON report"; ``.to_json()`` /
    ``.dumps()`` write it, ``.scalars()`` are its flat metrics). ``extra``
    adds top-level keys (a reader's own account of the input). Its
    ``warnings`` say what a script should act on
    (:mod:`judgecp.workflows.study.warnings`).
    """
    protocol = protocol or Protocol()
    if protocol.label_scale is not None and getattr(data, "label_scale", None) != protocol.label_scale:
        raise InputError(f"the protocol's label_scale {protocol.label_scale} was not applied to the data (read with "
                         f"label scale {getattr(data, 'label_scale', None)}): read them with "
                         f"label_scale={str(protocol.label_scale)!r} (judgecp.load, --label-scale)")
    data = labeled_only(data)
    kind = getattr(data, "kind", None)
    if not isinstance(kind, str):
        raise InputError(f"cannot evaluate {type(data).__name__}")
    body = get_kind(kind).study.run(data, protocol)
    body.update(extra)
    return StudyResult(add_warnings(body))


def write_report(report: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
    """The console table of any kind's report (Likert: with the detail of one method)."""
    get_kind(str(report["kind"]), flag="the report's kind").presenter.write_console(report, out, detail=detail)


__all__ = [
    "evaluate",
    "evaluate_choices",
    "evaluate_pairs",
    "evaluate_parc",
    "evaluate_scores",
    "labeled_only",
    "write_report",
]
