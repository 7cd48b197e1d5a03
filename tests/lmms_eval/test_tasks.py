"""judgecp's lmms-eval task folders as lmms-eval builds them (its TaskManager, on local fixture data; no model).

Each task loads its documents through the lm-eval task folder's loader, sends
lmms-eval's requests without ``<image>`` placeholders (lmms-eval's models
place the images), and turns a document's answers into the judgecp record of
its kind, counting what cannot be used; settings come from the task's YAML
and ``JUDGECP_LMMS_EVAL_METADATA``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.lmms_eval.helpers import build_tasks, skip_without_lmms_eval

skip_without_lmms_eval()

from judgecp.adapters.lmms_eval import METADATA_ENV, tasks_path  # noqa: E402
from judgecp.base.errors import InputError  # noqa: E402
from tests.lm_eval.fixtures import build_mmmu_dir, build_polaris_dir, build_scienceqa_dir  # noqa: E402
from tests.lm_eval.test_ensemble_tasks import build_hpdv2_dir  # noqa: E402

TASKS = ("polaris_cp", "polaris_cp_cot", "polaris_cp_continuous", "ai2d_cp", "scienceqa_img_cp", "mmmu_val_cp",
         "image_pref_ensemble_cp_hpdv2")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, ai2d_dir: Path) -> dict[str, Any]:
    return build_tasks(TASKS, {
        "JUDGECP_POLARIS_DIR": build_polaris_dir(tmp_path_factory.mktemp("polaris"), n=10),
        "JUDGECP_SCIENCEQA_DIR": build_scienceqa_dir(tmp_path_factory.mktemp("sqa")),
        "JUDGECP_MMMU_DIR": build_mmmu_dir(tmp_path_factory.mktemp("mmmu")),
        "JUDGECP_AI2D_DIR": ai2d_dir,
        "JUDGECP_HPDV2_DIR": build_hpdv2_dir(tmp_path_factory.mktemp("hpdv2"), captions=4),
        METADATA_ENV: json.dumps({"prompts": 3}),  # a setting for the loader, as lm-eval's --metadata
    })


def answers(values: list[float]) -> list[str]:
    """What lmms-eval hands process_results for a loglikelihood request set: each pair's str()."""
    best = max(values)
    return [str((v, v == best)) for v in values]


def test_requests_carry_no_image_placeholder_and_the_answer_prefix(built: dict[str, Any]) -> None:
    direct = built["polaris_cp"].instances
    assert {r.args[1] for r in direct} == {" 1", " 2", " 3", " 4", " 5"}
    assert all(r.metadata["gen_prefix"] == "Score:" for r in direct)  # what judgecp-hf starts the answer with
    for name in TASKS[:-1]:
        for request in built[name].instances:
            assert "<image>" not in request.args[0], name
            assert callable(request.args[2])  # doc_to_visual: the model loads the images
    choice = built["ai2d_cp"].instances
    assert {r.args[1] for r in choice} == {" A", " B", " C", " D"}
    assert "A. leaf" in choice[0].args[0] and choice[0].args[0].startswith("You are a scientific diagram analyzer.")


def test_likert_records_and_the_continuous_labels(built: dict[str, Any]) -> None:
    task, continuous = built["polaris_cp"], built["polaris_cp_continuous"]
    doc = task.dataset["test"][0]
    record = task.process_results(doc, answers([-3.0, -2.0, -0.2, -4.0, -5.0]))["n"]
    assert record["shape"] == "score" and record["prediction"] == 3 and record["label"] == doc["label"]
    assert record["logprobs"] == {"1": -3.0, "2": -2.0, "3": -0.2, "4": -4.0, "5": -5.0}
    unbinned = continuous.process_results(doc, answers([-3.0, -2.0, -0.2, -4.0, -5.0]))["n"]
    assert unbinned["label"] == doc["human_score"] and unbinned["label_scale"] == [0.0, 1.0]
    assert continuous.protocol.label_scale is not None
    cot = built["polaris_cp_cot"].process_results(doc, ["not a judge response"])["n"]
    assert cot["exclude"] == "response_not_json"


def test_choice_records_count_what_cannot_be_judged(built: dict[str, Any]) -> None:
    reasons: dict[str, set[str]] = {}
    for name in ("ai2d_cp", "scienceqa_img_cp", "mmmu_val_cp"):
        task = built[name]
        docs = task.dataset["test"]
        records = []
        for i in range(len(docs)):
            doc = docs[i]
            letters = task.doc_to_choice(doc)
            record = task.process_results(doc, answers([-1.0 - k for k in range(len(letters))]))["n"]
            assert record["shape"] == "choice" and record["id"] == doc["id"]
            if not record["exclude"] and doc["letters"]:
                assert record["prediction"] == letters[0] and record["options"] == letters
            records.append(record)
        report = task.report(records)  # what the task's first aggregation computes
        assert report["n"] + sum(e["count"] for e in report["excluded"]) == len(docs)
        reasons[name] = {e["reason"] for e in report["excluded"]}
    assert reasons["ai2d_cp"] == set()
    assert reasons["mmmu_val_cp"] == {"multiple_images", "open_question"}
    assert {"options_missing", "answer_not_an_option"} <= reasons["scienceqa_img_cp"]


def test_settings_from_the_environment_and_a_bad_one_named(
    built: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_eval.tasks import TaskManager, get_task_dict


    assert built["ai2d_cp"].protocol.level == 0.1
    manager = TaskManager("ERROR", include_path=str(tasks_path()))
    monkeypatch.setenv(METADATA_ENV, json.dumps({"alpha": 0.2, "methods": "lac"}))
    (task,) = get_task_dict(["judgecp_demo_easy"], manager).values()
    assert task.protocol.level == 0.2 and [m.name for m in task._judgecp_metrics][:3] == [
        "n",
        "excluded",
        "coverage_lac",
    ]
    monkeypatch.setenv(METADATA_ENV, json.dumps({"methods": "naiv"}))
    with pytest.raises(InputError, match="metadata methods: unknown method 'naiv'"):
        get_task_dict(["judgecp_demo_easy"], manager)
    monkeypatch.setenv(METADATA_ENV, "{not json")
    with pytest.raises(InputError, match="JUDGECP_LMMS_EVAL_METADATA: not JSON"):
        get_task_dict(["judgecp_demo_easy"], manager)


def test_prompt_ensemble_documents_place_their_two_images_and_give_pair_records(built: dict[str, Any]) -> None:
    task = built["image_pref_ensemble_cp_hpdv2"]
    docs = task.dataset["test"]
    assert len(docs) == 3 * len({d["item"] for d in docs})  # every item under the three prompts (the setting)
    request = task.instances[0]
    assert request.args[0].count("<image>") == 2 and {r.args[1] for r in task.instances[:2]} == {" A", " B"}
    records = []
    for i in range(len(docs)):
        glyphs = task.doc_to_choice(docs[i])
        record = task.process_results(docs[i], answers([-0.5, -1.5]))["n_items"]  # the task's first metric
        assert record["shape"] == "pair" and record["logprobs"] == {glyphs[0]: -0.5, glyphs[1]: -1.5}
        assert record["pair_id"] == docs[i]["item"] and record["prompt"] == docs[i]["prompt_id"]
        records.append(record)
    report = task.report(records)
    assert report["n_items"] == len({d["item"] for d in docs}) and report["n_prompts"] == 3
