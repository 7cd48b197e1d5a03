"""A calibrator applied to the samples file of a real lm-eval run (tiny local judge, CPU), and the gate on its
results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lm_eval.helpers import judge_run, skip_without_lm_eval

skip_without_lm_eval()

from judgecp.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def direct_run(tmp_path_factory: pytest.TempPathFactory, tiny_llama: Path, text_tasks: Path) -> Path:
    out = tmp_path_factory.mktemp("calibrator_run")
    judge_run(out, "hf-judge", f"pretrained={tiny_llama},dtype=float32", "judge_text", out / "results", {"seeds": 2},
              "--include_path", str(text_tasks))
    return out


def test_calibrate_on_a_run_then_apply_estimate_and_gate(direct_run: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    samples = sorted((direct_run / "results").rglob("samples_judge_text_2*.jsonl"))
    results = sorted((direct_run / "results").rglob("results_*.json"))
    assert samples and results
    cal = tmp_path / "cal.json"
    # No --format anywhere: a samples file is recognised by its content (issue 29: the nightly recipe as written).
    assert main(["calibrate", str(samples[-1]), "-o", str(cal), "--method", "lac"]) == 0
    obj = json.loads(cal.read_text())
    assert obj["n_calibration"] == 39 and obj["kind"] == "likert" and obj["scale"] == [1, 5]
    # The same run's records without their labels: what a nightly run looks like.
    records = tmp_path / "records.jsonl"
    assert main(["records", str(samples[-1]), "-o", str(records)]) == 0
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    unlabeled = tmp_path / "unlabeled.jsonl"
    unlabeled.write_text("".join(json.dumps(dict(r, label=None) if i >= 20 else r) + "\n" for i, r in enumerate(rows)))
    summary = tmp_path / "apply.json"
    assert main(["apply", str(cal), str(samples[-1]), "--json", str(summary)]) == 0
    assert main(["evaluate", str(samples[-1]), "--methods", "naive", "--splits", "2", "--quiet"]) == 0
    assert main(["estimate", str(samples[-1]), "--format", "table"]) == 2  # forced as a table: no label column
    got = json.loads(summary.read_text())
    assert got["n_applied"] == 39 and got["n"] == 40 and 1.0 <= got["mean_set_size"] <= 5.0
    assert main(["apply", str(cal), str(unlabeled), "-o", str(tmp_path / "sets.jsonl")]) == 0
    written = [json.loads(line) for line in (tmp_path / "sets.jsonl").read_text().splitlines()]
    assert len(written) == 40 and [r["id"] for r in written] == [r["id"] for r in rows]
    assert sum(r.get("applied", True) is False for r in written) == 1  # the label off the scale: kept, marked
    assert main(["estimate", str(unlabeled), "--json", str(tmp_path / "est.json")]) == 0
    est = json.loads((tmp_path / "est.json").read_text())
    assert est["n_labeled"] == 19 and est["n_unlabeled"] == 20  # one labeled record is off the scale
    capsys.readouterr()
    assert main(["gate", str(results[-1]), "--min", "coverage_naive=0.5"]) == 0
    assert main(["gate", str(results[-1]), "--min", "coverage_naive=1.01"]) == 1
    assert "FAIL coverage_naive" in capsys.readouterr().out


def test_unlabeled_run_with_a_calibrator_in_metadata(direct_run: Path, text_tasks: Path, tiny_llama: Path,
                                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--metadata '{"calibrator": PATH}'` on a task whose documents have no labels: set size, drift, corrected
    score."""
    from tests.lm_eval.conftest import TEXT_TASK_UTILS, _text_task_yaml

    samples = sorted((direct_run / "results").rglob("samples_judge_text_2*.jsonl"))
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(samples[-1]), "--format", "lm-eval", "-o", str(cal), "--method", "lac"]) == 0
    docs = [json.loads(line) for line in (text_tasks.parent / "docs.jsonl").read_text().splitlines()]
    data = tmp_path / "unlabeled.jsonl"
    data.write_text("".join(json.dumps(dict(d, label=None)) + "\n" for d in docs))
    folder = tmp_path / "judge_text_unlabeled"
    folder.mkdir()
    (folder / "utils.py").write_text(TEXT_TASK_UTILS)
    (folder / "judge_text_unlabeled.yaml").write_text(_text_task_yaml("judge_text_unlabeled", data, cot=False))
    out = tmp_path / "out"
    judge_run(tmp_path, "hf-judge", f"pretrained={tiny_llama},dtype=float32", "judge_text_unlabeled", out,
              {"calibrator": str(cal)}, "--include_path", str(folder))
    results_path = sorted(out.rglob("results_*.json"))[-1]
    got = {
        k.split(",")[0]: v for k, v in json.loads(results_path.read_text())["results"]["judge_text_unlabeled"].items()
    }
    assert got["n"] == 40 and got["excluded"] == 0
    assert 1.0 <= got["set_size"] <= 5.0 and 0.0 <= got["singleton_share"] <= 1.0
    assert got["drift.p_value"] > 0.01 and got["drift.alarm"] == 0  # the same documents and judge as calibration
    assert got["estimate.ppi.lower"] <= got["estimate.ppi.mean"] <= got["estimate.ppi.upper"]
    assert got["estimate.ppi.se"] > 0 and 1.0 <= got["estimate.judge_only.mean"] <= 5.0
    capsys.readouterr()
    assert main(["gate", str(results_path), "--min", "estimate.ppi.lower=0", "--max", "set_size=5", "--no-drift"]) == 0
    assert main(["gate", str(results_path), "--max", "set_size=0.5"]) == 1
    assert "FAIL set_size" in capsys.readouterr().out


def test_a_mismatched_calibrator_gives_nan_metrics_not_a_crash(tmp_path: Path) -> None:
    """Inside the harness, another judge's records: metrics NaN (counts kept), so gate fails and the run is kept."""
    import math

    from judgecp.adapters.lm_eval.calibrated import calibrated_report
    from judgecp.kinds.metrics import read_metric
    from judgecp.kinds.reading import to_records
    from judgecp.synthetic.judges import simulate_likert_judge
    from judgecp.workflows.calibrators import calibrate
    from judgecp.workflows.results import calibrated_metrics

    records = to_records(simulate_likert_judge(n=200, seed=2))
    cal = calibrate(from_records_with_judge(records[:100], "judge-a"))
    other = [dict(r, judge="judge-b", label=None) for r in records[100:]]
    report = calibrated_report(other, cal, "likert", task="t")
    values = {m.name: read_metric(report, m) for m in calibrated_metrics("likert")}
    assert values["n_read"] == 100 and values["n"] == 0  # counts kept: 100 read, none applied
    assert math.isnan(values["set_size"]) and math.isnan(values["estimate.ppi.mean"])
    cal.extra["force"] = True
    forced = calibrated_report(other, cal, "likert", task="t")
    set_size = next(m for m in calibrated_metrics("likert") if m.name == "set_size")
    assert not math.isnan(read_metric(forced, set_size))


def from_records_with_judge(records: list[dict], judge: str):  # type: ignore[no-untyped-def]
    from judgecp import from_records

    return from_records([dict(r, judge=judge) for r in records])
