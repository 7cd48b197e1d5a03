"""Continuous labels end to end: ``--label-scale LO:HI``, interval methods only, the report says what it binned.

Labels on another scale than the judge's (Polaris: averaged annotators on
[0, 1], judge 1..5) are mapped onto it by LO -> MIN, HI -> MAX and kept when
they are not integers. Only interval methods apply (a label set holds
integers); their coverage is tested here through the whole study
(:func:`judgecp.evaluate`) against the split-conformal band on many seeded
splits, and through ``calibrate``/``apply``. The method-level band on
continuous labels is ``tests/test_coverage.py::test_exact_coverage_given_fit``.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgecp import Protocol, evaluate, from_records
from judgecp.base.errors import InputError
from judgecp.base.scale import LabelScale, LikertScale
from judgecp.cli import main
from judgecp.data.tables import table_from_rows
from judgecp.kinds.protocol import parse_settings
from judgecp.kinds.reading import from_table, to_records
from tests.helpers import cheap_spec, judge_draw

SCALE = LikertScale()
UNIT = LabelScale(0.0, 1.0)
INTERVAL = ("naive", "cqr", "cqr_asym", "chr", "lvd", "boosted_cqr", "boosted_lcp", "r2ccp")
#: Interval methods whose reported interval is exactly {y : score <= threshold}: two-sided band (test_coverage.py).
TWO_SIDED = {"naive", "cqr", "cqr_asym", "lvd", "boosted_cqr", "boosted_lcp"}
Z = 4.0  # standard errors of the mean over splits (test_coverage.py's tolerance)


def unit_records(n: int, seed: int, *, lo: float = 0.0, hi: float = 1.0) -> list[dict[str, Any]]:
    """A synthetic judge's score records whose labels are continuous on ``[lo, hi]`` (e.g. averaged annotators)."""
    X, y = judge_draw(n, np.random.default_rng(seed), continuous=True)
    c = lo + (y - SCALE.minimum) / SCALE.span * (hi - lo)
    return [{"id": str(i), "label": float(c[i]), "logprobs": dict(zip(SCALE.tokens, X[i].tolist(), strict=True))}
            for i in range(n)]


def unit_data(n: int, seed: int) -> Any:
    return from_records(unit_records(n, seed), "likert", label_scale=UNIT)


def write_csv(path: Path, records: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "c", *(f"lp{t}" for t in SCALE.tokens)])
        for r in records:
            w.writerow([r["id"], r["label"], *(r["logprobs"][t] for t in SCALE.tokens)])
        for rid, label in (extra or {}).items():
            w.writerow([rid, label, *(-0.1 * (k + 1) for k in range(SCALE.k))])
    return path


# -- the map -------------------------------------------------------------------------------------


def test_label_scale_parse_and_map() -> None:
    assert LabelScale.parse("0:1") == UNIT and LabelScale.parse([0, 100]) == LabelScale(0, 100)
    assert UNIT.to_judge([0.0, 0.25, 0.7, 1.0], SCALE).tolist() == [1.0, 2.0, 3.8, 5.0]
    assert UNIT.width_in_label_units(0.68, SCALE) == pytest.approx(0.17)
    assert "y' = 1 + 4 (y - 0) / 1" in UNIT.describe(SCALE)
    for text, message in (("1:0", "LO < HI"), ("x:1", "cannot read"), ("0", "cannot read"), ("0:inf", "finite"),
                          ("0:1:2", "cannot read")):
        with pytest.raises(InputError, match=message) as err:
            LabelScale.parse(text)
        assert "\n" not in str(err.value) and str(err.value).startswith("--label-scale")


@settings(max_examples=200, deadline=None)
@given(lo=st.floats(-1e6, 1e6), width=st.floats(1e-3, 1e6), u=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20),
       top=st.integers(2, 11))
def test_map_stays_on_the_scale_and_inverts(lo: float, width: float, u: list[float], top: int) -> None:
    own, scale = LabelScale(lo, lo + width), LikertScale(1, top)
    y = np.clip(lo + np.asarray(u) * width, own.low, own.high)
    mapped = own.to_judge(y, scale)
    assert np.all(mapped >= scale.minimum - 1e-9) and np.all(mapped <= scale.maximum + 1e-9)
    assert own.to_judge([own.low, own.high], scale).tolist() == [scale.minimum, scale.maximum]
    assert np.allclose(own.from_judge(mapped, scale), y, rtol=0, atol=1e-9 * max(1.0, abs(lo) + width))


# -- reading -------------------------------------------------------------------------------------


