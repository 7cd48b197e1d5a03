"""``judgecp evaluate --kind ensemble`` (main(argv)): the example, records + embeddings, errors."""

from __future__ import annotations

import json

import pytest

from judgecp.data.ensemble.embeddings import write_embeddings
from judgecp.kinds.ensemble.evaluate import main
from judgecp.synthetic.judges import simulate_prompt_judge, simulated_records


@pytest.fixture
def records_on_disk(tmp_path):
    sim = simulate_prompt_judge(600, 8, 4, random_state=3)
    records, table = simulated_records(sim, labeled_fraction=0.9, random_state=3)
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    write_embeddings(table, tmp_path / "emb.npz")
    return path, tmp_path / "emb.npz"


def test_example_reports_every_method(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["--example", "--seeds", "2", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    for method in ("uniform", "bpe", "mixture"):
        assert {"ece", "mce", "auprc", "nll"} <= set(report["methods"][method])
    methods = report["methods"]
    assert methods["mixture"]["ece"] < methods["bpe"]["ece"] and methods["mixture"]["nll"] < methods["uniform"]["nll"]
    assert report["n_prompts"] == 20 and report["selection"]["mixture"]["procedure"] == "by"
    assert len(report["mixture_weights"]["weights"]) == 4
    assert "mixture" in capsys.readouterr().out


def test_records_with_an_embeddings_file_and_predictions(records_on_disk, tmp_path):
    records, embeddings = records_on_disk
    report_path, predictions = tmp_path / "r.json", tmp_path / "p.jsonl"
    args = [str(records), "--embeddings", str(embeddings), "--seeds", "2", "--validation", "100",
            "--json", str(report_path), "--predictions", str(predictions), "--alpha", "0.3", "--procedure", "bh"]
    assert main(args) == 0
    report = json.loads(report_path.read_text())
    assert report["n_items"] == 600 and report["judge"] == "simulated-judge"
    assert report["methods"]["mixture"]["nll"] < report["methods"]["bpe"]["nll"]
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert len(rows) == 600 - report["n_labeled"] > 0
    assert set(rows[0]) == {"item", "proba", "prediction", "confidence", "selected", "pvalue"}
    assert any(r["selected"] for r in rows)


def test_errors_exit_2_with_one_line(records_on_disk, capsys, tmp_path):
    records, embeddings = records_on_disk
    assert main([str(records), "--seeds", "1"]) == 2  # no --embeddings and no meta.embedding
    assert "needs item embeddings" in capsys.readouterr().err
    assert main([str(tmp_path / "nope.jsonl")]) == 2
    assert "no such records file" in capsys.readouterr().err
    assert main([str(records), "--embeddings", str(embeddings), "--validation", "5000"]) == 2
    assert "labeled items" in capsys.readouterr().err
    assert main([]) == 2
