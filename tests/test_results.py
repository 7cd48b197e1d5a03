"""Typed results (judgecp.workflows.results) and the gate that reads them: frozen, versioned, one flat naming, never
NaN."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from judgecp import Protocol, evaluate
from judgecp.base.digest import content_digest
from judgecp.cli import main
from judgecp.kinds.metrics import MetricError
from judgecp.synthetic.judges import simulate_likert_judge, simulate_pairwise_judge
from judgecp.workflows.results import StudyResult, load_result, read_result, with_digest


@pytest.fixture(scope="module")
def study() -> StudyResult:
    return evaluate(simulate_likert_judge(n=300, seed=1), Protocol(methods=("naive", "lac"), seeds=(0, 1, 2)))


def test_a_study_is_frozen_and_writes_its_schema_first(study: StudyResult) -> None:
    with pytest.raises(TypeError):
        study["n"] = 3  # type: ignore[index]
    with pytest.raises(TypeError):
        study["methods"]["naive"]["labels"]["coverage"] = 1.0
    with pytest.raises(TypeError):
        study["excluded"].append({})
    assert next(iter(study)) == "schema" and study["schema"] == "judgecp.report/1"
    written = json.loads(study.dumps())  # the file's form: the body and its digest, second after the schema
    assert list(written)[:2] == ["schema", "digest"] and written["digest"] == content_digest(written)
    assert json.loads(json.dumps(study)) == {k: v for k, v in written.items() if k != "digest"} == study.to_json()
    again = load_result(json.loads(study.dumps()))
    assert isinstance(again, StudyResult) and again == study and again.scalars() == study.scalars()
    plain = study.to_json()
    plain["n"] = 0  # the JSON form is a plain copy: changing it leaves the result as it was
    assert study["n"] == 300


def test_scalars_are_the_harness_names_and_a_renamed_key_is_an_error(study: StudyResult, tmp_path: Path) -> None:
    values = study.scalars()
    assert values["coverage_naive"] == study["methods"]["naive"]["labels"]["coverage"]
    assert values["interval_width_naive"] == study["methods"]["naive"]["interval"]["width"]
    assert "interval_width_lac" not in values and values["n"] == 300 and values["excluded"] == 0
    broken = study.to_json()
    broken["methods"]["lac"]["labels"]["wdth"] = broken["methods"]["lac"]["labels"].pop("width")
    with pytest.raises(MetricError, match=r"width_lac.*methods\.lac\.labels\.width"):
        load_result(broken, "broken.json")
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(with_digest(broken)))  # as judgecp would write it: the digest matches
    assert main(["gate", str(path), "--min", "coverage_naive=0.5"]) == 2


def test_a_report_without_schema_reads_as_a_study(study: StudyResult) -> None:
    legacy = study.to_json()
    del legacy["schema"], legacy["kind"]  # an older report: the kind is inferred from its sections
    assert load_result(legacy).kind == "likert"
    with pytest.raises(Exception, match="not a judgecp"):
        load_result({"hello": 1})
    with pytest.raises(Exception, match="a judgecp record, not a judgecp result"):
        load_result({"schema": "judgecp.record/1"})
    with pytest.raises(Exception, match="a calibrator .judgecp calibrate -o., not a judgecp result"):
        load_result({"schema": "judgecp.calibrator/2"})
    with pytest.raises(Exception, match="schema 'judgecp.unheard-of/1' is not a judgecp result"):
        load_result({"schema": "judgecp.unheard-of/1"})


def _write(path: Path, obj: dict[str, object]) -> Path:
    """A result file with these contents, its digest recomputed (an edited file with a stale one is refused:
    tests/test_hostile_nightly.py)."""
    path.write_text(json.dumps(with_digest(obj)))
    return path


def test_gate_refuses_bounds_that_are_not_finite(study: StudyResult, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "r.json", study)
    for bad in ("nan", "inf", "-inf", "abc", ""):
        assert main(["gate", str(path), "--min", f"coverage_naive={bad}"]) == 2
        assert main(["gate", str(path), "--max", f"coverage_naive={bad}"]) == 2
    err = capsys.readouterr().err
    assert "finite" in err and "Traceback" not in err
    assert main(["gate", str(path), "--min", "coverage_naive=0.5", "--max", "width_lac=4"]) == 0


def test_gate_fails_an_undefined_metric_and_lists_the_ones_there(study: StudyResult, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    nulled = study.to_json()
    nulled["methods"]["naive"]["labels"]["coverage"] = None
    path = _write(tmp_path / "r.json", nulled)
    assert main(["gate", str(path), "--min", "coverage_naive=0.5"]) == 1
    assert "coverage_naive is undefined" in capsys.readouterr().out
    assert main(["gate", str(path), "--max", "abstention_rate=0.3"]) == 2
    err = capsys.readouterr().err
    assert "metric 'abstention_rate' is not in" in err and "coverage_naive" in err and "width_lac" in err
    assert main(["gate", str(path), "--list"]) == 0
    assert "coverage_naive = undefined" in capsys.readouterr().out


def _table(path: Path, rows: list[dict[str, object]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _likert_rows(n: int, n_labeled: int, label: int | None, seed: int) -> list[dict[str, object]]:
    data = simulate_likert_judge(n=n, seed=seed)
    rows = []
    for i in range(n):
        row: dict[str, object] = {"id": f"r{i}", **{f"lp{k + 1}": float(data.logprobs[i, k]) for k in range(5)}}
        row["label"] = (label if label is not None else int(data.labels[i])) if i < n_labeled else ""
        rows.append(row)
    return rows


def test_a_degenerate_estimate_fails_the_gate_unless_allowed(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 25: 40 labeled rows whose labels are all equal gave [3.0, 3.0], "unbounded", and the gate passed.
    table = _table(tmp_path / "run.csv", _likert_rows(400, 40, 3, seed=2))
    out = tmp_path / "estimate.json"
    assert main(["estimate", str(table), "--logprobs", "lp*", "--json", str(out)]) == 0
    est = read_result(out)
    assert est.schema == "judgecp.estimate/1" and est["degenerate"]
    assert "estimate.ppi.lower" in est.untrusted()
    assert main(["gate", str(out), "--min", "estimate.ppi.lower=2.99"]) == 1
    assert "degenerate estimate" in capsys.readouterr().out
    assert main(["gate", str(out), "--min", "estimate.ppi.lower=2.99", "--allow-degenerate"]) == 0
    # a healthy estimate (300 labels with their variance) passes, and is not flagged
    healthy = _table(tmp_path / "ok.csv", _likert_rows(1000, 300, None, seed=3))
    assert main(["estimate", str(healthy), "--logprobs", "lp*", "--json", str(out)]) == 0
    est = read_result(out)
    assert est["degenerate"] == [] and est.untrusted() == {}
    assert main(["gate", str(out), "--min", f"estimate.ppi.lower={est['estimate']['ppi']['lower'] - 0.01}"]) == 0


def test_apply_summary_names_and_the_drift_condition(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from judgecp.workflows.calibrators import apply, calibrate
    from judgecp.workflows.results import ApplyResult

    data = simulate_likert_judge(n=800, seed=5)
    cal = calibrate(data.take(np.arange(400)), method="naive", alpha=0.1)
    summary = ApplyResult(apply(cal, data.take(np.arange(400, 800))).summary)
    values = summary.scalars()
    assert values["n"] == 400 and values["drift.alarm"] == 0 and values["coverage_labeled"] is not None
    path = _write(tmp_path / "apply.json", summary)
    assert main(["gate", str(path), "--no-drift", "--max", "set_size=5"]) == 0
    drifted = summary.to_json()
    drifted["drift"].update(drift=True, p_value=1e-5)
    assert main(["gate", str(_write(tmp_path / "d.json", drifted)), "--no-drift"]) == 1
    assert "drift detected" in capsys.readouterr().out
    assert main(["gate", str(_write(tmp_path / "p.json", evaluate(simulate_pairwise_judge(300, seed=1),
                                                                 Protocol(splits=20)))), "--no-drift"]) == 2
    assert "no drift test" in capsys.readouterr().err


def test_gate_reads_lm_eval_results_by_the_same_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = {
        "results": {
            "task_a": {
                "alias": "task_a",
                "coverage_naive,none": 0.91,
                "coverage_naive_stderr,none": 0.01,
                "drift.alarm,none": 0.0,
            },
            "task_b": {"coverage_naive,none": float("nan")},
        }
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))  # a bare NaN, as lm-eval writes it
    assert main(["gate", str(path), "--min", "task_a.coverage_naive=0.9"]) == 0
    assert main(["gate", str(path), "--min", "task_b.coverage_naive=0.9"]) == 1
    assert main(["gate", str(path), "--min", "coverage_naive=0.9"]) == 2  # in two tasks: name one
    assert "TASK.METRIC" in capsys.readouterr().err
    assert main(["gate", str(path), "--no-drift"]) == 0


def test_every_result_validates_against_the_published_schema(study: StudyResult, tmp_path: Path) -> None:
    import jsonschema

    import judgecp.workflows.results
    from judgecp.workflows.calibrators import apply, calibrate
    from judgecp.workflows.results import ApplyResult

    schema = json.loads(Path(judgecp.workflows.results.__file__).with_name("results.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validate = jsonschema.Draft202012Validator(schema).validate
    validate(json.loads(study.dumps()))
    validate(json.loads(evaluate(simulate_pairwise_judge(200, seed=2), Protocol(splits=10)).dumps()))
    data = simulate_likert_judge(n=400, seed=6)
    validate(
        json.loads(
            ApplyResult(apply(calibrate(data.take(np.arange(200))), data.take(np.arange(200, 400))).summary).dumps()
        )
    )
    table = _table(tmp_path / "run.csv", _likert_rows(300, 100, None, seed=4))
    assert main(["estimate", str(table), "--logprobs", "lp*", "--json", str(tmp_path / "e.json")]) == 0
    validate(json.loads((tmp_path / "e.json").read_text()))
    broken = json.loads(study.dumps())
    del broken["methods"]
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)
    with pytest.raises(jsonschema.ValidationError):  # a digest is sha256:<64 hex digits>
        validate({**json.loads(study.dumps()), "digest": "md5:0"})
