"""judgecp.kinds.metrics: every kind's report read as the flat metrics a harness shows (no harness needed)."""

from __future__ import annotations

import math

import pytest

from judgecp import Protocol, evaluate, from_records
from judgecp.kinds.choice.parc_study import parc_metrics
from judgecp.kinds.choice.study import mcq_metrics
from judgecp.kinds.ensemble.study import ensemble_metrics
from judgecp.kinds.likert.metrics import likert_metrics
from judgecp.kinds.metrics import metric_suffix, metric_values, read_metric
from judgecp.kinds.pairwise.study import pairwise_metrics
from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_parc_records,
)
from judgecp.workflows.results import calibrated_metrics


def test_likert_metrics_read_the_core_report() -> None:
    data = simulate_likert_judge(n=300, seed=1)
    protocol = Protocol(methods=("naive", "lac", "lac(probabilities=recalibrated)"), seeds=(0, 1, 2))
    report = evaluate(data, protocol)
    got = metric_values(report, likert_metrics(protocol))
    naive = report["methods"]["naive"]
    assert (
        got["coverage_naive"] == naive["labels"]["coverage"]
        and got["coverage_naive_stderr"] == naive["labels"]["coverage_std"]
    )
    assert got["interval_width_naive"] == naive["interval"]["width"]  # an interval method
    assert "interval_width_lac" not in got and got["width_lac"] == report["methods"]["lac"]["labels"]["width"]
    assert "coverage_lac_probabilities_recalibrated" in got  # a spec made name-safe
    assert got["pearson"] == report["point"]["pearson"] and got["n"] == report["n"] and got["excluded"] == 0
    names = [m.name for m in likert_metrics(protocol)]
    assert names.index("coverage_naive_stderr") == names.index("coverage_naive") + 1  # lm-eval's stderr column
    assert {m.name: m.higher_is_better for m in likert_metrics(protocol)}["mae"] is False


def test_an_undefined_report_keeps_its_counts_and_nothing_else() -> None:
    protocol = Protocol(methods=("naive",))
    broken = {"error": "too few usable records", "n": 3, "excluded": [{"reason": "label_missing", "count": 2}],
              "methods": {}}
    got = metric_values(broken, likert_metrics(protocol))
    assert got["n"] == 3 and got["excluded"] == 2
    assert math.isnan(got["coverage_naive"]) and math.isnan(got["pearson"])
    assert read_metric({"n": None, "excluded": []}, likert_metrics(protocol)[0]) == 0.0  # a count that is None is 0


def test_a_missing_key_is_an_error_naming_it_and_null_is_undefined() -> None:
    from judgecp.kinds.metrics import MetricError, metric_value

    protocol = Protocol(methods=("naive",), seeds=(0, 1))
    report = evaluate(simulate_likert_judge(n=200, seed=3), protocol).to_json()
    coverage = next(m for m in likert_metrics(protocol) if m.name == "coverage_naive")
    renamed = {**report, "methods": {"naive": {**report["methods"]["naive"], "labels": {"cover": 0.9}}}}
    with pytest.raises(MetricError, match=r"coverage_naive.*methods\.naive\.labels\.coverage"):
        metric_value(renamed, coverage)
    nulled = {**report, "methods": {"naive": {**report["methods"]["naive"],
                                              "labels": {**report["methods"]["naive"]["labels"], "coverage": None}}}}
    assert metric_value(nulled, coverage) is None and math.isnan(read_metric(nulled, coverage))


def test_multiple_choice_and_parc_metrics_read_the_core_report() -> None:
    records = simulate_mcq_records(n=240, seed=0)
    protocol = Protocol(methods=("lac", "aps"), seeds=(0, 1))
    report = evaluate(from_records(records), protocol)
    categories = sorted(report["by_category"])
    got = metric_values(report, mcq_metrics(protocol, categories))
    assert got["set_size_aps"] == report["methods"]["aps"]["set_size"] and got["accuracy"] == report["accuracy"]
    c = categories[0]
    assert got[f"coverage_lac_{metric_suffix(c)}"] == report["by_category"][c]["methods"]["lac"]["coverage"]
    assert not any(
        name.startswith("coverage_aps_") and not name.endswith("stderr") for name in got
    )  # first method only

    parc = evaluate(from_records(simulate_parc_records(n_sources=40, seed=2)), Protocol(seeds=(0, 1)))
    values = metric_values(parc, parc_metrics(["O", "LR-I"], ["LR"]))
    assert values["reliability"] == next(iter(parc["reliability"]["model"].values()))["calibrated"]
    assert values["certainty_LR-I"] == parc["certainty"]["variation"]["LR-I"]["calibrated"]
    assert "consistency_O" not in values
    two_models = {
        **parc,
        "reliability": {**parc["reliability"], "model": {"a": {"calibrated": 1.0}, "b": {"calibrated": 0.0}}},
    }
    assert math.isnan(metric_values(two_models, parc_metrics([], []))["reliability"])  # one model per harness run


