"""Unlabeled input everywhere (issue 27 item 1): a nightly table with no label column, or with some labels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgecp.cli import main
from judgecp.kinds.reading import to_records
from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_pairwise_judge,
)
from tests.helpers import write_likert_csv


def drop_column(path: Path, column: str, out: Path) -> Path:
    """The CSV at ``path`` without ``column`` (a nightly table that never had labels)."""
    lines = path.read_text().splitlines()
    drop = lines[0].split(",").index(column)
    out.write_text("".join(",".join(c for j, c in enumerate(line.split(",")) if j != drop) + "\n" for line in lines))
    return out


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def tables(tmp_path: Path) -> dict[str, Path]:
    cal = write_likert_csv(tmp_path / "cal.csv", simulate_likert_judge(n=600, seed=1))
    night = write_likert_csv(tmp_path / "night_labeled.csv", simulate_likert_judge(n=300, seed=2))
    return {"cal": cal, "night": drop_column(night, "gt_score", tmp_path / "night.csv"), "labeled": night}


def test_apply_on_a_table_without_a_label_column(tables: dict[str, Path], tmp_path: Path) -> None:
    """The issue's check: one record per row, each with `set`; the summary has no labeled section."""
    assert "gt_score" not in tables["night"].read_text().splitlines()[0]
    assert main(["calibrate", str(tables["cal"]), "--label", "gt_score", "--logprobs", "s2_lp*", "--id", "sample_id",
                 "-o", str(tmp_path / "cal.json")]) == 0
    assert main(["apply", str(tmp_path / "cal.json"), str(tables["night"]), "--logprobs", "s2_lp*", "--id", "sample_id",
                 "-o", str(tmp_path / "out.jsonl"), "--json", str(tmp_path / "sum.json")]) == 0
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(out) == 300 and all(isinstance(r["set"], list) and r["set"] for r in out)
    assert all(r["label"] is None for r in out)
    summary = json.loads((tmp_path / "sum.json").read_text())
    assert summary["n"] == summary["n_applied"] == 300 and "labeled" not in summary


def test_records_unlabeled_without_a_label_column(tables: dict[str, Path], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rec.jsonl"
    assert main(["records", str(tables["night"]), "--unlabeled", "--logprobs", "s2_lp*", "--id", "sample_id",
                 "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 300 and all(r["label"] is None for r in rows)
    # Without --unlabeled, labels are required: the error still names the flag.
    assert main(["records", str(tables["night"]), "--logprobs", "s2_lp*", "-o", str(tmp_path / "x.jsonl")]) == 2
    assert "no label column" in capsys.readouterr().err


def test_estimate_on_a_table_with_some_labels(tables: dict[str, Path], tmp_path: Path) -> None:
    """Rows with an empty label cell are the unlabeled sample."""
    lines = tables["labeled"].read_text().splitlines()
    label = lines[0].split(",").index("gt_score")
    blanked = [lines[0]] + [",".join("" if j == label and i >= 80 else c for j, c in enumerate(line.split(",")))
                            for i, line in enumerate(lines[1:])]
    some = tmp_path / "some.csv"
    some.write_text("\n".join(blanked) + "\n")
    assert main(["estimate", str(some), "--label", "gt_score", "--logprobs", "s2_lp*", "--id", "sample_id",
                 "--json", str(tmp_path / "est.json")]) == 0
    est = json.loads((tmp_path / "est.json").read_text())
    assert est["n_labeled"] == 80 and est["n_unlabeled"] == 220


@pytest.mark.parametrize("kind", ["pairwise", "mcq"])
def test_other_kinds_read_without_a_label_field(kind: str, tmp_path: Path) -> None:
    if kind == "pairwise":
        rows = to_records(simulate_pairwise_judge(100, seed=4))
    else:
        rows = simulate_mcq_records(100, seed=4)
    stripped = [{k: v for k, v in r.items() if k not in ("label", "correct")} for r in rows]
    src = write_jsonl(tmp_path / "in.jsonl", stripped)
    out = tmp_path / "out.jsonl"
    assert main(["records", str(src), "--unlabeled", "--kind", kind, "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == len(rows)


# -- property-based: any Likert table, labels or not, reads into accounted rows and a clear error otherwise ----------

PROXY_REASONS = ("logprob_missing", "logprob_not_numeric", "logprob_infinite", "nan_logprob", "no_score_logprobs")
LOGPROB_CELLS = st.sampled_from(["", "-0.1", "-2.3", "-5", "-30", "nan", "inf", "-inf", "x", "0"])
LABEL_CELLS = st.sampled_from(["", "1", "3", "5", "0", "2.5", "nan", "four"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.lists(LOGPROB_CELLS, min_size=5, max_size=5), LABEL_CELLS), min_size=1, max_size=25),
       with_labels=st.booleans(), probabilities=st.booleans())
def test_any_table_reads_unlabeled_with_every_row_accounted(tmp_path: Path, rows: list[tuple[list[str], str]],
                                                             with_labels: bool, probabilities: bool) -> None:
    from judgecp.base.errors import InputError
    from judgecp.data.tables import read_table
    from judgecp.kinds.reading import from_table
    from judgecp.workflows.nightly.estimate import estimate

    header = ["id", "lp1", "lp2", "lp3", "lp4", "lp5"] + (["label"] if with_labels else [])
    header += ["sampling_probability"] if probabilities else []
    lines = [",".join(header)]
    for i, (lps, label) in enumerate(rows):
        cells = [f"r{i}", *lps] + ([label] if with_labels else []) + (["0.5" if i % 2 else ""] if probabilities else [])
        lines.append(",".join(cells))
    path = tmp_path / "night.csv"
    path.write_text("\n".join(lines) + "\n")
    try:
        data = from_table(read_table(path), "likert", require_label=False)
    except InputError as exc:
        assert "\n" not in str(exc).strip()
        return
    assert data.n + data.excluded.total == data.n_read
    counts = {e["reason"]: e["count"] for e in data.excluded.to_json()}
    assert data.no_proxy_labels.size == sum(counts.get(r, 0) for r in PROXY_REASONS)
    if not with_labels:
        assert np.isnan(data.labels).all() and np.isnan(data.no_proxy_labels).all()
    try:
        out = estimate(data)
    except InputError as exc:
        assert "\n" not in str(exc).strip()
        return
    e = out["estimate"]["ppi"]
    assert np.isfinite([e["mean"], e["lower"], e["upper"]]).all() and out["estimand"]


def test_a_bad_sampling_probability_is_an_error_naming_the_item(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    data = simulate_likert_judge(50, seed=0)
    path = write_likert_csv(tmp_path / "run.csv", data, sampling_probability=["0.5"] * 10 + ["1.5"] + [""] * 39)
    assert main(["estimate", str(path), "--label", "gt_score", "--logprobs", "s2_lp*", "--id", "sample_id"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "item00010" in err and "sampling_probability '1.5'" in err
