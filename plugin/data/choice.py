"""Multiple-choice answers (and PARC's prompt variations): choice records as padded arrays.

Options vary in number between items; they are padded to the widest item
with a log-probability of :data:`PAD_LOGPROB` (the softmax gives them exactly
0) and masked out of every set. Several correct options (PARC's semantic
changes) are merged into one class at the first correct option
(:meth:`ChoiceData.merged`), as PARC does.

Exclusions: ``<exclude>``, ``options_missing`` (fewer than 2 options),
``option_logprob_missing``, ``logprob_invalid`` (NaN or +inf),
``probabilities_invalid`` (``probs`` summing to more than 1),
``answer_missing`` (unless unlabeled items are wanted),
``answer_not_an_option``. Flags: ``prediction_from_logprobs`` (no usable
``prediction``: the argmax), ``renormalized`` (``probs`` summing to less
than 1), ``variation_renamed`` (a variation named outside PARC's list,
prefixed with its ``family``). A PARC record set is a choice record set
with ``variation`` (and ``source_id``): :attr:`ChoiceData.kind` is
``"parc"`` then.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, NoUsableRecords
from judgecp.base.exclusions import Exclusions
from judgecp.data.fields import (
    Fields,
    LogprobColumns,
    is_blank,
    text_array,
    to_float,
    to_list,
    to_object,
    token_columns,
)
from judgecp.data.tables import Table
from judgecp.stats.parc import FAMILIES, family_of

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: Log-probability of padding and of options merged away (softmax -> exactly 0).
PAD_LOGPROB = -1e4
#: Groupable fields of a choice record and the column names they are also found under.
FIELD_COLUMNS = {
    "task": ("task", "dataset"),
    "group": ("group", "category"),
    "judge": ("judge", "model"),
    "prompt": ("prompt",),
    "variation": ("variation",),
    "source_id": ("source_id",),
    "sampling_probability": ("sampling_probability",),  # an item drawn by `judgecp select`
}

#: The columns a plain table usually names each record field by (``--label``, ``--prediction``,
#: ``--logprobs`` override them), the first found wins.
CHOICE_COLUMNS: Mapping[str, tuple[str, ...]] = {"label": ("label", "correct", "answer"), "prediction": ("prediction",),
                                                 "logprobs": ("logprobs",)}


@dataclass
class ChoiceData:
    """Valid multiple-choice items as padded arrays (option j of row i is ``options[i][j]``)."""

    ids: NDArray[np.str_]
    options: list[list[str]]
    logprobs: FloatArray  # (n, K), PAD_LOGPROB where no option
    valid: BoolArray  # (n, K)
    correct: BoolArray  # (n, K); all False for an unlabeled item
    prediction: NDArray[np.int64]  # option index of the model's answer
    fields: dict[str, NDArray[np.str_]] = field(default_factory=dict)
    excluded: Exclusions = field(default_factory=Exclusions)
    flags: Exclusions = field(default_factory=Exclusions)
    n_read: int = 0
    source: str = ""
    kind: str = "mcq"

    @property
    def n(self) -> int:
        return int(self.ids.size)

    @property
    def k(self) -> int:
        return int(self.valid.shape[1])

    @property
    def n_options(self) -> NDArray[np.int64]:
        out: NDArray[np.int64] = self.valid.sum(axis=1)
        return out

    @property
    def labeled(self) -> BoolArray:
        out: BoolArray = np.asarray(self.correct.any(axis=1), dtype=bool)
        return out

    def probabilities(self) -> FloatArray:
        lp = np.where(self.valid, self.logprobs, -np.inf)
        e = np.exp(lp - lp.max(axis=1, keepdims=True))
        out: FloatArray = e / e.sum(axis=1, keepdims=True)
        return out

    def merged(self) -> tuple[FloatArray, BoolArray, NDArray[np.int64]]:
        """Logprobs with the correct options merged (log-sum-exp) at the first correct one.

        Returns the merged logprobs, the valid mask of the merged classes and
        the index of the (merged) correct class.
        """
        first = np.argmax(self.correct, axis=1)
        lp = np.where(self.valid, self.logprobs, -np.inf)
        merged_lp = np.logaddexp.reduce(np.where(self.correct, lp, -np.inf), axis=1)
        out = np.where(self.valid & ~self.correct, self.logprobs, PAD_LOGPROB)
        out[np.arange(self.n), first] = merged_lp
        valid = (self.valid & ~self.correct).copy()
        valid[np.arange(self.n), first] = True
        return out, valid, first.astype(np.int64)

    def take(self, index: NDArray[Any]) -> ChoiceData:
        return ChoiceData(
            self.ids[index], [self.options[i] for i in np.asarray(index)], self.logprobs[index], self.valid[index],
            self.correct[index], self.prediction[index], {k: v[index] for k, v in self.fields.items()},
            self.excluded, self.flags, self.n_read, self.source, self.kind,
        )


#: Option letters in the order of a wide table's option columns (``A`` .. ``Z``, VLMEvalKit's layout).
LETTERS = tuple(string.ascii_uppercase)


def has_text(value: Any) -> bool:
    """Whether a table cell holds text (not ``None``, NaN, or only whitespace)."""
    if value is None or (isinstance(value, float) and value != value):
        return False
    return bool(str(value).strip())


def row_options(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(letter, text)`` of the options a wide row has: its non-empty ``A`` .. ``Z`` cells, in letter order."""
    return [(letter, str(row[letter]).strip()) for letter in LETTERS if letter in row and has_text(row[letter])]


