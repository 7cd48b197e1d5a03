"""TSV builders: VLMEvalKit's format, labels, image sharing, and every left-out row counted."""

from __future__ import annotations

import base64
import csv
import json
from pathlib import Path

import pytest

from judgecp.adapters.vlmeval.build import (
    build_mllm_judge,
    build_polaris,
    polaris_label,
    read_manifest,
)
from judgecp.adapters.vlmeval.specs import KIND_COLUMN, MLLM_JUDGE, POLARIS, SCALE_COLUMN
from judgecp.cli import main
from judgecp.errors import InputError
from tests.vlmeval.sources import mllm_judge_source, png_bytes, polaris_source


def read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def counts(excluded: list[dict]) -> dict[str, int]:
    return {e["reason"]: e["count"] for e in excluded}


def test_mllm_judge_tsv(tmp_path: Path) -> None:
    src = mllm_judge_source(tmp_path / "src", n=12)
    result = build_mllm_judge(src, tmp_path / "lmu")
    assert result.tsv == tmp_path / "lmu" / "MLLMJudge_CP.tsv"
    assert result.rows_read == 17 and result.rows_written == 12
    assert dict(result.excluded.counts) == {
        "label_off_scale": 1, "label_not_numeric": 1, "image_missing": 1, "duplicate_id": 1,
        "malformed_json_line": 1,
    }
    rows = read_tsv(result.tsv)
    assert [r["index"] for r in rows] == [str(3 * i) for i in range(12)]
    assert [r["answer"] for r in rows] == [str((i % 5) + 1) for i in range(12)]  # "4" and 4 both read
    first = rows[0]
    assert first["question"] == "Please analyse this figure: what is item 0?"
    assert first["response"].startswith("The figure shows item 0.\tIt has \"quotes\",\nnewlines")
    assert first["category"] == "coco" and first["actor"] == "llava" and first["image_id"] == "100"
    assert first[KIND_COLUMN] == "likert" and first[SCALE_COLUMN] == "1:5"
    # the image is stored once, the second row of the same image refers to the first row's index
    assert base64.b64decode(first["image"]) == png_bytes(9, 6, (20, 90, 160))  # the file as last written
    assert rows[1]["image"] == "0"
    assert len(rows[2]["image"]) > 64
    assert result.images == 6
    # the prompt renders from the TSV row (tabs, quotes and braces in the answer are kept)
    prompt = MLLM_JUDGE.render(rows[0])
    assert "[The Start of User Instruction] Please analyse this figure: what is item 0? [The End" in prompt
    assert "{braces}" in prompt


def test_mllm_judge_manifest(tmp_path: Path) -> None:
    src = mllm_judge_source(tmp_path / "src", n=4)
    result = build_mllm_judge(src, tmp_path / "lmu")
    manifest = read_manifest(result.tsv)
    assert manifest is not None
    assert manifest["dataset"] == "MLLMJudge_CP"
    assert manifest["rows_read"] == 9 and manifest["rows_written"] == 4
    assert counts(manifest["excluded"])["image_missing"] == 1
    assert manifest["excluded"][0]["examples"]  # which rows, not only how many
    assert "Dongping-Chen/MLLM-Judge" in manifest["source"]["from"]


def test_mllm_judge_lite_limit_and_errors(tmp_path: Path) -> None:
    src = mllm_judge_source(tmp_path / "src", n=6, bad_rows=False)
    lite = src / "Dataset" / "Benchmark_Lite"
    lite.mkdir(parents=True)
    (lite / "score_lite.jsonl").write_text(
        (src / "Dataset" / "Benchmark" / "score.jsonl").read_text().splitlines()[0] + "\n"
    )
    result = build_mllm_judge(src, tmp_path / "lmu", lite=True)
    assert result.tsv.name == "MLLMJudge_CP_Lite.tsv" and result.rows_written == 1
    limited = build_mllm_judge(src, tmp_path / "lmu", limit=2)
    assert limited.rows_written == 2 and read_manifest(limited.tsv)["source"]["limit"] == 2
    with pytest.raises(InputError, match="no scoring file"):
        build_mllm_judge(tmp_path / "nowhere", tmp_path / "lmu")
    empty = tmp_path / "empty"
    (empty / "Dataset" / "Benchmark").mkdir(parents=True)
    (empty / "Dataset" / "image").mkdir(parents=True)
    (empty / "Dataset" / "Benchmark" / "score.jsonl").write_text('{"score_id": 1, "human": 9}\n')
    with pytest.raises(InputError, match="no row could be built"):
        build_mllm_judge(empty, tmp_path / "lmu2")


def test_polaris_label_rule() -> None:
    # round half to even on 4 * mean, as the released features have it
    assert [polaris_label(k / 8) for k in range(9)] == [1, 1, 2, 3, 3, 3, 4, 5, 5]
    with pytest.raises(ValueError):
        polaris_label(1.2)


def test_polaris_tsv(tmp_path: Path) -> None:
    src = polaris_source(tmp_path / "src", n_pairs=8)
    result = build_polaris(src, tmp_path / "lmu")
    assert result.tsv.name == "Polaris_CP.tsv"
    assert dict(result.excluded.counts) == {"image_missing": 1, "label_off_scale": 1, "label_missing": 1}
    rows = read_tsv(result.tsv)
    assert len(rows) == 8 and result.images == 4
    assert [r["answer"] for r in rows] == ["1", "1", "2", "3", "3", "3", "4", "5"]
    assert [float(r["score_mean"]) for r in rows] == [k / 8 for k in range(8)]
    assert [int(r["n_annotations"]) for r in rows] == [1, 2, 2, 1, 2, 2, 1, 2]
    assert rows[3]["caption"] == rows[3]["question"] == "caption 3: a red square"
    assert "[The Start of Caption] caption 3: a red square [The End of Caption]" in POLARIS.render(rows[3])


def test_cli_build_tsv(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    src = polaris_source(tmp_path / "src", n_pairs=4)
    monkeypatch.setenv("LMUData", str(tmp_path / "lmu"))
    assert main(["vlmeval", "build-tsv", "polaris", "--source", str(src)]) == 0
    out = capsys.readouterr().out
    assert "Polaris_CP: read 9 rows, wrote 4" in out and "image_missing 1" in out
    manifest = json.loads((tmp_path / "lmu" / "Polaris_CP.judgecp.json").read_text())
    assert manifest["source"]["label_rule"] == "round_half_even(4 * mean) + 1"
    monkeypatch.delenv("LMUData")
    assert main(["vlmeval", "build-tsv", "polaris", "--source", str(src)]) == 2
    assert "give --out DIR or set $LMUData" in capsys.readouterr().err
