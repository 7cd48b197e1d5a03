"""No interval without its sample (issue 32, part 5): small-sample quantiles and ddof 1, strata of fewer than 2
labels refused, zero spread flagged degenerate in every command, labels off the scale counted and named."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgecp.base.errors import InputError
from judgecp.cli import main
from judgecp.stats.ppi import ppi_mean
from judgecp.synthetic.judges import simulate_likert_judge
from judgecp.workflows.nightly.estimate import estimate
from tests.helpers import measure_script

ALPHA = 0.1
LOGPROBS = ["s2_lp1", "s2_lp2", "s2_lp3", "s2_lp4", "s2_lp5"]
FLAGS = ["--label", "gt", "--logprobs", "s2_lp*", "--id", "sample_id"]


@pytest.mark.slow
def test_small_samples_keep_their_level() -> None:
    """6 and 12 labels, 500 unlabeled items (1,500 draws; 4,000 in docs/benchmarks.md: 0.885 and 0.895). ddof 1
    and Student's t with n - 2 degrees of freedom: asserted >= 0.85 and >= 0.865 (4 s.e. below the measured
    rates, false failure < 1e-4). ppi-python's conventions (ddof 0, normal quantile), what every interval used
    before, cover 0.775 and 0.843: 6 labels fail the band by 9 s.e."""
    draws = 1500
    res = measure_script().small(draws)
    assert res["n6_small-sample"] >= 0.85 and res["n12_small-sample"] >= 0.865, res
    assert res["n6_ppi-python"] < 0.82 and res["n12_ppi-python"] < 0.87, res


def test_a_stratum_with_one_label_is_refused() -> None:
    rng = np.random.default_rng(0)
    y, f, g = rng.normal(size=21), rng.normal(size=21), rng.normal(size=200)
    groups = np.array(["a"] * 20 + ["b"])
    with pytest.raises(InputError, match=r"at least 2 labeled items in every stratum, got 1 \(stratum 'b'\)"):
        ppi_mean(y, f, g, groups_labeled=groups, groups_unlabeled=rng.choice(["a", "b"], 200))
    data = simulate_likert_judge(400, seed=0)
    data.fields = {"task": np.where(np.arange(400) < 390, "big", "small")}
    data.labels[[*range(20, 390)]] = np.nan  # 20 labels in 'big', all 10 of 'small'... then keep one there
    data.labels[391:] = np.nan
    out = estimate(data, stratify="auto")  # 'small' has 1 label: merged into 'big'
    assert out["stratification"]["stratified"] is False
    with pytest.raises(InputError, match="at least 2 labeled items in every stratum"):
        estimate(data, stratify="yes")


def write_table(path: Path, labels: list[str], prompt: bool = False, flat: bool = False) -> Path:
    """A table of the synthetic judge's score logprobs with these labels; ``flat``: every row the first row's
    logprobs (a judge proxy without spread)."""
    data = simulate_likert_judge(len(labels), seed=1)
    with path.open("w", newline="") as out:
        w = csv.writer(out)
        w.writerow(["sample_id", *LOGPROBS, "gt"])
        for i, label in enumerate(labels):
            w.writerow([f"i{i}", *[f"{v:.4f}" for v in data.logprobs[0 if flat else i]], label])
    return path


def unit_scale_labels(n_off: int, n_unlabeled: int, n_on: int = 2, seed: int = 0) -> list[str]:
    """Labels on 0..1 (an averaged score): ``n_on`` of them happen to be 1 (on the judge's 1..5 scale)."""
    values = np.random.default_rng(seed).uniform(0.05, 0.95, n_off)
    return ["1"] * n_on + [f"{v:.3f}" for v in values] + [""] * n_unlabeled


HINT = "left out: label_off_scale 148; labels look like 0..1: --label-scale 0:1?"


def test_labels_off_the_scale_are_named_in_every_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: a 400-row file whose 150 labels are on 0..1 without --label-scale. Before, estimate said
    '2 labeled + 250 unlabeled items' and nothing of the 148 others; now every command names them, with the hint."""
    run = write_table(tmp_path / "run.csv", unit_scale_labels(148, 250))
    assert main(["estimate", str(run), *FLAGS, "--json", str(tmp_path / "e.json")]) == 0
    assert HINT in capsys.readouterr().out
    assert json.loads((tmp_path / "e.json").read_text())["label_hint"] == "labels look like 0..1: --label-scale 0:1?"
    assert main(["compare", str(run), str(run), *FLAGS]) == 0
    assert f"run A {HINT}" in capsys.readouterr().out
    assert main(["plan", str(run), *FLAGS, "--half-width", "0.1"]) == 2  # 2 usable labels: no plan, and why
    assert f"a plan needs at least 4 labeled items with a judge proxy, got 2 ({HINT})" in capsys.readouterr().err
    assert main(["select", str(run), *FLAGS, "--budget", "20", "-o", str(tmp_path / "pick.jsonl")]) == 0
    assert HINT in capsys.readouterr().err
    labeled = write_table(tmp_path / "labeled.csv", unit_scale_labels(148, 0, n_on=20))
    assert main(["estimate", "--labeled", str(labeled), "--unlabeled", str(run), *FLAGS]) == 0
    assert HINT in capsys.readouterr().out
    assert main(["plan", str(labeled), *FLAGS, "--half-width", "0.1"]) == 2  # 20 usable labels, all 1: refused
    assert f"every label is 1 ({HINT})" in capsys.readouterr().err
    # With --label-scale 0:1 they are read: nothing is left out.
    assert main(["estimate", str(run), *FLAGS, "--label-scale", "0:1"]) == 0
    assert "left out" not in capsys.readouterr().out


def test_a_few_stray_labels_get_no_scale_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One label 0 among 1..5 labels (LLaVA-Critic has one): counted, no hint about another scale."""
    run = write_table(tmp_path / "run.csv", ["0"] + ["3", "4", "1", "5"] * 30 + [""] * 100)
    assert main(["estimate", str(run), *FLAGS]) == 0
    printed = capsys.readouterr().out
    assert "left out: label_off_scale 1\n" in printed + "\n" and "--label-scale" not in printed


def _degenerate(path: Path) -> list[str]:
    out: list[str] = json.loads(path.read_text())["degenerate"]
    return out


def constant_run(tmp_path: Path, name: str, label: str = "4", n_labeled: int = 40) -> Path:
    return write_table(tmp_path / name, [label] * n_labeled + [""] * 200)


def test_zero_spread_is_degenerate_in_every_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Constant labels: estimate and compare say so (console and JSON), and gate fails them; as a pilot, plan and
    select refuse them in one line (issue 33: a plan of 2 labels, an error model promising a width of nearly 0). A
    judge proxy without spread: plan (the pilot's) and select (the run's) say so, and gate fails them."""
    run, other = (
        constant_run(tmp_path, "run.csv"),
        write_table(tmp_path / "other.csv", ["3", "4", "2", "5"] * 10 + [""] * 200),
    )
    flat_pilot = write_table(tmp_path / "flat_pilot.csv", ["3", "4", "2", "5"] * 10 + [""] * 200, flat=True)
    flat_run = write_table(tmp_path / "flat_run.csv", [""] * 240, flat=True)
    pick = ["--budget", "20", "-o", str(tmp_path / "pick.jsonl")]
    checks: list[tuple[list[str], str, str, str]] = [
        (["estimate", str(run), *FLAGS], "e.json", "estimate.ppi.lower", "all 4"),
        (["compare", str(run), str(other), *FLAGS, "--paired", "no"], "c.json", "difference.ppi.lower", "all 4"),
        (["plan", str(flat_pilot), *FLAGS, "--half-width", "0.1"], "p.json", "labels.ppi", "proxy has no spread"),
        (["select", str(flat_run), *FLAGS, *pick, "--pilot", str(other)], "s.json", "expected_width.active",
         "proxy has no spread"),
    ]
    for argv in (["plan", str(run), *FLAGS, "--half-width", "0.1"], ["select", str(other), *FLAGS, *pick, "--pilot",
                                                                      str(run)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "every label is 4" in err, err
    for argv, name, metric, why in checks:
        assert main([*argv, "--json", str(tmp_path / name)]) == 0, argv
        reasons = _degenerate(tmp_path / name)
        assert any(why in r or "every label equal" in r for r in reasons), (name, reasons)
        assert "judgecp: warning: degenerate" in capsys.readouterr().err, name
        assert main(["gate", str(tmp_path / name), "--min", f"{metric}=-1000"]) == 1, name
        assert "degenerate" in capsys.readouterr().out + capsys.readouterr().err
        assert main(["gate", str(tmp_path / name), "--min", f"{metric}=-1000", "--allow-degenerate"]) == 0, name
        capsys.readouterr()


def test_a_proxy_without_spread_is_degenerate() -> None:
    data = simulate_likert_judge(300, seed=2)
    data.logprobs = np.tile(data.logprobs[0], (300, 1))
    data.labels[100:] = np.nan
    out = estimate(data)
    assert any("proxy has no spread" in r for r in out["degenerate"])
    assert out["estimate"]["ppi"] == out["estimate"]["labeled_only"]


def test_identical_runs_with_identical_labels_are_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run compared with itself: the difference is exactly 0, with a zero-width interval; it is printed, and
    flagged degenerate (console and JSON), not passed off as an interval."""
    run = write_table(tmp_path / "run.csv", ["3", "4", "2", "5"] * 10 + [""] * 200)
    assert main(["compare", str(run), str(run), *FLAGS, "--json", str(tmp_path / "c.json")]) == 0
    out: dict[str, Any] = json.loads((tmp_path / "c.json").read_text())
    assert out["difference"]["ppi"]["upper"] == out["difference"]["ppi"]["lower"] == 0.0
    assert any("zero-width" in r for r in out["degenerate"])
    assert "degenerate difference: zero-width interval" in capsys.readouterr().err