def option_columns(table: Table, fields: Fields) -> LogprobColumns | None:
    """Where the options' log-probabilities are (``None``: only ``probs`` objects)."""
    return token_columns(table, fields)


def variation_name(variation: str, family: Any, flags: Exclusions, rid: str) -> str:
    """The variation name the PARC scores read a family from (``LR-I`` -> LR).

    A variation named otherwise but given a ``family`` (docs/parc_format.md)
    becomes ``<family>-<name>`` (flag ``variation_renamed``); without one it
    stays as it is and PARC counts it as ``variation_unknown``.
    """

    if variation == "O":
        return variation
    wanted = str(family or "").strip().upper() or None
    try:
        own: str | None = family_of(variation)
    except InputError:
        own = None
    if own is not None and (wanted is None or own == wanted):
        return variation
    if wanted in FAMILIES:
        flags.add("variation_renamed", rid)
        return f"{wanted}-{variation}"
    return variation


def _option_values(cells: dict[str, Any] | str | None, probs: Any, opts: list[str], flags: Exclusions,
                   rid: str) -> tuple[list[float], str | None]:
    if isinstance(probs, dict) and not cells:
        ps = [to_float(probs.get(o)) for o in opts]
        if any(p is None for p in ps):
            return [], "option_logprob_missing"
        pv = [float(p) for p in ps if p is not None]
        total = sum(pv)
        if any(p < 0 or math.isnan(p) for p in pv) or total > 1 + 1e-6 or total <= 0:
            return [], "probabilities_invalid"
        if total < 1 - 1e-6:
            flags.add("renormalized", rid)
        return [math.log(p / total) if p > 0 else PAD_LOGPROB for p in pv], None
    values: list[float] = []
    lps = cells if isinstance(cells, dict) else {}
    for o in opts:
        v = lps.get(o)
        if is_blank(v):
            return [], "option_logprob_missing"
        f = to_float(v)
        if f is None or math.isnan(f) or f == math.inf:
            return [], "logprob_invalid"
        values.append(max(f, PAD_LOGPROB))
    return values, None


