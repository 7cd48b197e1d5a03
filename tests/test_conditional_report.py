"""Conditional coverage in every Likert report: by label, by group, by judge error, worst cell named."""

from __future__ import annotations

import io

import numpy as np
import pytest

from judgecp.kinds.protocol import Protocol, split_indices
from judgecp.stats.conditional import MIN_CELL, judge_error, worst_cell
from judgecp.stats.features import expected_score, judge_probabilities
from judgecp.synthetic.judges import simulate_likert_judge
from judgecp.workflows.study import evaluate, write_report


@pytest.fixture(scope="module")
def report_and_data() -> tuple[dict, object]:
    data = simulate_likert_judge(1200, seed=1)
    protocol = Protocol(alpha=0.1, methods=("naive", "lac", "lac(conditional=label)"), splits=4, group="group")
    return evaluate(data, protocol), data


def test_cells_partition_the_pooled_test_rows(report_and_data: tuple[dict, object]) -> None:
    report, _ = report_and_data
    pooled_n = report["protocol"]["n_test"] * len(report["protocol"]["seeds"])
    for spec, c in report["conditional_coverage"].items():
        assert set(c) == {"by_label", "by_group", "by_judge_error", "min_cell", "worst"}
        for by in ("by_label", "by_group", "by_judge_error"):
            assert sum(v["n"] for v in c[by].values()) == pooled_n, (spec, by)
            for v in c[by].values():
                assert 0 <= v["coverage"] <= 1 and v["n_per_split"] == v["n"] / 4
        assert set(c["by_group"]) == {"easy", "medium", "hard"}
        # by label agrees with the existing coverage_by_label table (same rows, same coverage)
        for label, v in c["by_label"].items():
            assert v["coverage"] == pytest.approx(
                report["methods"][spec]["coverage_by_label"][label]["labels"]["coverage"]
            )


def test_judge_error_is_the_rounded_expected_score_error(report_and_data: tuple[dict, object]) -> None:
    report, data = report_and_data
    seeds = report["protocol"]["seeds"]
    test = np.concatenate([split_indices(data.n, s, 0.5)[1] for s in seeds])
    e = np.round(expected_score(judge_probabilities(data.logprobs[test], data.scale), data.scale))
    err = np.abs(e - data.labels[test]).astype(int)
    assert (judge_error(data.logprobs[test], data.labels[test], data.scale) == err).all()
    counts = {str(k): int((err == k).sum()) for k in np.unique(err)}
    assert {k: v["n"] for k, v in report["conditional_coverage"]["naive"]["by_judge_error"].items()} == counts


def test_worst_cell_is_the_lowest_large_enough_cell(report_and_data: tuple[dict, object]) -> None:
    report, _ = report_and_data
    for c in report["conditional_coverage"].values():
        cells = [(v["coverage"], by, k) for by in ("by_label", "by_group", "by_judge_error")
                 for k, v in c[by].items() if v["n"] >= MIN_CELL]
        low = min(cells)
        assert (c["worst"]["coverage"], c["worst"]["by"], c["worst"]["cell"]) == low
    # The judge's large errors are where a marginal method fails.
    assert report["conditional_coverage"]["naive"]["worst"]["by"] == "by_judge_error"


def test_worst_cell_skips_tiny_cells() -> None:
    tables = {"by_label": {"1": {"n": 3, "coverage": 0.0, "coverage_se": 0.0, "width": 1.0},
                           "2": {"n": 50, "coverage": 0.8, "coverage_se": 0.05, "width": 2.0}},
              "by_judge_error": {"0": {"n": 60, "coverage": 0.95, "coverage_se": 0.03, "width": 2.0}}}
    assert worst_cell(tables) == {
        "by": "by_label",
        "cell": "2",
        "n": 50,
        "coverage": 0.8,
        "coverage_se": 0.05,
        "width": 2.0,
    }
    assert worst_cell({"by_label": {"1": tables["by_label"]["1"]}}) is None


def test_label_conditional_lifts_the_worst_label(report_and_data: tuple[dict, object]) -> None:
    report, _ = report_and_data
    cc = report["conditional_coverage"]
    marginal = min(v["coverage"] for v in cc["lac"]["by_label"].values())
    conditional = min(v["coverage"] for v in cc["lac(conditional=label)"]["by_label"].values())
    assert conditional > marginal


def test_console_names_the_worst_cell(report_and_data: tuple[dict, object]) -> None:
    report, _ = report_and_data
    out = io.StringIO()
    write_report(report, out)
    text = out.getvalue()
    assert "Worst conditional cell" in text
    w = report["conditional_coverage"]["naive"]["worst"]
    assert f"{w['by']}={w['cell']}: coverage {w['coverage']:.3f}" in text


def test_no_group_no_group_table() -> None:
    report = evaluate(simulate_likert_judge(400, seed=2), Protocol(methods=("naive",), splits=2))
    assert "by_group" not in report["conditional_coverage"]["naive"]
