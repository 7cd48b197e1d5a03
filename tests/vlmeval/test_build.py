"""TSV builders: VLMEvalKit's format, labels, image sharing, and every left-out row counted."""

from __future__ import annotations

import ast
import base64
import csv
import json
from pathlib import Path

import pytest

from judgecp.adapters.vlmeval.builders import (
    build_mllm_judge,
    build_mllm_judge_pair,
    build_parc,
    build_polaris,
    polaris_label,
    read_manifest,
)
from judgecp.adapters.vlmeval.specs import (
    KIND_COLUMN,
    MLLM_JUDGE,
    MLLM_JUDGE_PAIR,
    PARC,
    POLARIS,
    SCALE_COLUMN,
    spec_for,
)
from judgecp.base.errors import InputError
from judgecp.cli import main
from tests.vlmeval.sources import (
    mllm_judge_pair_source,
    mllm_judge_source,
    parc_source,
    png_bytes,
    polaris_source,
)


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


# -- pairwise judging in both orders -------------------------------------------------------


def test_mllm_judge_pair_tsv_holds_every_pair_in_both_orders(tmp_path: Path) -> None:
    src = mllm_judge_pair_source(tmp_path / "src", n_pairs=6)
    result = build_mllm_judge_pair(src, tmp_path / "lmu")
    assert result.tsv.name == "MLLMJudgePair_CP.tsv" and result.rows_read == 12 and result.rows_written == 12
    assert dict(result.excluded.counts) == {"tie_label": 1, "label_unknown": 1, "image_missing": 1,
                                            "duplicate_id": 1, "field_missing": 1, "malformed_json_line": 1}
    rows = read_tsv(result.tsv)
    assert [r["index"] for r in rows] == [str(i) for i in range(12)]
    for fwd, rev in zip(rows[::2], rows[1::2], strict=True):
        assert fwd["pair_id"] == rev["pair_id"] and (fwd["order"], rev["order"]) == ("fwd", "rev")
        assert (fwd["response_a"], fwd["response_b"]) == (rev["response_b"], rev["response_a"])
        assert (fwd["model_a"], fwd["model_b"]) == (rev["model_b"], rev["model_a"])
        assert fwd["preference"] == rev["preference"]  # the human label in the original order, on both rows
        assert fwd["answer"] == fwd["preference"] and rev["answer"] == {"A": "B", "B": "A"}[fwd["preference"]]
        assert fwd[KIND_COLUMN] == "pairwise" and fwd["category"] in ("coco", "ChartQA", "WIT", "mathvista")
    assert [r["preference"] for r in rows[::2]] == ["A", "B", "A", "B", "A", "B"]
    assert rows[1]["image"] == "0" and len(rows[0]["image"]) > 64  # the image once per file
    assert "answer1" not in rows[0] and rows[0]["response_a"].startswith("Part 0 shows a red square.\tClearly.")
    # the prompt: MT-Bench's pairwise instruction, verdict only; the reversed row swaps the answers
    fwd, rev = MLLM_JUDGE_PAIR.render(rows[0]), MLLM_JUDGE_PAIR.render(rows[1])
    assert fwd.startswith("Please act as an impartial judge") and "Output only the letter" in fwd
    assert "[[C]]" not in fwd and "explanation" not in fwd.split("Output only")[0]
    a_block = "[The Start of Assistant A's Answer]\n{}\n[The End of Assistant A's Answer]"
    assert a_block.format(rows[0]["response_a"]) in fwd and a_block.format(rows[0]["response_b"]) in rev
    assert "{braces}" in fwd
    manifest = read_manifest(result.tsv)
    assert manifest is not None and manifest["kind"] == "pairwise" and manifest["source"]["pairs"] == 6


def test_mllm_judge_pair_lite_limit_and_the_hq_layout(tmp_path: Path) -> None:
    src = mllm_judge_pair_source(tmp_path / "src", n_pairs=4, bad_rows=False)
    limited = build_mllm_judge_pair(src, tmp_path / "lmu", limit=3)
    assert limited.rows_written == 6
    lite = src / "Dataset" / "Benchmark_Lite"
    lite.mkdir(parents=True)
    line = json.loads((src / "Dataset" / "Benchmark" / "pair.jsonl").read_text().splitlines()[0])
    line["image_path"] = "image/" + line["image_path"]  # the HQ/Hard files name the image folder too
    (src / "image").mkdir()
    (src / "image" / Path(line["image_path"]).name).write_bytes(png_bytes(3, 3, (9, 9, 9)))
    (lite / "pair_lite.jsonl").write_text(json.dumps(line) + "\n")
    result = build_mllm_judge_pair(src, tmp_path / "lmu", lite=True)
    assert result.tsv.name == "MLLMJudgePair_CP_Lite.tsv" and result.rows_written == 2
    with pytest.raises(InputError, match="no pair-comparison file"):
        build_mllm_judge_pair(tmp_path / "nowhere", tmp_path / "lmu")


