"""Pairwise judges: uncertainty quality of every signal and selective risk control over many splits.

SCOPE's protocol: 1000 random 50/50 splits of the pairs; on each, every
controller (:mod:`judgecp.stats.selective`) chooses an acceptance threshold on the
chosen signal's uncertainty from the calibration half, at every level, and
the test half's risk among accepted judgments (FDR) and coverage (share
accepted) are recorded. All splits are handled at once as matrices.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError, unknown
from judgecp.base.progress import progress
from judgecp.data.pair import PairData
from judgecp.kinds.kind import Study, counts
from judgecp.kinds.metrics import (
    PAIRWISE_SIGNALS,
    UNCERTAINTY_KEYS,
    Entry,
    Metric,
    PrimaryMetric,
    count_metrics,
    pick,
    with_stderr,
)
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.registry import controller_classes
from judgecp.stats.diagrams import pair_reliability
from judgecp.stats.selective import ClopperPearson, RiskController
from judgecp.stats.signals import Signal, risk_coverage_curve, signals, uncertainty_quality

FloatArray = NDArray[np.float64]


#: Splits handled at once: memory grows with block x pairs, not splits x pairs.
SPLIT_BLOCK = 2


@contextmanager
def shuffled_rows(values: NDArray[Any], count: int, seed: int) -> Iterator[Iterator[NDArray[Any]]]:
    """``count`` shuffles of ``values`` in turn from ``default_rng(seed)``: the rows of
    ``permuted(tile(values, (count, 1)), axis=1)``, one at a time.

    A thread shuffles the next rows while the caller uses this one: numpy's
    shuffle releases the GIL, so on two cores the shuffles (half of SCOPE's
    time at a million pairs) overlap the rest. Only that thread draws from
    the generator, in order, so the rows are the same as in one thread.
    """
    ready: queue.Queue[Any] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def produce() -> None:
        try:
            rng = np.random.default_rng(seed)  # a seed it refuses is the caller's error too
            for _ in range(count):
                if stop.is_set():
                    return
                row = values.copy()
                rng.shuffle(row)
                ready.put(row)
        except BaseException as exc:  # handed to the caller, not lost in the thread
            ready.put(exc)

    def consume() -> Iterator[NDArray[Any]]:
        for _ in range(count):
            item = ready.get()
            if isinstance(item, BaseException):
                raise item
            yield item

    worker = threading.Thread(target=produce, name="judgecp-shuffles", daemon=True)
    worker.start()
    try:
        yield consume()
    finally:
        stop.set()
        while worker.is_alive():  # a caller that stopped early: free the thread's blocked put
            try:
                ready.get(timeout=0.05)
            except queue.Empty:
                pass
        worker.join()


@dataclass
class Splits:
    """A block of splits: each split's calibration uncertainties and errors, sorted, and the pool's.

    The rows of every split are taken from one global sort of the uncertainties, so a split costs
    a permutation and a few passes over the pairs, never a sort; within a tie the order differs
    from a per-split sort, which no controller can see (thresholds fall at the ends of ties).
    The test half of a split is the pool minus its calibration half, so its accepted judgments
    and errors at a threshold are the pool's minus the calibration half's: two binary searches.
    """

    u_sorted: FloatArray  # (splits, n_cal) calibration uncertainties, ascending
    e_sorted: NDArray[np.bool_]  # (splits, n_cal) their errors
    u_pool: FloatArray  # (n,) every uncertainty, ascending
    e_pool: NDArray[np.bool_]  # (n,) their errors
    in_cal: NDArray[np.bool_]  # (splits, n) calibration membership in the pool's order
    pool_cum: NDArray[np.int64]  # (n + 1,) errors among the pool's first j uncertainties
    cal_cum: NDArray[np.int32] = field(init=False)  # (splits, n_cal + 1) the same within each calibration half

    def __post_init__(self) -> None:
        zero = np.zeros((self.e_sorted.shape[0], 1), np.int32)
        self.cal_cum = np.concatenate([zero, np.cumsum(self.e_sorted, axis=1, dtype=np.int32)], axis=1)

    @classmethod
    def blocks(
        cls, sig: Signal, labels: NDArray[np.int64], n_splits: int, cal_fraction: float, seed: int,
        block: int = SPLIT_BLOCK,
    ) -> Iterator[Splits]:
        """The splits of :func:`judgecp.kinds.protocol.split_matrix`, ``block`` at a time (the same splits)."""
        n = labels.size
        order = np.argsort(sig.uncertainty, kind="stable")
        u_pool = sig.uncertainty[order]
        e_pool = (sig.prediction != labels)[order]
        pool_cum = np.concatenate([[0], np.cumsum(e_pool, dtype=np.int64)])
        # Shuffling each pair's position in the sorted pool rather than its index uses the same draws,
        # so the same splits, and skips a gather; int32 halves the memory traffic of the shuffle.
        position = np.empty(n, np.int32 if n < 2**31 else np.int64)
        position[order] = np.arange(n)
        n_cal = min(max(round(cal_fraction * n), 1), n - 1)
        with shuffled_rows(position, n_splits, seed) as rows:
            for start in range(0, n_splits, block):
                b = min(block, n_splits - start)
                in_cal = np.zeros((b, n), bool)
                u, e = np.empty((b, n_cal)), np.empty((b, n_cal), bool)
                for row in range(b):
                    in_cal[row, next(rows)[:n_cal]] = True
                    np.compress(in_cal[row], u_pool, out=u[row])
                    np.compress(in_cal[row], e_pool, out=e[row])
                yield cls(u, e, u_pool, e_pool, in_cal, pool_cum)

    @classmethod
    def of(cls, sig: Signal, labels: NDArray[np.int64], n_splits: int, cal_fraction: float, seed: int) -> Splits:
        """Every split at once (small pools)."""
        parts = list(cls.blocks(sig, labels, n_splits, cal_fraction, seed, block=max(n_splits, 1)))
        return parts[0]

    @property
    def u_test(self) -> FloatArray:
        """(splits, n_test) test uncertainties, ascending (materialised on request)."""
        b = self.in_cal.shape[0]
        out: FloatArray = np.broadcast_to(self.u_pool, self.in_cal.shape)[~self.in_cal].reshape(b, -1)
        return out

    @property
    def e_test(self) -> NDArray[np.bool_]:
        b = self.in_cal.shape[0]
        out: NDArray[np.bool_] = np.broadcast_to(self.e_pool, self.in_cal.shape)[~self.in_cal].reshape(b, -1)
        return out

    def test_risk(self, thresholds: FloatArray) -> tuple[FloatArray, FloatArray, NDArray[np.int64], NDArray[np.int64]]:
        """Per split: error rate among accepted test judgments (0 when none), share accepted, accepted, errors."""
        in_pool = np.searchsorted(self.u_pool, thresholds, side="right")
        in_cal = np.asarray(
            [np.searchsorted(row, t, side="right") for row, t in zip(self.u_sorted, thresholds, strict=True)]
        )
        accepted = in_pool - in_cal
        errors = self.pool_cum[in_pool] - self.cal_cum[np.arange(in_cal.size), in_cal]
        risk = np.where(accepted > 0, errors / np.maximum(accepted, 1), 0.0)
        n_test = self.u_pool.size - self.u_sorted.shape[1]
        return risk, accepted / n_test, accepted, errors


def make_controller(name: str, delta: float = 0.1) -> RiskController:
    classes = controller_classes()
    if name not in classes:
        raise unknown("controller", name, classes)
    cls = classes[name]
    return cls(delta=delta) if issubclass(cls, ClopperPearson) else cls()


def run_controllers(
    sig: Signal, labels: NDArray[np.int64], protocol: Protocol
) -> dict[str, dict[str, dict[str, float]]]:
    """Risk and coverage of every controller at every level over the splits (a block of splits at a time)."""
    ctrls = {name: make_controller(name, protocol.delta) for name in protocol.controller_names()}
    levels = protocol.levels("pairwise")
    parts: dict[tuple[str, float], list[tuple[Any, ...]]] = {(c, a): [] for c in ctrls for a in levels}
    bar = progress(protocol.n_splits("pairwise"), "pairwise splits")
    for sp in Splits.blocks(sig, labels, protocol.n_splits("pairwise"), protocol.cal_fraction, protocol.random_state):
        for name, ctrl in ctrls.items():
            for alpha, thresholds in zip(
                levels, ctrl.thresholds_at_levels(sp.u_sorted, sp.e_sorted, levels, sig), strict=True
            ):
                parts[(name, alpha)].append(sp.test_risk(thresholds))
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


# -- the study part of the pairwise kind ----------------------------------------------------------


def pairwise_metrics(protocol: Protocol) -> list[Metric]:
    """``n_pairs``, ``excluded``, ``single_order`` (pairs judged in one order), ``bpe`` (mean bidirectional
    preference entropy, nats); per signal ``accuracy``/``ece``/``auroc``/``auprc``; per controller and
    level ``risk_<c>_<alpha>`` (error among accepted) and ``coverage_<c>_<alpha>`` (share accepted),
    with ``_stderr``."""
    metrics = [
        *count_metrics("n_pairs"),
        Metric(
            "single_order",
            lambda r: sum(int(f["count"]) for f in r.get("flags", []) if f.get("flag") == "single_order"),
            False,
            always=True,
        ),
        Metric("bpe", pick("bpe_mean"), False),
    ]
    for signal in PAIRWISE_SIGNALS:
        metrics += [Metric(f"{key}_{signal}", pick("uncertainty", Entry(signal), key), key != "ece")
                    for key in UNCERTAINTY_KEYS]
    for controller in protocol.controller_names():
        for alpha in protocol.levels("pairwise"):
            a = f"{alpha:g}"
            risk = f"risk_{controller}_{a}"
            metrics += [Metric(risk, accepted_risk(controller, a, "risk"), False),
                        Metric(f"{risk}_stderr", accepted_risk(controller, a, "risk_std"), None)]
            metrics += with_stderr(f"coverage_{controller}_{a}", ("controllers", controller, a, "coverage"), True)
    return metrics


def accepted_risk(controller: str, level: str, key: str) -> Callable[[Mapping[str, Any]], Any]:
    """A controller's risk (error among accepted verdicts) at a level: undefined (None) when it
    accepted no verdict in any split, as in the headline (:meth:`PairwiseStudy.headline`); the study
    counts such a split's risk as 0, which would read as a perfect judge."""
    read_risk = pick("controllers", controller, level, key)
    read_abstain = pick("controllers", controller, level, "abstain_all")

    def read(report: Mapping[str, Any]) -> Any:
        value = read_risk(report)
        return None if value is not None and read_abstain(report) == 1.0 else value

    return read


