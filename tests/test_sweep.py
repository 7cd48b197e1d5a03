"""The alpha sweep of Likert and multiple-choice evaluations (``--alphas``, report key ``alpha_sweep``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from judgecp.cli import main
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.reading import from_records
from judgecp.kinds.sweep import SWEEP_KEY, sweep_levels
from judgecp.synthetic.judges import simulate_likert_judge, simulate_mcq_records
from judgecp.workflows.study import evaluate


def without_sweep(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != SWEEP_KEY}


def test_levels_include_the_headline_sorted() -> None:
    assert sweep_levels(Protocol()) is None
    assert sweep_levels(Protocol(alphas=(0.2, 0.05))) == (0.05, 0.1, 0.2)
    assert sweep_levels(Protocol(alpha=0.3, alphas=(0.2, 0.05))) == (0.05, 0.2, 0.3)


def test_likert_sweep_leaves_the_single_alpha_report_unchanged() -> None:
    data = simulate_likert_judge(600)
    base = Protocol(alpha=0.1, methods=("naive", "lac"), splits=4, group="group")
    plain = evaluate(data, base)
    swept = evaluate(data, base.with_(alphas=(0.05, 0.2)))
    assert SWEEP_KEY not in plain
    assert without_sweep(swept) == plain
    sweep = swept[SWEEP_KEY]
    assert sweep["alphas"] == [0.05, 0.1, 0.2]
    for spec in ("naive", "lac"):
        head = plain["methods"][spec]
        assert sweep["methods"][spec]["0.1"] == {k: head[k] for k in ("interval", "labels", "expanded", "full_range")}
        # each level is the study run at that level on the same splits
        other = evaluate(data, base.with_(alpha=0.2))["methods"][spec]
        assert sweep["methods"][spec]["0.2"]["labels"] == other["labels"]
        widths = [sweep["methods"][spec][k]["labels"]["width"] for k in ("0.05", "0.1", "0.2")]
        assert widths[0] >= widths[1] >= widths[2]


@pytest.mark.slow
def test_likert_sweep_keeps_coverage_at_every_level() -> None:
    """Exchangeable data, 60 splits: mean label-set coverage in [1-a, 1-a+1/(n_cal+1)] within 4 standard errors."""
    data = simulate_likert_judge(800, seed=3)
    report = evaluate(data, Protocol(methods=("naive", "lac"), splits=60, alphas=(0.05, 0.1, 0.2, 0.3)))
    n_cal = report["protocol"]["n_calibration"]
    for spec, per in report[SWEEP_KEY]["methods"].items():
        for key, entry in per.items():
            alpha = float(key)
            cov, std = entry["labels"]["coverage"], entry["labels"]["coverage_std"]
            se = std / math.sqrt(60)
            assert 1 - alpha - 4 * se - 1e-9 <= cov, (spec, key, cov)
            if spec == "naive":  # continuous score: the upper end holds too (lac's ties make it void)
                assert cov <= 1 - alpha + 1 / (n_cal + 1) + 4 * se + 1e-9, (spec, key, cov)


def test_likert_sweep_catches_a_wrong_level() -> None:
    """Negative control: the check above fails when a level's sets are those of another level."""
    data = simulate_likert_judge(800, seed=3)
    report = evaluate(data, Protocol(methods=("lac",), splits=30, alphas=(0.05, 0.3)))
    per = report[SWEEP_KEY]["methods"]["lac"]
    wrong = per["0.3"]["labels"]["coverage"]  # pretend it were the 0.05 level
    assert wrong < 1 - 0.05 - 4 * per["0.3"]["labels"]["coverage_std"] / math.sqrt(30)


def test_mcq_sweep_leaves_the_single_alpha_report_unchanged_and_covers() -> None:
    data = from_records(simulate_mcq_records(1200), source="sim")
    base = Protocol(alpha=0.1, methods=("lac", "aps"), splits=20)
    plain = evaluate(data, base)
    swept = evaluate(data, base.with_(alphas=(0.05, 0.2, 0.3)))
    assert SWEEP_KEY not in plain
    assert without_sweep(swept) == plain
    sweep = swept[SWEEP_KEY]
    assert sweep["alphas"] == [0.05, 0.1, 0.2, 0.3]
    for spec in ("lac", "aps"):
        assert sweep["methods"][spec]["0.1"]["coverage"] == plain["methods"][spec]["coverage"]
        sizes = []
        for key, entry in sweep["methods"][spec].items():
            alpha = float(key)
            se = entry["coverage_std"] / math.sqrt(20)
            assert 1 - alpha - 4 * se - 1e-9 <= entry["coverage"] <= 1 - alpha + 1 / 601 + 4 * se + 1e-9, (spec, key)
            sizes.append(entry["set_size"])
        assert sizes == sorted(sizes, reverse=True)


def test_cli_alphas_for_likert_and_mcq(tmp_path, capsys) -> None:
    out = tmp_path / "r.json"
    assert main(["evaluate", "--example", "--methods", "naive", "--splits", "3", "--alphas", "0.05,0.2",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["alpha"] == 0.1 and report[SWEEP_KEY]["alphas"] == [0.05, 0.1, 0.2]
    assert "Alpha sweep" in capsys.readouterr().out
    assert main(["evaluate", "--example", "--kind", "mcq", "--methods", "lac", "--splits", "3", "--alphas", "0.2",
                 "--json", str(out), "--quiet"]) == 0
    report = json.loads(out.read_text())
    assert list(report[SWEEP_KEY]["methods"]["lac"]) == ["0.1", "0.2"]
    assert np.isfinite(report[SWEEP_KEY]["methods"]["lac"]["0.2"]["set_size"])
    assert main(["evaluate", "--example", "--methods", "naive", "--alphas", "0,0.2"]) == 2
