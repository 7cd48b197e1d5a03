"""The prompt-ensemble task glue without running a model: prompts, documents, targets, settings, metrics."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.lm_eval.helpers import skip_without_lm_eval

skip_without_lm_eval()

from judgecp.adapters.lm_eval.ensemble_task import (  # noqa: E402
    doc_to_target,
    item_documents,
    records_report,
    task_settings,
)
from judgecp.base.errors import InputError  # noqa: E402
from judgecp.data.ensemble.prompts import build_prompt_set, write_prompt_set  # noqa: E402
from judgecp.data.ensemble.sources import PreferenceItem  # noqa: E402
from judgecp.kinds.ensemble.study import (  # noqa: E402
    DEFAULT_PROMPTS,
    SAMPLE_PROMPT,
    ensemble_metrics,
    sample_items,
    select_prompts,
)
from judgecp.kinds.metrics import metric_values  # noqa: E402
from judgecp.synthetic.judges import simulate_prompt_judge, simulated_records  # noqa: E402


def test_default_prompts_start_with_the_sample_and_have_distinct_texts() -> None:
    prompts = select_prompts()
    assert len(prompts) == DEFAULT_PROMPTS and prompts[0].id == SAMPLE_PROMPT
    assert len({(p.template, p.order) for p in prompts}) == DEFAULT_PROMPTS
    assert [p.id for p in select_prompts(prompts=20)] == [p.id for p in prompts]  # seeded: the same draw
    assert [p.id for p in select_prompts(prompts=20, prompt_seed=1)] != [p.id for p in prompts]
    assert {p.flipped for p in prompts} == {True, False}  # augmented versions are drawn too


def test_prompts_by_id_from_a_prompt_set_file(tmp_path) -> None:
    path = tmp_path / "set.json"
    write_prompt_set(
        build_prompt_set(personas=["photographer"], criteria=["alignment"], templates=["supplement-sample"]), path
    )
    everything = select_prompts(str(path))
    assert len(everything) == 5  # the sample + 4 augmented versions
    two = select_prompts(str(path), "photographer.supplement-sample.alignment.flip.III, supplement-sample")
    assert [p.id for p in two] == ["photographer.supplement-sample.alignment.flip.III", "supplement-sample"]
    with pytest.raises(InputError, match="unknown prompt 'nope'"):
        select_prompts(str(path), "nope")
    with pytest.raises(InputError, match="positive count"):
        select_prompts(prompts="0")
    with pytest.raises(InputError, match="listed twice"):
        select_prompts(prompts=["supplement-sample", "supplement-sample"])


def item(preferred: str = "B") -> PreferenceItem:
    return PreferenceItem("it-1", "a red cube", ("first.png", "second.png"), preferred, "test")  # type: ignore[arg-type]


def test_documents_show_the_images_in_the_prompts_order_and_target_the_preferred_glyph() -> None:
    prompts = {p.id: p for p in build_prompt_set(personas=["photographer"], criteria=["alignment"],
                                                   templates=["supplement-sample"])}
    chosen = [prompts["photographer.supplement-sample.alignment.orig.AB"],
              prompts["photographer.supplement-sample.alignment.flip.III"]]
    orig, flip = item_documents(item("B"), chosen, dataset="t", image_refs=["first.png", "second.png"])
    assert orig["image_refs"] == ["first.png", "second.png"] and flip["image_refs"] == ["second.png", "first.png"]
    assert (orig["order"], flip["order"]) == ("fwd", "rev")
    assert orig["glyphs"] == ["A", "B"] and flip["glyphs"] == ["I", "II"]  # doc_to_choice: glyphs (the YAML)
    # the human prefers the original second image: "B" in the original order, "I" when flipped
    assert doc_to_target(orig) == "B" and doc_to_target(flip) == "I"
    assert doc_to_target({**orig, "label": None}) == ""
    assert orig["text"].count("<image>") == 2 and "Caption: a red cube" in orig["text"]  # doc_to_text: text
    assert orig["id"] == "it-1/photographer.supplement-sample.alignment.orig.AB"
    assert all(isinstance(v, (str, list)) or v is None for v in orig.values())  # datasets-friendly


def test_sample_items_is_seeded_and_keeps_order() -> None:
    items = [item() for _ in range(10)]
    items = [PreferenceItem(f"i{k}", "c", ("a", "b"), "A", "t") for k in range(10)]
    kept = sample_items(items, 4, 0)
    assert [i.id for i in kept] == sorted((i.id for i in kept), key=lambda s: int(s[1:])) and len(kept) == 4
    assert kept == sample_items(items, "4", "0") and sample_items(items, 0, 0) == items
    with pytest.raises(InputError, match="max_items"):
        sample_items(items, "many", 0)


def test_settings_from_metadata() -> None:
    s = task_settings({"validation": "20", "seeds": "0,3", "alpha": 0.2, "version": 1.0, "pretrained": "x"})
    assert (s["validation"], s["seeds"], s["alpha"], s["clusters"]) == (20, [0, 3], 0.2, 4)
    assert task_settings({})["seeds"] == list(range(10))
    with pytest.raises(InputError, match="alpha"):
        task_settings({"alpha": 2})
    with pytest.raises(InputError, match="procedure"):
        task_settings({"procedure": "holm"})
    with pytest.raises(InputError, match="embeddings 'nope.npz': no such file"):
        task_settings({"embeddings": "nope.npz"})


def simulated(n_items: int = 120, n_prompts: int = 4) -> tuple[list[dict], dict]:
    sim = simulate_prompt_judge(n_items, n_prompts, 2, random_state=0)
    return simulated_records(sim, labeled_fraction=1.0, random_state=0)


def test_task_report_equals_the_core_report_and_counts_excluded_records(tmp_path) -> None:
    from judgecp.data.ensemble.embeddings import write_embeddings
    from judgecp.data.ensemble.records import read_ensemble_records
    from judgecp.kinds.ensemble.evaluate import ensemble_report

    records, vectors = simulated()
    records[0] = {**records[0], "exclude": "image_load_failed"}
    write_embeddings(vectors, tmp_path / "emb.npz")
    settings = task_settings({"embeddings": str(tmp_path / "emb.npz"), "validation": 30, "seeds": 3, "clusters": 2})
    report = records_report(records, settings, task="t")
    values = metric_values(report, ensemble_metrics(True))
    core = ensemble_report(
        read_ensemble_records(records, embeddings=vectors), validation=30, clusters=2, seeds=[0, 1, 2]
    )
    assert values["ece_mixture"] == pytest.approx(core["methods"]["mixture"]["ece"], abs=1e-12)
    assert values["n_items"] == 119 and values["n_prompts"] == 4
    assert values["excluded"] == 1 and report["excluded"][0]["reason"] == "image_load_failed (item left out)"
    assert [m.name for m in ensemble_metrics(False)][:3] == ["n_items", "n_prompts", "excluded"]
    assert not any(m.name.endswith("mixture") for m in ensemble_metrics(False))


def test_too_few_labeled_items_leave_the_metrics_undefined_not_a_crash() -> None:
    records, _ = simulated(n_items=5)
    report = records_report(records, task_settings({"validation": 50}), task="t")
    values = metric_values(report, ensemble_metrics(False))
    assert "error" in report and values["n_items"] == 5 and values["excluded"] == 0
    assert math.isnan(values["ece_uniform"]) and math.isnan(values["fdp_bpe"])
    assert json.loads(json.dumps(report))["n_prompts"] == 4
    assert np.isfinite(values["n_prompts"])


# -- the task folder's loaders: a local copy, and the hub datasets the YAMLs and README name ----------


def _png(path, colour):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), colour).save(path)


def test_mjbench_from_the_hub_keeps_images_in_the_table(tmp_path, monkeypatch) -> None:
    import datasets

    from judgecp.adapters.lm_eval import tasks_path
    from judgecp.data import images
    from tests.lm_eval.test_data_sources import task_utils

    rows = []
    for i in range(4):
        _png(tmp_path / f"{i}a.png", (200, 10 * i, 0))
        _png(tmp_path / f"{i}b.png", (0, 10 * i, 200))
        rows.append({"caption": f"c{i}", "image0": str(tmp_path / f"{i}a.png"), "image1": str(tmp_path / f"{i}b.png"),
                     "label": 0, "info": "x"})
    table = (
        datasets.Dataset.from_list(rows).cast_column("image0", datasets.Image()).cast_column("image1", datasets.Image())
    )
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **kw: calls.append((a, kw)) or table)
    monkeypatch.delenv("JUDGECP_MJBENCH_DIR", raising=False)
    utils = task_utils("image_pref_ensemble_cp")
    docs = utils.load_mjbench(mjbench_split="bias", prompts="supplement-sample")["test"]
    assert calls == [(("MJ-Bench/MJ-Bench",), {"split": "bias"})]
    assert len(docs) == 4 and all(ref.startswith("mjbench:bias#") for d in docs for ref in d["image_refs"])
    assert sorted(d["label"] for d in docs) == ["A", "A", "B", "B"]  # balance_order swapped half
    swapped = next(d for d in docs if d["label"] == "B")
    first, second = images.load_images(swapped)
    assert first.getpixel((0, 0))[2] == 200 and second.getpixel((0, 0))[0] == 200  # the preferred image is second
    yaml_text = (tasks_path() / "image_pref_ensemble_cp" / "image_pref_ensemble_cp_mjbench_bias.yaml").read_text()
    readme = (tasks_path() / "image_pref_ensemble_cp" / "README.md").read_text()
    assert "dataset_path: MJ-Bench/MJ-Bench" in yaml_text and "mjbench_split: bias" in yaml_text
    assert "MJ-Bench/MJ-Bench" in readme and "ymhao/HPDv2" in readme
    with pytest.raises(InputError, match="split must be one of"):
        utils.load_mjbench(mjbench_split="nope")


def test_hpdv2_from_the_hub_and_from_a_local_copy(tmp_path, monkeypatch) -> None:
    import huggingface_hub

    from judgecp.adapters.lm_eval import tasks_path
    from tests.lm_eval.test_data_sources import task_utils

    root = tmp_path / "hpdv2"
    for k in range(3):
        _png(root / "test" / f"0/{k}.png", (50 * k, 0, 0))
    (root / "test.json").write_text(json.dumps([{"prompt": "a cat", "image_path": [f"0/{k}.png" for k in range(3)],
                                                 "rank": [1, 3, 2]}]))
    utils = task_utils("image_pref_ensemble_cp")
    local = utils.load_hpdv2(data_dir=str(root), prompts=2)["test"]
    assert len(local) == 3 * 2 and local[0]["prompt_id"] == "supplement-sample"
    calls = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        lambda repo_id, **kw: calls.append(repo_id) or str(root))
    monkeypatch.delenv("JUDGECP_HPDV2_DIR", raising=False)
    hub = utils.load_hpdv2(prompts=2)["test"]
    assert calls == ["ymhao/HPDv2"] and [d["id"] for d in hub] == [d["id"] for d in local]
    one = utils.load_hpdv2(data_dir=str(root), prompts=2, max_items=1)["test"]
    assert len(one) == 2
    assert (
        "dataset_path: ymhao/HPDv2"
        in (tasks_path() / "image_pref_ensemble_cp" / "image_pref_ensemble_cp_hpdv2.yaml").read_text()
    )


def test_metrics_after_the_first_read_its_report_and_never_guess() -> None:
    from judgecp.adapters.lm_eval.metrics import TaskReport

    records, _ = simulated(n_items=60, n_prompts=3)
    settings = task_settings({"validation": 20, "seeds": 2})
    task = TaskReport(lambda rs: records_report(rs, settings, task="t"), task="t")
    first = task.of(records)  # the first metric: the records themselves
    later = task.of([None] * len(records))  # the others: placeholders
    assert later is first and "error" not in first and task.computations == 1
    lost = TaskReport(lambda rs: records_report(rs, settings, task="t"), task="t").of([None] * len(records))
    assert lost is None
