"""Pairwise judges: bidirectional preference entropy and selective risk control (SCOPE).

A pairwise record is one judgment of one pair in one order::

    pair_id, order (fwd|rev), lp_A, lp_B, label

``lp_A``/``lp_B`` are the judge's log-probabilities of the tokens "A" and "B"
(any finite reals: only their difference matters) and ``label`` is the human
preference *in the original order* (A: the response shown first in the
forward order). In the reversed record the responses are swapped, so the
judge's "B" there means it prefers the original response A.

Uncertainty signals (lower = more certain; each with a prediction and a
confidence for ECE/AUROC/AUPRC):

* ``bpe`` (SCOPE eq. 2-3): ``p̄ = (p_fwd + p_rev)/2`` with both probabilities
  that the original A is preferred; uncertainty = binary entropy of p̄ in
  nats; confidence ``max(p̄, 1 - p̄)``; prediction A iff ``p̄ >= 0.5``.
* ``predictive``: the single-order maximum softmax probability of the
  forward record (the reversed one when the pair has no forward record).
* ``verbalized`` / ``agreement``: a confidence the record carries
  (``verbalized_confidence``; ``annotator_agreement`` of simulated
  annotators), with the single-order prediction.

A pair with only one order is kept: BPE falls back to that order's
probability and the pair is flagged ``single_order``.

Controllers choose a threshold on the uncertainty from the calibration
split; a test judgment is accepted iff its uncertainty is ``<= threshold``
(see :mod:`judgecp.selective`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.data import read_table
from judgecp.errors import InputError
from judgecp.exclusions import Exclusions

FloatArray = NDArray[np.float64]

LABELS_A = {"a", "1", "fwd_a", "model_a", "response_a"}
LABELS_B = {"b", "2", "model_b", "response_b"}
LABELS_TIE = {"tie", "tie (bothbad)", "tie_bothbad", "both", "none", "0.5", "c"}
ORDERS_FWD = {"fwd", "forward", "0", "ab", "original"}
ORDERS_REV = {"rev", "reverse", "reversed", "1", "ba", "swapped"}


@dataclass
class PairwiseData:
    """One row per pair, both orders aligned to the original response A."""

    pair_ids: NDArray[np.str_]
    p_fwd: FloatArray  # P(original A preferred | forward prompt); NaN if absent
    p_rev: FloatArray  # P(original A preferred | reversed prompt); NaN if absent
    labels: NDArray[np.int64]  # 1: humans prefer the original A, 0: B
    verbalized: FloatArray | None = None
    agreement: FloatArray | None = None
    fields: dict[str, NDArray[np.str_]] = field(default_factory=dict)
    excluded: Exclusions = field(default_factory=Exclusions)
    flags: Exclusions = field(default_factory=Exclusions)
    n_read: int = 0
    source: str = ""

    @property
    def n(self) -> int:
        return int(self.labels.size)

    def swapped(self) -> PairwiseData:
        """The same pairs with every order reversed (forward <-> reversed records).

        Swapping turns each reversed record into a forward one and vice
        versa; the original-A probabilities are the same numbers, so BPE is
        unchanged (the invariance tested in the suite), while single-order
        signals see the other order.
        """
        return PairwiseData(
            self.pair_ids, self.p_rev.copy(), self.p_fwd.copy(), self.labels.copy(),
            self.verbalized, self.agreement, self.fields, self.excluded, self.flags, self.n_read, self.source,
        )

    @classmethod
    def from_arrays(
        cls, p_fwd: Any, p_rev: Any, labels: Any, *, pair_ids: Sequence[Any] | None = None, **kw: Any
    ) -> PairwiseData:
        pf = np.asarray(p_fwd, dtype=np.float64)
        ids = np.asarray([str(i) for i in (pair_ids if pair_ids is not None else range(pf.size))])
        return cls(ids, pf, np.asarray(p_rev, dtype=np.float64), np.asarray(labels, dtype=np.int64), **kw)


# -- reading ---------------------------------------------------------------------


def _norm(value: Any) -> str:
    return str(value).strip().lower() if value is not None else ""


def _float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out


def _two_way(row: dict[str, Any]) -> tuple[float | None, str | None]:
    """P(label "A" in this record's own order), or an exclusion reason.

    From log-probabilities ``lp_A``/``lp_B`` (or ``logprobs: {"A", "B"}``):
    softmax over the two. From probabilities ``p_A``/``p_B``: they must be in
    [0, 1] and sum to at most 1 (a sum below 1 is the rest of the vocabulary
    and is renormalised); a sum above 1 is an error in the data.
    """
    lp = row.get("logprobs")
    if isinstance(lp, dict):
        a, b = _float(lp.get("A")), _float(lp.get("B"))
    elif "lp_A" in row or "lp_B" in row:
        a, b = _float(row.get("lp_A")), _float(row.get("lp_B"))
    elif "p_A" in row or "p_B" in row:
        pa, pb = _float(row.get("p_A")), _float(row.get("p_B"))
        if pa is None or pb is None or math.isnan(pa) or math.isnan(pb):
            return None, "probability_missing"
        if pa < 0 or pb < 0 or pa + pb > 1 + 1e-6 or pa + pb <= 0:
            return None, "probabilities_invalid"
        return pa / (pa + pb), None
    else:
        return None, "logprob_missing"
    if a is None or b is None:
        return None, "logprob_missing"
    if math.isnan(a) or math.isnan(b) or a == math.inf or b == math.inf:
        return None, "logprob_invalid"
    if a == -math.inf and b == -math.inf:
        return None, "logprob_invalid"
    m = max(a, b)
    ea, eb = math.exp(a - m), math.exp(b - m)
    return ea / (ea + eb), None


def load_pairwise(path: str | Path, **options: Any) -> PairwiseData:
    """Read pairwise records from CSV/JSONL (see the module docstring)."""
    excluded = Exclusions()
    _, rows = read_table(path, excluded)
    return pairwise_from_records(rows, source=str(path), excluded=excluded, **options)


def pairwise_from_records(
    records: Sequence[dict[str, Any]],
    *,
    source: str = "records",
    excluded: Exclusions | None = None,
    group: str | None = None,
) -> PairwiseData:
    """Join forward and reversed records by ``pair_id``, with counted exclusions.

    Exclusions: ``pair_id_missing``, ``order_unknown``, ``label_missing``,
    ``label_unknown``, ``tie_label`` (ties have no binary ground truth, as in
    SCOPE), ``label_conflict`` (the two orders disagree on the human label),
    ``duplicate_order`` (two records for the same pair and order),
    ``logprob_missing``/``logprob_invalid``/``probability_missing``/
    ``probabilities_invalid`` (no usable judge output in either order),
    ``group_missing``. Flag: ``single_order``.
    """
    excluded = excluded if excluded is not None else Exclusions()
    flags = Exclusions()
    if not records:
        raise InputError(f"{source}: no records")
    n_read = len(records) + excluded.total
    pairs: dict[str, dict[str, Any]] = {}
    bad_pairs: set[str] = set()
    for r in records:
        pid = str(r.get("pair_id", "")).strip()
        if not pid:
            excluded.add("pair_id_missing", r.get("id"))
            continue
        order = _norm(r.get("order", "fwd"))
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
        entry["row"][order] = r
        entry["labels"].append(_norm(r.get("label")))
    ids, pf, pr, ys, verb, agree, groups = [], [], [], [], [], [], []
    for pid, entry in pairs.items():
        if pid in bad_pairs:
            continue
        labels = set(entry["labels"])
        if labels <= {""}:
            excluded.add("label_missing", pid)
            continue
        labels.discard("")
        if len(labels) > 1:
            excluded.add("label_conflict", pid)
            continue
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
            p, why = _two_way(row)
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
        first = entry["row"].get("fwd") or entry["row"]["rev"]
        g = None
        if group is not None:
            g = first.get(group)
            if g is None or not str(g).strip():
                excluded.add("group_missing", pid)
                continue
        ids.append(pid)
        pf.append(probs.get("fwd", math.nan))
        pr.append(probs.get("rev", math.nan))
        ys.append(1 if lab in LABELS_A else 0)
        vc = _float(first.get("verbalized_confidence"))
        verb.append(math.nan if vc is None else vc)
        ag = _float(first.get("annotator_agreement"))
        agree.append(math.nan if ag is None else ag)
        groups.append(str(g) if g is not None else "")
    if not ids:
        reasons = ", ".join(f"{k}: {v}" for k, v in excluded.counts.items())
        raise InputError(f"{source}: no usable pairs ({reasons})")
    verb_arr = np.asarray(verb)
    agree_arr = np.asarray(agree)
    return PairwiseData(
        pair_ids=np.asarray(ids),
        p_fwd=np.asarray(pf),
        p_rev=np.asarray(pr),
        labels=np.asarray(ys, dtype=np.int64),
        verbalized=None if np.isnan(verb_arr).all() else verb_arr,
        agreement=None if np.isnan(agree_arr).all() else agree_arr,
        fields={group: np.asarray(groups)} if group else {},
        excluded=excluded,
        flags=flags,
        n_read=n_read,
        source=source,
    )


# -- uncertainty signals -----------------------------------------------------------


def binary_entropy(p: FloatArray) -> FloatArray:
    """Binary entropy in nats, 0 at p in {0, 1}."""
    q = np.clip(p, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(np.where(q > 0, q * np.log(q), 0.0) + np.where(q < 1, (1 - q) * np.log(1 - q), 0.0))
    out: FloatArray = h
    return out


@dataclass(frozen=True)
class Signal:
    """An uncertainty signal evaluated on every pair."""

    name: str
    uncertainty: FloatArray  # lower = more certain
    confidence: FloatArray  # in [0.5, 1] for binary signals; [0, 1] for carried confidences
    prediction: NDArray[np.int64]  # 1: original A preferred
    #: Uncertainty range, known before seeing data.
    low: float
    high: float
    #: Lowest possible confidence (0.5 for a binary choice).
    confidence_floor: float = 0.5

    def uncertainty_at_confidence(self, c: float) -> float:
        """The uncertainty value whose confidence is ``c`` (heuristic thresholding)."""
        if self.name == "bpe":
            return float(binary_entropy(np.asarray([c]))[0])
        return 1.0 - c


def _single_order(data: PairwiseData) -> FloatArray:
    return np.where(np.isnan(data.p_fwd), data.p_rev, data.p_fwd)


def signals(data: PairwiseData) -> dict[str, Signal]:
    """Every signal the records support."""
    out: dict[str, Signal] = {}
    both = np.column_stack([data.p_fwd, data.p_rev])
    pbar = np.nanmean(both, axis=1)
    out["bpe"] = Signal(
        "bpe", binary_entropy(pbar), np.maximum(pbar, 1 - pbar), (pbar >= 0.5).astype(np.int64), 0.0, math.log(2)
    )
    p1 = _single_order(data)
    conf1 = np.maximum(p1, 1 - p1)
    pred1 = (p1 >= 0.5).astype(np.int64)
    out["predictive"] = Signal("predictive", 1 - conf1, conf1, pred1, 0.0, 0.5)
    for name, values in (("verbalized", data.verbalized), ("agreement", data.agreement)):
        if values is not None:
            c = np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0)
            out[name] = Signal(name, 1 - c, c, pred1, 0.0, 1.0, 0.0)
    return out


# -- uncertainty quality -------------------------------------------------------------


def expected_calibration_error(confidence: FloatArray, correct: NDArray[Any], bins: int = 10) -> float:
    """ECE with ``bins`` equal-width confidence bins on [0, 1] (Naeini et al. 2015)."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.digitize(confidence, edges[1:-1], right=True), 0, bins - 1)
    ece = 0.0
    n = confidence.size
    for b in range(bins):
        m = idx == b
        if m.any():
            ece += m.sum() / n * abs(float(correct[m].mean()) - float(confidence[m].mean()))
    return ece


def uncertainty_quality(sig: Signal, labels: NDArray[np.int64]) -> dict[str, float | None]:
    """Accuracy, ECE, AUROC and AUPRC of a signal's confidence for its own correctness."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    correct = (sig.prediction == labels).astype(np.int64)
    both = 0 < correct.sum() < correct.size
    return {
        "accuracy": float(correct.mean()),
        "ece": expected_calibration_error(sig.confidence, correct),
        "auroc": float(roc_auc_score(correct, sig.confidence)) if both else None,
        "auprc": float(average_precision_score(correct, sig.confidence)) if both else None,
    }


def risk_coverage_curve(sig: Signal, labels: NDArray[np.int64], points: int = 21) -> list[dict[str, float]]:
    """Risk among the most certain judgments at coverage 0, 5%, ..., 100%."""
    order = np.argsort(sig.uncertainty, kind="stable")
    errors = (sig.prediction != labels)[order]
    cum = np.cumsum(errors)
    out = []
    for cov in np.linspace(0, 1, points):
        k = round(cov * labels.size)
        out.append({"coverage": float(cov), "risk": float(cum[k - 1] / k) if k else 0.0})
    return out


# -- protocol ------------------------------------------------------------------------------

DEFAULT_ALPHAS = (0.05, 0.10, 0.15, 0.20, 0.25)
DEFAULT_CONTROLLERS = ("scope", "clopper_pearson", "naive", "heuristic", "vanilla")


@dataclass(frozen=True)
class PairwiseProtocol:
    """Repeated random calibration/test splits of the pairs (SCOPE: 1000 splits, 50/50)."""

    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    n_splits: int = 1000
    cal_fraction: float = 0.5
    signal: str = "bpe"
    controllers: tuple[str, ...] = DEFAULT_CONTROLLERS
    delta: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        from judgecp.conformal import check_alpha

        for a in self.alphas:
            check_alpha(a)
        if self.n_splits < 1:
            raise InputError(f"n_splits must be >= 1, got {self.n_splits}")
        if not 0 < self.cal_fraction < 1:
            raise InputError(f"cal_fraction must be in (0, 1), got {self.cal_fraction}")


def split_matrix(n: int, n_splits: int, cal_fraction: float, seed: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``(splits, n_cal)`` and ``(splits, n_test)`` index matrices, one random split per row."""
    rng = np.random.default_rng(seed)
    perms = rng.permuted(np.tile(np.arange(n), (n_splits, 1)), axis=1)
    n_cal = min(max(round(cal_fraction * n), 1), n - 1)
    return perms[:, :n_cal], perms[:, n_cal:]


@dataclass
class Splits:
    """Calibration uncertainties sorted per split, and the test halves."""

    u_sorted: FloatArray
    e_sorted: NDArray[np.bool_]
    u_test: FloatArray
    e_test: NDArray[np.bool_]

    @classmethod
    def of(cls, sig: Signal, labels: NDArray[np.int64], protocol: PairwiseProtocol) -> Splits:
        errors = sig.prediction != labels
        cal, test = split_matrix(labels.size, protocol.n_splits, protocol.cal_fraction, protocol.seed)
        u_cal = sig.uncertainty[cal]
        order = np.argsort(u_cal, axis=1, kind="stable")
        return cls(
            np.take_along_axis(u_cal, order, axis=1),
            np.take_along_axis(errors[cal], order, axis=1),
            sig.uncertainty[test],
            errors[test],
        )


def make_controller(name: str, protocol: PairwiseProtocol) -> Any:
    from judgecp.selective import ClopperPearson, controller_classes

    classes = controller_classes()
    if name not in classes:
        raise InputError(f"unknown controller {name!r}; available: {', '.join(classes)}")
    cls = classes[name]
    return cls(delta=protocol.delta) if issubclass(cls, ClopperPearson) else cls()


def run_controllers(
    sig: Signal, labels: NDArray[np.int64], protocol: PairwiseProtocol
) -> dict[str, dict[str, dict[str, float]]]:
    """Risk and coverage of every controller at every level over the splits."""
    from judgecp.selective import apply

    ctrls = {name: make_controller(name, protocol) for name in protocol.controllers}
    sp = Splits.of(sig, labels, protocol)
    u_test, e_test = sp.u_test, sp.e_test
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, ctrl in ctrls.items():
        out[name] = {}
        for alpha in protocol.alphas:
            thr = ctrl.thresholds(sp.u_sorted, sp.e_sorted, alpha, sig)
            risk, cov, n_acc = apply(thr, u_test, e_test)
            pooled_acc = n_acc.sum()
            out[name][f"{alpha:g}"] = {
                "risk": float(risk.mean()),
                "risk_std": float(risk.std(ddof=1)) if risk.size > 1 else 0.0,
                "coverage": float(cov.mean()),
                "coverage_std": float(cov.std(ddof=1)) if cov.size > 1 else 0.0,
                # errors among all accepted judgments of all splits: E[S E]/E[S], SCOPE's eq. 1
                "pooled_risk": float(((u_test <= thr[:, None]) & e_test).sum() / pooled_acc) if pooled_acc else 0.0,
                "abstain_all": float(np.mean(n_acc == 0)),
                "exceed": float(np.mean(risk > alpha)),
            }
    return out


def evaluate_pairwise(data: PairwiseData, protocol: PairwiseProtocol) -> dict[str, Any]:
    """Uncertainty quality of every signal and the controllers on the chosen one."""
    sigs = signals(data)
    if protocol.signal not in sigs:
        raise InputError(f"signal {protocol.signal!r} is not available; the records support {', '.join(sigs)}")
    if data.n < 4:
        raise InputError(f"need at least 4 pairs for calibration/test splits, got {data.n}")
    report: dict[str, Any] = {
        "kind": "pairwise",
        "source": data.source,
        "n": data.n,
        "n_read": data.n_read,
        "excluded": data.excluded.to_json(),
        "flags": data.flags.to_json(key="flag"),
        "alphas": list(protocol.alphas),
        "protocol": {"n_splits": protocol.n_splits, "cal_fraction": protocol.cal_fraction, "signal": protocol.signal,
                     "delta": protocol.delta, "seed": protocol.seed},
        # Mean bidirectional preference entropy (nats, 0..ln 2): how undecided the judge is once
        # both orders are averaged; position bias that flips the verdict pushes it toward ln 2.
        "bpe_mean": float(sigs["bpe"].uncertainty.mean()),
        "uncertainty": {name: uncertainty_quality(s, data.labels) for name, s in sigs.items()},
        "controllers": run_controllers(sigs[protocol.signal], data.labels, protocol),
        "risk_coverage": {name: risk_coverage_curve(s, data.labels) for name, s in sigs.items()},
    }
    for f, values in data.fields.items():
        report[f"by_{f}"] = {
            g: {"n": int((values == g).sum()),
                "uncertainty": {name: uncertainty_quality(_take(s, values == g), data.labels[values == g]) for name, s in sigs.items()}}
            for g in sorted(set(values.tolist()))
        }
    return report


def _take(sig: Signal, rows: NDArray[np.bool_]) -> Signal:
    return Signal(sig.name, sig.uncertainty[rows], sig.confidence[rows], sig.prediction[rows], sig.low, sig.high,
                  sig.confidence_floor)


def simulate_pairwise_judge(
    n: int = 2000,
    *,
    seed: int = 0,
    position_bias: float = 1.5,
    skill: float = 4.0,
    noise: float = 1.5,
    human_noise: float = 0.5,
) -> PairwiseData:
    """A position-biased judge on exchangeable pairs (for tests, benchmarks and examples).

    Each pair has a latent quality difference ``d ~ N(0, 1)``; humans prefer
    the original A iff ``d + human noise > 0``. The judge's logit for
    "original A is better" is ``skill * d + noise`` plus ``position_bias``
    toward whichever response it sees first: forward
    ``P(A) = sigmoid(s + b)``, reversed ``P(original A) = sigmoid(s - b)``.
    Averaging the orders cancels most of the bias; a single order does not.
    """
    rng = np.random.default_rng(seed)
    d = rng.normal(size=n)
    labels = (d + rng.normal(scale=human_noise, size=n) > 0).astype(np.int64)
    s = skill * d + rng.normal(scale=noise, size=n)
    p_fwd = 1 / (1 + np.exp(-(s + position_bias)))
    p_rev = 1 / (1 + np.exp(-(s - position_bias)))
    data = PairwiseData.from_arrays(p_fwd, p_rev, labels, pair_ids=[f"pair{i:05d}" for i in range(n)])
    data.n_read = n
    data.source = f"synthetic position-biased judge (simulate_pairwise_judge, n={n}, seed={seed})"
    return data