def test_reader_maps_keeps_non_integers_and_counts_the_rest() -> None:
    lp = {t: -0.1 * int(t) for t in SCALE.tokens}
    rows = [
        {"id": str(i), "label": v, "logprobs": lp} for i, v in enumerate([0.0, 0.3, 1.0, 0.625, 1.2, -0.1, "x", None])
    ]
    table = table_from_rows(rows, source="t")
    d = from_table(table, "likert", label_scale=UNIT)
    assert d.labels.tolist() == [1.0, 2.2, 5.0, 3.5] and d.continuous_labels and d.label_scale == UNIT
    assert dict(d.excluded.counts) == {"label_off_scale": 2, "label_not_numeric": 1, "label_missing": 1}
    # without a label scale the same file keeps its integer labels only, as before
    d = from_table(table_from_rows(rows, source="t"), "likert")
    assert d.labels.tolist() == [1.0] and not d.continuous_labels and d.label_scale is None
    assert dict(d.excluded.counts)["label_off_scale"] == 5


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 8)), min_size=1, max_size=30))
def test_reader_keeps_exactly_the_labels_on_the_label_scale(labels: list[float]) -> None:
    lp = {t: -0.2 * int(t) for t in SCALE.tokens}
    rows = [{"id": str(i), "label": v, "logprobs": lp} for i, v in enumerate(labels)]
    own = LabelScale(-1.0, 3.0)
    wanted = [v for v in labels if math.isfinite(v) and own.low <= v <= own.high]
    try:
        d = from_table(table_from_rows(rows, source="t"), "likert", label_scale=own)
    except InputError as exc:  # every row left out: one line, the reasons counted
        assert not wanted and "no usable records" in str(exc)
        return
    assert d.n == len(wanted) and d.excluded.total == len(labels) - len(wanted)
    assert np.allclose(d.labels, own.to_judge(wanted, SCALE)) and np.all((d.labels >= 1) & (d.labels <= 5))


def test_integer_labels_after_the_map_keep_the_label_sets() -> None:
    """0..4 integers on 0:4 map to the integers 1..5: label sets apply, nothing is skipped."""
    rows = [{**r, "label": round(r["label"] * 4)} for r in unit_records(120, 3)]
    d = from_records(rows, "likert", label_scale=LabelScale(0, 4))
    assert not d.continuous_labels and set(d.labels.tolist()) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    report = evaluate(d, Protocol(methods=("naive", "lac"), splits=2, label_scale=LabelScale(0, 4)))
    assert "skipped" not in report and report["methods"]["lac"]["labels"] is not None
    assert report["label_scale"]["continuous"] is False and report["label_scale"]["binned"] == []


def test_records_carry_their_label_scale_and_read_back_the_same() -> None:
    d = unit_data(50, 1)
    records = to_records(d)
    assert records[0]["label_scale"] == [0.0, 1.0] and 0.0 <= records[0]["label"] <= 1.0
    back = from_records(json.loads(json.dumps(records)), "likert")
    assert back.label_scale == UNIT and np.allclose(back.labels, d.labels, rtol=0, atol=1e-12)
    mixed = [*records[:10], {**records[10], "label_scale": [0, 2]}]
    with pytest.raises(InputError, match="label_scale differs"):
        from_records(mixed, "likert")
    with pytest.raises(InputError, match="label_scale differs"):
        from_records([*records[:10], {k: v for k, v in records[10].items() if k != "label_scale"}], "likert")


def test_label_scale_setting_is_likert_only_and_must_be_applied() -> None:
    assert parse_settings({"label_scale": "0:1"}, kind="likert").label_scale == UNIT
    with pytest.raises(InputError, match="metadata label_scale does not apply to kind 'pairwise'"):
        parse_settings({"label_scale": "0:1"}, kind="pairwise", spell=lambda n: f"metadata {n}")
    with pytest.raises(InputError, match="metadata label_scale: cannot read"):
        parse_settings({"label_scale": "zero:one"}, kind="likert", spell=lambda n: f"metadata {n}")
    integer = from_records([{**r, "label": 1 + int(r["label"] > 0.5)} for r in unit_records(40, 2)], "likert")
    with pytest.raises(InputError, match="label_scale 0:1 was not applied"):
        evaluate(integer, Protocol(methods=("naive",), splits=1, label_scale=UNIT))


# -- the study --------------------------------------------------------------------------------------


