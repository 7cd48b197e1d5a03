"""Records, settings and the task-level aggregation (no model, no lm-eval run)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from judgecp.adapters.lm_eval import metrics
from judgecp.adapters.lm_eval.metrics import aggregations, task_protocol, task_report
from judgecp.adapters.lm_eval.plugin import read_samples
from judgecp.base.errors import InputError
from judgecp.base.records import judge_output, parse_judge_output, score_record
from judgecp.base.scale import LikertScale
from judgecp.kinds.likert.metrics import likert_metrics
from judgecp.kinds.metrics import excluded_count, read_metric
from judgecp.synthetic.judges import simulate_likert_judge
from tests.lm_eval.helpers import aggregate_as_lm_eval

SCALE = LikertScale()


def synthetic_records(n: int = 200, seed: int = 0) -> list[dict]:
    data = simulate_likert_judge(n=n, seed=seed)
    return [
        score_record(
            data.ids[i],
            label=str(int(data.labels[i])),
            logprobs=dict(zip(data.scale.tokens, data.logprobs[i].tolist(), strict=True)),
            prediction=int(np.argmax(data.logprobs[i])) + 1,
            group=data.fields["group"][i],
        )
        for i in range(n)
    ]


def report(records: list[dict], settings: dict) -> dict:
    return task_report(records, "likert", task_protocol(settings, "likert"), scale=SCALE)


def test_settings_defaults_and_metadata() -> None:
    s = task_protocol({"version": 1.0, "pretrained": "some/model"}, "likert")
    assert (s.level, s.method_specs("likert"), s.split_seeds("likert"), s.cal_fraction, s.mondrian) == (
        0.1, ("naive", "lac"), tuple(range(10)), 0.5, None)
    s = task_protocol(
        {"alpha": "0.2", "methods": "lac(probabilities=recalibrated),naive", "seeds": [3, 5], "mondrian": "group"},
        "likert",
    )
    assert (
        s.level == 0.2
        and s.methods == ("lac(probabilities=recalibrated)", "naive")
        and s.split_seeds("likert") == (3, 5)
    )
    assert s.mondrian == "group"
    assert task_protocol({"splits": 4, "random_state": 7}, "likert").split_seeds("likert") == (7, 8, 9, 10)
    # one --metadata goes to every task of a run: a pairwise setting is not a Likert task's error
    assert task_protocol({"controllers": "scope", "alphas": "0.1"}, "likert").controllers is None


@pytest.mark.parametrize(
    ("metadata", "message"),
    [({"alpha": 1.5}, "metadata alpha"), ({"methods": "nope"}, "metadata methods: unknown method 'nope'"),
     ({"methods": "naiv,lac"}, "did you mean 'naive'"), ({"seeds": 0}, "metadata splits"),
     ({"cal_fraction": 1}, "metadata cal_fraction"), ({"methods": "naive,naive"}, "twice"),
     ({"methods": "lac(probabilties=judge)"}, "no parameter 'probabilties'; did you mean 'probabilities'")],
)
def test_bad_settings_name_the_value(metadata: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        task_protocol(metadata, "likert")


def test_metric_names_and_stderr_order() -> None:
    names = [
        m.name for m in likert_metrics(task_protocol({"methods": "naive,lac(probabilities=recalibrated)"}, "likert"))
    ]
    assert names[:2] == ["n", "excluded"]
    for m in ("naive", "lac_probabilities_recalibrated"):
        for base in ("coverage", "width"):
            assert names.index(f"{base}_{m}_stderr") == names.index(f"{base}_{m}") + 1
    assert "interval_width_naive" in names and "interval_width_lac_probabilities_recalibrated" not in names
    assert {"pearson", "spearman", "kendall", "exact_accuracy", "within1_accuracy", "mae"} <= set(names)


def test_aggregation_equals_the_core_report_and_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from judgecp import Protocol, evaluate, from_records

    records = synthetic_records()
    protocol = task_protocol({"seeds": 4}, "likert")
    core = evaluate(from_records(records), Protocol(methods=("naive", "lac"), seeds=(0, 1, 2, 3)))
    calls = []
    real = metrics._compute
    monkeypatch.setattr(metrics, "_compute", lambda *a: calls.append(1) or real(*a))
    values, task_report_ = aggregate_as_lm_eval(
        likert_metrics(protocol), lambda r: task_report(r, "likert", protocol, scale=SCALE), records
    )
    assert len(calls) == 1 == task_report_.computations, (
        "the report must be computed once per task, not once per metric"
    )
    assert values["coverage_naive"] == core["methods"]["naive"]["labels"]["coverage"]
    assert values["coverage_naive_stderr"] == core["methods"]["naive"]["labels"]["coverage_std"]
    assert values["interval_width_naive"] == core["methods"]["naive"]["interval"]["width"]
    assert values["width_lac"] == core["methods"]["lac"]["labels"]["width"]
    assert values["pearson"] == core["point"]["pearson"] and values["n"] == 200 and values["excluded"] == 0


def test_each_document_holds_its_record_once_and_metrics_never_guess(caplog: pytest.LogCaptureFixture) -> None:
    from judgecp.adapters.lm_eval.metrics import TaskReport, document_values

    records = synthetic_records(40)
    metric_list = likert_metrics(task_protocol({"seeds": 2}, "likert"))
    one = document_values(metric_list, records[0])
    assert list(one) == [m.name for m in metric_list] and one["n"] is records[0]
    assert all(v is None for k, v in one.items() if k != "n")
    task = TaskReport(lambda r: report(r, {"seeds": 2}), task="t")
    aggs = aggregations(metric_list, task.of)
    # a placeholder metric before the records, or of another number of documents: NaN and one warning
    assert math.isnan(aggs["coverage_naive"]([None] * 40)) and math.isnan(aggs["n"]([None] * 40))
    assert (
        aggs["n"](records) == 40
        and aggs["coverage_naive"]([None] * 40)
        == report(records, {"seeds": 2})["methods"]["naive"]["labels"]["coverage"]
    )
    assert math.isnan(aggs["pearson"]([None] * 39))
    assert math.isnan(aggs["n"]([*records[:39], None]))  # a document without its record: never guessed
    assert task.computations == 1
    assert sum("NaN" in r.getMessage() for r in caplog.records) == 1


def test_record_order_does_not_change_the_metrics() -> None:
    """Under accelerate, rank 0 gathers the records rank by rank: a different order."""
    records = synthetic_records(120)
    a = report(records, {"seeds": 3})
    b = report(records[1::2] + records[::2], {"seeds": 3})
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_bad_documents_are_counted_never_fatal() -> None:
    records = synthetic_records(60)
    records[0] = {**records[0], "exclude": "image_load_failed"}
    records[1] = {**records[1], "exclude": "response_not_json", "logprobs": None}
    records[2] = {**records[2], "label": "0"}  # off the 1-5 scale
    records[3] = {**records[3], "logprobs": None, "prediction": None, "flags": ["no_score"]}
    records[4] = {**records[4], "label": "4.5"}
    got = report(records, {"seeds": 3})
    reasons = {e["reason"]: e["count"] for e in got["excluded"]}
    assert reasons == {"image_load_failed": 1, "response_not_json": 1, "label_off_scale": 2, "no_score": 1}
    assert got["n"] == 55 and excluded_count(got) == 5


def test_too_few_usable_records_give_nan_metrics_and_counts() -> None:
    records = synthetic_records(3)
    records[0] = {**records[0], "exclude": "image_load_failed"}
    got = report(records, {})
    by_name = {m.name: read_metric(got, m) for m in likert_metrics(task_protocol({}, "likert"))}
    assert by_name["n"] == 2 and by_name["excluded"] == 1
    assert math.isnan(by_name["coverage_naive"]) and math.isnan(by_name["pearson"])
    nothing = report([{**r, "logprobs": None, "flags": ["no_score"]} for r in records[1:]], {})
    assert {e["reason"]: e["count"] for e in nothing["excluded"]} == {"no_score": 2}


def test_judge_output_round_trip_and_non_json() -> None:
    raw = json.dumps(
        judge_output(
            "score",
            logprobs={"1": -9.0, "2": float("-inf"), "3": -2.0, "4": -0.2, "5": float("nan")},
            prediction=4,
            flags=["missing_token"],
            text="Fine. Score: 4",
        )
    )
    back = parse_judge_output(raw, "score")
    assert back is not None and back["prediction"] == 4 and back["logprobs"]["2"] == "-inf"
    assert back["flags"] == ["missing_token"] and back["meta"]["text"] == "Fine. Score: 4"
    assert parse_judge_output("Fine. Score: 4") is None
    assert parse_judge_output(json.dumps({"text": "x"})) is None  # JSON, but not a judge output
    assert parse_judge_output(raw, "pair") is None  # another shape


def test_records_from_samples(tmp_path: Path) -> None:
    records = synthetic_records(5)
    path = tmp_path / "samples_t_2026.jsonl"
    lines = [json.dumps({"doc_id": i, "metrics": ["n", "coverage_naive"], "n": r, "coverage_naive": r})
             for i, r in enumerate(records)]
    path.write_text("\n".join([lines[3], *lines, lines[1], "[1, 2, 3]", lines[0][: len(lines[0]) // 2]]) + "\n")
    batch = read_samples(path)
    assert batch.records == sorted(records, key=lambda r: r["id"])  # in id order, as the tasks aggregate them
    assert dict(batch.excluded.counts) == {"duplicate_record": 2, "malformed_json_line": 2} and batch.n_read == 9
    path.write_text(json.dumps({"doc_id": 0, "metrics": ["acc"], "acc": 1}) + "\n")
    with pytest.raises(InputError, match="no judgecp record"):
        read_samples(path)


def test_records_from_samples_written_once_and_before(tmp_path: Path) -> None:
    """Samples files now hold the record under the first metric; files written before hold it under every metric."""
    from judgecp.adapters.lm_eval.metrics import document_values

    records = synthetic_records(6)
    metric_list = likert_metrics(task_protocol({}, "likert"))
    now, before = tmp_path / "samples_now_2026.jsonl", tmp_path / "samples_before_2026.jsonl"
    now.write_text(
        "".join(
            json.dumps({"doc_id": i, "metrics": [m.name for m in metric_list], **document_values(metric_list, r)})
            + "\n"
            for i, r in enumerate(records)
        )
    )
    before.write_text(
        "".join(
            json.dumps({"doc_id": i, "metrics": [m.name for m in metric_list], **{m.name: r for m in metric_list}})
            + "\n"
            for i, r in enumerate(records)
        )
    )
    assert read_samples(now).records == read_samples(before).records == sorted(records, key=lambda r: r["id"])
    assert now.stat().st_size * 5 < before.stat().st_size
