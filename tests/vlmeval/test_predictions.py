"""Reading prediction files of real VLMEvalKit runs (committed fixtures) and the metric files.

The fixtures come from ``python -m tests.vlmeval.make_fixtures`` (a tiny local
judge through ``judgecp vlmeval``, VLMEvalKit e8e78f05); see fixtures/README.md.
Every test works on a copy, so the metric files are written to tmp.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from judgecp import load
from judgecp.adapters.vlmeval.evaluation import (
    evaluate_prediction_file,
    headline,
    metric_path,
)
from judgecp.adapters.vlmeval.predictions import (
    legacy_record,
    read_predictions,
    read_table,
    split_stem,
)
from judgecp.base.errors import InputError
from judgecp.base.records import problem
from judgecp.cli import main

FIXTURES = Path(__file__).parent / "fixtures"
LP = "tiny-docling-lp"
FAST = {"methods": "naive,lac", "seeds": 3}


def copy(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURES / name, dest)
    return dest


def runs(root: Path, model: str = LP) -> list[Path]:
    return sorted(p for p in (root / model).iterdir() if p.is_dir())


def prediction(root: Path, dataset: str = "MLLMJudge_CP", model: str = LP) -> Path:
    return runs(root, model)[-1] / f"{model}_{dataset}.xlsx"


def sidecar(run: Path, dataset: str = "MLLMJudge_CP", model: str = LP) -> Path:
    return run / f"{model}_{dataset}_lprecords.jsonl"


def write_tsv(path: Path, columns: list[str], rows: list[dict]) -> None:
    """Like VLMEvalKit's PRED_FORMAT=tsv (pandas, QUOTE_ALL)."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, delimiter="\t", quoting=csv.QUOTE_ALL)
        writer.writeheader()
        writer.writerows([{c: "" if r.get(c) is None else r.get(c) for c in columns} for r in rows])


