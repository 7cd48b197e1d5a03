"""A report's headline (judgecp.workflows.headline): the plain numbers a harness logs, read from the core's reports."""

from __future__ import annotations

import json
import math

import numpy as np

from judgecp import Protocol, evaluate
from judgecp.synthetic.judges import simulate_likert_judge, simulate_pairwise_judge
from judgecp.workflows.calibrators import apply, calibrate
from judgecp.workflows.headline import calibrated_headline, report_headline


def plain(value: object) -> bool:
    """A plain Python number (or None), at most one level deep: what a harness's JSON encoder takes."""
    if isinstance(value, dict):
        return all(v is None or type(v) in (int, float, bool) for v in value.values())
    return value is None or type(value) in (int, float, bool, str)


def test_likert_headline_reads_the_report_of_the_study() -> None:
    data = simulate_likert_judge(n=400, seed=2)
    protocol = Protocol(alpha=0.1, methods=("lac", "naive"), splits=3)
    report = json.loads(json.dumps(evaluate(data, protocol), default=float))
    h = report_headline(report, protocol, {"excluded_at_build": 2})
    assert (h["n"], h["n_read"], h["excluded"]) == (400, 400, 0) and h["excluded_at_build"] == 2
    assert h["pearson"] == report["point"]["pearson"] and h["mae"] == report["point"]["mae"]
    lac = report["methods"]["lac"]  # a set method: no interval
    assert h["lac"] == {"coverage": lac["labels"]["coverage"], "set_width": lac["labels"]["width"],
                        "full_range": lac.get("full_range")}
    assert h["naive"]["interval_coverage"] == report["methods"]["naive"]["interval"]["coverage"]
    assert h["naive"]["interval_width"] == report["methods"]["naive"]["interval"]["width"]
    assert all(plain(v) for v in h.values())
    assert list(h)[:3] == ["n", "n_read", "excluded"] and list(h)[-1] == "excluded_at_build"


def test_pairwise_headline_takes_the_protocol_level_and_signal() -> None:
    data = simulate_pairwise_judge(600, seed=1)
    protocol = Protocol(alpha=0.2, splits=3)
    report = json.loads(json.dumps(evaluate(data, protocol), default=float))
    h = report_headline(report, protocol)
    level = report["controllers"]["scope"]["0.2"]
    assert h["alpha"] == 0.2 and h["scope"] == {"coverage": level["coverage"], "risk": level["risk"],
                                                "abstain_all": level["abstain_all"]}
    assert h[protocol.signal]["auroc"] == report["uncertainty"][protocol.signal]["auroc"]
    assert h["single_order"] == 0 and all(plain(v) for v in h.values())


def test_parc_and_error_reports() -> None:
    parc = {"kind": "parc", "n": 8, "n_read": 9, "excluded": [{"reason": "variation_unknown", "count": 1}],
            "reliability": {"model": {"m": {"calibrated": 0.4}}, "family": {"LR": {"calibrated": math.nan}}},
            "accuracy": {"model": {"a": {}, "b": {}}, "family": {}}}
    assert report_headline(parc) == {"n": 8, "n_read": 9, "excluded": 1,
                                     "reliability": {"overall": 0.4, "LR": None}}  # NaN -> None; two models: no overall
    error = {"n": 0, "n_read": 3, "excluded": [{"reason": "x", "count": 3}], "error": "no usable rows",
             "point": {"pearson": np.float64("nan")}}
    assert report_headline(error, extra={"excluded_at_build": 0}) == {
        "n": 0, "n_read": 3, "excluded": 3, "pearson": None, "excluded_at_build": 0, "error": "no usable rows"}


def test_calibrated_headline_of_an_applied_calibrator() -> None:
    data = simulate_likert_judge(n=600, seed=4)
    cal = calibrate(data.take(np.arange(300)), method="lac", alpha=0.1)
    summary = apply(cal, data.take(np.arange(300, 600))).summary
    h = calibrated_headline(summary)
    assert h["n"] == 300 and h["excluded"] == 0 and h["set_size"] == summary["mean_set_size"]
    assert h["coverage_labeled"] == summary["labeled"]["coverage"]
    assert 0.8 < h["coverage_labeled"] <= 1.0  # the calibrator's promise on exchangeable rows (alpha 0.1)
    assert set(h) >= {"drift.p_value", "drift.alarm", "estimate.ppi.mean", "estimate.ppi.lower", "estimate.ppi.upper",
                      "estimate.judge_only.mean"}
    counts = ("n", "n_read", "excluded")
    assert all(type(h[k]) is int for k in counts)  # JSON integers, not 300.0
    assert all(v is None or type(v) is float for k, v in h.items() if k not in counts)
    pairs = simulate_pairwise_judge(800, seed=5)
    pcal = calibrate(pairs.take(np.arange(400)), alpha=0.15)
    ph = calibrated_headline(apply(pcal, pairs.take(np.arange(400, 800))).summary)
    assert "abstention_rate" in ph and "risk_labeled" in ph and "set_size" not in ph
    empty = {"kind": "likert", "error": "no usable rows", "n": 2, "n_applied": 0, "excluded": [{"count": 2}]}
    assert calibrated_headline(empty)["coverage_labeled"] is None and calibrated_headline(empty)["excluded"] == 2
