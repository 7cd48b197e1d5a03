"""The VLMEvalKit prompt-ensemble datasets (ImagePrefEnsemble_*): TSV rows, prompts, records, evaluate().

VLMEvalKit is not installed here: the dataset class is built against a small
stand-in of the two VLMEvalKit names it uses (``ImageBaseDataset``'s image
handling, ``vlmeval.smp``), and the sidecar records are made by the real
capture function (:func:`judgecp.data.extraction.letter_output`) from scripted
per-position logprobs.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgecp.adapters.vlmeval import ensemble
from judgecp.adapters.vlmeval.runtime import prediction_sha1
from judgecp.base.errors import InputError
from judgecp.data.ensemble.prompts import build_prompt_set
from judgecp.data.ensemble.sources import PreferenceItem, read_hpdv2
from judgecp.data.extraction import letter_output

PROMPT_IDS = ["supplement-sample", "photographer.supplement-sample.quality-artifacts.flip.AB"]


def prompts() -> list[Any]:
    by_id = {p.id: p for p in build_prompt_set()}
    return [by_id[i] for i in PROMPT_IDS]


def hpdv2_dir(root: Path) -> Path:
    from PIL import Image

    for k in range(3):
        (root / "test" / "0").mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8, 8), (80 * k, 0, 0)).save(root / "test" / "0" / f"{k}.png")
    (root / "test.json").write_text(json.dumps([{"prompt": "a cat", "image_path": [f"0/{k}.png" for k in range(3)],
                                                  "rank": [2, 1, 3]}]))
    return root


def test_rows_share_images_show_them_in_the_prompts_order_and_key_the_answer(tmp_path: Path) -> None:
    items = read_hpdv2(hpdv2_dir(tmp_path))
    rows = ensemble.tsv_rows(items, prompts(), category="hpdv2")
    assert len(rows) == 3 * 2
    first, flipped = rows[0], rows[1]
    assert (first["order"], flipped["order"]) == ("fwd", "rev")
    full = ast.literal_eval(first["image"]) + ast.literal_eval(flipped["image"])
    assert full[0] == full[3] and full[1] == full[2]  # the same two images, swapped
    assert ast.literal_eval(flipped["image_path"]) == ast.literal_eval(first["image_path"])[::-1]
    # item 0-1: ranks 2 vs 1, the second image preferred: "B" as stored, "A" when flipped
    assert (first["preference"], first["answer"], flipped["answer"]) == ("B", "B", "A")
    assert json.loads(flipped["answer_key"]) == {"A": "B", "B": "A"} and flipped["glyphs"] == "A,B"
    assert first["question"].count("<image>") == 2 and "Caption: a cat" in first["question"]


def test_later_prompts_of_an_item_refer_to_its_first_row() -> None:
    item = PreferenceItem("it", "c", ("a", "b"), "A", "t")  # type: ignore[arg-type]
    by_id = {p.id: p for p in build_prompt_set()}
    chosen = [by_id[i] for i in ("supplement-sample", "photographer.supplement-sample.alignment.orig.AB",
                                 "photographer.supplement-sample.alignment.flip.AB")]
    rows = ensemble.tsv_rows([item], chosen, category="t", encode=lambda ref: ref * 40)
    assert len(rows[0]["image"]) > 64 and rows[1]["image"] == rows[0]["index"]  # VLMEvalKit's space saving
    assert len(rows[2]["image"]) > 64  # the flipped order has its own first row


def test_prompts_must_answer_with_single_letters() -> None:
    by_id = {p.id: p for p in build_prompt_set()}
    with pytest.raises(InputError, match="answers with 'II'"):
        ensemble.check_glyphs([by_id["photographer.supplement-sample.alignment.flip.III"]])
    default = ensemble.vlmeval_prompts()
    assert default and all(p.glyphs == ("A", "B") for p in default)
    with pytest.raises(InputError, match="unknown prompt"):
        ensemble.vlmeval_prompts(prompts=["nope"])


def test_messages_put_each_image_in_its_slot() -> None:
    msgs = ensemble.messages("Judge.\n<image>\n\n<image>\n\nCaption: x", ["/a.png", "/b.png"])
    assert [m["type"] for m in msgs] == ["text", "image", "image", "text"]
    assert msgs[1]["value"] == "/a.png" and msgs[3]["value"] == "Caption: x"
    with pytest.raises(InputError, match="2 image slots for 1 images"):
        ensemble.messages("<image><image>", ["/a.png"])


def test_build_command_writes_a_tsv_and_its_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = hpdv2_dir(tmp_path / "hpdv2")
    status = ensemble.main(["--source", "hpdv2", "--root", str(root), "--out", str(tmp_path / "lmu"),
                            "--prompt", PROMPT_IDS[0], "--prompt", PROMPT_IDS[1]])
    assert status == 0
    tsv = tmp_path / "lmu" / "ImagePrefEnsemble_HPDv2.tsv"
    with tsv.open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert [r["index"] for r in rows] == [str(i) for i in range(6)] and rows[0]["question"].count("<image>") == 2
    manifest = json.loads((tmp_path / "lmu" / "ImagePrefEnsemble_HPDv2_build.json").read_text())
    assert manifest["items"] == 3 and manifest["rows"] == 6 and manifest["prompts"] == PROMPT_IDS
    assert ensemble.main(["--source", "hpdv2", "--root", str(root), "--out", str(tmp_path), "--name", "Bad"]) == 2
    assert ensemble.main(["--source", "hpdv2", "--root", str(root), "--out", str(tmp_path),
                          "--prompt", "photographer.supplement-sample.alignment.flip.III"]) == 2
    assert "single capital letters" in capsys.readouterr().err


# -- a run: prediction file + sidecar -> records -> the ensemble study ----------------------------------


def simulated_run(tmp_path: Path, n_items: int = 80, drop: int | None = None) -> tuple[Path, list[dict[str, Any]]]:
    """A prediction file and its sidecar for ``n_items`` items under the two prompts.

    The judge is right with probability ~0.75 and its logprobs say so; the
    flipped prompt answers in its displayed glyphs. ``drop``: a row without a
    sidecar record.
    """
    rng = np.random.default_rng(0)
    items = [PreferenceItem(f"it{i:03d}", f"c{i}", ("a", "b"), "A" if i % 2 else "B", "t")  # type: ignore[arg-type]
             for i in range(n_items)]
    rows = ensemble.tsv_rows(items, prompts(), category="hpdv2", encode=lambda ref: ref * 40)
    dataset, model = "ImagePrefEnsemble_HPDv2", "tiny-lp"
    run = tmp_path / model
    run.mkdir()
    sidecar = run / f"{model}_{dataset}_lprecords.jsonl"
    with (run / f"{model}_{dataset}.tsv").open("w", newline="") as handle, sidecar.open("w") as side:
        writer = csv.DictWriter(handle, fieldnames=[*ensemble.COLUMNS, "prediction"], delimiter="\t")
        writer.writeheader()
        for k, row in enumerate(rows):
            truth = row["answer"]
            other = next(g for g in ("A", "B") if g != truth)
            confident = float(rng.uniform(0.55, 0.95))
            right = rng.random() < 0.75
            p_truth = confident if right else 1 - confident
            said = truth if p_truth >= 0.5 else other
            candidates = {truth: math.log(p_truth), other: math.log(1 - p_truth), "The": -9.0}
            record = letter_output("choice", [said], [candidates], ["A", "B"], source="hf_generate")
            record.update(id=row["index"], task=dataset, judge=model)
            record["meta"]["prediction_sha1"] = prediction_sha1(said)
            writer.writerow({**row, "prediction": said})
            if k != drop:
                side.write(json.dumps(record) + "\n")
    return run / f"{model}_{dataset}.tsv", rows


def test_evaluate_reads_the_sidecar_and_runs_the_ensemble_study(tmp_path: Path) -> None:
    from judgecp.data.ensemble.records import read_ensemble_records
    from judgecp.kinds.ensemble.evaluate import ensemble_report

    predictions, _ = simulated_run(tmp_path, drop=5)
    out = tmp_path / "records.jsonl"
    headline = ensemble.evaluate_file(predictions, settings={"validation": 20, "seeds": 3}, records_out=out)
    report = json.loads(ensemble.metric_path(predictions).read_text())
    assert report["n_items"] == 79 and report["n_prompts"] == 2  # row 5's item lacks a prompt
    reasons = {e["reason"]: e["count"] for e in report["excluded"]}
    assert reasons["no_logprob_record"] == 1 and sum(v for k, v in reasons.items() if k.startswith("item lacks")) == 1
    assert headline["bpe|ece"] == report["methods"]["bpe"]["ece"] and "mixture|ece" not in headline
    assert all(isinstance(v, float) for v in headline.values())
    records = [json.loads(line) for line in out.read_text().splitlines()]
    flipped = next(r for r in records if r["prompt"] == PROMPT_IDS[1])
    assert flipped["meta"]["answer_key"] == {"A": "B", "B": "A"} and flipped["order"] == "rev"
    assert flipped["judge"] == "tiny-lp" and flipped["label"] in ("A", "B")
    # re-keyed: the flipped prompt's "A" is the original "B", so both prompts agree on the truth
    data = read_ensemble_records(records)
    right = (data.log_probs.argmax(axis=2) == data.labels[:, None]).mean(axis=0)
    assert np.all(right > 0.6)
    direct = ensemble_report(data, validation=20, clusters=1, seeds=[0, 1, 2])
    assert direct["methods"]["uniform"]["nll"] == pytest.approx(report["methods"]["uniform"]["nll"])
    with pytest.raises(InputError, match="not a setting"):
        ensemble.evaluate_file(predictions, settings={"methods": "lac"})


def stub_vlmeval(monkeypatch: pytest.MonkeyPatch, lmu: Path) -> None:
    """Stand-ins for ``vlmeval.dataset.image_base.ImageBaseDataset`` and ``vlmeval.smp`` (their image handling)."""
    import pandas as pd

    def toliststr(value: Any) -> list[str]:
        return [str(v) for v in ast.literal_eval(value)] if isinstance(value, str) and value.startswith("[") else (
            [str(v) for v in value] if isinstance(value, list) else [str(value)])

    class ImageBaseDataset:
        def __init__(self, dataset: str = "", skip_noimg: bool = True) -> None:
            self.dataset_name = dataset
            data = self.load_data(dataset)
            data["index"] = [str(x) for x in data["index"]]
            images = dict(zip(data["index"], [str(x) for x in data["image"]], strict=True))
            data["image"] = [toliststr(images[v] if len(v) <= 64 else v) for v in data["image"].astype(str)]
            self.data, self.meta_only = data, False

        def dump_image(self, line: Any) -> list[str]:
            return [str(lmu / "images" / name) for name in toliststr(line["image_path"])]

    smp = types.ModuleType("vlmeval.smp")
    smp.LMUDataRoot = lambda: str(lmu)  # type: ignore[attr-defined]
    smp.load = lambda path: pd.read_csv(path, sep="\t", dtype=str)  # type: ignore[attr-defined]
    smp.toliststr = toliststr  # type: ignore[attr-defined]
    image_base = types.ModuleType("vlmeval.dataset.image_base")
    image_base.ImageBaseDataset = ImageBaseDataset  # type: ignore[attr-defined]
    for name, module in (
        ("vlmeval", types.ModuleType("vlmeval")),
        ("vlmeval.dataset", types.ModuleType("vlmeval.dataset")),
        ("vlmeval.dataset.image_base", image_base),
        ("vlmeval.smp", smp),
    ):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(ensemble, "_CLASS", [])


def test_dataset_class_registers_prompts_for_the_capture_and_evaluates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from judgecp.adapters.vlmeval.runtime import PROMPTS, is_mcq

    lmu = tmp_path / "lmu"
    stub_vlmeval(monkeypatch, lmu)
    ensemble.main(["--source", "hpdv2", "--root", str(hpdv2_dir(tmp_path / "hpdv2")), "--out", str(lmu),
                   "--prompt", PROMPT_IDS[0], "--prompt", PROMPT_IDS[1]])
    cls = ensemble.dataset_class()
    assert cls.supported_datasets() == ["ImagePrefEnsemble_HPDv2"] and cls.force_use_dataset_prompt
    dataset = cls("ImagePrefEnsemble_HPDv2", validation=1, seeds=1)
    assert is_mcq("ImagePrefEnsemble_HPDv2")  # -lp models capture the letters of this dataset's rows
    msgs = dataset.build_prompt(1)
    assert [m["type"] for m in msgs][:3] == ["text", "image", "image"]
    assert msgs[1]["value"].endswith("hpdv2-test-0-0-1_B.png")  # the flipped prompt shows the second image first
    index, meta = PROMPTS.claim_entry("ImagePrefEnsemble_HPDv2", msgs)
    assert index == "1" and meta == {"letters": ["A", "B"]}
    with pytest.raises(InputError, match="not a setting"):
        cls("ImagePrefEnsemble_HPDv2", n_splits=3)
    with pytest.raises(FileNotFoundError, match="python -m judgecp.adapters.vlmeval.ensemble"):
        cls("ImagePrefEnsemble_Missing")
    predictions, _ = simulated_run(tmp_path, n_items=30)
    headline = cls("ImagePrefEnsemble_HPDv2", validation=10, seeds=2).evaluate(str(predictions))
    assert set(headline) >= {"uniform|ece", "bpe|nll", "n_items"} and headline["n_items"] == 30.0
