"""judgecp's headline where VLMEvalKit's own summary looks (issue 29, item 12): ``|overall`` keys, ``_score.csv``.

VLMEvalKit's ``scripts/summarize.py`` reads ``status.json`` only; in a process
without judgecp it picks one metric by name (``overall`` first, then
``...|overall``, then ``acc``; ties by name). The headline therefore carries
judgecp's primary metrics under ``...|overall`` names, and only those mention
``overall``. On the committed fixtures (real runs; no VLMEvalKit needed). The
same with VLMEvalKit's own chooser when it is importable, and the real
``summarize.py`` in tests/vlmeval/test_integration.py.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from judgecp.adapters.vlmeval.calibrated import calibrated_evaluation
from judgecp.adapters.vlmeval.evaluation import evaluate_prediction_file
from judgecp.adapters.vlmeval.summary import (
    flatten,
    primary_keys,
    score_path,
    with_overall,
    write_score_file,
)
from judgecp.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
FAST = {"methods": "naive,lac", "seeds": 3}

#: fixture folder, dataset -> judgecp's primary metrics, in the order status.json lists them
CASES = {
    ("clean", "MLLMJudge_CP"): ["naive|coverage|overall", "naive|set_width|overall"],
    ("polaris", "Polaris_CP"): ["naive|coverage|overall", "naive|set_width|overall"],
    # the tiny judge's verdicts are noise: SCOPE accepts none in any split, so its risk is
    # undefined (issue 38, item 1) and the share accepted, 0, is the one primary number
    ("pairwise", "MLLMJudgePair_CP"): ["scope|coverage|overall"],
    ("parc", "PARC_toy"): ["accuracy|overall", "reliability|overall"],
}


def prediction_file(tmp_path: Path, folder: str) -> Path:
    run = next((FIXTURES / folder).glob("*/*"))
    shutil.copytree(run, tmp_path / folder)
    return next((tmp_path / folder).glob("*.xlsx"))


def status_metrics(head: dict[str, Any]) -> dict[str, Any]:
    """What status.json keeps of a headline: VLMEvalKit flattens one level and keeps numbers only."""
    return {k: v for k, v in flatten(head).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def fallback_candidates(metrics: dict[str, Any]) -> list[str]:
    """The keys VLMEvalKit's name-based choice ranks at the top: ``overall`` or any name with it."""
    return sorted(k for k in metrics if "overall" in k.lower())


@pytest.mark.parametrize(("folder", "dataset"), list(CASES))
def test_the_primary_metrics_are_the_only_overall_keys(folder: str, dataset: str, tmp_path: Path) -> None:
    pred = prediction_file(tmp_path, folder)
    head = evaluate_prediction_file(pred, settings=FAST).headline
    metrics = status_metrics(head)
    want = CASES[(folder, dataset)]
    assert primary_keys(metrics) == want
    # nothing else mentions "overall" and no key is "overall": VLMEvalKit's fallback pick is want[0]
    assert fallback_candidates(metrics) == want and "overall" not in metrics
    for key in want:  # a copy of the headline's own number, not a new one
        original = key.removesuffix("|overall") if key.count("|") == 2 else key
        assert metrics[key] == metrics[original]
    assert json.loads(json.dumps(head, allow_nan=False)) == head


@pytest.mark.parametrize(("folder", "dataset"), list(CASES))
def test_score_file_beside_the_prediction_file(folder: str, dataset: str, tmp_path: Path) -> None:
    pred = prediction_file(tmp_path, folder)
    head = evaluate_prediction_file(pred, settings=FAST).headline
    path = pred.with_name(f"{pred.stem}_score.csv")
    assert score_path(pred) == path and path.exists()
    with path.open(encoding="utf-8", newline="") as fh:
        header, values, *rest = list(csv.reader(fh))
    assert rest == []  # VLMEvalKit's layout of a dict of scores: one row, a column per metric
    want = CASES[(folder, dataset)]
    assert header[: len(want)] == want  # primary metrics first
    flat = flatten(head)
    assert set(header) == set(flat) - {"error"}
    for key, cell in zip(header, values, strict=True):
        assert cell == ("" if flat[key] is None else str(flat[key])), key


def test_no_metrics_no_score_file_and_a_stale_one_is_removed(tmp_path: Path) -> None:
    pred = prediction_file(tmp_path, "plain")  # a model without -lp: no records at all
    stale = write_score_file(pred, {"n": 3, "naive": {"coverage": 0.9, "set_width": 2.0}})
    assert stale.exists()
    outcome = evaluate_prediction_file(pred, settings=FAST)
    assert outcome.errors and not stale.exists()
    assert primary_keys(status_metrics(outcome.headline)) == []  # no number to show as primary


def test_error_stays_last_and_undefined_primaries_get_no_copy() -> None:
    head = {"n": 0, "n_read": 3, "naive": {"coverage": None, "set_width": None}, "error": "no usable rows"}
    assert list(with_overall(head, "likert")) == ["n", "n_read", "naive", "error"]
    pairs = {"n": 4, "scope": {"coverage": 0.5, "risk": float("nan")}}
    assert with_overall(pairs, "pairwise")["scope|coverage|overall"] == 0.5
    assert "scope|risk|overall" not in with_overall(pairs, "pairwise")
    accepted = {"n": 4, "alpha": 0.1, "scope": {"coverage": 0.5, "risk": 0.0, "abstain_all": 0.0}}
    want = ["scope|coverage|overall", "scope|risk|overall"]
    assert primary_keys(flatten(with_overall(accepted, "pairwise"))) == want


def test_the_pairwise_fixture_abstains_and_its_risk_is_undefined(tmp_path: Path) -> None:
    """The committed pairwise run (issue 38, item 1): SCOPE abstains on every pair; status.json's
    metrics say coverage 0 and no risk, and its primary metric is the coverage alone."""
    head = evaluate_prediction_file(prediction_file(tmp_path, "pairwise"), settings=FAST).headline
    assert head["scope"] == {"coverage": 0.0, "risk": None, "abstain_all": 1.0}
    vanilla = head["vanilla"]  # accepts every verdict: a risk
    assert vanilla["risk"] is not None and vanilla["abstain_all"] == 0.0
    metrics = status_metrics(head)
    assert "scope|risk" not in metrics and primary_keys(metrics) == ["scope|coverage|overall"]


def test_calibrated_headline_primary_metrics(tmp_path: Path) -> None:
    pred = prediction_file(tmp_path, "clean")
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(pred), "--format", "vlmeval", "-o", str(cal), "--alpha", "0.25"]) == 0
    head, _ = calibrated_evaluation(pred, cal)
    metrics = status_metrics(head)
    assert primary_keys(metrics) == fallback_candidates(metrics) == ["coverage_labeled|overall", "set_size|overall"]
    assert metrics["set_size|overall"] == head["set_size"]
    assert score_path(pred).exists()


@pytest.mark.skipif(importlib.util.find_spec("vlmeval") is None, reason="VLMEvalKit (vlmeval) is not importable")
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(("folder", "dataset"), list(CASES))
def test_vlmevalkit_own_choice_is_judgecp_first_primary_metric(folder: str, dataset: str, tmp_path: Path) -> None:
    from vlmeval.dataset.image_base import ImageBaseDataset

    pred = prediction_file(tmp_path, folder)
    metrics = status_metrics(evaluate_prediction_file(pred, settings=FAST).headline)
    assert list(ImageBaseDataset.report_primary_metric(metrics)) == CASES[(folder, dataset)][:1]
