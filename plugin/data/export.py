"""Validated data back as ``judgecp.record/1`` records (``judgecp records``): any table, one currency.

Fields named like record fields (``task``, ``group``, ``judge``, ``prompt``)
go to the top level; every other field of a row goes to ``meta``. A pair's
probabilities become the two orders' verdict log-probabilities (their
softmax gives them back exactly).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from judgecp.base.records import choice_record, pair_record, score_record
from judgecp.data.choice import ChoiceData
from judgecp.data.pair import PairData
from judgecp.data.score import ScoreData

TOP_LEVEL = ("task", "group", "judge", "prompt")


def _fields(data: Any, i: int, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    values = {name: str(col[i]) for name, col in data.fields.items() if name not in skip and str(col[i]) != ""}
    top = {k: values.pop(k) for k in TOP_LEVEL if k in values}
    return {**top, "meta": values or None}


def _log(p: float) -> float:
    return math.log(p) if p > 0 else -math.inf


def score_records(data: ScoreData) -> list[dict[str, Any]]:
    """Likert rows as ``score`` records (labels on their own scale go back to it)."""
    out: list[dict[str, Any]] = []
    tokens = data.scale.tokens
    skip = tuple(c for c in (data.columns.get("id"), data.columns.get("label"), data.columns.get("parsed")) if c)
    own = data.label_scale
    # Labels on their own scale go back to it (the records say which); others are integers of the scale.
    labels = data.labels if own is None else own.from_judge(data.labels, data.scale)
    for i in range(data.n):
        label = None if np.isnan(labels[i]) else int(labels[i]) if own is None else float(labels[i])
        out.append(score_record(
            data.ids[i], label=label, logprobs=dict(zip(tokens, data.logprobs[i].tolist(), strict=True)),
            prediction=int(data.parsed[i]), scale=(data.scale.minimum, data.scale.maximum),
            label_scale=None if own is None else own.to_json(), **_fields(data, i, skip=skip),
        ))
    return out


def pair_records(data: PairData) -> list[dict[str, Any]]:
    """Pairs as ``pair`` records, one per order judged (probabilities as the verdicts' log-probabilities)."""
    out: list[dict[str, Any]] = []
    for i, pid in enumerate(data.pair_ids.tolist()):
        verdict = None if data.labels[i] < 0 else "A" if data.labels[i] == 1 else "B"
        for order, p_a in (("fwd", data.p_fwd[i]), ("rev", 1.0 - data.p_rev[i])):
            if np.isnan(p_a):
                continue
            out.append(pair_record(f"{pid}/{order}", pair_id=pid, order=order, label=verdict,
                                   logprobs={"A": _log(p_a), "B": _log(1.0 - p_a)}, **_fields(data, i)))
    return out


def choice_records(data: ChoiceData) -> list[dict[str, Any]]:
    """Multiple-choice (and PARC) items as ``choice`` records."""
    out: list[dict[str, Any]] = []
    for i in range(data.n):
        opts = data.options[i]
        correct = [o for o, c in zip(opts, data.correct[i], strict=False) if c]
        extra = _fields(data, i, skip=("variation", "source_id"))
        out.append(choice_record(
            data.ids[i], options=opts, label=correct or None,
            logprobs=dict(zip(opts, data.logprobs[i, : len(opts)].tolist(), strict=True)),
            prediction=opts[int(data.prediction[i])],
            source_id=data.fields["source_id"][i] if "source_id" in data.fields else None,
            variation=data.fields["variation"][i] if "variation" in data.fields else None, **extra,
        ))
    return out
