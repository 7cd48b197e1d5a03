"""The pairwise kind: A/B verdicts judged in both orders, selective risk control (SCOPE)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from judgecp.headline import PrimaryMetric
from judgecp.kinds import Kind

if TYPE_CHECKING:
    from judgecp.data.fields import Fields
    from judgecp.protocol import Protocol
    from judgecp.scalars import Metric
    from judgecp.tables import Table


class PairwiseKind(Kind):
    """Pairwise preferences: records of shape ``pair``, one per (pair, order)."""

    name = "pairwise"
    record_shape = "pair"
    title = "Pairwise judges: selective risk control"
    noun = "pairs"
    calibrated_as = "pairwise"
    columns: ClassVar[Mapping[str, tuple[str, ...]]] = {"label": ("label", "winner", "preference"), "prediction": ("prediction",), "logprobs": ("logprobs",)}
    default_splits = 1000
    levels_are_controller_levels = True
    settings = frozenset({"alpha", "alphas", "splits", "random_state", "cal_fraction", "group", "signal",
                          "controllers", "delta"})

    ppi_target = "human win rate of response A"
    default_calibration_method = "scope"

    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        from judgecp.data.pair import pair_data

        self.check_reader_options(options)
        return pair_data(table, fields, require_label=require_label)

    def to_records(self, data: Any) -> list[dict[str, Any]]:
        from judgecp.data.export import pair_records

        return pair_records(data)

    def example(self, **options: Any) -> Any:
        from judgecp.simulate import simulate_pairwise_judge

        self.check_reader_options(options)
        return simulate_pairwise_judge()

    def study(self, data: Any, protocol: Protocol) -> dict[str, Any]:
        from judgecp.evaluation.pair import evaluate_pairs

        return evaluate_pairs(data, protocol)

    def metrics(self, protocol: Protocol, body: Mapping[str, Any] | None = None) -> list[Metric]:
        from judgecp.scalars import pairwise_metrics

        if body is not None:
            controllers = tuple(body["controllers"])
            levels = tuple(float(a) for a in next(iter(body["controllers"].values()), {}))
            protocol = protocol.with_(controllers=controllers or None, alphas=levels or None, alpha=None)
        return pairwise_metrics(protocol)

    # -- calibrators ------------------------------------------------------------------------------
    def proxy_and_target(self, data: Any) -> tuple[Any, Any]:
        """P(original A preferred), averaged over the orders, and 1 when humans prefer A."""
        import numpy as np

        pbar = np.nanmean(np.column_stack([data.p_fwd, data.p_rev]), axis=1)
        return pbar, np.where(data.labeled, data.labels.astype(np.float64), np.nan)

    def drift_statistic(self, data: Any, signal: str) -> tuple[str, Any]:
        import numpy as np

        from judgecp.signals import signals

        return f"uncertainty:{signal}", np.asarray(signals(data)[signal].uncertainty, dtype=np.float64)

    def fit_calibrator(self, data: Any, *, method: str | None, alpha: float, groups: str | None,
                       random_state: int | None, signal: str, delta: float) -> Any:
        from judgecp.calibrators.fitting import Fitted
        from judgecp.errors import InputError
        from judgecp.estimators import SelectiveJudge

        if groups:
            raise InputError("groups (Mondrian) are for Likert calibrators")
        spec = method or self.default_calibration_method
        return Fitted(SelectiveJudge(spec, risk_level=alpha, signal=signal, delta=delta).calibrate(data), spec)

    def calibrator_parts(self, reader: Any, method: str, alpha: float, n: int) -> Any:
        from judgecp.calibrators.fileformat import pairwise_parts

        return pairwise_parts(reader, method, alpha, n)

    def apply_calibrator(self, cal: Any, data: Any, *, groups: str | None) -> Any:
        """Accept or abstain per pair (both orders share the pair's decision); the error among accepted
        labeled pairs, with the permutation check of the controller."""
        from judgecp.calibrators.applying import ApplyParts, pairwise_risk_check

        pred = cal.estimator.predict(data)
        accept = pred.accept
        summary = {"threshold": float(cal.estimator.threshold_), "accepted": int(accept.sum()),
                   "abstention_rate": float(1.0 - accept.mean()) if data.n else None}
        labeled = data.labeled
        section = None
        if labeled.any():
            acc = accept & labeled
            err = pred.prediction[acc] != data.labels[acc]
            check = pairwise_risk_check(cal, data)
            section = {"n": int(labeled.sum()), "accepted": int(acc.sum()),
                       "error_among_accepted": float(err.mean()) if acc.any() else None,
                       "risk_level": cal.alpha, "p_value_above_risk": check["p_value"], "check": check}
        outputs = {f"{pair}|{order}": {"accept": bool(ok)}
                   for pair, ok in zip(data.pair_ids.tolist(), accept.tolist(), strict=True) for order in ("fwd", "rev")}
        # A pair the calibrator could not use is abstained on (accept false), never accepted unchecked.
        return ApplyParts(summary, section, accept=accept, outputs=outputs, unused={"accept": False})

    def record_key(self, record: Any) -> str:
        return f"{record.get('pair_id')}|{record.get('order')}"

    def applied_metrics(self) -> list[Metric]:
        from judgecp.calibrators.results import accept_summary_metrics

        return accept_summary_metrics()

    def headline(self, body: Mapping[str, Any], protocol: Protocol) -> dict[str, Any]:
        out = super().headline(body, protocol)
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

    report_focus = "controllers"

    def report_tables(self, runs: Any) -> list[Any]:
        from judgecp.reports import pairwise_tables

        return pairwise_tables(runs)

    def report_figures(self) -> tuple[Any, ...]:
        from judgecp.reports import figures as f

        return (f.risk_coverage, f.risk_vs_alpha, f.accepted_share, f.signal_reliability)

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        from judgecp.report import write_pairwise_table

        super().write_console(body, out)
        write_pairwise_table(body, out)
