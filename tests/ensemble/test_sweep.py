"""The Table 5 sweep and its Table 6 layout."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgecp.base.errors import InputError
from judgecp.kinds.ensemble.sweep import SweepFactors, format_table, main, run_sweep
from judgecp.synthetic.judges import simulate_prompt_judge

SMALL = SweepFactors(prompts=(4, 8), samples=(10, 40), clusters=(2, 4), data_seeds=(0, 1))


def test_rows_cover_every_factor_level():
    sim = simulate_prompt_judge(800, 8, 4, random_state=0)
    rows = run_sweep(sim.log_probs, sim.labels, sim.embeddings, SMALL)
    keys = {(r["method"], r["prompts"], r["samples"], r["clusters"]) for r in rows}
    assert len(keys) == len(rows) == 2 * 2 * (2 + 2)
    assert all(r["runs"] == 2 for r in rows)
    mixture = {(r["prompts"], r["samples"], r["clusters"]): r for r in rows if r["method"] == "mixture"}
    uniform = {(r["prompts"], r["samples"]): r for r in rows if r["method"] == "uniform"}
    # the simulated judge rewards clustering: K=4 (the truth) beats uniform averaging
    assert mixture[(8, 40, 4)]["ece"] < uniform[(8, 40)]["ece"] - 0.05


def test_lbfgs_and_closed_form_sweeps_agree():
    sim = simulate_prompt_judge(500, 4, 2, random_state=1)
    factors = SweepFactors(prompts=(4,), samples=(20,), clusters=(2,), data_seeds=(0,))
    fast = run_sweep(sim.log_probs, sim.labels, sim.embeddings, factors)
    slow = run_sweep(sim.log_probs, sim.labels, sim.embeddings, factors, solver="lbfgs")
    for a, b in zip(fast, slow, strict=True):
        assert a["nll"] == pytest.approx(b["nll"], abs=1e-5)


def test_table_has_table_6s_layout():
    sim = simulate_prompt_judge(800, 8, 4, random_state=0)
    table = format_table(run_sweep(sim.log_probs, sim.labels, sim.embeddings, SMALL))
    lines = table.splitlines()
    assert lines[0].split("  ")[0] == "prompts samples"
    for title in ("Expected Calibration Error (↓)", "Max Calibration Error (↓)", "AUC Precision-Recall (↑)"):
        assert title in lines[0]
    assert lines[1].split() == ["2", "4"] * 3
    body = lines[2:6]
    assert [line.split()[0] for line in body] == ["4", "40", "8", "40"]  # prompts shown once per block
    assert len(body[0].split()) == 2 + 3 * 2 and len(body[1].split()) == 1 + 3 * 2
    assert all(cell.startswith(".") for cell in body[0].split()[2:])
    assert "baselines" in table


def test_main_example_and_errors(tmp_path, capsys):
    out = tmp_path / "rows.json"
    args = ["--example", "--prompts", "5", "--samples", "10", "--clusters", "4,8", "--data-seeds", "1",
            "--json", str(out)]
    assert main(args) == 0
    assert "Expected Calibration Error" in capsys.readouterr().out
    assert {r["method"] for r in json.loads(out.read_text())} == {"uniform", "bpe", "mixture"}
    assert main(["--example", "--prompts", "50"]) == 2
    assert "50" in capsys.readouterr().err
    assert main([]) == 2
    with pytest.raises(InputError, match="labeled items"):
        run_sweep(np.log(np.full((5, 8, 2), 0.5)), np.zeros(5, dtype=int), np.eye(5, 3) + 1, SMALL)
