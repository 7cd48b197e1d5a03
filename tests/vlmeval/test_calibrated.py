"""A calibrator on VLMEvalKit prediction files from real runs (tests/vlmeval/fixtures; no VLMEvalKit needed)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from judgecp.adapters.vlmeval.calibrated import calibrated_evaluation
from judgecp.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


def prediction_file(folder: str, tmp_path: Path) -> Path:
    """A copy of a fixture run (the evaluation writes beside the prediction file)."""
    run = next((FIXTURES / folder).glob("*/*"))
    shutil.copytree(run, tmp_path / folder)
    return next((tmp_path / folder).glob("*.xlsx"))


@pytest.mark.parametrize(("folder", "kind", "size_key"), [("clean", "likert", "set_size"),
                                                          ("pairwise", "pairwise", "abstention_rate"),
                                                          ("mcq", "mcq", "set_size")])
def test_calibrate_then_apply_on_a_prediction_file(folder: str, kind: str, size_key: str, tmp_path: Path) -> None:
    predictions = prediction_file(folder, tmp_path)
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(predictions), "--format", "vlmeval", "--kind", kind, "-o", str(cal),
                 "--alpha", "0.25"]) == 0
    assert json.loads(cal.read_text())["kind"] == kind
    assert main(["apply", str(cal), str(predictions), "--format", "auto", "-o", str(tmp_path / "out.jsonl"),
                 "--json", str(tmp_path / "s.json")]) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["n_applied"] >= 12 and summary["labeled"]["n"] == summary["n_applied"]
    head, full = calibrated_evaluation(predictions, cal)
    assert head["n"] == summary["n_applied"] and not math.isnan(head[size_key])
    assert full["vlmeval"] is not None
    written = predictions.with_name(predictions.stem + "_calibrated.json")
    assert json.loads(written.read_text())["kind"] == kind


def test_a_calibrator_of_another_kind_is_refused(tmp_path: Path) -> None:
    likert = prediction_file("clean", tmp_path)
    pairs = prediction_file("pairwise", tmp_path)
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(likert), "--format", "vlmeval", "-o", str(cal), "--alpha", "0.25"]) == 0
    from judgecp.base.errors import InputError

    with pytest.raises(InputError):
        calibrated_evaluation(pairs, cal)


def test_a_calibrator_of_another_task_is_refused_naming_the_dataset_setting_then_forced(tmp_path: Path) -> None:
    """Item 11 of issue 29: the refusal names what works in VLMEvalKit ("force": true), and force applies it."""
    from judgecp.base.errors import InputError

    mllm = prediction_file("clean", tmp_path)  # task MLLMJudge_CP
    polaris = prediction_file("polaris", tmp_path)  # task Polaris_CP, the same judge
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(mllm), "--format", "vlmeval", "-o", str(cal), "--alpha", "0.25"]) == 0
    with pytest.raises(InputError) as info:
        calibrated_evaluation(polaris, cal, dataset="Polaris_CP")
    message = str(info.value)
    assert message.startswith("Polaris_CP: the calibrator does not fit this run: task ['Polaris_CP']")
    assert '"force": true' in message and "--force" not in message and "\n" not in message
    assert not polaris.with_name(polaris.stem + "_calibrated.json").exists()  # nothing written when refused
    head, full = calibrated_evaluation(polaris, cal, dataset="Polaris_CP", force=True)
    assert head["n"] == full["n_applied"] > 0 and type(head["n"]) is int
    assert any("task" in w["message"] and "(forced)" in w["message"] for w in full["warnings"])
    assert json.loads(json.dumps(head, allow_nan=False)) == head  # strict JSON (issue 29, item 13)
