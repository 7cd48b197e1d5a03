"""Pairwise judges: pair records joined by pair, both orders aligned to the original response A.

A pair record is one judgment of one pair in one order (``pair_id``,
``order``); its log-probabilities of the verdict letters ``"A"``/``"B"``
(an object column ``{"A": lp, "B": lp}`` or one column per letter, e.g.
``lp_A``/``lp_B``; or probabilities ``p_A``/``p_B``) are read in the
record's own order, and ``label`` is the human preference in the *original*
order. In the reversed record the responses are swapped, so the judge's "B"
there means it prefers the original response A.

Exclusions: ``<exclude>``, ``pair_id_missing``, ``order_unknown``,
``duplicate_order`` (two records for the same pair and order),
``label_missing`` (unless unlabeled pairs are wanted), ``label_conflict``
(the two orders disagree), ``tie_label`` (ties have no binary ground truth,
as in SCOPE), ``label_unknown``, ``logprob_missing`` / ``logprob_invalid`` /
``probability_missing`` / ``probabilities_invalid`` (no usable judge output
in either order), ``group_missing``. Flag: ``single_order`` (a pair judged
in one order only: kept, its single-order probability stands for BPE).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, NoUsableRecords
from judgecp.base.exclusions import Exclusions
from judgecp.data.fields import (
    Fields,
    LogprobColumns,
    Rows,
    is_blank,
    text_array,
    to_float,
    token_columns,
)
from judgecp.data.tables import Table

FloatArray = NDArray[np.float64]

LABELS_A = {"a", "fwd_a", "model_a", "response_a"}
LABELS_B = {"b", "model_b", "response_b"}
LABELS_TIE = {"tie", "tie (bothbad)", "tie_bothbad", "both", "none", "c"}
ORDERS_FWD = {"fwd", "forward", "0", "ab", "original"}
ORDERS_REV = {"rev", "reverse", "reversed", "1", "ba", "swapped"}
#: Label of an unlabeled pair in :attr:`PairData.labels`.
UNLABELED = -1

#: The columns a plain table usually names each record field by (``--label``, ``--prediction``,
#: ``--logprobs`` override them), the first found wins.
PAIR_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "label": ("label", "winner", "preference"),
    "prediction": ("prediction",),
    "logprobs": ("logprobs",),
}


@dataclass
class PairData(Rows):
    """One row per pair, both orders aligned to the original response A."""

    pair_ids: NDArray[np.str_]
    p_fwd: FloatArray  # P(original A preferred | forward prompt); NaN if absent
    p_rev: FloatArray  # P(original A preferred | reversed prompt); NaN if absent
    labels: NDArray[np.int64]  # 1: humans prefer the original A, 0: B, -1: unlabeled
    verbalized: FloatArray | None = None
    agreement: FloatArray | None = None
    fields: dict[str, NDArray[np.str_]] = field(default_factory=dict)
    excluded: Exclusions = field(default_factory=Exclusions)
    flags: Exclusions = field(default_factory=Exclusions)
    n_read: int = 0
    source: str = ""
    kind: Literal["pairwise"] = "pairwise"

    @property
    def labeled(self) -> NDArray[np.bool_]:
        out: NDArray[np.bool_] = self.labels != UNLABELED
        return out

    def swapped(self) -> PairData:
        """The same pairs with every order reversed (forward <-> reversed records).

        The original-A probabilities are the same numbers, so BPE is
        unchanged (the invariance tested in the suite), while single-order
        signals see the other order.
        """
        return PairData(self.pair_ids, self.p_rev.copy(), self.p_fwd.copy(), self.labels.copy(), self.verbalized,
                        self.agreement, self.fields, self.excluded, self.flags, self.n_read, self.source)

    def take(self, index: NDArray[Any]) -> PairData:
        def sub(a: FloatArray | None) -> FloatArray | None:
            return None if a is None else a[index]

        return PairData(self.pair_ids[index], self.p_fwd[index], self.p_rev[index], self.labels[index],
                        sub(self.verbalized), sub(self.agreement), {k: v[index] for k, v in self.fields.items()},
                        self.excluded, self.flags, self.n_read, self.source)

    @classmethod
    def from_arrays(
        cls, p_fwd: Any, p_rev: Any, labels: Any, *, pair_ids: Sequence[Any] | None = None, **kw: Any
    ) -> PairData:
        pf = np.asarray(p_fwd, dtype=np.float64)
        ids = text_array(pair_ids if pair_ids is not None else range(pf.size))
        return cls(ids, pf, np.asarray(p_rev, dtype=np.float64), np.asarray(labels, dtype=np.int64), **kw)


def _norm(value: Any) -> str:
    return str(value).strip().lower() if value is not None else ""


def verdict_columns(table: Table, fields: Fields) -> LogprobColumns | None:
    """The object column or the per-letter columns of the verdict log-probabilities (``None``: probabilities)."""
    return token_columns(table, fields, ("A", "B"))


def two_way(cells: dict[str, Any] | str | None, probs: tuple[Any, Any] | None) -> tuple[float | None, str | None]:
    """P(verdict "A" in the record's own order), or an exclusion reason.

    From log-probabilities: softmax over the two. From probabilities
    ``p_A``/``p_B``: in [0, 1] and summing to at most 1 (a smaller sum is the
    rest of the vocabulary and is renormalised; a larger one is an error in
    the data).
    """
    if probs is not None:
        pa, pb = to_float(probs[0]), to_float(probs[1])
        if pa is None or pb is None or math.isnan(pa) or math.isnan(pb):
            return None, "probability_missing"
        if pa < 0 or pb < 0 or pa + pb > 1 + 1e-6 or pa + pb <= 0:
            return None, "probabilities_invalid"
        return pa / (pa + pb), None
    if not isinstance(cells, dict):
        return None, "logprob_missing"
    a, b = to_float(cells.get("A")), to_float(cells.get("B"))
    if a is None or b is None:
        return None, "logprob_missing"
    if math.isnan(a) or math.isnan(b) or a == math.inf or b == math.inf or (a == -math.inf and b == -math.inf):
        return None, "logprob_invalid"
    m = max(a, b)
    ea, eb = math.exp(a - m), math.exp(b - m)
    return ea / (ea + eb), None


def pair_data(table: Table, fields: Fields | None = None, *, require_label: bool = True) -> PairData:
    """Join forward and reversed records by ``pair_id``, with counted exclusions (module docstring)."""
    fields = fields or Fields()
    excluded, flags = table.excluded, Exclusions()
    col = table.columns
    id_col = fields.pick(table, "id", PAIR_COLUMNS)
    label_col = fields.label_column(table, PAIR_COLUMNS, required=require_label)
    verdicts = verdict_columns(table, fields)
    empty: list[Any] = [None] * table.n_rows
    p_a, p_b = col.get("p_A", empty), col.get("p_B", empty)
    if fields.group is not None:
        table.column(fields.group, fields.flag("group"))
    pair_col = col.get("pair_id") or [None] * table.n_rows
    order_col = col.get("order") or ["fwd"] * table.n_rows
    exclude_col = col.get("exclude")
    pairs: dict[str, dict[str, Any]] = {}
    bad_pairs: set[str] = set()
    for i in range(table.n_rows):
        rid = col[id_col][i] if id_col is not None else None
        if exclude_col is not None and not is_blank(exclude_col[i]):
            excluded.add(str(exclude_col[i]), rid)
            continue
        pid = str(pair_col[i] if pair_col[i] is not None else "").strip()
        if not pid:
            excluded.add("pair_id_missing", rid)
            continue
        order = _norm(order_col[i] if order_col[i] is not None else "fwd")
        if order in ORDERS_FWD:
            order = "fwd"
        elif order in ORDERS_REV:
            order = "rev"
        else:
            excluded.add("order_unknown", pid)
            continue
        entry = pairs.setdefault(pid, {"labels": [], "row": {}})
        if order in entry["row"]:
            excluded.add("duplicate_order", pid)
            bad_pairs.add(pid)
            continue
        entry["row"][order] = i
        entry["labels"].append(_norm(col[label_col][i]) if label_col is not None else "")
    numeric = sorted({lab for entry in pairs.values() for lab in entry["labels"]
                      if to_float(lab) is not None and not math.isnan(to_float(lab) or 0.0)})
    if numeric:
        raise InputError(
            f"{table.source}: pairwise labels must name the response humans preferred in the original order "
            f"(A or B; model_a/model_b; tie), not numbers: {', '.join(numeric[:5])} leave open which response "
            f"they mean; write them as A/B ({fields.flag('label')} names the column)"
        )
    ids: list[str] = []
    pf: list[float] = []
    pr: list[float] = []
    ys: list[int] = []
    verb: list[float] = []
    agree: list[float] = []
    groups: list[str] = []
    sampled: list[str] = []
    for pid, entry in pairs.items():
        if pid in bad_pairs:
            continue
        labels = set(entry["labels"])
        labels.discard("")
        if not labels:
            if require_label:
                excluded.add("label_missing", pid)
                continue
            lab = ""
        elif len(labels) > 1:
            excluded.add("label_conflict", pid)
            continue
        else:
            (lab,) = labels
            if lab in LABELS_TIE:
                excluded.add("tie_label", pid)
                continue
            if lab not in LABELS_A | LABELS_B:
                excluded.add("label_unknown", pid)
                continue
        probs: dict[str, float] = {}
        reason = None
        for order, row in entry["row"].items():
            cells = verdicts.cells(table, row) if verdicts is not None else None
            no_logprobs = not isinstance(cells, dict) or all(is_blank(cells.get(t)) for t in ("A", "B"))
            with_probs = no_logprobs and not (is_blank(p_a[row]) and is_blank(p_b[row]))
            p, why = two_way(cells, (p_a[row], p_b[row]) if with_probs else None)
            if p is None:
                reason = reason or why
                continue
            # P(original A preferred): "A" in forward order, "B" in reversed order.
            probs[order] = p if order == "fwd" else 1.0 - p
        if not probs:
            excluded.add(reason or "logprob_missing", pid)
            continue
        if len(probs) == 1:
            flags.add("single_order", pid)
        first = entry["row"].get("fwd", entry["row"].get("rev"))
        g = None
        if fields.group is not None:
            g = col[fields.group][first]
            if is_blank(g):
                excluded.add("group_missing", pid)
                continue
        ids.append(pid)
        pf.append(probs.get("fwd", math.nan))
        pr.append(probs.get("rev", math.nan))
        ys.append(UNLABELED if not lab else 1 if lab in LABELS_A else 0)
        for name, out in (("verbalized_confidence", verb), ("annotator_agreement", agree)):
            value = to_float(col[name][first]) if name in col else None
            out.append(math.nan if value is None else value)
        groups.append(str(g) if g is not None else "")
        if "sampling_probability" in col:  # a pair drawn by `judgecp select` carries its probability
            sampled.append(
                "" if is_blank(col["sampling_probability"][first]) else str(col["sampling_probability"][first])
            )
    if not ids:
        raise NoUsableRecords(table.source, excluded, table.n_read)
    verb_arr, agree_arr = np.asarray(verb), np.asarray(agree)
    return PairData(
        pair_ids=text_array(ids),
        p_fwd=np.asarray(pf),
        p_rev=np.asarray(pr),
        labels=np.asarray(ys, dtype=np.int64),
        verbalized=None if np.isnan(verb_arr).all() else verb_arr,
        agreement=None if np.isnan(agree_arr).all() else agree_arr,
        fields={**({fields.group: text_array(groups)} if fields.group else {}),
                **({"sampling_probability": text_array(sampled)} if sampled else {})},
        excluded=excluded,
        flags=flags,
        n_read=table.n_read,
        source=table.source,
    )