def test_pairwise_ensemble_and_calibrated_names() -> None:
    pair = [m.name for m in pairwise_metrics(Protocol(alphas=(0.1, 0.2)))]
    assert pair[:4] == ["n_pairs", "excluded", "single_order", "bpe"]
    assert "risk_scope_0.1" in pair and "coverage_scope_0.2_stderr" in pair and "auroc_predictive" in pair
    assert "fdp_mixture" in [m.name for m in ensemble_metrics(True)]
    assert not any(m.name.endswith("mixture") for m in ensemble_metrics(False))
    assert "risk_labeled" in [m.name for m in calibrated_metrics("pairwise")]
    likert = {m.name for m in calibrated_metrics("likert")}
    assert {"set_size", "coverage_labeled", "estimate.ppi.se", "estimate.judge_only.mean", "drift.alarm"} <= likert
    assert {m.name for m in calibrated_metrics("parc")} == likert  # PARC runs are applied as multiple choice


@pytest.mark.parametrize(("spec", "name"), [("lac(probabilities=recalibrated)", "lac_probabilities_recalibrated"),
                                            ("naive", "naive"), ("chr(cv=5)", "chr_cv_5")])
def test_metric_suffix(spec: str, name: str) -> None:
    assert metric_suffix(spec) == name


def test_parc_variations_in_the_papers_order_with_their_families() -> None:
    from judgecp.stats.parc import VARIATIONS, variation_order

    variations, families = variation_order({"VS-S", "blurry", "O", "LR-I", "VR-blurry", "LR-C"})
    assert variations == ["O", "LR-I", "LR-C", "VS-S", "VR-blurry", "blurry"]  # Table 1 first, then sorted
    assert families == ["LR", "VR", "VS"]  # no "O"; "blurry" has no known family
    assert variation_order(VARIATIONS) == (list(VARIATIONS), ["LR", "LS", "VR", "VS"])


def test_likeliest_label_skips_nan_and_none() -> None:
    from judgecp.base.records import likeliest

    assert likeliest({"1": -2.0, "2": float("nan"), "3": -0.5, "4": None}) == "3"
    assert likeliest({"A": -1.0, "B": -1.0}) == "A"  # a tie: the first in order, as lm-eval lists the choices
    assert likeliest({"A": float("nan")}) is None and likeliest({}) is None
    assert likeliest({"A": float("-inf"), "B": float("nan")}) == "A"


def test_misspelled_settings_are_hinted_other_keys_are_not() -> None:
    from judgecp.kinds.protocol import misspelled_settings

    keys = ["alpah", "methods", "data_dir", "calibrator", "version", "metods"]
    assert misspelled_settings(keys, also=("calibrator",)) == [("alpah", "; did you mean 'alpha'?"),
                                                              ("metods", "; did you mean 'methods'?")]


def test_image_fingerprint_is_the_content() -> None:
    image_mod = pytest.importorskip("PIL.Image")
    from judgecp.data.images import fingerprint

    red, also_red = image_mod.new("RGB", (4, 4), (255, 0, 0)), image_mod.new("RGB", (4, 4), (255, 0, 0))
    assert fingerprint([red]) == fingerprint([also_red]) != fingerprint([image_mod.new("RGB", (4, 4), (0, 0, 255))])
    assert fingerprint([red, red]) != fingerprint([red]) and fingerprint(
        [image_mod.new("L", (4, 4), 0)]
    ) != fingerprint([image_mod.new("RGB", (4, 4), 0)])
