"""Letter answers in real VLMEvalKit runs (committed fixtures): pairwise, PARC, VLMEvalKit's own multiple choice.

The fixtures come from ``python -m tests.vlmeval.make_fixtures`` (the tiny
``tiny-letters`` judge, which answers one letter, through ``judgecp vlmeval``
on VLMEvalKit e8e78f05); see fixtures/README.md. Every test works on a copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from judgecp import load
from judgecp.adapters.vlmeval.evaluation import evaluate_prediction_file, prediction_batch
from judgecp.adapters.vlmeval.predictions import option_records, read_predictions, read_table
from judgecp.base.errors import InputError
from judgecp.base.records import problem
from judgecp.cli import main
from tests.vlmeval.test_predictions import write_tsv

FIXTURES = Path(__file__).parent / "fixtures"
LP = "tiny-letters-lp"
PAIR = "MLLMJudgePair_CP"
FAST = {"seeds": 3, "n_splits": 40}


def copy(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURES / name, dest)
    return dest


def runs(root: Path) -> list[Path]:
    return sorted(p for p in (root / LP).iterdir() if p.is_dir())


def prediction(root: Path, dataset: str) -> Path:
    return runs(root)[-1] / f"{LP}_{dataset}.xlsx"


def sidecar_records(path: Path) -> dict[str, dict]:
    return {json.loads(x)["index"]: json.loads(x) for x in path.read_text().splitlines() if x.strip()}


# -- pairwise judging in both orders ------------------------------------------------------------


def test_pairwise_rows_hold_both_orders_and_their_letter_records(tmp_path: Path) -> None:
    root = copy(tmp_path, "pairwise")
    pred = prediction(root, PAIR)
    table = read_predictions(pred)
    assert table.dataset == PAIR and table.n_read == 24 and table.record_sources["embedded"] == 24
    side = sidecar_records(pred.with_name(f"{LP}_{PAIR}_lprecords.jsonl"))
    orders: dict[str, set[str]] = {}
    for row in table.rows:
        # the fixture's records have the layout before judgecp.record/1: read as today's judge outputs
        assert row.record is not None and row.record["shape"] == "pair" and row.record["meta"]["letters"] == ["A", "B"]
        assert row.record["logprobs"] == side[row.index]["logprobs"] and set(row.record["logprobs"]) == {"A", "B"}
        assert row.record["prediction"] == row.prediction.strip()  # the letter the model generated
        orders.setdefault(str(row.columns["pair_id"]), set()).add(str(row.columns["order"]))
    assert len(orders) == 12 and all(o == {"fwd", "rev"} for o in orders.values())
    by_pair = {(str(r.columns["pair_id"]), r.columns["order"]): r.columns for r in table.rows}
    fwd, rev = by_pair[("10", "fwd")], by_pair[("10", "rev")]
    assert (fwd["response_a"], fwd["response_b"]) == (rev["response_b"], rev["response_a"])  # swapped
    assert fwd["preference"] == rev["preference"] == "B" and (fwd["answer"], rev["answer"]) == ("B", "A")


def test_pairwise_metric_file_headline_and_status(tmp_path: Path) -> None:
    root = copy(tmp_path, "pairwise")
    pred = prediction(root, PAIR)
    outcome = evaluate_prediction_file(pred, settings=FAST)
    assert outcome.metric_file == pred.with_name(f"{LP}_{PAIR}_selective.json")
    report = json.loads(outcome.metric_file.read_text())
    assert report["kind"] == "pairwise" and report["n"] == 12 and report["n_read"] == 24
    assert set(report["controllers"]) == {"scope", "clopper_pearson", "naive", "heuristic", "vanilla"}
    assert report["protocol"]["n_splits"] == 40 and "bpe" in report["uncertainty"]
    assert report["vlmeval"]["rows_used"] == 24 and report["vlmeval"]["judge_dataset"] == "mllm_judge_pair"
    h = outcome.headline
    assert h["alpha"] == 0.1 and set(h["scope"]) == {"coverage", "risk", "abstain_all"}
    # plain floats for VLMEvalKit's encoder; the tiny judge's verdicts are noise and SCOPE accepts
    # none in any split, so its risk is undefined: None, not 0 (issue 38, item 1)
    scope = h["scope"]
    assert (scope["abstain_all"], scope["risk"]) == (1.0, None) and type(scope["coverage"]) is float
    assert all(type(v) is float for v in h["vanilla"].values())  # accepts every verdict: a risk
    assert set(h["bpe"]) == {"accuracy", "auroc", "auprc", "ece"} and h["single_order"] == 0
    # the run's own status.json (VLMEvalKit wrote it from evaluate()'s return value)
    entry = json.loads((runs(root)[-1] / "status.json").read_text())["datasets"][PAIR]
    assert entry["status"] == "done" and entry["primary_metric"] == ["scope|coverage", "scope|risk"]
    assert {"scope|coverage", "scope|risk", "bpe|auroc", "vanilla|risk"} <= set(entry["metrics"])
    assert entry["metrics"]["excluded_at_build"] == 6  # tie, unknown label, missing image, duplicate, ...


def test_pairwise_partial_resume_is_repaired(tmp_path: Path) -> None:
    root = copy(tmp_path, "pairwise_resume")
    first, second = runs(root)
    columns, rows = read_table(second / f"{LP}_{PAIR}.xlsx")
    assert "extra_records" not in columns and sum(str(r["prediction"]).startswith("{'prediction'") for r in rows) == 16
    outcome = evaluate_prediction_file(second / f"{LP}_{PAIR}.xlsx", settings=FAST)
    vl = outcome.report["vlmeval"]
    assert vl["record_sources"] == {"embedded": 0, "repaired": 16, "sidecar": 8}
    assert str(first / f"{LP}_{PAIR}_lprecords.jsonl") in vl["sidecars"]
    assert outcome.report["n"] == 12 and vl["excluded_by_reader"] == []


def test_pairwise_bad_rows_are_counted_and_a_lone_order_is_flagged(tmp_path: Path) -> None:
    """A resume cell cut short, a row whose record is gone: counted; their partners are single-order pairs."""
    root = copy(tmp_path, "pairwise_resume")
    first, second = runs(root)
    columns, rows = read_table(second / f"{LP}_{PAIR}.xlsx")
    by_index = {str(r["index"]): r for r in rows}
    assert str(by_index["9"]["prediction"]).startswith("{'prediction'")
    by_index["9"]["prediction"] = str(by_index["9"]["prediction"])[:40]  # a corrupted resume row
    side = first / f"{LP}_{PAIR}_lprecords.jsonl"
    side.write_text("\n".join(x for x in side.read_text().splitlines() if json.loads(x)["index"] != "2") + "\n")
    path = second / f"{LP}_{PAIR}.tsv"
    write_tsv(path, columns, rows)
    outcome = evaluate_prediction_file(path, settings=FAST)
    excluded = {e["reason"]: e["count"] for e in outcome.report["excluded"]}
    assert excluded["corrupted_prediction"] == 1 and excluded["no_logprob_record"] == 1
    assert outcome.report["n_read"] == 24 and outcome.headline["single_order"] == 2  # pairs 8/9 and 2/3
    assert outcome.report["vlmeval"]["rows_used"] == 22  # a pair left with one order is kept, flagged


# -- PARC variation datasets --------------------------------------------------------------------


def test_parc_metric_file_headline_and_status(tmp_path: Path) -> None:
    root = copy(tmp_path, "parc")
    pred = prediction(root, "PARC_toy")
    table = read_predictions(pred)
    assert table.dataset == "PARC_toy" and table.record_sources["embedded"] == 82
    outcome = evaluate_prediction_file(pred, settings=FAST)
    assert outcome.metric_file == pred.with_name(f"{LP}_PARC_toy_reliability.json")
    report = outcome.report
    assert report["kind"] == "parc" and report["n_read"] == 82  # 20 items x 4 variations + 2
    assert {e["reason"]: e["count"] for e in report["excluded"]} == {"no_original_prompt": 1}  # kept, counted
    assert {f["flag"]: f["count"] for f in report["vlmeval"]["row_flags"]} == {"variation_renamed": 1}
    assert report["vlmeval"]["options_from"] == "prediction file"
    h = outcome.headline
    assert set(h["reliability"]) == set(h["accuracy"]) == {"overall", "O", "LR", "LS", "VR"}
    assert all(isinstance(v, float) for v in h["accuracy"].values())
    entry = json.loads((runs(root)[-1] / "status.json").read_text())["datasets"]["PARC_toy"]
    assert entry["status"] == "done" and entry["primary_metric"] == ["reliability|overall", "accuracy|overall"]
    assert entry["metrics"]["excluded_at_build"] == 4


def test_parc_records_carry_options_answer_keys_and_variations(tmp_path: Path) -> None:
    root = copy(tmp_path, "parc")
    table = read_predictions(prediction(root, "PARC_toy"))
    records = {r["id"]: r for r in option_records(table, variations=True)}
    assert all(problem(r) is None and r["shape"] == "choice" for r in records.values())  # judgecp.record/1
    negation = next(r for r in records.values() if r["variation"] == "LS-N" and len(r["options"]) == 3)
    assert negation["label"] == ["A", "C"] and set(negation["logprobs"]) == {"A", "B", "C"}  # two correct options
    assert negation["group"] == "LS-N" and negation["meta"] == {"category": "LS-N"} and negation["source_id"]
    two = next(r for r in records.values() if r["options"] == ["A", "B"])
    assert set(two["logprobs"]) == {"A", "B"}  # restricted to the row's options
    assert {r["variation"] for r in records.values()} == {"O", "LR-I", "LS-N", "VR-B", "VR-blur2"}


# -- VLMEvalKit's own multiple-choice benchmarks, post hoc --------------------------------------------


def test_mcq_prediction_is_plain_and_the_records_come_from_the_sidecar(tmp_path: Path) -> None:
    root = copy(tmp_path, "mcq")
    pred = prediction(root, "TinyMCQ")
    columns, rows = read_table(pred)
    assert "extra_records" not in columns and all(len(str(r["prediction"]).strip()) == 1 for r in rows)
    data = load(pred, format="vlmeval")
    assert data.kind == "mcq" and data.n == 23  # row 5's answer key names an option it does not have
    assert {e["reason"]: e["count"] for e in data.excluded.to_json()} == {"answer_not_an_option": 1}
    assert prediction_batch(pred).info["vlmeval"]["record_sources"] == {"embedded": 0, "repaired": 0, "sidecar": 24}
    # VLMEvalKit's own evaluation of the run is untouched
    entry = json.loads((runs(root)[-1] / "status.json").read_text())["datasets"]["TinyMCQ"]
    assert entry["primary_metric"] == "Overall Acc" and entry["metrics"]["split=none|Overall"] > 0


def test_mcq_post_hoc_command_adds_conformal_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy(tmp_path, "mcq")
    pred = prediction(root, "TinyMCQ")
    out = tmp_path / "mcq.json"
    assert main(["evaluate", "--format", "vlmeval", str(pred), "--seeds", "2", "--methods", "lac,aps",
                 "--json", str(out)]) == 0
    assert "judgecp evaluate --kind mcq" in capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["kind"] == "mcq" and report["n"] == 23 and report["n_read"] == 24
    assert set(report["methods"]) == {"lac", "aps"} and set(report["by_category"]) == {"colour", "shape"}
    assert 0.0 <= report["methods"]["lac"]["coverage"] <= 1.0
    assert report["vlmeval"]["record_sources"]["sidecar"] == 24


def test_mcq_without_records_or_options_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy(tmp_path, "mcq")
    pred = prediction(root, "TinyMCQ")
    columns, rows = read_table(pred)
    pred.with_name(f"{LP}_TinyMCQ_lprecords.jsonl").unlink()  # a run without -lp capture
    assert main(["evaluate", "--format", "vlmeval", str(pred)]) == 2
    assert "cannot tell what this prediction file holds" in capsys.readouterr().err
    assert main(["evaluate", "--format", "vlmeval", "--kind", "mcq", str(pred)]) == 2
    assert "no usable rows (no_logprob_record: 24)" in capsys.readouterr().err
    # options and answer key from $LMUData's TSV when the prediction file lacks them
    root2 = copy(tmp_path / "b", "mcq")
    bare = prediction(root2, "TinyMCQ").with_suffix(".tsv")
    write_tsv(bare, ["index", "question", "prediction"], rows)
    table = read_predictions(bare, sidecars=[prediction(root2, "TinyMCQ").with_name(f"{LP}_TinyMCQ_lprecords.jsonl")])
    with pytest.raises(InputError, match="no option columns"):
        option_records(table, lmu_root=tmp_path / "empty")
    lmu = tmp_path / "lmu"
    lmu.mkdir()
    write_tsv(lmu / "TinyMCQ.tsv", columns, rows[:20])
    records = option_records(table, lmu_root=lmu)
    assert len(records) == 20 and table.options_source == "TinyMCQ.tsv in $LMUData"
    assert {e["reason"]: e["count"] for e in table.excluded.to_json()} == {"row_not_in_dataset_tsv": 4}


def test_mcq_run_with_lp_says_what_is_really_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29, item 14: an -lp run whose records are all unusable is not told to get records from an -lp run."""
    root = copy(tmp_path, "mcq")
    pred = prediction(root, "TinyMCQ")
    side = pred.with_name(f"{LP}_TinyMCQ_lprecords.jsonl")
    lines = [json.loads(line) for line in side.read_text().splitlines()]
    for rec in lines:  # the model generated no option letter on any row
        rec.update(logprobs=None, answer=None, flags=["no_answer_letter"])
    side.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert main(["evaluate", "--format", "vlmeval", str(pred)]) == 2
    err = capsys.readouterr().err
    assert "its 24 logprob record(s) (an -lp run's) are all unusable (no_answer_letter 24: the model generated " \
           "none of the row's option letters)" in err
    assert "-lp` run started with" not in err and len(err.strip().splitlines()) == 1
    for rec in lines:  # records of other predictions (the file rewritten after the run)
        rec.update(prediction_sha1="0" * 40)
    side.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert main(["evaluate", "--format", "vlmeval", str(pred)]) == 2
    err = capsys.readouterr().err
    assert f"the sidecar ({side.name}) holds records of other predictions than this file's " \
           "(record_prediction_mismatch: 24)" in err and "-lp` run started with" not in err
    side.write_text("")  # a sidecar without this file's rows
    assert main(["evaluate", "--format", "vlmeval", str(pred)]) == 2
    assert f"the sidecar ({side.name}) has none for this file's row indices" in capsys.readouterr().err
    side.unlink()  # no sidecar at all: only now is an -lp run the advice
    assert main(["evaluate", "--format", "vlmeval", str(pred)]) == 2
    assert "no sidecar was found beside it" in capsys.readouterr().err


# -- the reader's records ------------------------------------------------------------------------------


@pytest.mark.parametrize(("fixture", "dataset", "kind", "shape"), [
    ("pairwise", "MLLMJudgePair_CP", "pairwise", "pair"), ("parc", "PARC_toy", "parc", "choice"),
    ("mcq", "TinyMCQ", "mcq", "choice"),
])
def test_prediction_rows_become_records_the_core_reads_by_shape(
    tmp_path: Path, fixture: str, dataset: str, kind: str, shape: str
) -> None:
    """Every kind's rows are judgecp.record/1 records (judge, task, group in their fields); the core reads
    them as any record file: the kind from the shape (PARC: the batch's kind), no column named."""
    from judgecp.kinds.reading import from_records

    pred = prediction(copy(tmp_path, fixture), dataset)
    batch = prediction_batch(pred)
    assert batch.kind == kind and all(problem(r) is None and r["shape"] == shape for r in batch.records)
    assert {r["judge"] for r in batch.records} == {LP} and {r["task"] for r in batch.records} <= {dataset, "toy"}
    data = from_records(batch.records, kind="parc" if kind == "parc" else None)
    assert data.n == load(pred, format="vlmeval").n and data.kind == kind
