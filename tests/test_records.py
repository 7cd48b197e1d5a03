"""The record schema (judgecp.record/1): builders, the JSON Schema file, one reader for every kind and source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from judgecp import Fields, evaluate, from_records, load
from judgecp.base.errors import InputError
from judgecp.base.records import (
    SCHEMA,
    choice_record,
    complete,
    judge_output,
    pair_record,
    problem,
    schema_path,
    score_record,
)
from judgecp.cli import main
from judgecp.data import ChoiceData, PairData, ScoreData
from judgecp.kinds.protocol import Protocol
from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_pairwise_judge,
)


def validator() -> Any:
    schema = json.loads(schema_path().read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def examples() -> list[dict[str, Any]]:
    return [
        score_record("s1", label=4, logprobs={"1": -3.0, "2": float("-inf"), "3": float("nan"), "4": -0.1, "5": -2.0},
                     prediction=4, scale=(1, 5), judge="llava-critic", prompt="B.1", task="mllm_judge", group="coco",
                     flags=["missing_token"], meta={"actor": "gpt4"}),
        score_record("s2"),  # unlabeled, no logprobs
        pair_record("p1/rev", pair_id="p1", order="rev", label="A", logprobs={"A": -2.0, "B": -0.2}, prediction="B"),
        choice_record("c1", options=["A", "B", "C"], label=["B", "C"], logprobs={"A": -1.0, "B": -0.5, "C": -3.0},
                      prediction="B", source_id="q1", variation="LS-N", task="mmbench", judge="m"),
        judge_output("score", logprobs={"1": -1.0}, prediction=1, flags=["keyword_anchor"], stage="keyword"),
        complete(judge_output("pair", logprobs={"A": -0.1, "B": -2.5}, prediction="A"), "p2/fwd", pair_id="p2",
                 order="fwd", label="tie", exclude="tie_label"),
    ]


def test_every_builder_writes_records_the_json_schema_accepts() -> None:
    v = validator()
    for record in examples():
        text = json.dumps(record, allow_nan=False)  # strict JSON: no NaN/Infinity literals
        errors = list(v.iter_errors(json.loads(text)))
        assert not errors, (record, [e.message for e in errors])
        assert record["schema"] == SCHEMA


def test_the_json_schema_rejects_what_readers_refuse() -> None:
    v = validator()
    bad = [
        {"schema": "judgecp.record/2", "shape": "score", "id": "x"},
        {"schema": SCHEMA, "shape": "triple", "id": "x"},
        {"schema": SCHEMA, "shape": "pair", "id": "x", "order": "fwd"},  # no pair_id
        {"schema": SCHEMA, "shape": "pair", "id": "x", "pair_id": "p", "order": "sideways"},
        {"schema": SCHEMA, "shape": "choice", "id": "x"},  # no options
        {"schema": SCHEMA, "shape": "score", "id": "x", "logprobs": {"1": "minus one"}},
    ]
    for record in bad:
        assert list(v.iter_errors(record)), record
    assert [problem(r) for r in bad[:5]] == [
        "record_schema_unknown", "record_shape_unknown", "pair_id_missing", "order_unknown", "options_missing"]
    assert problem(examples()[0]) is None and problem("text") == "record_not_an_object"


def test_complete_keeps_the_judge_fields_and_adds_the_document() -> None:
    out = judge_output(
        "score", logprobs={"1": -1.0, "2": -0.5}, prediction=2, flags=["missing_token"], stage="anchored"
    )
    record = complete(out, 17, label="2", group="coco", flags=["resume_repaired"], meta={"actor": "m"})
    assert record["id"] == "17" and record["prediction"] == 2 and record["label"] == "2"
    assert record["flags"] == ["missing_token", "resume_repaired"]
    assert record["meta"] == {"stage": "anchored", "actor": "m"}
    with pytest.raises(ValueError, match="not record fields"):
        complete(out, 1, actor="m")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, allow_nan=False) + "\n" for r in rows))
    return path


def score_records(n: int = 120) -> list[dict[str, Any]]:
    d = simulate_likert_judge(n=n, seed=4)
    return [
        score_record(
            d.ids[i],
            label=int(d.labels[i]),
            logprobs=dict(zip(d.scale.tokens, d.logprobs[i].tolist(), strict=True)),
            prediction=int(d.parsed[i]),
            group=d.fields["group"][i],
            meta={"actor": "abc"[i % 3]},
        )
        for i in range(n)
    ]


def pair_records(n: int = 80) -> list[dict[str, Any]]:
    d = simulate_pairwise_judge(n, seed=4)
    out = []
    for i, pid in enumerate(d.pair_ids.tolist()):
        for order, p in (("fwd", d.p_fwd[i]), ("rev", 1 - d.p_rev[i])):
            out.append(pair_record(f"{pid}/{order}", pair_id=pid, order=order, label="A" if d.labels[i] else "B",
                                   logprobs={"A": float(np.log(p)), "B": float(np.log1p(-p))}))
    return out


def test_a_record_file_needs_no_flag_and_its_shape_is_its_kind(tmp_path: Path) -> None:
    cases = {
        "likert": (score_records(), ScoreData),
        "pairwise": (pair_records(), PairData),
        "mcq": (simulate_mcq_records(90, seed=4), ChoiceData),
    }
    for kind, (rows, cls) in cases.items():
        data = load(write_jsonl(tmp_path / f"{kind}.jsonl", rows))
        assert isinstance(data, cls) and data.kind == kind and data.excluded.total == 0
    with pytest.raises(InputError, match="these are pair records; --kind likert reads score records"):
        load(tmp_path / "pairwise.jsonl", "likert")
    likert = load(tmp_path / "likert.jsonl", fields=Fields(group="actor"))  # meta keys are fields
    assert isinstance(likert, ScoreData) and set(likert.field("actor")) == {"a", "b", "c"}


def test_unlabeled_records_are_kept_when_asked_and_counted_by_evaluation(tmp_path: Path) -> None:
    rows = score_records()
    for r in rows[:20]:
        r["label"] = None
    data = from_records(rows, require_label=False)
    assert isinstance(data, ScoreData) and data.n == 120 and int((~data.labeled).sum()) == 20
    report = evaluate(data, Protocol(methods=("naive",), splits=2))
    assert (
        report["n"] == 100
        and {"reason": "label_missing", "count": 20, "examples": [r["id"] for r in rows[:5]]} in report["excluded"]
    )
    strict = from_records(rows)
    assert strict.n == 100 and strict.excluded.counts["label_missing"] == 20


# -- the same column flags for every kind ----------------------------------------------------------


def renamed(rows: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    """Plain rows (no schema) with the record fields under other names, as a user's table has them."""
    return [{names.get(k, k): v for k, v in r.items() if k not in ("schema", "shape")} for r in rows]


