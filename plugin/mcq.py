"""Multiple-choice answers: conformal prediction sets over the options.

A multiple-choice record::

    {"id", "options": ["A", "B", "C", "D"], "correct": ["B"] (or "B" or "B,C"),
     "logprobs": {"A": lp, ...}, "prediction": "B", "dataset", "category", ...}

Options vary in number between items; they are padded to the widest item
with a log-probability of ``PAD_LOGPROB`` (the softmax gives them exactly 0)
and masked out of every set, so the set methods of the Likert path (LAC,
APS, RAPS, margin; any registered method with ``ordinal = False``) run
unchanged on option index ``1..K``. Ordinal methods are refused: options
have no order.

Several correct options (PARC's semantic changes): their probabilities are
merged into one class, placed at the first correct option, as PARC does;
coverage means the merged class is in the set and set sizes count it once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.conformal import check_alpha
from judgecp.data import read_table
from judgecp.errors import InputError
from judgecp.exclusions import Exclusions
from judgecp.plugins import build_method, canonical_spec, method_classes, parse_method_spec
from judgecp.protocol import split_indices
from judgecp.scale import LikertScale

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: Log-probability of padding and of options merged away (softmax -> exactly 0).
PAD_LOGPROB = -1e4
DEFAULT_MCQ_METHODS = ("lac", "aps", "aps(randomized=False)", "raps", "margin")


@dataclass
class MCQData:
    """Valid multiple-choice items as padded arrays (option j of row i is ``options[i][j]``)."""

    ids: NDArray[np.str_]
    options: list[list[str]]
    logprobs: FloatArray  # (n, K), PAD_LOGPROB where no option
    valid: BoolArray  # (n, K)
    correct: BoolArray  # (n, K)
    prediction: NDArray[np.int64]  # option index of the model's answer
    fields: dict[str, NDArray[np.str_]] = field(default_factory=dict)
    excluded: Exclusions = field(default_factory=Exclusions)
    flags: Exclusions = field(default_factory=Exclusions)
    n_read: int = 0
    source: str = ""

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

    def probabilities(self) -> FloatArray:
        lp = np.where(self.valid, self.logprobs, -np.inf)
        m = lp.max(axis=1, keepdims=True)
        e = np.exp(lp - m)
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

    def take(self, index: NDArray[Any]) -> MCQData:
        return MCQData(
            self.ids[index], [self.options[i] for i in np.asarray(index)], self.logprobs[index],
            self.valid[index], self.correct[index], self.prediction[index],
            {k: v[index] for k, v in self.fields.items()}, self.excluded, self.flags, self.n_read, self.source,
        )


# -- reading ---------------------------------------------------------------------------


def _answers(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple, set)):
        items = [str(v).strip() for v in value]
    else:
        text = str(value).strip()
        if not text:
            return None
        items = [t.strip() for t in re.split(r"[,;|\s]+", text) if t.strip()]
    return items or None


def _option_logprobs(row: dict[str, Any]) -> dict[str, Any]:
    lp = row.get("logprobs")
    if isinstance(lp, str) and lp.strip().startswith("{"):
        import json

        try:
            lp = json.loads(lp)
        except json.JSONDecodeError:
            lp = None
    if isinstance(lp, dict):
        return {str(k).strip(): v for k, v in lp.items()}
    return {k[3:]: v for k, v in row.items() if k.startswith("lp_") and v not in (None, "")}


def load_mcq(path: str | Path, **options: Any) -> MCQData:
    excluded = Exclusions()
    _, rows = read_table(path, excluded)
    return mcq_from_records(rows, source=str(path), excluded=excluded, **options)


def mcq_from_records(
    records: Sequence[dict[str, Any]],
    *,
    source: str = "records",
    excluded: Exclusions | None = None,
    fields: Sequence[str] = ("dataset", "category", "variation", "source_id", "model"),
) -> MCQData:
    """Validate multiple-choice records; bad ones are counted exclusions.

    Reasons: ``id_missing``, ``options_missing`` (fewer than 2 options),
    ``option_logprob_missing`` (an option without a log-probability),
    ``logprob_invalid`` (NaN or +inf), ``answer_missing``,
    ``answer_not_an_option`` (the key names an option the item does not
    have), ``probabilities_invalid`` (``probs`` that sum to more than 1).
    Flags: ``prediction_from_logprobs`` (no usable ``prediction``: argmax),
    ``renormalized`` (``probs`` summing to less than 1).
    """
    excluded = excluded if excluded is not None else Exclusions()
    flags = Exclusions()
    if not records:
        raise InputError(f"{source}: no records")
    n_read = len(records) + excluded.total
    seen: set[str] = set()
    keep: list[tuple[str, list[str], list[float], set[str], int, dict[str, str]]] = []
    for i, r in enumerate(records):
        rid = str(r.get("id", "")).strip() or str(i)
        if rid in seen:
            raise InputError(f"{source}: duplicate id {rid!r}; ids must be unique")
        seen.add(rid)
        lps = _option_logprobs(r)
        probs = r.get("probs")
        opts = _answers(r.get("options")) or sorted(lps) or (sorted(probs) if isinstance(probs, dict) else [])
        if len(opts) < 2:
            excluded.add("options_missing", rid)
            continue
        values: list[float] = []
        bad = None
        if isinstance(probs, dict) and not lps:
            ps = [probs.get(o) for o in opts]
            if any(p is None for p in ps):
                bad = "option_logprob_missing"
            else:
                pv = [float(p) for p in ps if p is not None]
                total = sum(pv)
                if any(p < 0 or math.isnan(p) for p in pv) or total > 1 + 1e-6 or total <= 0:
                    bad = "probabilities_invalid"
                else:
                    if total < 1 - 1e-6:
                        flags.add("renormalized", rid)
                    values = [math.log(p / total) if p > 0 else PAD_LOGPROB for p in pv]
        else:
            for o in opts:
                v = lps.get(o)
                if v is None or (isinstance(v, str) and not v.strip()):
                    bad = "option_logprob_missing"
                    break
                try:
                    f = float(v)
                except (TypeError, ValueError):
                    bad = "logprob_invalid"
                    break
                if math.isnan(f) or f == math.inf:
                    bad = "logprob_invalid"
                    break
                values.append(max(f, PAD_LOGPROB))
        if bad:
            excluded.add(bad, rid)
            continue
        answers = _answers(r.get("correct", r.get("answer")))
        if not answers:
            excluded.add("answer_missing", rid)
            continue
        if any(a not in opts for a in answers):
            excluded.add("answer_not_an_option", rid)
            continue
        pred_raw = str(r.get("prediction", "") or "").strip()
        if pred_raw in opts:
            pred = opts.index(pred_raw)
        else:
            pred = int(np.argmax(values))
            flags.add("prediction_from_logprobs", rid)
        meta = {f: str(r.get(f, "")) for f in fields if r.get(f) not in (None, "")}
        keep.append((rid, opts, values, set(answers), pred, meta))
    if not keep:
        reasons = ", ".join(f"{k}: {v}" for k, v in excluded.counts.items())
        raise InputError(f"{source}: no usable items ({reasons})")
    k = max(len(o) for _, o, *_ in keep)
    n = len(keep)
    lp = np.full((n, k), PAD_LOGPROB)
    valid = np.zeros((n, k), bool)
    correct = np.zeros((n, k), bool)
    for i, (_, opts, values, answer_set, _, _) in enumerate(keep):
        lp[i, : len(opts)] = values
        valid[i, : len(opts)] = True
        correct[i, : len(opts)] = [o in answer_set for o in opts]
    present = sorted({f for *_, meta in keep for f in meta})
    return MCQData(
        ids=np.asarray([r[0] for r in keep]),
        options=[r[1] for r in keep],
        logprobs=lp,
        valid=valid,
        correct=correct,
        prediction=np.asarray([r[4] for r in keep], dtype=np.int64),
        fields={f: np.asarray([meta.get(f, "") for *_, meta in keep]) for f in present},
        excluded=excluded,
        flags=flags,
        n_read=n_read,
        source=source,
    )


# -- conformal sets -------------------------------------------------------------------------


def option_scale(data: MCQData) -> LikertScale:
    """Options as labels 1..K for the set methods."""
    return LikertScale(1, max(data.k, 2))


def check_mcq_method(spec: str) -> None:
    name, _ = parse_method_spec(spec)
    classes = method_classes()
    if name in classes and (classes[name].output != "set" or classes[name].ordinal):
        raise InputError(f"method {name!r} relies on ordered labels; multiple-choice options have no order")
    if "recalibrated" in spec:
        raise InputError(f"{spec}: option letters are not classes shared across items; use the model's own probabilities")


def option_sets(method: Any, X: FloatArray, valid: BoolArray) -> BoolArray:
    sets: BoolArray = method.predict(X).sets & valid
    return sets


@dataclass(frozen=True)
class MCQProtocol:
    alpha: float = 0.1
    methods: tuple[str, ...] = DEFAULT_MCQ_METHODS
    seeds: tuple[int, ...] = tuple(range(10))
    cal_fraction: float = 0.5
    group_by: tuple[str, ...] = ("dataset", "category")

    def __post_init__(self) -> None:
        check_alpha(self.alpha)
        for spec in self.methods:
            check_mcq_method(spec)


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=np.float64)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def evaluate_mcq(data: MCQData, protocol: MCQProtocol) -> dict[str, Any]:
    """Coverage, set size (overall and by correctness) and accuracy per method, split-averaged."""
    specs = [canonical_spec(*parse_method_spec(s)) for s in protocol.methods]
    X, valid, truth = data.merged()
    scale = option_scale(data)
    y = truth + 1.0
    correct_pred = data.correct[np.arange(data.n), data.prediction]
    report: dict[str, Any] = {
        "kind": "mcq",
        "source": data.source,
        "n": data.n,
        "n_read": data.n_read,
        "excluded": data.excluded.to_json(),
        "flags": data.flags.to_json(key="flag"),
        "alpha": protocol.alpha,
        "protocol": {"seeds": list(protocol.seeds), "cal_fraction": protocol.cal_fraction},
        "accuracy": float(correct_pred.mean()),
        "options": {"mean": float(data.n_options.mean()), "max": data.k},
        "methods": {},
    }
    pooled: dict[str, list[tuple[NDArray[np.int64], BoolArray]]] = {s: [] for s in specs}
    for spec in specs:
        cov, size, size_c, size_w, empty = [], [], [], [], []
        for seed in protocol.seeds:
            cal, test = split_indices(data.n, seed, protocol.cal_fraction)
            m = build_method(spec, alpha=protocol.alpha, scale=scale, random_state=seed)
            m.calibrate(X[cal], y[cal])
            sets = option_sets(m, X[test], valid[test])
            hit = sets[np.arange(test.size), truth[test]]
            sz = sets.sum(axis=1)
            ok = correct_pred[test]
            cov.append(hit.mean())
            size.append(sz.mean())
            size_c.append(sz[ok].mean() if ok.any() else np.nan)
            size_w.append(sz[~ok].mean() if (~ok).any() else np.nan)
            empty.append((sz == 0).mean())
            pooled[spec].append((test, sets))
        c, cs = _mean_std(cov)
        s, ss = _mean_std(size)
        report["methods"][spec] = {
            "coverage": c, "coverage_std": cs, "set_size": s, "set_size_std": ss,
            "set_size_correct": float(np.nanmean(size_c)) if not np.isnan(size_c).all() else None,
            "set_size_incorrect": float(np.nanmean(size_w)) if not np.isnan(size_w).all() else None,
            "empty": float(np.mean(empty)),
            "accuracy": report["accuracy"],
        }
    for f in protocol.group_by:
        if f not in data.fields:
            continue
        table: dict[str, Any] = {}
        values = data.fields[f]
        for g in sorted(set(values.tolist())):
            rows = values == g
            entry: dict[str, Any] = {"n": int(rows.sum()), "accuracy": float(correct_pred[rows].mean()), "methods": {}}
            for spec in specs:
                hits, sizes = [], []
                for test, sets in pooled[spec]:
                    sel = rows[test]
                    if sel.any():
                        hits.append(sets[np.flatnonzero(sel), truth[test][sel]])
                        sizes.append(sets[sel].sum(axis=1))
                if hits:
                    entry["methods"][spec] = {
                        "coverage": float(np.concatenate(hits).mean()),
                        "set_size": float(np.concatenate(sizes).mean()),
                    }
            table[g] = entry
        report[f"by_{f}"] = table
    return report
