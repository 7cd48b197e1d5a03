"""The pairwise kind: A/B verdicts judged in both orders, selective risk control (SCOPE)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

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
    default_splits = 1000
    levels_are_controller_levels = True
    settings = frozenset({"alpha", "alphas", "splits", "random_state", "cal_fraction", "group", "signal",
                          "controllers", "delta"})

    def read(self, table: Table, fields: Fields | None, *, require_label: bool = True, detect: bool = False,
             **options: Any) -> Any:
        from judgecp.data.pair import pair_data

        self.check_reader_options(options)
        return pair_data(table, fields, require_label=require_label)

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
                    out[name] = {"coverage": entry["coverage"], "risk": entry["risk"], "abstain_all": entry["abstain_all"]}
        signal = (body.get("uncertainty") or {}).get(protocol.signal)
        if signal:
            out[protocol.signal] = {k: signal.get(k) for k in ("accuracy", "auroc", "auprc", "ece")}
        out["single_order"] = sum(int(f["count"]) for f in body.get("flags", []) if f.get("flag") == "single_order")
        return out

    def write_console(self, body: Mapping[str, Any], out: TextIO, *, detail: str | None = None) -> None:
        from judgecp.report import write_pairwise_table

        super().write_console(body, out)
        write_pairwise_table(body, out)