@pytest.mark.parametrize("kind", ["likert", "pairwise", "mcq", "parc"])
def test_label_and_id_flags_work_for_every_kind(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from judgecp.synthetic.judges import simulate_parc_records

    rows = {"likert": score_records(), "pairwise": pair_records(), "mcq": simulate_mcq_records(90, seed=4),
            "parc": simulate_parc_records(40, seed=4)}[kind]
    path = write_jsonl(tmp_path / "t.jsonl", renamed(rows, {"label": "human", "id": "key"}))
    extra = ["--splits", "20"] if kind == "pairwise" else ["--splits", "2"]
    if kind == "likert":
        extra += ["--methods", "naive"]
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "evaluate",
                str(path),
                "--kind",
                kind,
                "--label",
                "human",
                "--id",
                "key",
                "--quiet",
                "--json",
                str(out),
                *extra,
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert report["n"] > 0 and report["excluded"] == []
    # without the flags the fields are not found: the error names the flag, never a silent misread
    code = main(["evaluate", str(path), "--kind", kind, "--quiet", *extra])
    err = capsys.readouterr().err
    assert code == 2 and "judgecp: error:" in err and ("--label" in err or "label" in err)
    code = main(["evaluate", str(path), "--kind", kind, "--label", "humna", "--quiet", *extra])
    assert code == 2 and "did you mean 'human'" in capsys.readouterr().err


def test_records_command_maps_any_table_onto_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = simulate_likert_judge(n=60, seed=1)
    lines = ["key,lp_1,lp_2,lp_3,lp_4,lp_5,score,task"] + [
        f"{d.ids[i]}," + ",".join(f"{v:.6f}" for v in d.logprobs[i]) + f",{int(d.labels[i])},{d.fields['group'][i]}"
        for i in range(d.n)]
    csv = tmp_path / "judge.csv"
    csv.write_text("\n".join(lines) + "\n")
    out = tmp_path / "records.jsonl"
    assert main(["records", str(csv), "--id", "key", "--label", "score", "--logprobs", "lp_*", "-o", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 60 and all(problem(r) is None for r in records)
    v = validator()
    assert not list(v.iter_errors(records[0])) and records[0]["task"] == d.fields["group"][0]
    a = evaluate(
        load(csv, fields=Fields(id="key", label="score", logprobs="lp_*")), Protocol(methods=("naive", "lac"), splits=3)
    )
    b = evaluate(load(out), Protocol(methods=("naive", "lac"), splits=3))
    assert a["methods"] == b["methods"] and a["point"] == b["point"]


def test_an_excluded_record_is_counted_under_its_own_reason() -> None:
    """A placeholder record (an adapter's malformed line) with no options: its reason, not options_missing."""
    from judgecp.kinds.reading import from_records

    good = [choice_record(f"q{i}", options=["A", "B"], label=["A"], logprobs={"A": -0.1, "B": -2.0}) for i in range(6)]
    placeholder = choice_record("bad", options=[], label=[], exclude="malformed_json_line")
    data = from_records([*good, placeholder], "mcq")
    assert dict(data.excluded.counts) == {"malformed_json_line": 1}
    assert problem({**placeholder, "exclude": None}) == "options_missing"