# -- PARC variation datasets ---------------------------------------------------------------------


def test_parc_tsv_from_the_variation_format(tmp_path: Path) -> None:
    src = parc_source(tmp_path / "src", n_items=4)
    result = build_parc(src, tmp_path / "lmu")
    assert result.tsv.name == "PARC_toy.tsv"  # PARC_<dataset>
    assert dict(result.excluded.counts) == {"image_missing": 1, "answer_not_an_option": 1, "duplicate_id": 1,
                                            "variation_unknown": 1}
    rows = read_tsv(result.tsv)
    assert len(rows) == 4 * 4 + 2 and result.rows_read == 22
    by_id = {r["item_id"]: r for r in rows}
    comparative, single = by_id["toy-000/O"], by_id["toy-001/O"]
    assert (comparative["A"], comparative["B"], comparative["C"]) == ("Left", "Right", "")
    assert (single["A"], single["B"], single["C"]) == ("red", "green", "blue")
    assert single["answer"] == "B" and by_id["toy-001/LS-N"]["answer"] == "A,C"  # negation: two correct options
    images = ast.literal_eval(comparative["image"])  # two images: VLMEvalKit's list of base64 strings
    assert len(images) == 2 and base64.b64decode(images[0]).startswith(b"\x89PNG")
    assert base64.b64decode(single["image"]).startswith(b"\x89PNG")
    renamed = by_id["toy-000/blur2"]  # outside PARC's names, with a family: kept
    assert renamed["variation"] == "blur2" and renamed["family"] == "VR"
    assert by_id["orphan/LR-I"]["source_id"] == "toy-orphan"  # no original prompt: kept, the core counts it
    assert {r["family"] for r in rows} == {"O", "LR", "LS", "VR"} and rows[0][KIND_COLUMN] == "parc"
    prompt = PARC.render(single)
    assert prompt == ("Question: What colour is square 1?\nOptions:\nA. red\nB. green\nC. blue\n"
                      "Only respond with the option letter.")
    assert PARC.render(comparative).count("\n") == 4 and PARC.answer_letters(comparative) == ("A", "B")
    manifest = read_manifest(result.tsv)
    assert manifest is not None and manifest["kind"] == "parc" and manifest["source"]["datasets"] == ["toy"]
    assert spec_for("PARC_toy") is PARC and spec_for("PARC_") is PARC and spec_for("PARCX") is None


def test_parc_names_and_bad_folders(tmp_path: Path) -> None:
    src = parc_source(tmp_path / "src", n_items=2, bad_rows=False)
    assert build_parc(src, tmp_path / "lmu", name="PARC_mine", limit=3).rows_written == 3
    with pytest.raises(InputError, match="start with 'PARC_'"):
        build_parc(src, tmp_path / "lmu", name="mine")
    other = parc_source(tmp_path / "other", n_items=2, bad_rows=False, dataset="nyu")
    with (src / "variations.jsonl").open("a") as fh:  # two datasets in one folder: a name is needed
        fh.write((other / "variations.jsonl").read_text().replace("images/", "../other/images/"))
    with pytest.raises(InputError, match="pass --name"):
        build_parc(src, tmp_path / "lmu")
    assert build_parc(src, tmp_path / "lmu", name="PARC_both").rows_written == 16
    with pytest.raises(InputError, match="no variation file"):
        build_parc(tmp_path / "nowhere", tmp_path / "lmu")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "variations.jsonl").write_text('{"id": "x", "options": {"A": "a"}}\nnot json\n')
    with pytest.raises(InputError, match="no row could be built .*field_missing 1.*malformed_json_line 1"):
        build_parc(tmp_path / "broken", tmp_path / "lmu", name="PARC_broken")


def test_cli_build_tsv_pairwise_and_parc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pair = mllm_judge_pair_source(tmp_path / "pair", n_pairs=2, bad_rows=False)
    parc = parc_source(tmp_path / "parc", n_items=2, bad_rows=False)
    lmu = str(tmp_path / "lmu")
    assert main(["vlmeval", "build-tsv", "mllm_judge_pair", "--source", str(pair), "--out", lmu]) == 0
    # issue 38, item 8: pairs read, pairs written and the rows they make, not "read 2 rows, wrote 4"
    assert "MLLMJudgePair_CP: read 2 pairs, wrote 2 pairs as 4 rows (each pair in both orders" in \
        capsys.readouterr().out
    assert main(["vlmeval", "build-tsv", "parc", "--source", str(parc), "--out", lmu]) == 0
    assert "PARC_toy: read 8 rows, wrote 8" in capsys.readouterr().out
    assert main(["vlmeval", "build-tsv", "parc", "--source", str(parc), "--out", lmu, "--lite"]) == 2
    assert main(["vlmeval", "build-tsv", "parc", "--source", str(parc), "--out", lmu, "--name", "toy"]) == 2
    assert "start with 'PARC_'" in capsys.readouterr().err
