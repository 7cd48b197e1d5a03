"""Reading judgecp.record/1 ensemble input: grouping, re-keying, labels, exclusions, errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from judgecp.base.errors import InputError
from judgecp.data.ensemble.prompts import build_prompt_set
from judgecp.data.ensemble.records import read_ensemble_records
from judgecp.synthetic.judges import simulate_prompt_judge, simulated_records


def record(item, prompt, logprobs, label="A", **meta):
    return {
        "schema": "judgecp.record/1", "shape": "pair", "id": f"{item}/{prompt}", "judge": "j",
        "prompt": prompt, "task": "t", "group": None, "label": label, "logprobs": logprobs,
        "prediction": None, "flags": [], "meta": {"item": item, **meta},
    }


def test_flipped_prompts_are_rekeyed_into_the_original_order():
    records = [
        record("x", "plain", {"A": math.log(0.8), "B": math.log(0.2)}),
        # flipped, glyphs I/II: "I" names the original B
        record("x", "flip", {"I": math.log(0.3), "II": math.log(0.7)}, answer_key={"I": "B", "II": "A"}),
    ]
    data = read_ensemble_records(records)
    assert data.classes == ["A", "B"] and data.prompts == ["plain", "flip"]
    np.testing.assert_allclose(np.exp(data.log_probs[0]), [[0.8, 0.2], [0.7, 0.3]])
    assert data.labels.tolist() == [0] and data.embeddings is None


def test_answer_keys_can_come_from_the_prompt_set():
    prompts = build_prompt_set(personas=["photographer"], templates=["caption-first"], criteria=["alignment"])
    flip = next(p for p in prompts if p.id.endswith("flip.III"))
    records = [record("x", flip.id, {"I": math.log(0.9), "II": math.log(0.1)}, label="B")]
    data = read_ensemble_records(records, prompt_set=prompts)
    np.testing.assert_allclose(np.exp(data.log_probs[0, 0]), [0.1, 0.9])  # I -> B
    assert data.labels.tolist() == [1]
    with pytest.raises(InputError, match="answer_key missing"):
        read_ensemble_records(records)


def test_renormalised_floored_and_unlabeled():
    records = [
        record("x", "p", {"A": math.log(0.3), "B": math.log(0.3), "C": math.log(0.4)}, label=None),
        record("y", "p", {"A": math.log(0.5)}, label="B", answer_key={"A": "A", "B": "B"}),
    ]
    data = read_ensemble_records(records)
    np.testing.assert_allclose(np.exp(data.log_probs[0, 0]), [0.5, 0.5])  # "C" is not an answer
    assert data.floored == 1 and np.exp(data.log_probs[1, 0, 1]) < 1e-4
    assert data.labels.tolist() == [-1, 1] and data.labeled.tolist() == [False, True]


def test_counted_exclusions(tmp_path):
    lines = [
        json.dumps(record("x", "p", {"A": -0.1, "B": -2.4})),
        json.dumps(record("x", "q", {"A": -0.1, "B": -2.4})),
        json.dumps(record("y", "p", {"A": -0.1, "B": -2.4})),  # lacks q
        json.dumps(record("z", "p", {"A": float("nan"), "B": -0.1})),
        json.dumps(record("z", "q", {"A": -0.1, "B": -2.4})),
        "{not json",
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    data = read_ensemble_records(path)
    assert data.items == ["x"]
    reasons = {e["reason"]: e["count"] for e in data.exclusions.to_json()}
    assert reasons == {
        "malformed JSON line": 1,
        "item lacks some prompts (e.g. q)": 1,
        "NaN or positive logprob (item left out)": 1,
    }


def test_embeddings_from_a_table_or_the_records():
    records = [record(i, "p", {"A": -0.1, "B": -2.4}, embedding=[1.0, float(k)]) for k, i in enumerate("xyz")]
    data = read_ensemble_records(records)
    np.testing.assert_allclose(data.embeddings, [[1, 0], [1, 1], [1, 2]])
    data = read_ensemble_records(records, embeddings={"x": [0.0, 1.0], "z": [1.0, 0.0]})
    assert data.items == ["x", "z"] and data.exclusions.counts["item has no embedding"] == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": "other/1"}, "schema must be"),
        ({"shape": "triple"}, "shape must be"),
        ({"judge": "other"}, "one judge"),
        ({"label": "B"}, "labels 'A' and 'B'"),
        ({"label": "maybe"}, "pair label"),
        ({"prompt": "p"}, "prompt 'p' twice"),
        ({"meta": {}}, "no meta.item"),
        ({"logprobs": {"A": "high"}}, "not a number"),
    ],
)
def test_errors_name_the_line(change, message):
    first = record("x", "p", {"A": -0.1, "B": -2.4})
    second = {**record("x", "q", {"A": -0.1, "B": -2.4}), **change}
    with pytest.raises(InputError, match=message):
        read_ensemble_records([first, second])


def test_simulated_records_round_trip():
    sim = simulate_prompt_judge(60, 4, 2, random_state=0)
    records, table = simulated_records(sim, labeled_fraction=0.5, random_state=0)
    data = read_ensemble_records(records, embeddings=table)
    np.testing.assert_allclose(data.log_probs, sim.log_probs, atol=1e-12)
    labeled = data.labeled
    np.testing.assert_array_equal(data.labels[labeled], sim.labels[labeled])
    assert 15 < labeled.sum() < 45
    np.testing.assert_allclose(data.embeddings, sim.embeddings)


def test_score_and_choice_shapes():
    def scored(item, label):
        return {**record(item, "p", {"1": -2.0, "2": -0.5, "3": -1.2}, label=label), "shape": "score"}

    data = read_ensemble_records([scored("x", 2), scored("y", "3"), scored("z", None)])
    assert data.classes == ["1", "2", "3"] and data.labels.tolist() == [1, 2, -1]
    with pytest.raises(InputError, match="must be an integer"):
        read_ensemble_records([scored("x", 2.5)])
    choice = {**record("x", "p", {"A": -1.0, "B": -0.7, "C": -2.0}, label=["C"]), "shape": "choice"}
    assert read_ensemble_records([choice]).labels.tolist() == [2]
    with pytest.raises(InputError, match="one correct option"):
        read_ensemble_records([{**choice, "label": ["A", "C"]}])
