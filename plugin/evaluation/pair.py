"""Pairwise judges: uncertainty quality of every signal and selective risk control over many splits.

SCOPE's protocol: 1000 random 50/50 splits of the pairs; on each, every
controller (:mod:`judgecp.selective`) chooses an acceptance threshold on the
chosen signal's uncertainty from the calibration half, at every level, and
the test half's risk among accepted judgments (FDR) and coverage (share
accepted) are recorded. All splits are handled at once as matrices.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.data.pair import PairData
from judgecp.errors import InputError, unknown
from judgecp.evaluation.diagrams import pair_reliability
from judgecp.progress import progress
from judgecp.protocol import Protocol
from judgecp.selective import ClopperPearson, RiskController, controller_classes
from judgecp.signals import Signal, risk_coverage_curve, signals, uncertainty_quality

FloatArray = NDArray[np.float64]


#: Splits handled at once: memory grows with block x pairs, not splits x pairs.
SPLIT_BLOCK = 16


@dataclass
class Splits:
    """A block of splits: calibration uncertainties and errors sorted per split, and the test halves.

    The rows of every split are taken from one global sort of the uncertainties, so a split costs
    a permutation and a few passes over the pairs, never a sort; within a tie the order differs
    from a per-split sort, which no controller can see (thresholds fall at the ends of ties).
    """

    u_sorted: FloatArray
    e_sorted: NDArray[np.bool_]
    u_test: FloatArray  # sorted ascending per split
    e_test: NDArray[np.bool_]

    @classmethod
    def blocks(
        cls, sig: Signal, labels: NDArray[np.int64], n_splits: int, cal_fraction: float, seed: int,
        block: int = SPLIT_BLOCK,
    ) -> Iterator[Splits]:
        """The splits of :func:`judgecp.protocol.split_matrix`, ``block`` at a time (the same splits)."""
        n = labels.size
        order = np.argsort(sig.uncertainty, kind="stable")
        u_all = sig.uncertainty[order]
        e_all = (sig.prediction != labels)[order]
        rng = np.random.default_rng(seed)
        n_cal = min(max(round(cal_fraction * n), 1), n - 1)
        for start in range(0, n_splits, block):
            b = min(block, n_splits - start)
            cal = rng.permuted(np.tile(np.arange(n), (b, 1)), axis=1)[:, :n_cal]
            in_cal = np.zeros((b, n), bool)
            np.put_along_axis(in_cal, cal, True, axis=1)
            in_cal = in_cal[:, order]
            u = np.broadcast_to(u_all, (b, n))
            e = np.broadcast_to(e_all, (b, n))
            yield cls(u[in_cal].reshape(b, n_cal), e[in_cal].reshape(b, n_cal),
                      u[~in_cal].reshape(b, n - n_cal), e[~in_cal].reshape(b, n - n_cal))

    @classmethod
    def of(cls, sig: Signal, labels: NDArray[np.int64], n_splits: int, cal_fraction: float, seed: int) -> Splits:
        """Every split at once (small pools)."""
        parts = list(cls.blocks(sig, labels, n_splits, cal_fraction, seed, block=max(n_splits, 1)))
        return parts[0]

    def test_risk(self, thresholds: FloatArray) -> tuple[FloatArray, FloatArray, NDArray[np.int64], NDArray[np.int64]]:
        """Per split: error rate among accepted test judgments (0 when none), share accepted, accepted, errors."""
        accepted = np.asarray([np.searchsorted(row, t, side="right") for row, t in zip(self.u_test, thresholds, strict=True)])
        cum = np.concatenate([np.zeros((self.e_test.shape[0], 1), np.int64), np.cumsum(self.e_test, axis=1)], axis=1)
        errors = cum[np.arange(cum.shape[0]), accepted]
        risk = np.where(accepted > 0, errors / np.maximum(accepted, 1), 0.0)
        return risk, accepted / self.u_test.shape[1], accepted, errors


def make_controller(name: str, delta: float = 0.1) -> RiskController:
    classes = controller_classes()
    if name not in classes:
        raise unknown("controller", name, classes)
    cls = classes[name]
    return cls(delta=delta) if issubclass(cls, ClopperPearson) else cls()


def run_controllers(sig: Signal, labels: NDArray[np.int64], protocol: Protocol) -> dict[str, dict[str, dict[str, float]]]:
    """Risk and coverage of every controller at every level over the splits (a block of splits at a time)."""
    ctrls = {name: make_controller(name, protocol.delta) for name in protocol.controller_names()}
    levels = protocol.levels("pairwise")
    parts: dict[tuple[str, float], list[tuple[Any, ...]]] = {(c, a): [] for c in ctrls for a in levels}
    bar = progress(protocol.n_splits("pairwise"), "pairwise splits")
    for sp in Splits.blocks(sig, labels, protocol.n_splits("pairwise"), protocol.cal_fraction, protocol.random_state):
        for name, ctrl in ctrls.items():
            for alpha in levels:
                parts[(name, alpha)].append(sp.test_risk(ctrl.thresholds(sp.u_sorted, sp.e_sorted, alpha, sig)))
        bar.update(sp.u_sorted.shape[0])
    bar.close()
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in ctrls:
        out[name] = {}
        for alpha in levels:
            risk, cov, n_acc, n_err = (np.concatenate(x) for x in zip(*parts[(name, alpha)], strict=True))
            pooled_acc = n_acc.sum()
            out[name][f"{alpha:g}"] = {
                "risk": float(risk.mean()),
                "risk_std": float(risk.std(ddof=1)) if risk.size > 1 else 0.0,
                "coverage": float(cov.mean()),
                "coverage_std": float(cov.std(ddof=1)) if cov.size > 1 else 0.0,
                # errors among all accepted judgments of all splits: E[S E]/E[S], SCOPE's eq. 1
                "pooled_risk": float(n_err.sum() / pooled_acc) if pooled_acc else 0.0,
                "abstain_all": float(np.mean(n_acc == 0)),
                "exceed": float(np.mean(risk > alpha)),
            }
    return out


def evaluate_pairs(data: PairData, protocol: Protocol) -> dict[str, Any]:
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
        "alphas": list(protocol.levels("pairwise")),
        "protocol": {"n_splits": protocol.n_splits("pairwise"), "cal_fraction": protocol.cal_fraction,
                     "signal": protocol.signal, "delta": protocol.delta, "seed": protocol.random_state},
        # Mean bidirectional preference entropy (nats, 0..ln 2): how undecided the judge is once
        # both orders are averaged; position bias that flips the verdict pushes it toward ln 2.
        "bpe_mean": float(sigs["bpe"].uncertainty.mean()),
        "uncertainty": {name: uncertainty_quality(s, data.labels) for name, s in sigs.items()},
        "controllers": run_controllers(sigs[protocol.signal], data.labels, protocol),
        "risk_coverage": {name: risk_coverage_curve(s, data.labels) for name, s in sigs.items()},
        "reliability_diagram": pair_reliability(sigs, data.labels),
    }
    for f, values in data.fields.items():
        report[f"by_{f}"] = {
            g: {"n": int((values == g).sum()),
                "uncertainty": {name: uncertainty_quality(s.take(values == g), data.labels[values == g])
                                for name, s in sigs.items()}}
            for g in sorted(set(values.tolist()))
        }
    return report