def test_continuous_report_skips_sets_and_says_what_it_binned() -> None:
    d = unit_data(400, 4)
    report = evaluate(d, Protocol(methods=("naive", "lac", "lac(conditional=label)", "lvd"), splits=3,
                                  label_scale=UNIT))
    assert list(report["methods"]) == ["naive", "lvd"]
    assert [s["method"] for s in report["skipped"]] == ["lac", "lac(conditional=label)"]
    assert all("label sets are for integer labels" in s["reason"] for s in report["skipped"])
    for m in report["methods"].values():
        assert m["labels"] is None and m["expanded"] is None
        iv = m["interval"]
        assert iv["width_label_units"] == pytest.approx(iv["width"] / 4) and 0 < iv["coverage"] <= 1
        assert set(m["coverage_by_label"]) <= {"1", "2", "3", "4", "5"}
        assert all(set(cell) == {"n", "interval"} for cell in m["coverage_by_label"].values())
    section = report["label_scale"]
    assert section["scale"] == [0.0, 1.0] and section["continuous"] and "confusion" in section["binned"]
    bins = np.round(d.labels)
    assert report["point"]["n_by_label"] == {str(k): int((bins == k).sum()) for k in range(1, 6)}
    assert report["point"]["exact_accuracy"] == pytest.approx(float(np.mean(d.parsed == bins)))
    assert sum(map(sum, report["confusion"]["counts"])) == d.n
    # correlations and errors use the labels themselves, not their bins
    assert report["point"]["mae"] == pytest.approx(float(np.mean(np.abs(d.parsed - d.labels))))


def test_continuous_coverage_is_the_interval_s_on_each_split() -> None:
    """The report's coverage is the share of test labels inside [l, u] (recomputed here for naive)."""
    from judgecp.kinds.protocol import split_indices
    from judgecp.kinds.registry import build_method

    d = unit_data(300, 5)
    report = evaluate(d, Protocol(methods=("naive",), seeds=(7, 8), label_scale=UNIT))
    covs = []
    for seed in (7, 8):
        cal, test = split_indices(d.n, seed, 0.5)
        pred = build_method("naive", alpha=0.1, scale=SCALE).calibrate(d.X[cal], d.labels[cal]).predict(d.X[test])
        covs.append(float(np.mean((d.labels[test] >= pred.lower) & (d.labels[test] <= pred.upper))))
    assert report["methods"]["naive"]["interval"]["coverage"] == pytest.approx(np.mean(covs), abs=1e-12)


@pytest.mark.slow
def test_every_interval_method_covers_continuous_labels_through_the_study() -> None:
    """Mean coverage over 30 seeded random splits of one exchangeable sample lies in the split-conformal
    band [1 - alpha, 1 - alpha + 1/(n+1)] (exchangeability holds given the sample: the split is a
    uniform permutation), within Z standard errors of the split-to-split spread."""
    alpha, n = 0.1, 600
    d = unit_data(n, 11)
    specs = tuple(cheap_spec(name, epochs=25, rounds=15, levels=200) for name in INTERVAL)
    splits = 30
    report = evaluate(d, Protocol(methods=("lac", *specs), splits=splits, alpha=alpha, label_scale=UNIT))
    assert [s["method"] for s in report["skipped"]] == ["lac"]
    for name, spec in zip(INTERVAL, specs, strict=True):
        iv = report["methods"][spec]["interval"]
        se = iv["coverage_std"] / math.sqrt(splits)
        n_conf = n // 2 // (2 if name != "naive" else 1)  # fitted methods conformalize on half the calibration rows
        assert iv["coverage"] >= 1 - alpha - Z * se, (name, iv)
        if name in TWO_SIDED:
            assert iv["coverage"] <= 1 - alpha + 1 / (n_conf + 1) + Z * se, (name, iv)


# -- the command line ----------------------------------------------------------------------------


def test_cli_warns_loudly_without_label_scale_and_runs_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 200 averaged labels inside (0, 1), and eight at 0 or 1, which read as the integer labels 0 (off) and 1
    src = write_csv(tmp_path / "judge.csv", unit_records(200, 6), {f"x{i}": i % 2 for i in range(8)})
    out = tmp_path / "r.json"
    common = [str(src), "--label", "c", "--logprobs", "lp*", "--id", "id", "--methods", "naive,lac", "--seeds", "2"]
    assert main(["evaluate", *common, "--json", str(out)]) == 0  # on the 4 rows labelled 1: loudly
    err = capsys.readouterr().err
    assert "judgecp: warning: 204 of 208 rows (98%) were left out" in err
    assert "--label-scale LO:HI" in err and "label_off_scale" in err
    share = next(w for w in json.loads(out.read_text())["warnings"] if w["warning"] == "excluded_share")
    assert share["share"] > 0.9 and share["label_off_scale"] == 204
    assert main(["evaluate", *common, "--label-scale", "0:1", "--json", str(out)]) == 0
    printed = capsys.readouterr()
    report = json.loads(out.read_text())
    assert report["n"] == 208 and report["warnings"] == [] and report["label_scale"]["continuous"]
    assert "lac" not in report["methods"] and report["skipped"][0]["method"] == "lac"
    assert "lac" in printed.out and "skipped: a set method" in printed.out
    assert "interval width in the labels' units (0:1): naive" in printed.out


