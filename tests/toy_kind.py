"""A new kind of judge in one file: a yes/no verdict with its probability of "yes" (tests/test_toy_kind.py).

It is what docs/plugins.md's "How to add a kind of judge" describes: a kind is
its parts (:mod:`judgecp.kinds.kind`), each a small object: a table reader, a
repeated-split study (split-conformal LAC sets over {no, yes}) with its
metric names, a presenter (a console line, a report table), and a saveable
calibrator (state as numbers, checked on load) that ``judgecp apply`` carries
into new runs. judgecp's core knows nothing of it: the test registers it
through the ``register_kinds`` hook, as a plugin's entry point would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TextIO

import numpy as np
from numpy.typing import NDArray

from judgecp.base.errors import InputError
from judgecp.base.exclusions import Exclusions
from judgecp.base.hookspecs import hookimpl
from judgecp.kinds import Calibration, Kind, Presenter, Reader, Study
from judgecp.kinds.calibration import ApplyParts, Fitted, KindParts, coverage_section, set_summary
from judgecp.kinds.metrics import Metric, excluded_count, pick, set_summary_metrics, with_stderr
from judgecp.kinds.protocol import split_indices
from judgecp.present.console import write_head
from judgecp.present.render import Table
from judgecp.stats.checks import GroupCount, beta_binomial_pvalue
from judgecp.stats.conformal import conformal_quantile, conformal_rank

YES = ("yes", "y", "1", "true")
NO = ("no", "n", "0", "false")


@dataclass
class VerdictData:
    """Valid rows: ids, P(yes), and the human verdict (1 yes, 0 no, NaN unlabeled)."""

    ids: NDArray[Any]
    p_yes: NDArray[np.float64]
    labels: NDArray[np.float64]
    excluded: Exclusions = field(default_factory=Exclusions)
    flags: Exclusions = field(default_factory=Exclusions)
    fields: dict[str, NDArray[Any]] = field(default_factory=dict)
    n_read: int = 0
    source: str = ""
    kind: str = "verdict"

    @property
    def n(self) -> int:
        return int(self.labels.size)

    @property
    def labeled(self) -> NDArray[np.bool_]:
        return ~np.isnan(self.labels)

    def take(self, rows: Any) -> VerdictData:
        return VerdictData(self.ids[rows], self.p_yes[rows], self.labels[rows], self.excluded, self.flags,
                           {k: v[rows] for k, v in self.fields.items()}, self.n_read, self.source)


def scores(p_yes: NDArray[np.float64], labels: NDArray[np.float64]) -> NDArray[np.float64]:
    """LAC's conformity score: 1 - P(the human verdict)."""
    out: NDArray[np.float64] = 1.0 - np.where(labels == 1, p_yes, 1.0 - p_yes)
    return out


def sets(p_yes: NDArray[np.float64], threshold: float) -> NDArray[np.bool_]:
    """``(n, 2)`` sets over (no, yes): a verdict is in when 1 - P(it) <= threshold."""
    out: NDArray[np.bool_] = np.column_stack([p_yes <= threshold, 1.0 - p_yes <= threshold])
    return out


class VerdictSets:
    """The calibrated estimator: a LAC threshold from the calibration items' scores."""

    def __init__(self, alpha: float) -> None:
        self.alpha = alpha
        self.scores_ = np.zeros(0)
        self.threshold_ = np.inf

    def calibrate(self, data: VerdictData) -> VerdictSets:
        self.scores_ = np.sort(scores(data.p_yes, data.labels))
        self.threshold_ = conformal_quantile(self.scores_, self.alpha)
        return self

    def state_dict(self) -> dict[str, Any]:
        return {"scores": self.scores_.tolist(), "threshold": self.threshold_}

    @classmethod
    def from_state(cls, reader: Any, alpha: float, n: int) -> VerdictSets:
        est = cls(alpha)
        est.scores_ = reader.floats("scores", size=n, low=0.0, high=1.0, ascending=True)
        est.threshold_ = reader.number("threshold", low=0.0, high=1.0)
        if est.threshold_ != conformal_quantile(est.scores_, alpha):
            reader.fail("threshold", "is not the quantile of the stored scores")
        reader.finish()
        return est


