"""Continuous labels through lm-eval: the ``label_scale`` setting, Polaris's unbinned human score.

The glue (settings, records, the task-level report) without a model; then
``polaris_cp_continuous`` through the real lm-eval command line with the
tiny local LLaVA judge, and the same numbers post hoc from its samples file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from judgecp.adapters.lm_eval.metrics import task_protocol, task_report
from judgecp.base.records import score_record
from judgecp.base.scale import LabelScale, LikertScale
from judgecp.kinds.likert.metrics import likert_metrics
from judgecp.kinds.metrics import read_metric
from tests.helpers import judge_draw
from tests.lm_eval.helpers import judge_run, metric, results_file, samples

SCALE = LikertScale()


def unit_records(n: int, seed: int, label_scale: tuple[float, float] | None = (0.0, 1.0)) -> list[dict]:
    """Score records as a task writes them when its labels are averaged scores c on [0, 1]."""
    X, y = judge_draw(n, np.random.default_rng(seed), continuous=True)
    c = (y - 1) / 4
    return [score_record(str(i), label=float(c[i]), logprobs=dict(zip(SCALE.tokens, X[i].tolist(), strict=True)),
                         prediction=int(np.argmax(X[i])) + 1, scale=(1, 5), label_scale=label_scale)
            for i in range(n)]


def test_metadata_label_scale_reaches_the_report() -> None:
    protocol = task_protocol({"label_scale": "0:1", "methods": "naive,lac", "seeds": 3}, "likert")
    assert protocol.label_scale == LabelScale(0, 1)
    report = task_report(unit_records(300, 1), "likert", protocol, task="t", scale=SCALE)
    assert report["label_scale"]["continuous"] and [s["method"] for s in report["skipped"]] == ["lac"]
    values = {m.name: read_metric(report, m) for m in likert_metrics(protocol)}
    # coverage_<m> and width_<m> are the interval's when the labels are continuous; a skipped set method is NaN
    assert (
        values["coverage_naive"] == report["methods"]["naive"]["interval"]["coverage"]
        and 0.8 < values["coverage_naive"] <= 1
    )
    assert values["width_naive"] == values["interval_width_naive"] and math.isnan(values["coverage_lac"])
    assert values["n"] == 300 and values["excluded"] == 0


def test_records_without_the_setting_are_an_error_not_silent() -> None:
    """Integer records that do not carry the protocol's label scale (another task's): undefined, said so."""
    protocol = task_protocol({"label_scale": "0:1", "methods": "naive", "seeds": 2}, "likert")
    records = [{**r, "label": round(1 + 4 * r["label"])} for r in unit_records(40, 2, label_scale=None)]
    report = task_report(records, "likert", protocol, task="t", scale=SCALE)
    assert "the protocol's label_scale 0:1 was not applied to the data" in report["error"]
    assert math.isnan(read_metric(report, likert_metrics(protocol)[2])) and report["n"] == 40


def test_polaris_docs_keep_the_unbinned_score(polaris_dir: Path) -> None:
    from tests.lm_eval.test_data_sources import task_utils

    docs = task_utils("polaris_cp").load_docs(data_dir=str(polaris_dir))["test"]
    assert [d["human_score"] for d in docs] == [(i % 5) / 4 for i in range(10)]
    assert [d["label"] for d in docs] == [str(round(4 * (i % 5) / 4) + 1) for i in range(10)]


#: Averaged scores off the 0, 1/4, .. grid: 1 + 4c is not an integer (the shared fixture's scores all map to integers).
SCORES = [0.1, 0.3, 0.55, 0.7, 0.9, 0.15, 0.35, 0.6, 0.8, 0.95]


def test_polaris_continuous_through_lm_eval(tiny_llava: Path, tmp_path: Path) -> None:
    """The variant task reads human_score on 0:1; its records say so; post hoc gives the same numbers."""
    from judgecp.cli import main
    from tests.lm_eval.fixtures import build_polaris_dir

    data = build_polaris_dir(tmp_path / "polaris", n=10)
    lines = [json.loads(line) for line in (data / "test.jsonl").read_text().splitlines()]
    (data / "test.jsonl").write_text(
        "".join(json.dumps({**d, "human_score": c}) + "\n" for d, c in zip(lines, SCORES, strict=True))
    )
    out = tmp_path / "out"
    judge_run(tmp_path, "hf-multimodal-judge", f"pretrained={tiny_llava},dtype=float32,max_length=4096",
              "polaris_cp_continuous", out, {"seeds": 3}, env={"JUDGECP_POLARIS_DIR": str(data)})
    results = results_file(out)
    assert metric(results, "polaris_cp_continuous", "n") == 10
    records = [s["n"] for s in samples(out, "polaris_cp_continuous")]
    assert sorted(r["label"] for r in records) == sorted(SCORES)
    assert {tuple(r["label_scale"]) for r in records} == {(0.0, 1.0)}
    # the YAML's methods (interval methods) and label scale, with --metadata's seeds merged in
    for name in ("naive", "chr", "lvd", "r2ccp"):
        assert not math.isnan(metric(results, "polaris_cp_continuous", f"coverage_{name}"))
    files = sorted(out.rglob("samples_polaris_cp_continuous_2*.jsonl"))
    post_file = tmp_path / "post_hoc.json"
    assert main(["evaluate", "--format", "lm-eval", str(files[-1]), "--methods", "naive,chr,lvd,r2ccp",
                 "--seeds", "3", "--json", str(post_file), "--quiet"]) == 0
    post = json.loads(post_file.read_text())
    assert post["label_scale"]["scale"] == [0.0, 1.0] and post["label_scale"]["continuous"]
    assert post["methods"]["naive"]["interval"]["coverage"] == pytest.approx(
        metric(results, "polaris_cp_continuous", "coverage_naive"), abs=1e-12)