@pytest.mark.parametrize(("args", "message"), [
    (["--label-scale", "1:0"], "--label-scale: label scale needs LO < HI"),
    (["--label-scale", "a:b"], "--label-scale: cannot read 'a:b'"),
    (["--label-scale", "0:1", "--methods", "lac,aps"], "none of the methods lac, aps predicts an interval"),
])
def test_cli_label_scale_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                             message: str) -> None:
    src = write_csv(tmp_path / "judge.csv", unit_records(40, 7))
    assert main(["evaluate", str(src), "--label", "c", "--logprobs", "lp*", "--seeds", "1", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_nothing_on_the_scale_is_one_line_with_the_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_csv(tmp_path / "judge.csv", unit_records(30, 12))
    assert main(["evaluate", str(src), "--label", "c", "--logprobs", "lp*"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no usable records (label_off_scale: 30); if the labels are on another scale" in err
    assert "--label-scale LO:HI" in err and len(err.splitlines()) == 1


def test_cli_label_scale_is_a_likert_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--example", "--kind", "pairwise", "--label-scale", "0:1"]) == 2
    assert "--label-scale" in capsys.readouterr().err
    assert main(["evaluate", "--example", "--label-scale", "0:1"]) == 2
    assert "--example judge has its own" in capsys.readouterr().err


def test_records_command_keeps_the_label_and_its_scale(tmp_path: Path) -> None:
    src = write_csv(tmp_path / "judge.csv", unit_records(60, 8))
    out = tmp_path / "r.jsonl"
    assert main(["records", str(src), "--label", "c", "--logprobs", "lp*", "--label-scale", "0:1", "-o", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["label_scale"] == [0.0, 1.0] and 0 <= r["label"] <= 1 for r in records)
    report = tmp_path / "r.json"
    assert main(["evaluate", str(out), "--methods", "naive", "--seeds", "1", "--json", str(report), "--quiet"]) == 0
    assert json.loads(report.read_text())["label_scale"]["continuous"]


# -- calibrate / apply -----------------------------------------------------------------------------


def test_calibrate_and_apply_with_continuous_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal_file = write_csv(tmp_path / "cal.csv", unit_records(300, 9))
    run_file = write_csv(tmp_path / "run.csv", unit_records(300, 10))
    calibrator, summary = tmp_path / "cal.json", tmp_path / "s.json"
    flags = ["--label", "c", "--logprobs", "lp*", "--id", "id"]
    assert main(["calibrate", str(cal_file), *flags, "--label-scale", "0:1", "-o", str(calibrator)]) == 0
    assert json.loads(calibrator.read_text())["label_scale"] == [0.0, 1.0]
    # apply reads the run's labels on the calibration labels' scale unless told otherwise
    assert main(["apply", str(calibrator), str(run_file), *flags, "--json", str(summary)]) == 0
    lab = json.loads(summary.read_text())["labeled"]
    assert lab["n"] == 300 and 0.8 <= lab["coverage"] <= 1.0
    assert main(["calibrate", str(cal_file), *flags, "--label-scale", "0:1", "--method", "lac",
                 "-o", str(tmp_path / "lac.json")]) == 2
    err = capsys.readouterr().err
    assert "set methods need integer labels" in err and "interval method" in err


@pytest.mark.slow
def test_apply_covers_continuous_labels_over_many_draws() -> None:
    """calibrate on 300 labeled items, apply to 300 more: the run's interval coverage averages in the band."""
    from judgecp.workflows.calibrators import apply, calibrate

    draws, n = 200, 300
    covs = []
    for r in range(draws):
        cal = calibrate(unit_data(n, 1000 + 2 * r), method="naive", alpha=0.1)
        covs.append(apply(cal, unit_data(n, 1001 + 2 * r)).summary["labeled"]["coverage"])
    c = np.asarray(covs)
    se = c.std(ddof=1) / math.sqrt(draws)
    assert 0.9 - Z * se <= c.mean() <= 0.9 + 1 / (n + 1) + Z * se, (c.mean(), se)


def test_report_of_a_continuous_study(tmp_path: Path) -> None:
    """``judgecp report`` draws a continuous-label report: intervals where label sets would be, said in the caption."""
    pytest.importorskip("matplotlib")
    from judgecp.base.jsonio import dumps

    path = tmp_path / "continuous.json"
    path.write_text(dumps(evaluate(unit_data(300, 13), Protocol(methods=("naive", "lvd", "lac"), splits=2,
                                                                   alphas=(0.1, 0.2), label_scale=UNIT))))
    assert main(["report", str(path), "-o", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "report.md").read_text()
    assert "Continuous labels (labels on 0:1" in md and "| naive | " in md and "| lac |" not in md
    assert (tmp_path / "out" / "figures" / "coverage_by_label.png").is_file()
