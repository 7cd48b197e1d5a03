"""Records, settings and the task-level aggregation (no model, no lm-eval run)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from judgecp.adapters.lm_eval import metrics
from judgecp.adapters.lm_eval.metrics import (
    LikertSettings,
    aggregation,
    likert_metrics,
    likert_report,
    read_metric,
)
from judgecp.adapters.lm_eval.records import (
    judge_response,
    likert_record,
    parse_judge_response,
    records_from_samples,
)
from judgecp.errors import InputError
from judgecp.simulate import simulate_likert_judge


def synthetic_records(n: int = 200, seed: int = 0) -> list[dict]:
    data = simulate_likert_judge(n=n, seed=seed)
    return [
        likert_record(
            data.ids[i], int(data.labels[i]), dict(zip(data.scale.tokens, data.logprobs[i].tolist(), strict=True)),
            parsed=int(np.argmax(data.logprobs[i])) + 1, group=data.fields["group"][i],
        )
        for i in range(n)
    ]


def test_settings_defaults_and_metadata() -> None:
    s = LikertSettings.from_metadata({"version": 1.0})
    assert (s.alpha, s.methods, s.seeds, s.cal_fraction, s.mondrian) == (0.1, ("naive", "lac"), tuple(range(10)), 0.5, None)
    s = LikertSettings.from_metadata({"alpha": "0.2", "methods": "lac(probabilities=recalibrated),naive", "seeds": [3, 5], "mondrian": "group"})
    assert s.alpha == 0.2 and s.methods == ("lac(probabilities=recalibrated)", "naive") and s.seeds == (3, 5) and s.mondrian == "group"


@pytest.mark.parametrize(
    ("metadata", "message"),
    [({"alpha": 1.5}, "alpha"), ({"methods": "nope"}, "unknown method 'nope'"), ({"seeds": 0}, "seeds"),
     ({"cal_fraction": 1}, "cal_fraction"), ({"methods": "naive,naive"}, "twice")],
)
def test_bad_settings_name_the_value(metadata: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        LikertSettings.from_metadata(metadata)


def test_metric_names_and_stderr_order() -> None:
    names = [m.name for m in likert_metrics(LikertSettings.from_metadata({"methods": "naive,lac(probabilities=recalibrated)"}))]
    assert names[:2] == ["n", "excluded"]
    for m in ("naive", "lac_probabilities_recalibrated"):
        for base in ("coverage", "width"):
            assert names.index(f"{base}_{m}_stderr") == names.index(f"{base}_{m}") + 1
    assert "interval_width_naive" in names and "interval_width_lac_probabilities_recalibrated" not in names
    assert {"pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae"} <= set(names)


def test_aggregation_equals_the_core_report_and_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from judgecp.data import likert_from_records
    from judgecp.protocol import Protocol, evaluate

    records = synthetic_records()
    settings = LikertSettings.from_metadata({"seeds": 4})
    core = evaluate(likert_from_records(records, logprobs_json="logprobs"), Protocol(methods=("naive", "lac"), seeds=(0, 1, 2, 3)))
    calls = []
    real = metrics._compute
    monkeypatch.setattr(metrics, "_compute", lambda *a: calls.append(1) or real(*a))
    metrics._CACHE.clear()
    values = {m.name: aggregation(m, settings, "t")(records) for m in likert_metrics(settings)}
    assert len(calls) == 1, "the report must be computed once per content, not once per metric"
    assert values["coverage_naive"] == core["methods"]["naive"]["labels"]["coverage"]
    assert values["coverage_naive_stderr"] == core["methods"]["naive"]["labels"]["coverage_std"]
    assert values["interval_width_naive"] == core["methods"]["naive"]["interval"]["width"]
    assert values["width_lac"] == core["methods"]["lac"]["labels"]["width"]
    assert values["pearson"] == core["point"]["pearson"] and values["n"] == 200 and values["excluded"] == 0


def test_record_order_does_not_change_the_metrics() -> None:
    """Under accelerate, rank 0 gathers the records rank by rank: a different order."""
    records = synthetic_records(120)
    settings = LikertSettings.from_metadata({"seeds": 3})
    metrics._CACHE.clear()
    a = likert_report(records, settings)
    metrics._CACHE.clear()
    b = likert_report(records[1::2] + records[::2], settings)
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_bad_documents_are_counted_never_fatal() -> None:
    records = synthetic_records(60)
    records[0] = {**records[0], "exclude": "image_load_failed"}
    records[1] = {**records[1], "exclude": "response_not_json", "logprobs": None}
    records[2] = {**records[2], "label": "0"}  # off the 1-5 scale
    records[3] = {**records[3], "logprobs": None, "parsed": None, "flags": ["no_score"]}
    records[4] = {**records[4], "label": "4.5"}
    settings = LikertSettings.from_metadata({"seeds": 3})
    metrics._CACHE.clear()
    report = likert_report(records, settings)
    reasons = {e["reason"]: e["count"] for e in report["excluded"]}
    assert reasons == {"image_load_failed": 1, "response_not_json": 1, "label_off_scale": 2, "no_score": 1}
    assert report["n"] == 55 and report["n_excluded"] == 5


def test_too_few_usable_records_give_nan_metrics_and_counts() -> None:
    records = synthetic_records(3)
    records[0] = {**records[0], "exclude": "image_load_failed"}
    settings = LikertSettings.from_metadata({})
    metrics._CACHE.clear()
    report = likert_report(records, settings)
    by_name = {m.name: read_metric(report, m) for m in likert_metrics(settings)}
    assert by_name["n"] == 2 and by_name["excluded"] == 1
    assert math.isnan(by_name["coverage_naive"]) and math.isnan(by_name["pearson"])
    metrics._CACHE.clear()
    nothing = likert_report([{**r, "logprobs": None, "flags": ["no_score"]} for r in records[1:]], settings)
    assert {e["reason"]: e["count"] for e in nothing["excluded"]} == {"no_score": 2}


def test_judge_response_round_trip_and_non_json() -> None:
    raw = judge_response("Fine. Score: 4", {"1": -9.0, "2": float("-inf"), "3": -2.0, "4": -0.2, "5": float("nan")}, parsed=4, flags=["missing_token"])
    back = parse_judge_response(raw)
    assert back is not None and back["parsed"] == 4 and back["logprobs"]["2"] == "-inf" and back["flags"] == ["missing_token"]
    assert parse_judge_response("Fine. Score: 4") is None
    assert parse_judge_response(json.dumps({"text": "x"})) is None  # JSON, but not a judge response


def test_records_from_samples(tmp_path: Path) -> None:
    records = synthetic_records(5)
    path = tmp_path / "samples_t_2026.jsonl"
    with path.open("w") as f:
        for r in records:
            f.write(json.dumps({"doc_id": 0, "metrics": ["n", "coverage_naive"], "n": r, "coverage_naive": r}) + "\n")
    assert records_from_samples([path]) == records
    path.write_text(json.dumps({"doc_id": 0, "metrics": ["acc"], "acc": 1}) + "\n")
    with pytest.raises(ValueError, match="no judgecp record"):
        records_from_samples([path])