def choice_data(
    table: Table, fields: Fields | None = None, *, kind: str | None = None, require_label: bool = True
) -> ChoiceData:
    """Validate multiple-choice (or PARC) rows; bad ones are counted exclusions (module docstring)."""
    fields = fields or Fields()
    excluded, flags = table.excluded, Exclusions()
    col = table.columns
    id_col = fields.pick(table, "id", CHOICE_COLUMNS)
    label_col = fields.label_column(table, CHOICE_COLUMNS, required=require_label)
    pred_col = fields.pick(table, "prediction", CHOICE_COLUMNS)
    lp_cols = option_columns(table, fields)
    field_cols = {name: next((c for c in names if c in col), None) for name, names in FIELD_COLUMNS.items()}
    if fields.group is not None:  # a column to group by, kept under its own name
        table.column(fields.group, fields.flag("group"))
        field_cols.setdefault(fields.group, fields.group)
    n = table.n_rows
    empty: list[Any] = [None] * n
    exclude_col, probs_col, family_col = col.get("exclude", empty), col.get("probs", empty), col.get("family", empty)
    seen: set[str] = set()
    keep: list[tuple[str, list[str], list[float], set[str], int, dict[str, str]]] = []
    for i in range(n):
        rid = (str(col[id_col][i] if col[id_col][i] is not None else "").strip() if id_col else "") or str(i)
        if rid in seen:
            raise InputError(f"{table.source}: duplicate id {rid!r}; ids must be unique")
        seen.add(rid)
        if not is_blank(exclude_col[i]):
            excluded.add(str(exclude_col[i]), rid)
            continue
        cells = lp_cols.cells(table, i) if lp_cols is not None else None
        lps = cells if isinstance(cells, dict) else {}
        lps = {k: v for k, v in lps.items() if not (lp_cols is not None and lp_cols.by_token and is_blank(v))}
        probs = to_object(probs_col[i])
        opts = to_list(col["options"][i] if "options" in col else None) or sorted(lps) or (
            sorted(probs) if isinstance(probs, dict) else [])
        if len(opts) < 2:
            excluded.add("options_missing", rid)
            continue
        values, bad = _option_values(lps, probs, opts, flags, rid)
        if bad:
            excluded.add(bad, rid)
            continue
        answers = to_list(col[label_col][i]) if label_col is not None else None
        if not answers:
            if require_label:
                excluded.add("answer_missing", rid)
                continue
            answers = []
        if any(a not in opts for a in answers):
            excluded.add("answer_not_an_option", rid)
            continue
        pred_raw = str(col[pred_col][i] or "").strip() if pred_col is not None else ""
        if pred_raw in opts:
            pred = opts.index(pred_raw)
        else:
            pred = int(np.argmax(values))
            flags.add("prediction_from_logprobs", rid)
        meta = {name: str(col[c][i]) for name, c in field_cols.items() if c is not None and not is_blank(col[c][i])}
        if "variation" in meta:
            meta["variation"] = variation_name(meta["variation"], family_col[i], flags, rid)
        keep.append((rid, opts, values, set(answers), pred, meta))
    if not keep:
        raise NoUsableRecords(table.source, excluded, table.n_read)
    k = max(len(o) for _, o, *_ in keep)
    n_keep = len(keep)
    lp = np.full((n_keep, k), PAD_LOGPROB)
    valid = np.zeros((n_keep, k), bool)
    correct = np.zeros((n_keep, k), bool)
    for i, (_, opts, values, answer_set, _, _) in enumerate(keep):
        lp[i, : len(opts)] = values
        valid[i, : len(opts)] = True
        correct[i, : len(opts)] = [o in answer_set for o in opts]
    present = sorted({f for *_, meta in keep for f in meta})
    resolved = kind or ("parc" if "variation" in present else "mcq")
    return ChoiceData(
        ids=text_array([r[0] for r in keep]),
        options=[r[1] for r in keep],
        logprobs=lp,
        valid=valid,
        correct=correct,
        prediction=np.asarray([r[4] for r in keep], dtype=np.int64),
        fields={f: text_array([meta.get(f, "") for *_, meta in keep]) for f in present},
        excluded=excluded,
        flags=flags,
        n_read=table.n_read,
        source=table.source,
        kind=resolved,
    )


def choice_probabilities(data: ChoiceData) -> NDArray[np.float64]:
    """The model's probability of each option of each item (softmax over the valid options)."""
    lp = np.where(data.valid, data.logprobs, -np.inf)
    lp = lp - lp.max(axis=1, keepdims=True)
    p = np.exp(lp)
    out: NDArray[np.float64] = p / p.sum(axis=1, keepdims=True)
    return out