class VerdictReader(Reader):
    """A table with ``id``, ``p_yes`` and (when labeled) ``label`` yes/no."""

    columns: ClassVar[dict[str, tuple[str, ...]]] = {"label": ("label", "verdict")}

    def read(self, table: Any, fields: Any, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> VerdictData:
        self.check_options(options, "verdict")
        col = table.columns
        for needed in ("id", "p_yes"):
            if needed not in col:
                raise InputError(f"{table.source}: no {needed!r} column (a verdict table has id, p_yes, label)")
        excluded = table.excluded
        ids, p, y = [], [], []
        for i in range(table.n_rows):
            rid, label = str(col["id"][i]), str(col.get("label", [""] * table.n_rows)[i] or "").strip().lower()
            try:
                prob = float(col["p_yes"][i])
            except (TypeError, ValueError):
                prob = float("nan")
            if not 0.0 <= prob <= 1.0:
                excluded.add("p_yes_invalid", rid)
            elif label in YES + NO:
                ids.append(rid), p.append(prob), y.append(1.0 if label in YES else 0.0)
            elif label in ("", "none") and not require_label:
                ids.append(rid), p.append(prob), y.append(float("nan"))
            else:
                excluded.add("label_missing" if label in ("", "none") else "label_not_a_verdict", rid)
        return VerdictData(np.asarray(ids), np.asarray(p, float), np.asarray(y, float), excluded,
                           n_read=table.n_read, source=table.source)

    def to_records(self, data: VerdictData) -> list[dict[str, Any]]:
        return [{"id": str(i), "p_yes": float(p), "label": None if np.isnan(y) else ("yes" if y == 1 else "no")}
                for i, p, y in zip(data.ids.tolist(), data.p_yes.tolist(), data.labels.tolist(), strict=True)]


class VerdictStudy(Study):
    """LAC sets over {no, yes} on repeated calibration/test splits."""

    settings = frozenset({"alpha", "splits", "seeds", "random_state", "cal_fraction"})

    def run(self, data: VerdictData, protocol: Any) -> dict[str, Any]:
        if data.n < 4:
            raise InputError(f"need at least 4 usable verdicts, got {data.n}")
        alpha, seeds = protocol.level, protocol.split_seeds("verdict")
        coverage, size = [], []
        for seed in seeds:
            cal, test = split_indices(data.n, seed, protocol.cal_fraction)
            q = conformal_quantile(scores(data.p_yes[cal], data.labels[cal]), alpha)
            s = sets(data.p_yes[test], q)
            coverage.append(float(s[np.arange(test.size), data.labels[test].astype(int)].mean()))
            size.append(float(s.sum(axis=1).mean()))
        return {"kind": "verdict", "source": data.source, "n": data.n, "n_read": data.n_read,
                "excluded": data.excluded.to_json(), "flags": [], "alpha": alpha, "protocol": {"seeds": list(seeds)},
                "coverage": float(np.mean(coverage)), "coverage_std": float(np.std(coverage, ddof=1)),
                "set_size": float(np.mean(size))}

    def metrics(self, protocol: Any, body: Mapping[str, Any] | None = None) -> list[Metric]:
        return [Metric("n", pick("n"), None, always=True), Metric("excluded", excluded_count, False, always=True),
                *with_stderr("coverage", ("coverage",), None), Metric("set_size", pick("set_size"), False)]


class VerdictPresenter(Presenter):
    title = "Yes/no verdicts: conformal sets"

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        write_head(body, out, self.noun)
        out.write(f"  coverage {body['coverage']:.3f} (target {1 - body['alpha']:.2f}), mean set size "
                  f"{body['set_size']:.2f}\n")

    def report_tables(self, runs: Any) -> list[Any]:
        rows = [[r.name, f"{r.report['coverage']:.3f}", f"{r.report['set_size']:.2f}"] for r in runs]
        return [Table(["judge", "coverage", "set size"], rows, "LAC sets over {no, yes}.")]


class VerdictCalibration(Calibration):
    """A saved LAC threshold (its scores as numbers, checked on load); the PPI proxy is P(yes)."""

    ppi_target = "share of yes"
    default_method = "lac"

    def proxy_and_target(self, data: VerdictData) -> tuple[Any, Any]:
        return data.p_yes, data.labels

    def drift_statistic(self, data: VerdictData, signal: str) -> tuple[str, Any]:
        return "p_yes", data.p_yes

    def fit(self, data: VerdictData, *, method: str | None, alpha: float, groups: str | None,
            random_state: int | None, signal: str, delta: float) -> Any:
        if method not in (None, "lac") or groups:
            raise InputError("a verdict calibrator is LAC, without groups")
        return Fitted(VerdictSets(alpha).calibrate(data), "lac")

    def parts(self, reader: Any, method: str, alpha: float, n: int) -> Any:
        if method != "lac":
            reader.fail("method", f"a verdict calibrator is 'lac', not {method!r}")
        est = VerdictSets.from_state(reader.child("state"), alpha, n)
        return KindParts(est, None, None, None, "p_yes", (0.0, 1.0), (0.0, 1.0))

    def apply(self, cal: Any, data: VerdictData, *, groups: str | None) -> Any:
        s = sets(data.p_yes, cal.estimator.threshold_)
        named = [[v for v, inside in zip(("no", "yes"), row, strict=True) if inside] for row in s.tolist()]
        labeled = data.labeled
        section = None
        if labeled.any():
            covered = np.zeros(data.n, bool)
            rows = np.flatnonzero(labeled)
            covered[rows] = s[rows, data.labels[rows].astype(int)]
            n_cal = cal.n_calibration
            check = beta_binomial_pvalue([GroupCount("all", int(covered[rows].sum()), int(rows.size), n_cal,
                                                     conformal_rank(n_cal, cal.alpha))])
            section = coverage_section(covered, labeled, cal.alpha, check)
        outputs = {str(i): {"set": named[k]} for k, i in enumerate(data.ids.tolist())}
        return ApplyParts(set_summary(s.sum(axis=1), data.n), section, sets=named, outputs=outputs,
                          unused={"set": None})

    def applied_metrics(self) -> list[Metric]:
        return set_summary_metrics()


VERDICT = Kind("verdict", reader=VerdictReader(), study=VerdictStudy(), calibration=VerdictCalibration(),
               presenter=VerdictPresenter(), calibrated_as="verdict")


@hookimpl
def register_kinds() -> list[Kind]:
    return [VERDICT]
