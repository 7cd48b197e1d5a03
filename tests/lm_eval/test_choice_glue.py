"""Pairwise, multiple-choice and PARC records, settings and task-level aggregation (no model, no lm-eval run)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from judgecp.adapters.lm_eval import metrics
from judgecp.adapters.lm_eval.mcq_metrics import (
    MCQSettings,
    PARCSettings,
    mcq_aggregations,
    mcq_metrics,
    mcq_report,
    parc_metrics,
    parc_report,
)
from judgecp.adapters.lm_eval.metrics import read_metric
from judgecp.adapters.lm_eval.pairwise_metrics import (
    PairwiseSettings,
    pairwise_aggregations,
    pairwise_metrics,
    pairwise_report,
)
from judgecp.adapters.lm_eval.records import choice_record, main, pairwise_record, record_kind
from judgecp.errors import InputError
from judgecp.pairwise import simulate_pairwise_judge
from judgecp.simulate import simulate_mcq_records, simulate_parc_records


def pairwise_records(n: int = 120, seed: int = 0) -> list[dict]:
    """Both orders of simulated pairs as the pairwise task writes them (lp_A/lp_B in each prompt's order)."""
    data = simulate_pairwise_judge(n=n, seed=seed)
    out = []
    for i, pair in enumerate(data.pair_ids):
        label = "A" if data.labels[i] == 1 else "B"
        pf, pr = float(data.p_fwd[i]), float(data.p_rev[i])
        out.append(pairwise_record(f"{pair}/fwd", pair, "fwd", math.log(pf), math.log1p(-pf), label))
        # reversed prompt: "B" is the original A
        out.append(pairwise_record(f"{pair}/rev", pair, "rev", math.log1p(-pr), math.log(pr), label))
    return out


def values(aggregations: list, records: list[dict]) -> dict[str, float]:
    return {m.name: agg(records) for m, agg in aggregations}


# -- pairwise ---------------------------------------------------------------------------------


def test_pairwise_settings_defaults_and_metadata() -> None:
    s = PairwiseSettings.from_metadata({"version": 1.0})
    assert s.alphas == (0.05, 0.1, 0.15, 0.2, 0.25) and s.n_splits == 1000 and s.signal == "bpe"
    assert s.controllers == ("scope", "clopper_pearson", "naive", "heuristic", "vanilla") and s.delta == 0.1
    s = PairwiseSettings.from_metadata({"alphas": "0.1,0.2", "n_splits": 50, "controllers": ["scope"], "signal": "predictive", "delta": 0.05})
    assert (s.alphas, s.n_splits, s.controllers, s.signal, s.delta) == ((0.1, 0.2), 50, ("scope",), "predictive", 0.05)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [({"alphas": "0.1,x"}, "alphas"), ({"alphas": [1.5]}, "alpha"), ({"n_splits": 0}, "n_splits"),
     ({"signal": "verbalized"}, "signal"), ({"controllers": "scope,nope"}, "controllers"), ({"delta": 1}, "delta")],
)
def test_pairwise_bad_settings_name_the_value(metadata: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        PairwiseSettings.from_metadata(metadata)


def test_pairwise_metric_names_and_stderr_order() -> None:
    names = [m.name for m in pairwise_metrics(PairwiseSettings.from_metadata({"alphas": [0.1, 0.25], "controllers": "scope,naive"}))]
    assert names[:3] == ["n_pairs", "excluded", "single_order"]
    assert {"auroc_bpe", "ece_bpe", "auprc_bpe", "accuracy_bpe", "auroc_predictive"} <= set(names)
    for c in ("scope", "naive"):
        for a in ("0.1", "0.25"):
            for base in ("risk", "coverage"):
                assert names.index(f"{base}_{c}_{a}_stderr") == names.index(f"{base}_{c}_{a}") + 1


def test_pairwise_aggregation_equals_the_core_report_and_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from judgecp.adapters.lm_eval import pairwise_metrics as module
    from judgecp.pairwise import PairwiseProtocol, evaluate_pairwise, pairwise_from_records

    records = pairwise_records()
    settings = PairwiseSettings.from_metadata({"n_splits": 100, "alphas": [0.1, 0.2]})
    core = evaluate_pairwise(pairwise_from_records(records), PairwiseProtocol(alphas=(0.1, 0.2), n_splits=100))
    calls = []
    real = module._compute
    monkeypatch.setattr(module, "_compute", lambda *a: calls.append(1) or real(*a))
    metrics._CACHE.clear()
    got = values(pairwise_aggregations(settings, "t"), records[::-1])  # any order: sorted by id first
    assert len(calls) == 1
    assert got["n_pairs"] == 120 and got["excluded"] == 0 and got["single_order"] == 0
    assert got["auroc_bpe"] == core["uncertainty"]["bpe"]["auroc"]
    assert got["ece_predictive"] == core["uncertainty"]["predictive"]["ece"]
    assert got["risk_scope_0.1"] == core["controllers"]["scope"]["0.1"]["risk"]
    assert got["coverage_clopper_pearson_0.2_stderr"] == core["controllers"]["clopper_pearson"]["0.2"]["coverage_std"]


def test_pairwise_bad_input_is_counted_never_fatal() -> None:
    records = {r["id"]: r for r in pairwise_records(40)}
    ids = sorted({r["pair_id"] for r in records.values()})

    def change(pair: int, order: str, **fields: object) -> None:
        key = f"{ids[pair]}/{order}"
        records[key] = {**records[key], **fields}

    flipped = "B" if records[f"{ids[0]}/fwd"]["label"] == "A" else "A"
    change(0, "rev", label=flipped)  # the orders disagree on the human label
    change(1, "rev", lp_A="nan", lp_B="nan")  # one order's logprobs missing: kept, one order
    del records[f"{ids[2]}/rev"]  # judged in one order only
    change(3, "fwd", label="model_c")  # a label outside A/B
    change(3, "rev", label="model_c")
    change(4, "fwd", exclude="malformed_json_line")  # an adapter-level exclusion (a document): one order left
    for k in range(3):  # the loader's tie votes: one placeholder document each
        records[f"tie{k}/fwd"] = pairwise_record(f"tie{k}/fwd", f"tie{k}", "fwd", -0.7, -0.7, "tie", exclude="tie_label")
    metrics._CACHE.clear()
    report = pairwise_report(list(records.values()), PairwiseSettings.from_metadata({"n_splits": 20}))
    reasons = {e["reason"]: e["count"] for e in report["excluded"]}
    assert reasons == {"label_conflict": 1, "label_unknown": 1, "malformed_json_line": 1, "tie_label": 3}
    assert {f["flag"]: f["count"] for f in report["flags"]} == {"single_order": 3}  # pairs 1, 2 and 4
    assert report["n"] == 38 and report["n_excluded"] == 6


def test_bpe_metric_is_the_mean_entropy_of_the_averaged_orders() -> None:
    """Hand-computed: a pair judged A with 0.9 in both orders has BPE H(0.9); a pair whose verdict
    follows the position (A with 0.8 in both prompts) averages to 0.5 and has BPE ln 2."""
    def pair(i: int, p_fwd_a: float, p_rev_a: float) -> list[dict]:
        return [pairwise_record(f"p{i}/fwd", f"p{i}", "fwd", math.log(p_fwd_a), math.log(1 - p_fwd_a), "A"),
                pairwise_record(f"p{i}/rev", f"p{i}", "rev", math.log(p_rev_a), math.log(1 - p_rev_a), "A")]

    def h(p: float) -> float:
        return -(p * math.log(p) + (1 - p) * math.log(1 - p))

    # P(original A) per order: (0.9, 0.9), (0.8, 0.2), (0.6, 0.7), (0.3, 0.5)
    records = pair(0, 0.9, 0.1) + pair(1, 0.8, 0.8) + pair(2, 0.6, 0.3) + pair(3, 0.3, 0.5)
    expected = (h(0.9) + math.log(2) + h(0.65) + h(0.4)) / 4
    metrics._CACHE.clear()
    got = values(pairwise_aggregations(PairwiseSettings.from_metadata({"n_splits": 5}), "t"), records)
    assert got["bpe"] == pytest.approx(expected, abs=1e-12)
    assert got["bpe"] == pytest.approx(0.58467, abs=1e-5)  # the number itself, computed by hand
    # every label is A: p-bar 0.9, 0.5 (ties go to A), 0.65 are right, 0.4 is wrong
    assert got["accuracy_bpe"] == 0.75 and got["n_pairs"] == 4


def test_pairwise_too_few_pairs_give_nan_metrics_and_counts() -> None:
    settings = PairwiseSettings.from_metadata({"n_splits": 10})
    records = pairwise_records(3)
    del records[0]
    metrics._CACHE.clear()
    got = values(pairwise_aggregations(settings, "t"), records)
    assert got["n_pairs"] == 3 and got["single_order"] == 1 and got["excluded"] == 0
    assert math.isnan(got["risk_scope_0.1"]) and math.isnan(got["auroc_bpe"])
    metrics._CACHE.clear()
    nothing = values(pairwise_aggregations(settings, "t"), [{**r, "lp_A": None} for r in records])
    assert nothing["n_pairs"] == 0 and nothing["excluded"] == 3 and math.isnan(nothing["coverage_scope_0.05"])


# -- multiple choice ----------------------------------------------------------------------------


def test_mcq_settings_refuse_ordinal_methods_and_name_bad_values() -> None:
    s = MCQSettings.from_metadata({})
    assert s.methods == ("lac", "aps", "aps(randomized=False)", "raps", "margin") and s.alpha == 0.1 and len(s.seeds) == 10
    assert MCQSettings.from_metadata({"methods": "lac,aps(randomized=False)", "seeds": [1, 2]}).seeds == (1, 2)
    with pytest.raises(InputError, match="ordered labels"):
        MCQSettings.from_metadata({"methods": "naive,lac"})
    with pytest.raises(InputError, match="alpha"):
        MCQSettings.from_metadata({"alpha": 0})


def test_mcq_aggregation_equals_the_core_report_per_method_and_category() -> None:
    from judgecp.mcq import MCQProtocol, evaluate_mcq, mcq_from_records

    raw = simulate_mcq_records(n=300, seed=3)
    records = [choice_record(r["id"], r["options"], r["correct"], r["logprobs"], r["prediction"],
                             dataset="sqa", category=["a b", "c"][i % 2]) for i, r in enumerate(raw)]
    settings = MCQSettings.from_metadata({"seeds": 4, "methods": "lac,aps(randomized=False)"})
    core = evaluate_mcq(mcq_from_records(records), MCQProtocol(0.1, ("lac", "aps(randomized=False)"), (0, 1, 2, 3)))
    metrics._CACHE.clear()
    got = values(mcq_aggregations(settings, "t", ["a b", "c"]), records)
    assert got["n"] == 300 and got["accuracy"] == core["accuracy"]
    assert got["coverage_lac"] == core["methods"]["lac"]["coverage"]
    assert got["set_size_aps_randomized_False_stderr"] == core["methods"]["aps(randomized=False)"]["set_size_std"]
    assert got["set_size_incorrect_lac"] == core["methods"]["lac"]["set_size_incorrect"]
    assert got["coverage_lac_a_b"] == core["by_category"]["a b"]["methods"]["lac"]["coverage"]
    assert got["accuracy_c"] == core["by_category"]["c"]["accuracy"]
    names = [m.name for m in mcq_metrics(settings, ["a b"])]
    assert names.index("coverage_lac_stderr") == names.index("coverage_lac") + 1


def test_mcq_bad_input_is_counted_never_fatal() -> None:
    raw = simulate_mcq_records(n=30, seed=1, option_counts=(4,))
    records = [choice_record(r["id"], r["options"], r["correct"], r["logprobs"], r["prediction"], dataset="d") for r in raw]
    records[0] = {**records[0], "exclude": "image_load_failed"}
    records[1] = {**records[1], "correct": ["F"]}  # the key names an option the item does not have
    records[2] = {**records[2], "logprobs": {**records[2]["logprobs"], "B": "nan"}}  # a missing logprob (replay: NaN)
    records[3] = {**records[3], "options": ["A"], "logprobs": {"A": -0.1}}  # one option
    records[4] = {**records[4], "correct": []}
    metrics._CACHE.clear()
    report = mcq_report(records, MCQSettings.from_metadata({"seeds": 2}))
    assert {e["reason"]: e["count"] for e in report["excluded"]} == {
        "image_load_failed": 1, "answer_not_an_option": 1, "logprob_invalid": 1, "options_missing": 1, "answer_missing": 1}
    assert report["n"] == 25 and report["n_excluded"] == 5
    metrics._CACHE.clear()
    few = mcq_report(records[:7], MCQSettings.from_metadata({"seeds": 2}))
    assert "error" in few and few["n"] == 2 and few["n_excluded"] == 5


# -- PARC ---------------------------------------------------------------------------------------


def test_parc_metrics_equal_the_core_report() -> None:
    from judgecp.mcq import mcq_from_records
    from judgecp.parc import PARCProtocol, evaluate_parc

    raw = simulate_parc_records(n_sources=60, seed=2)
    records = [choice_record(r["id"], r["options"], r["correct"], r["logprobs"], r["prediction"], dataset=r["dataset"],
                             source_id=r["source_id"], variation=r["variation"], model=r["model"]) for r in raw]
    settings = PARCSettings.from_metadata({"seeds": 3, "reference": "original"})
    core = evaluate_parc(mcq_from_records(records), PARCProtocol(0.1, (0, 1, 2), 0.5, "original"))
    variations = ["O", "LR-I", "LS-N", "VR-B", "VS-S"]
    metrics._CACHE.clear()
    report = parc_report(records, settings)
    got = {m.name: read_metric(report, m) for m in parc_metrics(variations, ["LR", "LS", "VR", "VS"])}
    assert got["reliability_LR-I"] == core["reliability"]["variation"]["LR-I"]["calibrated"]
    assert got["consistency_LS"] == core["consistency"]["family"]["LS"]["calibrated"]
    assert got["certainty_O"] == core["certainty"]["variation"]["O"]["calibrated"]
    assert got["accuracy"] == core["accuracy"]["model"]["model"]["calibrated"]
    assert "consistency_O" not in got and got["n"] == len(records)
    with pytest.raises(InputError, match="reference"):
        PARCSettings.from_metadata({"reference": "both"})


def test_parc_variation_names_outside_parc_use_their_family() -> None:
    from judgecp.adapters.lm_eval.mcq_task import core_variation

    assert core_variation("LR-I", None) == "LR-I" and core_variation("O", "LR") == "O"
    assert core_variation("blurry", "VR") == "VR-blurry" and core_variation("blurry", "vr") == "VR-blurry"
    assert core_variation("blurry", None) == "blurry"  # the core counts it as variation_unknown


# -- records and their export ----------------------------------------------------------------------


def test_record_kinds() -> None:
    assert record_kind(pairwise_record("p/fwd", "p", "fwd", -0.1, -2.0, "A")) == "pairwise"
    assert record_kind(choice_record("q", ["A", "B"], ["A"], {"A": -0.1, "B": -2.0}, "A")) == "mcq"
    assert record_kind(choice_record("q", ["A", "B"], ["A"], {"A": -0.1, "B": -2.0}, "A", variation="O")) == "parc"
    assert record_kind({"id": "1", "label": "3", "logprobs": {}}) == "likert"
    assert record_kind({"acc": 1}) is None


@pytest.mark.parametrize("kind", ["pairwise", "mcq"])
def test_export_writes_records_judgecp_evaluate_reads(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from judgecp.cli import main as judgecp_cli

    if kind == "pairwise":
        records = pairwise_records(30)
    else:
        records = [choice_record(r["id"], r["options"], r["correct"], r["logprobs"], r["prediction"], dataset="d")
                   for r in simulate_mcq_records(n=40, seed=0)]
    records[0] = {**records[0], "exclude": "image_load_failed"}
    samples = tmp_path / "samples_t_2026.jsonl"
    samples.write_text("".join(json.dumps({"doc_id": i, "metrics": ["n"], "n": r}) + "\n" for i, r in enumerate(records)))
    assert main([str(samples), "-o", str(tmp_path / "records.jsonl")]) == 0
    err = capsys.readouterr().err
    assert f"judgecp evaluate {tmp_path / 'records.jsonl'} --kind {kind}" in err and "image_load_failed 1" in err
    args = ["evaluate", str(tmp_path / "records.jsonl"), "--kind", kind, "--quiet", "--json", str(tmp_path / "r.json")]
    assert judgecp_cli([*args, "--splits", "10"] if kind == "pairwise" else [*args, "--seeds", "2"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["kind"] == kind and report["n"] >= 29


def test_mixed_record_kinds_are_refused(tmp_path: Path) -> None:
    samples = tmp_path / "samples_t_2026.jsonl"
    rows = [pairwise_record("p/fwd", "p", "fwd", -0.1, -2.0, "A"), choice_record("q", ["A", "B"], ["A"], {"A": 0.0, "B": -1.0}, "A")]
    samples.write_text("".join(json.dumps({"metrics": ["n"], "n": r}) + "\n" for r in rows))
    with pytest.raises(SystemExit, match="mix record kinds"):
        main([str(samples), "-o", str(tmp_path / "out.jsonl")])


def test_records_are_json_safe() -> None:
    r = choice_record("q", ["A", "B"], ["A"], {"A": float("-inf"), "B": float(np.float32(-0.5))}, "B")
    assert json.loads(json.dumps(r))["logprobs"] == {"A": "-inf", "B": -0.5}
    p = pairwise_record("p/rev", "p", "rev", float("nan"), -0.1, "B")
    assert json.loads(json.dumps(p))["lp_A"] == "nan"


def test_answer_keys_given_as_indices_become_letters() -> None:
    from judgecp.adapters.lm_eval.mcq_task import letter_of_index

    assert letter_of_index(0) == ["A"] and letter_of_index("3") == ["D"] and letter_of_index(" 1 ") == ["B"]
    # not an index, or past the letters: kept as given, so the core counts it as naming no option
    assert letter_of_index("C") == ["C"] and letter_of_index(40) == ["40"] and letter_of_index(-1) == ["-1"]
    assert letter_of_index(None) == [] and letter_of_index("") == []
