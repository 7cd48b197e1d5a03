"""The Likert study's flat metric names, in the order a harness's results table shows them."""

from __future__ import annotations

from collections.abc import Mapping

from judgecp.kinds.metrics import (
    POINT_METRICS,
    LabelsOrInterval,
    Metric,
    Skippable,
    count_metrics,
    metric_suffix,
    pick,
    with_stderr,
)
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.registry import method_classes
from judgecp.stats.methods.spec import parse_method_spec


def likert_metrics(protocol: Protocol, interval: Mapping[str, bool] | None = None) -> list[Metric]:
    """Per method: ``coverage_<m>`` (label set), ``width_<m>`` (max - min), interval methods
    ``interval_width_<m>`` (u - l), each with ``_stderr``; ``full_range_<m>``; then the judge's
    point metrics, ``n`` and ``excluded``. ``interval`` says which methods are interval methods (a report
    read back says it itself); by default the registered method classes do. Continuous labels have no
    label set: ``coverage_<m>`` and ``width_<m>`` are the interval's."""
    if interval is None:
        classes = method_classes()
        interval = {spec: classes[parse_method_spec(spec)[0]].output == "interval"
                    for spec in protocol.method_specs("likert")}
    metrics = count_metrics()
    for spec in protocol.method_specs("likert"):
        s = metric_suffix(spec)
        method = Skippable(spec)
        metrics += with_stderr(f"coverage_{s}", ("methods", method, LabelsOrInterval(), "coverage"), None)
        metrics += with_stderr(f"width_{s}", ("methods", method, LabelsOrInterval(), "width"), False)
        if interval[spec]:
            metrics += with_stderr(f"interval_width_{s}", ("methods", method, "interval", "width"), False)
        metrics.append(Metric(f"full_range_{s}", pick("methods", method, "full_range"), False))
    metrics += [Metric(key, pick("point", key), key != "mae") for key in POINT_METRICS]
    return metrics
