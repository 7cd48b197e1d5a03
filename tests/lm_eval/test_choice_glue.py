"""Pairwise, multiple-choice and PARC records, settings and task-level aggregation (no model, no lm-eval run)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from judgecp import Protocol, evaluate, from_records
from judgecp.adapters.lm_eval import metrics
from judgecp.adapters.lm_eval.metrics import task_protocol, task_report
from judgecp.base.errors import InputError
from judgecp.base.records import choice_record, pair_record
from judgecp.kinds.choice.parc_study import parc_metrics
from judgecp.kinds.choice.study import mcq_metrics
from judgecp.kinds.metrics import excluded_count, read_metric
from judgecp.kinds.pairwise.study import pairwise_metrics
from judgecp.synthetic.judges import (
    simulate_mcq_records,
    simulate_pairwise_judge,
    simulate_parc_records,
)
from tests.lm_eval.helpers import aggregate_as_lm_eval


def pairwise_records(n: int = 120, seed: int = 0) -> list[dict]:
    """Both orders of simulated pairs as the pairwise task writes them (A/B logprobs in each prompt's order)."""
    data = simulate_pairwise_judge(n=n, seed=seed)
    out = []
    for i, pair in enumerate(data.pair_ids):
        label = "A" if data.labels[i] == 1 else "B"
        pf, pr = float(data.p_fwd[i]), float(data.p_rev[i])
        out.append(pair_record(f"{pair}/fwd", pair_id=pair, order="fwd", label=label,
                               logprobs={"A": math.log(pf), "B": math.log1p(-pf)}))
        # reversed prompt: "B" is the original A
        out.append(pair_record(f"{pair}/rev", pair_id=pair, order="rev", label=label,
                               logprobs={"A": math.log1p(-pr), "B": math.log(pr)}))
    return out


def mcq_records(raw: list[dict], **fields: object) -> list[dict]:
    return [{**r, **fields} for r in raw]


def values(kind: str, metric_list: list, settings: dict, records: list[dict]) -> dict[str, float]:
    """Every metric as lm-eval aggregates it (the record under the first metric, one report read by all)."""
    protocol = task_protocol(settings, kind)
    return aggregate_as_lm_eval(metric_list, lambda r: task_report(r, kind, protocol), records)[0]


def report(kind: str, records: list[dict], settings: dict) -> dict:
    return task_report(records, kind, task_protocol(settings, kind))


# -- pairwise ---------------------------------------------------------------------------------


def test_pairwise_settings_defaults_and_metadata() -> None:
    s = task_protocol({"version": 1.0}, "pairwise")
    assert s.levels("pairwise") == (0.05, 0.1, 0.15, 0.2, 0.25) and s.n_splits("pairwise") == 1000 and s.signal == "bpe"
    assert s.controller_names() == ("scope", "clopper_pearson", "naive", "heuristic", "vanilla") and s.delta == 0.1
    s = task_protocol(
        {"alphas": "0.1,0.2", "n_splits": 50, "controllers": ["scope"], "signal": "predictive", "delta": 0.05},
        "pairwise",
    )
    assert (s.levels("pairwise"), s.n_splits("pairwise"), s.controller_names(), s.signal, s.delta) == (
        (0.1, 0.2), 50, ("scope",), "predictive", 0.05)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [({"alphas": "0.1,x"}, "metadata alphas"), ({"alphas": [1.5]}, "alphas"), ({"n_splits": 0}, "metadata splits"),
     ({"signal": "verbalise"}, "metadata signal"), ({"controllers": "scope,nope"}, "metadata controllers"),
     ({"delta": 1}, "metadata delta")],
)
def test_pairwise_bad_settings_name_the_value(metadata: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        task_protocol(metadata, "pairwise")


def test_pairwise_metric_names_and_stderr_order() -> None:
    names = [
        m.name
        for m in pairwise_metrics(task_protocol({"alphas": [0.1, 0.25], "controllers": "scope,naive"}, "pairwise"))
    ]
    assert names[:3] == ["n_pairs", "excluded", "single_order"]
    assert {"auroc_bpe", "ece_bpe", "auprc_bpe", "accuracy_bpe", "auroc_predictive"} <= set(names)
    for c in ("scope", "naive"):
        for a in ("0.1", "0.25"):
            for base in ("risk", "coverage"):
                assert names.index(f"{base}_{c}_{a}_stderr") == names.index(f"{base}_{c}_{a}") + 1


def test_pairwise_aggregation_equals_the_core_report_and_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    records = pairwise_records()
    settings = {"n_splits": 100, "alphas": [0.1, 0.2]}
    core = evaluate(from_records(records), Protocol(alphas=(0.1, 0.2), splits=100))
    calls = []
    real = metrics._compute
    monkeypatch.setattr(metrics, "_compute", lambda *a: calls.append(1) or real(*a))
    got = values("pairwise", pairwise_metrics(task_protocol(settings, "pairwise")), settings, records[::-1])
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
    change(1, "rev", logprobs={"A": "nan", "B": "nan"})  # one order's logprobs missing: kept, one order
    del records[f"{ids[2]}/rev"]  # judged in one order only
    change(3, "fwd", label="model_c")  # a label outside A/B
    change(3, "rev", label="model_c")
    change(4, "fwd", exclude="malformed_json_line")  # an adapter-level exclusion (a document): one order left
    for k in range(3):  # the loader's tie votes: one placeholder document each
        records[f"tie{k}/fwd"] = pair_record(f"tie{k}/fwd", pair_id=f"tie{k}", order="fwd", label="tie",
                                             logprobs={"A": -0.7, "B": -0.7}, exclude="tie_label")
    got = report("pairwise", list(records.values()), {"n_splits": 20})
    reasons = {e["reason"]: e["count"] for e in got["excluded"]}
    assert reasons == {"label_conflict": 1, "label_unknown": 1, "malformed_json_line": 1, "tie_label": 3}
    assert {f["flag"]: f["count"] for f in got["flags"]} == {"single_order": 3}  # pairs 1, 2 and 4
    assert got["n"] == 38 and excluded_count(got) == 6


def test_bpe_metric_is_the_mean_entropy_of_the_averaged_orders() -> None:
    """Hand-computed: a pair judged A with 0.9 in both orders has BPE H(0.9); a pair whose verdict
    follows the position (A with 0.8 in both prompts) averages to 0.5 and has BPE ln 2."""
    def pair(i: int, p_fwd_a: float, p_rev_a: float) -> list[dict]:
        return [pair_record(f"p{i}/{o}", pair_id=f"p{i}", order=o, label="A",
                            logprobs={"A": math.log(p), "B": math.log(1 - p)})
                for o, p in (("fwd", p_fwd_a), ("rev", p_rev_a))]

    def h(p: float) -> float:
        return -(p * math.log(p) + (1 - p) * math.log(1 - p))

    # P(original A) per order: (0.9, 0.9), (0.8, 0.2), (0.6, 0.7), (0.3, 0.5)
    records = pair(0, 0.9, 0.1) + pair(1, 0.8, 0.8) + pair(2, 0.6, 0.3) + pair(3, 0.3, 0.5)
    expected = (h(0.9) + math.log(2) + h(0.65) + h(0.4)) / 4
    got = values("pairwise", pairwise_metrics(task_protocol({"n_splits": 5}, "pairwise")), {"n_splits": 5}, records)
    assert got["bpe"] == pytest.approx(expected, abs=1e-12)
    assert got["bpe"] == pytest.approx(0.58467, abs=1e-5)  # the number itself, computed by hand
    # every label is A: p-bar 0.9, 0.5 (ties go to A), 0.65 are right, 0.4 is wrong
    assert got["accuracy_bpe"] == 0.75 and got["n_pairs"] == 4


def test_pairwise_too_few_pairs_give_nan_metrics_and_counts() -> None:
    settings = {"n_splits": 10}
    metric_list = pairwise_metrics(task_protocol(settings, "pairwise"))
    records = pairwise_records(3)
    del records[0]
    got = values("pairwise", metric_list, settings, records)
    assert got["n_pairs"] == 3 and got["single_order"] == 1 and got["excluded"] == 0
    assert math.isnan(got["risk_scope_0.1"]) and math.isnan(got["auroc_bpe"])
    nothing = values("pairwise", metric_list, settings, [{**r, "logprobs": {"A": None, "B": -1.0}} for r in records])
    assert nothing["n_pairs"] == 0 and nothing["excluded"] == 3 and math.isnan(nothing["coverage_scope_0.05"])


# -- multiple choice ----------------------------------------------------------------------------


def test_mcq_settings_refuse_ordinal_methods_and_name_bad_values() -> None:
    s = task_protocol({}, "mcq")
    assert s.method_specs("mcq") == ("lac", "aps", "aps(randomized=False)", "raps", "margin") and s.level == 0.1
    assert len(s.split_seeds("mcq")) == 10
    assert task_protocol({"methods": "lac,aps(randomized=False)", "seeds": [1, 2]}, "mcq").split_seeds("mcq") == (1, 2)
    with pytest.raises(InputError, match="ordered labels"):
        task_protocol({"methods": "naive,lac"}, "mcq")
    with pytest.raises(InputError, match="metadata alpha"):
        task_protocol({"alpha": 0}, "mcq")


def test_mcq_aggregation_equals_the_core_report_per_method_and_category() -> None:
    raw = simulate_mcq_records(n=300, seed=3)
    records = [{**r, "task": "sqa", "group": ["a b", "c"][i % 2]} for i, r in enumerate(raw)]
    settings = {"seeds": 4, "methods": "lac,aps(randomized=False)"}
    core = evaluate(from_records(records), Protocol(methods=("lac", "aps(randomized=False)"), seeds=(0, 1, 2, 3)))
    got = values("mcq", mcq_metrics(task_protocol(settings, "mcq"), ["a b", "c"]), settings, records)
    assert got["n"] == 300 and got["accuracy"] == core["accuracy"]
    assert got["coverage_lac"] == core["methods"]["lac"]["coverage"]
    assert got["set_size_aps_randomized_False_stderr"] == core["methods"]["aps(randomized=False)"]["set_size_std"]
    assert got["set_size_incorrect_lac"] == core["methods"]["lac"]["set_size_incorrect"]
    assert got["coverage_lac_a_b"] == core["by_category"]["a b"]["methods"]["lac"]["coverage"]
    assert got["accuracy_c"] == core["by_category"]["c"]["accuracy"]
    names = [m.name for m in mcq_metrics(task_protocol(settings, "mcq"), ["a b"])]
    assert names.index("coverage_lac_stderr") == names.index("coverage_lac") + 1


def test_mcq_bad_input_is_counted_never_fatal() -> None:
    records = mcq_records(simulate_mcq_records(n=30, seed=1, option_counts=(4,)), task="d")
    records[0] = {**records[0], "exclude": "image_load_failed"}
    records[1] = {**records[1], "label": ["F"]}  # the key names an option the item does not have
    records[2] = {**records[2], "logprobs": {**records[2]["logprobs"], "B": "nan"}}  # a missing logprob (replay: NaN)
    records[3] = {**records[3], "options": ["A"], "logprobs": {"A": -0.1}}  # one option
    records[4] = {**records[4], "label": []}
    got = report("mcq", records, {"seeds": 2})
    assert {e["reason"]: e["count"] for e in got["excluded"]} == {
        "image_load_failed": 1,
        "answer_not_an_option": 1,
        "logprob_invalid": 1,
        "options_missing": 1,
        "answer_missing": 1,
    }
    assert got["n"] == 25 and excluded_count(got) == 5
    few = report("mcq", records[:7], {"seeds": 2})
    assert "error" in few and few["n"] == 2 and excluded_count(few) == 5


# -- PARC ---------------------------------------------------------------------------------------


def test_parc_metrics_equal_the_core_report() -> None:
    records = simulate_parc_records(n_sources=60, seed=2)
    settings = {"seeds": 3, "reference": "original"}
    core = evaluate(from_records(records), Protocol(seeds=(0, 1, 2), reference="original"))
    variations = ["O", "LR-I", "LS-N", "VR-B", "VS-S"]
    got_report = report("parc", records, settings)
    got = {m.name: read_metric(got_report, m) for m in parc_metrics(variations, ["LR", "LS", "VR", "VS"])}
    assert got["reliability_LR-I"] == core["reliability"]["variation"]["LR-I"]["calibrated"]
    assert got["consistency_LS"] == core["consistency"]["family"]["LS"]["calibrated"]
    assert got["certainty_O"] == core["certainty"]["variation"]["O"]["calibrated"]
    assert got["accuracy"] == core["accuracy"]["model"]["model"]["calibrated"]
    assert "consistency_O" not in got and got["n"] == len(records)
    with pytest.raises(InputError, match="metadata reference"):
        task_protocol({"reference": "both"}, "parc")


def test_parc_variation_names_outside_parc_use_their_family() -> None:
    from judgecp.base.exclusions import Exclusions
    from judgecp.data.choice import variation_name

    flags = Exclusions()
    assert variation_name("LR-I", None, flags, "a") == "LR-I" and variation_name("O", "LR", flags, "b") == "O"
    assert (
        variation_name("blurry", "VR", flags, "c") == "VR-blurry"
        and variation_name("blurry", "vr", flags, "d") == "VR-blurry"
    )
    assert variation_name("blurry", None, flags, "e") == "blurry"  # PARC counts it as variation_unknown
    assert dict(flags.counts) == {"variation_renamed": 2}


# -- records through the samples file ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["pairwise", "mcq"])
def test_samples_files_are_read_as_they_are(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from judgecp.cli import main as judgecp_cli

    records = pairwise_records(30) if kind == "pairwise" else mcq_records(simulate_mcq_records(n=40, seed=0), task="d")
    records[0] = {**records[0], "exclude": "image_load_failed"}
    samples = tmp_path / "samples_t_2026.jsonl"
    samples.write_text(
        "".join(json.dumps({"doc_id": i, "metrics": ["n"], "n": r}) + "\n" for i, r in enumerate(records))
    )
    args = ["evaluate", str(samples), "--format", "lm-eval", "--quiet", "--json", str(tmp_path / "r.json")]
    assert judgecp_cli([*args, "--splits", "10"] if kind == "pairwise" else [*args, "--seeds", "2"]) == 0
    got = json.loads((tmp_path / "r.json").read_text())
    assert got["kind"] == kind and got["n"] >= 29
    assert {"reason": "image_load_failed", "count": 1, "examples": [records[0]["id"]]} in got["excluded"]
    assert judgecp_cli(["records", str(samples), "--format", "auto", "-o", str(tmp_path / "out.jsonl")]) == 0
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == len(records)


def test_mixed_record_shapes_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from judgecp.cli import main as judgecp_cli

    samples = tmp_path / "samples_t_2026.jsonl"
    rows = [pair_record("p/fwd", pair_id="p", order="fwd", label="A", logprobs={"A": -0.1, "B": -2.0}),
            choice_record("q", options=["A", "B"], label=["A"], logprobs={"A": 0.0, "B": -1.0}, prediction="A")]
    samples.write_text("".join(json.dumps({"metrics": ["n"], "n": r}) + "\n" for r in rows))
    assert judgecp_cli(["evaluate", str(samples), "--format", "lm-eval"]) == 2
    assert "mix shapes" in capsys.readouterr().err


def test_records_are_json_safe() -> None:
    r = choice_record("q", options=["A", "B"], label=["A"], logprobs={"A": float("-inf"), "B": float(np.float32(-0.5))},
                      prediction="B")
    assert json.loads(json.dumps(r))["logprobs"] == {"A": "-inf", "B": -0.5}
    p = pair_record("p/rev", pair_id="p", order="rev", label="B", logprobs={"A": float("nan"), "B": -0.1})
    assert json.loads(json.dumps(p, allow_nan=False))["logprobs"]["A"] == "nan"


def test_answer_keys_given_as_indices_become_letters() -> None:
    from judgecp.adapters.lm_eval.choice_task import letter_of_index

    assert letter_of_index(0) == ["A"] and letter_of_index("3") == ["D"] and letter_of_index(" 1 ") == ["B"]
    # not an index, or past the letters: kept as given, so the core counts it as naming no option
    assert letter_of_index("C") == ["C"] and letter_of_index(40) == ["40"] and letter_of_index(-1) == ["-1"]
    assert letter_of_index(None) == [] and letter_of_index("") == []
