"""``judgecp evaluate --kind ensemble``: the same study as ``python -m judgecp.kinds.ensemble.evaluate``, flags
checked."""

from __future__ import annotations

import json

import pytest

from judgecp.cli import main
from judgecp.data.ensemble.embeddings import write_embeddings
from judgecp.data.ensemble.records import read_ensemble_records
from judgecp.kinds.ensemble.evaluate import main as module_main
from judgecp.synthetic.judges import simulate_prompt_judge, simulated_records


@pytest.fixture
def records_on_disk(tmp_path):
    sim = simulate_prompt_judge(400, 6, 3, random_state=5)
    records, table = simulated_records(sim, labeled_fraction=0.9, random_state=5)
    records[3] = {**records[3], "exclude": "image_load_failed", "logprobs": None}
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    write_embeddings(table, tmp_path / "emb.npz")
    return path, tmp_path / "emb.npz"


def test_the_command_and_the_module_give_the_same_report(records_on_disk, tmp_path, capsys):
    records, embeddings = records_on_disk
    common = [
        "--embeddings",
        str(embeddings),
        "--seeds",
        "3",
        "--validation",
        "60",
        "--clusters",
        "3",
        "--alpha",
        "0.2",
    ]
    assert main(["evaluate", "--kind", "ensemble", str(records), *common, "--json", str(tmp_path / "a.json")]) == 0
    printed = capsys.readouterr().out
    assert "mixture" in printed and "excluded: 1" in printed
    assert module_main([str(records), *common, "--json", str(tmp_path / "b.json")]) == 0
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert a == b
    assert a["excluded"] == [{"reason": "image_load_failed (item left out)", "count": 1, "examples": [f"{records}:4"]}]
    assert a["n_items"] == 399 and a["settings"]["alpha"] == 0.2 and a["settings"]["seeds"] == [0, 1, 2]
    for method in ("uniform", "bpe", "mixture"):
        assert {"ece", "mce", "auprc", "nll"} <= set(a["methods"][method])


def test_example_and_quiet(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["evaluate", "--kind", "ensemble", "--example", "--seeds", "1", "--quiet", "--json", str(out)]) == 0
    assert capsys.readouterr().out == ""
    report = json.loads(out.read_text())
    assert report["kind"] == "ensemble" and report["methods"]["mixture"]["ece"] < report["methods"]["uniform"]["ece"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kind", "ensemble", "--example", "--splits", "3"], "--splits: not options of --kind ensemble"),
        (["--kind", "ensemble", "--example", "--methods", "lac"], "--methods: not options of --kind ensemble"),
        (["--example", "--clusters", "3"], "--clusters: options of --kind ensemble, not of --kind likert"),
        (["--kind", "pairwise", "--example", "--embeddings", "x.npz"], "--embeddings: options of --kind ensemble"),
        (["--kind", "ensemble", "--example", "--alpha", "2"], "--alpha must be a number in (0, 1)"),
        (["--kind", "ensemble", "--example", "--alpha", "x"], "--alpha must be a number"),
        (["--kind", "ensemble"], "give an INPUT file or --example"),
        (["--kind", "ensemble", "nope.jsonl"], "no such records file"),
        (["--kind", "ensemble", "--example", "--json", "/no/such/dir/r.json"], "does not exist"),
    ],
)
def test_bad_flags_exit_2_with_one_line(argv, message, capsys):
    assert main(["evaluate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_records_with_exclude_leave_their_item_out():
    sim = simulate_prompt_judge(30, 3, 2, random_state=0)
    records, table = simulated_records(sim, labeled_fraction=1.0, random_state=0)
    records[4] = {**records[4], "exclude": "image_load_failed"}  # item 1, prompt 1
    data = read_ensemble_records(records, embeddings=table)
    assert len(data.items) == 29 and "item-00001" not in data.items
    assert data.exclusions.counts == {"image_load_failed (item left out)": 1}
    with pytest.raises(Exception, match="twice"):
        read_ensemble_records([*records, records[4]], embeddings=table)


def test_ensemble_records_read_without_the_kind_get_a_hint(records_on_disk, tmp_path, capsys):
    records, _ = records_on_disk
    assert main(["evaluate", str(records)]) == 2
    assert "a prompt ensemble, read with --kind ensemble" in capsys.readouterr().err
    plain = tmp_path / "pairs.jsonl"
    plain.write_text(json.dumps({"schema": "judgecp.record/1", "shape": "pair", "id": "x", "pair_id": "p",
                                 "order": "fwd", "label": "A", "logprobs": {"A": -0.1, "B": -2.0}}) + "\n")
    assert main(["evaluate", str(plain)]) == 2
    assert "--kind ensemble" not in capsys.readouterr().err