class PairwiseStudy(Study):
    """Uncertainty quality of every signal and selective risk control over many splits (:func:`evaluate_pairs`)."""

    default_splits = 1000
    levels_are_controller_levels = True
    settings = frozenset({"alpha", "alphas", "splits", "random_state", "cal_fraction", "group", "signal",
                          "controllers", "delta"})

    def run(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        return evaluate_pairs(data, protocol)

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None) -> list[Metric]:
        if body is not None:
            controllers = tuple(body["controllers"])
            levels = tuple(float(a) for a in next(iter(body["controllers"].values()), {}))
            protocol = protocol.with_(controllers=controllers or None, alphas=levels or None, alpha=None)
        return pairwise_metrics(protocol)

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        out = counts(body)
        level = f"{protocol.level:g}"
        if body.get("controllers"):
            out["alpha"] = protocol.level
            for name, levels in body["controllers"].items():
                entry = levels.get(level)
                if entry is not None:
                    # the error among accepted verdicts: undefined when the controller accepted none
                    # in any split (the study counts such a split's risk as 0; a headline of 0 would
                    # read as a perfect judge)
                    abstain_all = entry["abstain_all"]
                    risk = None if abstain_all == 1.0 else entry["risk"]
                    out[name] = {"coverage": entry["coverage"], "risk": risk,
                                 "abstain_all": abstain_all}
        signal = (body.get("uncertainty") or {}).get(protocol.signal)
        if signal:
            out[protocol.signal] = {k: signal.get(k) for k in ("accuracy", "auroc", "auprc", "ece")}
        out["single_order"] = sum(int(f["count"]) for f in body.get("flags", []) if f.get("flag") == "single_order")
        return out

    def primary_metrics(self, flat: Mapping[str, Any]) -> list[PrimaryMetric]:
        """SCOPE's (else the first controller's) share of pairs accepted at the headline level, then
        the error among them: a judge abstaining on everything reads coverage 0 and risk undefined,
        never risk 0 alone."""
        controllers = [k[: -len("|coverage")] for k in flat if k.endswith("|coverage")]
        if not controllers:
            return []
        name = "scope" if "scope" in controllers else controllers[0]
        level = f"{flat.get('alpha'):g}" if isinstance(flat.get("alpha"), (int, float)) else ""
        return [PrimaryMetric(f"{name}|coverage", True, 1.0, f"coverage_{name}_{level}"),
                PrimaryMetric(f"{name}|risk", False, 0.0, f"risk_{name}_{level}")]