def without_embedded_records(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """The clean run as ``p.tsv`` without its extra_records column, and its sidecar's lines (the file removed)."""
    root = copy(tmp_path, "clean")
    run = runs(root)[0]
    columns, rows = read_table(prediction(root))
    write_tsv(run / "p.tsv", [c for c in columns if c != "extra_records"], rows)
    lines = sidecar(run).read_text().splitlines()
    sidecar(run).unlink()
    return root, run, lines


def test_clean_run_records_are_embedded(tmp_path: Path) -> None:
    root = copy(tmp_path, "clean")
    table = read_predictions(prediction(root))
    assert table.dataset == "MLLMJudge_CP" and table.n_read == 24 and len(table.rows) == 24
    assert table.record_sources == {"embedded": 24, "repaired": 0, "sidecar": 0}
    assert not table.excluded and not table.repaired
    side = {json.loads(line)["index"]: json.loads(line) for line in sidecar(runs(root)[0]).read_text().splitlines()}
    for row in table.rows:
        assert row.record is not None and row.record["logprobs"] == side[row.index]["logprobs"]


def test_old_capture_records_read_as_judge_outputs() -> None:
    """The layout before judgecp.record/1 (the committed fixtures, old runs) converts field by field."""
    old = {
        "v": 1,
        "kind": "likert",
        "source": "hf_generate",
        "logprobs": {"1": -0.5, "2": -1.0},
        "parsed": 1,
        "stage": "backward",
        "position": 0,
        "n_tokens": 2,
        "flags": ["backward_scan"],
        "index": 0,
        "dataset": "MLLMJudge_CP",
        "model": "m-lp",
        "prediction_sha1": "ab",
        "written_at": "2026-11-22T02:15:36+00:00",
    }
    record = legacy_record(old)
    assert record is not None and problem(record) is None
    assert (record["shape"], record["id"], record["task"], record["judge"]) == ("score", "0", "MLLMJudge_CP", "m-lp")
    assert record["prediction"] == 1 and record["logprobs"] == {"1": -0.5, "2": -1.0}
    assert record["flags"] == ["backward_scan"] and record["meta"] == {
        "stage": "backward", "position": 0, "n_tokens": 2, "source": "hf_generate", "prediction_sha1": "ab",
        "written_at": "2026-11-22T02:15:36+00:00"}
    letters = {"v": 1, "kind": "parc", "source": "openai_api", "letters": ["A", "B"], "logprobs": None,
               "answer": None, "stage": None, "position": None, "n_tokens": 3, "flags": ["no_answer_letter"]}
    choice = legacy_record(letters)
    assert choice is not None and choice["shape"] == "choice" and choice["prediction"] is None
    assert choice["logprobs"] is None and choice["meta"]["letters"] == ["A", "B"] and "id" not in choice
    assert legacy_record({"v": 1, "kind": "ranking"}) is None and legacy_record({"kind": "likert"}) is None
    assert legacy_record({"schema": "judgecp.record/1", "shape": "score"}) is None  # already a record


def test_sidecars_mixing_the_old_and_the_new_layout_match_the_same_rows(tmp_path: Path) -> None:
    """A run resumed after the upgrade: old lines and new lines in one sidecar, each matched to its row."""
    root, run, lines = without_embedded_records(tmp_path)
    upgraded = [json.dumps(legacy_record(json.loads(x))) if k % 2 else x for k, x in enumerate(lines)]
    moved = tmp_path / "mixed.jsonl"
    moved.write_text("\n".join(upgraded) + "\n")
    mixed = read_predictions(run / "p.tsv", sidecars=[moved], dataset="MLLMJudge_CP")
    clean = read_predictions(prediction(root))
    assert mixed.record_sources["sidecar"] == len(mixed.rows) == 24 and not mixed.excluded
    def fields(table: Any) -> list[tuple[Any, ...]]:
        return [
            (r.index, r.record["id"], r.record["logprobs"], r.record["prediction"], r.record["flags"])
            for r in table.rows
        ]

    assert fields(mixed) == fields(clean)


def test_clean_run_metric_file_and_headline(tmp_path: Path) -> None:
    root = copy(tmp_path, "clean")
    pred = prediction(root)
    outcome = evaluate_prediction_file(pred, settings=FAST)
    assert outcome.metric_file == metric_path(pred, "likert") == pred.with_name(f"{LP}_MLLMJudge_CP_cp.json")
    report = json.loads(outcome.metric_file.read_text())
    assert report["n_read"] == 24 and set(report["methods"]) == {"naive", "lac"}
    assert set(report["groups"]) == {"coco", "ChartQA", "WIT", "mathvista"}  # per-category tables by default
    assert report["vlmeval"]["record_sources"]["embedded"] == 24
    h = outcome.headline
    assert set(h) >= {"n", "n_read", "excluded", "naive", "lac", "exact_accuracy"}
    assert set(h["naive"]) == {"coverage", "set_width", "interval_coverage", "interval_width", "full_range"}

    class Numpy2Encoder(json.JSONEncoder):  # VLMEvalKit's NumpyEncoder names np.float_, gone in NumPy 2
        def default(self, o: object) -> object:
            raise AttributeError("`np.float_` was removed in the NumPy 2.0 release")

    json.dumps(h, cls=Numpy2Encoder, allow_nan=False)  # plain Python numbers only, no NaN

    def plain(v: object) -> bool:
        return v is None or type(v) in (int, float, str) or (isinstance(v, dict) and all(map(plain, v.values())))

    assert all(plain(v) for v in h.values())


def test_without_extra_records_the_sidecar_is_used(tmp_path: Path) -> None:
    root = copy(tmp_path, "clean")
    run = runs(root)[0]
    columns, rows = read_table(prediction(root))
    columns = [c for c in columns if c != "extra_records"]
    tsv = run / f"{LP}_MLLMJudge_CP.tsv"  # VLMEvalKit after --reuse: no extra_records column
    write_tsv(tsv, columns, rows)
    table = read_predictions(tsv)
    assert table.record_sources == {"embedded": 0, "repaired": 0, "sidecar": 24}
    assert all("record_from_sidecar" in r.flags for r in table.rows)
    sidecar(run).unlink()
    lost = read_predictions(tsv)
    assert lost.rows == [] and dict(lost.excluded.counts) == {"no_logprob_record": 24}


def test_stale_and_malformed_sidecar_records_are_counted(tmp_path: Path) -> None:
    _, run, lines = without_embedded_records(tmp_path)
    stale = json.loads(lines[0])
    stale["prediction_sha1"] = "0" * 40  # a record of another run's prediction
    lines[0] = json.dumps(stale)
    lines[1] = lines[1][: len(lines[1]) // 2]  # a line cut by a crash
    moved = tmp_path / "elsewhere.jsonl"
    moved.write_text("\n".join(lines) + "\n")
    table = read_predictions(run / "p.tsv", sidecars=[moved], dataset="MLLMJudge_CP")
    assert table.excluded.counts["record_prediction_mismatch"] == 1
    assert table.excluded.counts["no_logprob_record"] == 1  # the row of the cut line
    assert table.excluded.counts["sidecar_malformed_line"] == 1
    assert len(table.rows) == 22


def test_partial_resume_rows_are_repaired(tmp_path: Path) -> None:
    root = copy(tmp_path, "resume")
    first, second = runs(root)
    pred = second / f"{LP}_MLLMJudge_CP.xlsx"
    columns, raw = read_table(pred)
    assert "extra_records" not in columns
    assert sum(str(r["prediction"]).startswith("{'prediction'") for r in raw) == 14  # as VLMEvalKit wrote it
    table = read_predictions(pred)
    assert table.record_sources == {"embedded": 0, "repaired": 14, "sidecar": 10}
    assert table.repaired.counts["resume_repaired"] == 14 and not table.excluded
    assert {p.name for p in table.sidecars} == {f"{LP}_MLLMJudge_CP_lprecords.jsonl"}
    assert sidecar(first).resolve() in table.sidecars  # the earlier run's sidecar
    repaired = [r for r in table.rows if "resume_repaired" in r.flags]
    assert all(not r.prediction.startswith("{") for r in repaired)
    data = load(pred, format="vlmeval")
    assert data.n_read == 24 and data.flags.counts["resume_repaired"] == 14
    # without the first run's sidecar the reused rows have no record: counted, the rest still evaluated
    sidecar(first).unlink()
    table = read_predictions(pred)
    assert dict(table.excluded.counts) == {"no_logprob_record": 10} and len(table.rows) == 14


def test_unparseable_resume_row_and_failed_rows_are_excluded(tmp_path: Path) -> None:
    root = copy(tmp_path, "resume")
    pred = runs(root)[-1] / f"{LP}_MLLMJudge_CP.xlsx"
    columns, rows = read_table(pred)
    broken = next(r for r in rows if str(r["prediction"]).startswith("{'prediction'"))
    broken["prediction"] = str(broken["prediction"])[:80]  # cut, e.g. by a cell limit
    rows[0]["prediction"] = "Failed to obtain answer via API. timeout"
    rows.append(dict(rows[1]))  # a duplicated index
    out = pred.with_suffix(".tsv")
    write_tsv(out, columns, rows)
    table = read_predictions(out)
    assert table.excluded.counts["corrupted_prediction"] == 1
    assert table.excluded.counts["inference_failed"] == 1
    assert table.excluded.counts["duplicate_index"] == 1
    assert len(table.rows) == 22 and table.n_read == 25


def test_prediction_file_without_records_is_reported_not_fatal(tmp_path: Path) -> None:
    root = copy(tmp_path, "plain")
    pred = prediction(root, model="tiny-docling")
    outcome = evaluate_prediction_file(pred, settings=FAST)
    assert outcome.errors and "no usable rows (no_logprob_record: 24)" in outcome.errors[0]
    assert outcome.headline["n"] == 0 and outcome.headline["n_read"] == 24 and outcome.headline["excluded"] == 24
    report = json.loads(outcome.metric_file.read_text())
    assert report["excluded"] == [{"reason": "no_logprob_record", "count": 24, "examples": ["0", "3", "6", "9", "12"]}]


def test_json_and_tsv_prediction_formats(tmp_path: Path) -> None:
    root = copy(tmp_path, "clean")
    columns, rows = read_table(prediction(root))
    run = runs(root)[0]
    write_tsv(run / f"{LP}_MLLMJudge_CP.tsv", columns, rows)
    (run / f"{LP}_MLLMJudge_CP.json").write_text(json.dumps(rows))
    for path in (run / f"{LP}_MLLMJudge_CP.tsv", run / f"{LP}_MLLMJudge_CP.json"):
        table = read_predictions(path)
        assert table.record_sources["embedded"] == 24 and not table.excluded


def test_polaris_run(tmp_path: Path) -> None:
    root = copy(tmp_path, "polaris")
    outcome = evaluate_prediction_file(prediction(root, "Polaris_CP"), settings=FAST)
    assert outcome.report["n_read"] == 16 and "groups" not in outcome.report
    assert outcome.report["vlmeval"]["judge_dataset"] == "polaris"


def test_polaris_run_on_the_unbinned_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The dataset argument label_scale 0:1 makes score_mean (the annotators' average) the label, unbinned."""
    root = copy(tmp_path, "polaris")
    pred = prediction(root, "Polaris_CP")
    outcome = evaluate_prediction_file(pred, settings={**FAST, "label_scale": "0:1"})
    report = outcome.report
    assert report["n"] == 16 and report["label_scale"]["continuous"] and report["label_scale"]["scale"] == [0.0, 1.0]
    assert [s["method"] for s in report["skipped"]] == ["lac"] and report["methods"]["naive"]["labels"] is None
    assert outcome.headline["naive"]["coverage"] == report["methods"]["naive"]["interval"]["coverage"]
    assert sorted(outcome.data.labels.tolist()) == sorted(1 + 4 * k / 8 for k in (*range(9), *range(7)))
    with pytest.raises(InputError, match="dataset argument label_scale: cannot read"):
        evaluate_prediction_file(pred, settings={**FAST, "label_scale": "0-1"})
    # post hoc: the records keep the binned answer; --label score_mean --label-scale 0:1 reads the average
    out = tmp_path / "post.json"
    assert main(["evaluate", "--format", "vlmeval", str(pred), "--methods", "naive,lac", "--seeds", "3",
                 "--label", "score_mean", "--label-scale", "0:1", "--json", str(out), "--quiet"]) == 0
    post = json.loads(out.read_text())
    assert post["methods"]["naive"]["interval"] == report["methods"]["naive"]["interval"]


def test_not_a_judge_dataset_or_not_a_prediction_file(tmp_path: Path) -> None:
    root = copy(tmp_path, "clean")
    columns, rows = read_table(prediction(root))
    columns = [c for c in columns if c not in ("judgecp_kind", "judgecp_scale")]
    # another dataset's name, no kind column: the embedded records still say what the rows are
    other = tmp_path / "tiny_MMBench_DEV_EN.tsv"
    write_tsv(other, columns, rows)
    assert evaluate_prediction_file(other, settings=FAST).report["n"] == 24
    # ... and without records nothing tells: a clear error that names --kind mcq
    plain_columns, plain_rows = read_table(prediction(copy(tmp_path, "plain"), model="tiny-docling"))
    unknown = tmp_path / "tiny_MMBench_DEV_EN_plain.tsv"
    write_tsv(unknown, [c for c in plain_columns if c not in ("judgecp_kind", "judgecp_scale")], plain_rows)
    with pytest.raises(InputError, match="cannot tell what this prediction file holds.*--kind mcq"):
        evaluate_prediction_file(unknown, settings=FAST)
    # renamed, but the kind column still says what it is
    write_tsv(tmp_path / "renamed.tsv", [*columns, "judgecp_kind", "judgecp_scale"],
              [{**r, "judgecp_kind": "likert", "judgecp_scale": "1:5"} for r in rows])
    assert evaluate_prediction_file(tmp_path / "renamed.tsv", settings=FAST).report["n_read"] == 24
    (tmp_path / "x.tsv").write_text("a\tb\n1\t2\n")
    with pytest.raises(InputError, match="not a VLMEvalKit prediction file"):
        read_predictions(tmp_path / "x.tsv")
    (tmp_path / "bad.xlsx").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a readable .xlsx"):
        read_predictions(tmp_path / "bad.xlsx")
    assert split_stem("my_model_v2_MLLMJudge_CP_Lite") == ("my_model_v2", "MLLMJudge_CP_Lite")


def test_cli_post_hoc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy(tmp_path, "resume")
    pred = runs(root)[-1] / f"{LP}_MLLMJudge_CP.xlsx"
    out = tmp_path / "report.json"
    assert main(["evaluate", "--format", "vlmeval", str(pred), "--methods", "naive,lac", "--seeds", "2",
                 "--group", "category", "--json", str(out), "--quiet"]) == 0
    report = json.loads(out.read_text())
    assert report["n_read"] == 24 and set(report["groups"]) == {"coco", "ChartQA", "WIT", "mathvista"}
    flags = {f["flag"]: f["count"] for f in report["flags"]}
    assert flags["resume_repaired"] == 14 and flags["record_from_sidecar"] == 10
    assert report["vlmeval"]["record_sources"]["repaired"] == 14
    plain = copy(tmp_path, "plain")
    assert main(["evaluate", "--format", "vlmeval", str(prediction(plain, model="tiny-docling"))]) == 2
    assert "no usable rows (no_logprob_record: 24)" in capsys.readouterr().err


def test_headline_of_an_error_report() -> None:
    h = headline({"n": 0, "n_read": 3, "excluded": [{"reason": "x", "count": 3}], "error": "no usable rows",
                  "point": {"pearson": math.nan}})
    assert h == {"n": 0, "n_read": 3, "excluded": 3, "pearson": None, "error": "no usable rows"}


def test_a_file_read_as_the_wrong_kind_is_reported_not_fatal(tmp_path: Path) -> None:
    """Likert rows given to the pairwise evaluator: every row counted (no pair, no order), an error, no crash."""
    from dataclasses import replace

    from judgecp.adapters.vlmeval.specs import MLLM_JUDGE

    root = copy(tmp_path, "clean")
    outcome = evaluate_prediction_file(prediction(root), spec=replace(MLLM_JUDGE, kind="pairwise"), settings=FAST)
    assert outcome.metric_file is not None and outcome.metric_file.name.endswith("_selective.json")
    assert "no usable records (pair_id_missing: 24)" in outcome.report["error"] and outcome.headline["n"] == 0
    assert outcome.headline["excluded"] == 24


def test_the_prediction_files_own_sidecar_wins_over_other_runs(tmp_path: Path) -> None:
    """Another run of the same model with the same prediction text but other logprobs must not be used."""
    root = copy(tmp_path, "clean")
    (run,) = runs(root)
    columns, rows = read_table(prediction(root))
    write_tsv(run / f"{LP}_MLLMJudge_CP.tsv", [c for c in columns if c != "extra_records"], rows)
    other = root / LP / "T20990101-000000"
    other.mkdir()
    newer = []
    for line in sidecar(run).read_text().splitlines():
        rec = json.loads(line)
        rec["logprobs"] = {k: -1.6094379124341003 for k in rec["logprobs"]}  # same text, other numbers
        newer.append(json.dumps(rec))
    (other / sidecar(run).name).write_text("\n".join(newer) + "\n")  # written last: the newest file
    table = read_predictions(run / f"{LP}_MLLMJudge_CP.tsv")
    assert len(table.sidecars) == 2 and table.sidecars[-1] == sidecar(run).resolve()
    own = {json.loads(line)["index"]: json.loads(line) for line in sidecar(run).read_text().splitlines()}
    assert all(r.record["logprobs"] == own[r.index]["logprobs"] for r in table.rows)
    sidecar(run).unlink()  # without it, the other run's matching records are the only ones left
    assert read_predictions(run / f"{LP}_MLLMJudge_CP.tsv").record_sources["sidecar"] == 24


def test_likert_rows_become_score_records(tmp_path: Path) -> None:
    """Likert rows are judgecp.record/1 score records (scale, judge, task, group; the group column kept under
    its own name in meta, so --group category still names it); the core reads them by shape."""
    from judgecp.adapters.vlmeval.evaluation import prediction_batch
    from judgecp.kinds.reading import from_records

    pred = prediction(copy(tmp_path, "clean"))
    records = prediction_batch(pred).records
    assert all(problem(r) is None and r["shape"] == "score" and r["scale"] == [1, 5] for r in records)
    assert {(r["judge"], r["task"]) for r in records} == {(LP, "MLLMJudge_CP")}
    assert all(r["group"] == r["meta"]["category"] for r in records)
    data = from_records(records)
    assert data.n == 24 and data.columns["parsed"] == "prediction" and data.columns["label"] == "label"
