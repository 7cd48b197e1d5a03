"""Calibrator files (issue 25 item 3, issue 26 item 6): the JSON Schema, the digest, one refusal per tampered field
of issue 25's table, and no drift when a calibrator is applied to its own calibration data."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from judgecp import from_records
from judgecp.base.errors import InputError
from judgecp.cli import main
from judgecp.data import ScoreData
from judgecp.kinds.reading import to_records
from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_pairwise_judge,
)
from judgecp.workflows.calibrators import SCHEMA, Calibrator, apply, calibrate, content_digest
from judgecp.workflows.calibrators.fileformat import schema_path

VLMEVAL_FIXTURES = Path(__file__).parent / "vlmeval" / "fixtures"


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def likert_records(n: int, seed: int) -> list[dict[str, Any]]:
    return to_records(simulate_likert_judge(n=n, seed=seed))


def pair_records(n: int, seed: int) -> list[dict[str, Any]]:
    return to_records(simulate_pairwise_judge(n, seed=seed))


def mcq_records(n: int, seed: int) -> list[dict[str, Any]]:
    return to_records(from_records(simulate_mcq_records(n, seed=seed)))


def calibrator_file(tmp_path: Path, records: list[dict[str, Any]], *flags: str, name: str = "cal.json") -> Path:
    source = write_jsonl(tmp_path / f"{name}.records.jsonl", records)
    out = tmp_path / name
    assert main(["calibrate", str(source), "-o", str(out), *flags]) == 0
    return out


def resign(obj: dict[str, Any]) -> dict[str, Any]:
    """Recompute the digest of an edited calibrator object, as a tamperer could."""
    obj["digest"] = content_digest(obj)
    return obj


# -- the JSON Schema ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(schema_path().read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == SCHEMA
    return jsonschema.Draft202012Validator(schema)


CASES = [
    ("likert", ()), ("likert", ("--method", "lac")), ("likert", ("--method", "aps")),
    ("likert", ("--method", "raps")), ("likert", ("--method", "margin")), ("likert", ("--method", "ordinal_aps")),
    ("likert", ("--method", "ordinal_set")), ("likert", ("--method", "lvd")),
    ("likert", ("--method", "lac", "--group", "group")), ("likert", ("--method", "lvd", "--group", "group")),
    ("mcq", ()), ("mcq", ("--method", "raps")), ("pairwise", ()), ("pairwise", ("--method", "clopper_pearson")),
    ("pairwise", ("--method", "vanilla")),
]


@pytest.mark.parametrize(("kind", "flags"), CASES)
def test_files_calibrate_writes_follow_the_json_schema(kind: str, flags: tuple[str, ...], tmp_path: Path,
                                                      validator: jsonschema.Draft202012Validator) -> None:
    records = {"likert": likert_records, "mcq": mcq_records, "pairwise": pair_records}[kind](300, 4)
    obj = json.loads(calibrator_file(tmp_path, records, *flags).read_text(encoding="utf-8"))
    validator.validate(obj)
    assert obj["schema"] == SCHEMA and obj["digest"] == content_digest(obj)
    # Negative control: the schema is not a blank check.
    for edit in ({"alpha": 5}, {"n_calibration": -5}, {"kind": "score"}, {"digest": "md5:0"}):
        assert not validator.is_valid({**obj, **edit}), edit


# -- digest and content -------------------------------------------------------------------------


def test_digest_is_of_the_canonical_content_and_reported_by_apply(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    records = likert_records(400, 1)
    cal = calibrator_file(tmp_path, records[:200])
    obj = json.loads(cal.read_text(encoding="utf-8"))
    # Key order and layout do not matter; content does.
    assert content_digest(dict(reversed(list(obj.items())))) == obj["digest"]
    run = write_jsonl(tmp_path / "run.jsonl", [dict(r, label=None) for r in records[200:]])
    assert main(["apply", str(cal), str(run), "--json", str(tmp_path / "s.json")]) == 0
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert summary["calibrator"] == {"schema": SCHEMA, "digest": obj["digest"]}
    assert f"calibrator {obj['digest']} (content verified)" in out
    assert Calibrator.load(cal).digest == obj["digest"]
    # An edit that leaves the digest stale is refused, whatever it changed.
    obj["source"] = "elsewhere"
    cal.write_text(json.dumps(obj), encoding="utf-8")
    assert main(["apply", str(cal), str(run)]) == 2
    assert "digest: does not match the content: the file was edited or corrupted" in capsys.readouterr().err


def test_a_file_of_the_first_schema_is_refused_as_unverifiable(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema": "judgecp.calibrator/1", "kind": "likert", "state": {}}), encoding="utf-8")
    with pytest.raises(InputError, match=r"cannot be verified; re-run `judgecp calibrate`"):
        Calibrator.load(path)


def test_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    cal = calibrator_file(tmp_path, likert_records(200, 2))
    cal.write_bytes(b"\xef\xbb\xbf" + cal.read_bytes())
    assert Calibrator.load(cal).n_calibration == 200


# -- issue 25: one refusal per tampered field ------------------------------------------------------


def _set(path: list[Any], value: Any) -> Any:
    def edit(obj: dict[str, Any]) -> None:
        node: Any = obj
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


def _drop(path: list[Any]) -> Any:
    def edit(obj: dict[str, Any]) -> None:
        node: Any = obj
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return edit


NAN = float("nan")
#: (calibrator, edit, the field the one-line refusal names, what it says); each row of issue 25's table.
TAMPERED = [
    ("naive", _set(["state", "method", "quantile"], 0.01), "state.method.quantile", "is not the threshold"),
    ("lac", _set(["state", "method", "threshold"], 0.01), "state.method.threshold", "is not the threshold"),
    ("naive", _set(["state", "method", "quantile"], NAN), "state.method.quantile", "not a finite number"),
    ("naive", _set(["state", "method", "quantile"], 1e308), "state.method.quantile", "is not the threshold"),
    ("naive", _set(["alpha"], 5), "alpha", "is not in (0, 1)"),
    ("naive", _set(["alpha"], NAN), "alpha", "not a finite number"),
    ("pairwise", _set(["state", "threshold"], "inf"), "state.threshold", "is not the threshold"),
    ("pairwise", _set(["state", "threshold"], 1e308), "state.threshold", "is not the threshold"),
    ("naive", _set(["drift", "values"], []), "drift.values", "0 values, expected 200"),
    ("naive", _set(["n_calibration"], -5), "n_calibration", "-5 is not in [1,"),
    (
        "naive",
        _set(["method"], "lac"),
        "state.method.method",
        "'naive' is stored, but the calibrator's method is 'lac'",
    ),
    ("naive", _drop(["state", "method", "quantile"]), "state.method.quantile", "missing"),
    ("mcq", _set(["state", "width"], 10**7), "state.width", "10000000 is not in [2, 5]"),
    ("mcq", _set(["state", "width"], 1e7), "state.width", "expected an integer"),
]


@pytest.fixture(scope="module")
def clean_calibrators(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], Path]]:
    """One calibrator file of each kind (and naive and lac for Likert), with a run to apply it to."""
    folder = tmp_path_factory.mktemp("tamper")
    out = {}
    for name, records, flags in (
        ("naive", likert_records(400, 5), ()),
        ("lac", likert_records(400, 5), ("--method", "lac")),
        ("pairwise", pair_records(400, 5), ()),
        ("mcq", mcq_records(400, 5), ()),
    ):
        half = len(records) // 2 if name != "pairwise" else 400
        cal = calibrator_file(folder, records[:half], *flags, name=f"{name}.json")
        run = write_jsonl(folder / f"{name}.run.jsonl", [dict(r, label=None) for r in records[half:]])
        out[name] = (json.loads(cal.read_text(encoding="utf-8")), run)
    return out


@pytest.mark.parametrize("stale", [False, True], ids=["digest recomputed", "digest stale"])
@pytest.mark.parametrize(("name", "edit", "field", "says"), TAMPERED)
def test_a_tampered_calibrator_is_refused_in_one_line_naming_the_field(
    name: str, edit: Any, field: str, says: str, stale: bool, clean_calibrators: dict[str, Any], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    obj, run = clean_calibrators[name]
    obj = json.loads(json.dumps(obj))
    edit(obj)
    if not stale:
        resign(obj)
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(obj), encoding="utf-8")  # NaN as Python writes it: a JSON reader's extension
    assert main(["apply", str(path), str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"judgecp: error: {path}: ")
    if stale:
        assert "digest: does not match the content" in err, err
    else:
        assert f"{path}: {field}: " in err and says in err, err


def test_a_seeded_randomised_method_refuses_another_predict_seed(tmp_path: Path) -> None:
    """APS draws its tie-breaking uniforms from the predict seed: an edited seed is refused, not used."""
    obj = calibrate(simulate_likert_judge(n=300, seed=1), method="aps", random_state=3).to_dict()
    obj["state"]["method"]["predict_seed"] += 1
    with pytest.raises(InputError, match=r"state.method.predict_seed: \d+ is not the seed random_state 3 gives"):
        Calibrator.from_dict(resign(obj))


def test_raps_tuning_is_recomputed_from_the_stored_fit_part() -> None:
    """RAPS tunes k_reg and lam on a fit part: the file keeps that part's probabilities, and loading recomputes both."""
    obj = calibrate(simulate_likert_judge(n=160, seed=1).take(np.arange(80)), method="raps", random_state=4).to_dict()
    state = obj["state"]["method"]
    assert (state["lam"], state["k_reg"]) == (0.01, 4) and len(state["fit_probabilities"]) == 40
    for key, value, says in (("k_reg", 3, "3 is not the k_reg the stored fit part gives (4)"),
                             ("lam", 0.5, "0.5 is not the lam the stored fit part gives (0.01)"),
                             ("lam", 0.3, "0.3 is not the lam")):
        bad = json.loads(json.dumps(obj))
        bad["state"]["method"][key] = value
        with pytest.raises(InputError, match=re.escape(f"state.method.{key}: {says}")):
            Calibrator.from_dict(resign(bad))
    bad = json.loads(json.dumps(obj))
    bad["state"]["method"]["fit_probabilities"][0][0] += 0.5
    with pytest.raises(InputError, match="fit_probabilities: a row is not a probability distribution"):
        Calibrator.from_dict(resign(bad))


def test_lvd_kernel_is_checked_for_shape_and_range() -> None:
    obj = calibrate(simulate_likert_judge(n=200, seed=1), method="lvd").to_dict()
    for key, value, says in (("bandwidth", 0.3, "0.3 is not one of the searched bandwidths"),
                             ("anchors", [[0.0] * 7], "expected 100 rows of 7 numbers"),
                             ("anchor_labels", [9.0] * 100, "9.0 is not in \\[1, 5\\]"),
                             ("std", [0.0] * 7, "0.0 is not in")):
        bad = json.loads(json.dumps(obj))
        bad["state"]["method"][key] = value
        with pytest.raises(InputError, match=f"state.method.{key}: {says}"):
            Calibrator.from_dict(resign(bad))


def test_a_formula_threshold_is_recomputed_within_rounding() -> None:
    """Clopper-Pearson's thresholds are logarithms (their last bit may differ between builds): the stored one
    must be within 1e-12 of the recomputed one, which is what predicts."""
    pairs = simulate_pairwise_judge(800, seed=2)
    cal = calibrate(pairs.take(np.arange(400)), method="clopper_pearson", alpha=0.2)
    obj = cal.to_dict()
    stored = obj["state"]["threshold"]
    assert math.isfinite(stored)
    nudged = json.loads(json.dumps(obj))
    nudged["state"]["threshold"] = float(np.nextafter(stored, 1.0))
    loaded = Calibrator.from_dict(resign(nudged))
    assert loaded.estimator.threshold_ == stored
    run = pairs.take(np.arange(400, 800))
    assert (apply(loaded, run).accept == apply(cal, run).accept).all()
    moved = json.loads(json.dumps(obj))
    moved["state"]["threshold"] = stored + 1e-6
    with pytest.raises(InputError, match="state.threshold: .* is not the threshold"):
        Calibrator.from_dict(resign(moved))


def test_mondrian_groups_must_add_up_and_match_their_levels() -> None:
    data = simulate_likert_judge(n=400, seed=2)
    obj = calibrate(data, method="lac", groups="group").to_dict()
    group = next(iter(obj["state"]["mondrian"]["n_calibration"]))
    bad = json.loads(json.dumps(obj))
    bad["state"]["mondrian"]["n_calibration"][group] += 1
    with pytest.raises(InputError, match="state.mondrian.n_calibration: the groups' sizes add up to 401"):
        Calibrator.from_dict(resign(bad))
    bad = json.loads(json.dumps(obj))
    bad["state"]["mondrian"]["insufficient_groups"] = [group]
    with pytest.raises(InputError, match="state.mondrian.insufficient_groups"):
        Calibrator.from_dict(resign(bad))


# -- issue 26 item 6: a calibrator applied to its own calibration data raises no drift -----------------


def near_tied_likert(n: int, seed: int) -> ScoreData:
    """Expected scores that differ only beyond the 9th decimal in clusters (what rounding used to merge)."""
    rng = np.random.default_rng(seed)
    base = np.log(np.asarray([[0.05, 0.15, 0.4, 0.3, 0.1], [0.02, 0.08, 0.2, 0.5, 0.2], [0.3, 0.4, 0.2, 0.07, 0.03]]))
    logprobs = base[rng.integers(0, 3, size=n)] + rng.normal(scale=1e-10, size=(n, 5))
    labels = rng.integers(1, 6, size=n).astype(float)
    return ScoreData.from_arrays(logprobs, labels)


def own_data_drift(summary: dict[str, Any]) -> None:
    drift = summary["drift"]
    assert drift["p_value"] == 1.0 and drift["statistic"] == 0.0 and drift["drift"] is False
    assert drift["martingale"]["alarm"] is False, drift["martingale"]
    if "conformity" in drift:
        assert drift["conformity"]["p_value"] == 1.0
    assert not [w for w in summary["warnings"] if w["kind"] in ("drift", "drift_sequential", "conformity_drift")]


def test_near_tied_expected_scores_are_stored_at_full_precision() -> None:
    data = near_tied_likert(600, 0)
    values = np.sort(calibrate(data, method="naive").drift_sample)
    stored = np.asarray(calibrate(data, method="naive").to_dict()["drift"]["values"])
    assert np.array_equal(values, stored)
    # Negative control: the 9-decimal rounding this replaces fails the KS test on these very values.
    from scipy.stats import ks_2samp

    assert ks_2samp(np.round(values, 9), values).pvalue < 0.01


@pytest.mark.parametrize("kind", ["likert near-tied", "likert naive", "likert lac", "mcq", "pairwise"])
def test_applying_a_calibrator_to_its_own_calibration_data_raises_no_drift(kind: str, tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    if kind == "likert near-tied":
        records, flags = to_records(near_tied_likert(600, 1)), ()
    elif kind.startswith("likert"):
        records, flags = likert_records(600, 3), ("--method", kind.split()[1])
    else:
        records, flags = (mcq_records(600, 3) if kind == "mcq" else pair_records(600, 3)), ()
    cal = calibrator_file(tmp_path, records, *flags)
    source = tmp_path / "cal.json.records.jsonl"
    assert main(["apply", str(cal), str(source), "--strict", "--json", str(tmp_path / "s.json")]) == 0
    own_data_drift(json.loads((tmp_path / "s.json").read_text(encoding="utf-8")))
    assert "DRIFT" not in capsys.readouterr().out


@pytest.mark.parametrize(("folder", "kind"), [("clean", "likert"), ("mcq", "mcq"), ("pairwise", "pairwise")])
def test_own_data_through_vlmeval_prediction_files_raises_no_drift(folder: str, kind: str, tmp_path: Path) -> None:
    """`judgecp calibrate X --format vlmeval` then `judgecp apply` on the same X (issue 26 item 6's report)."""
    pytest.importorskip("openpyxl")
    run = next((VLMEVAL_FIXTURES / folder).glob("*/*"))
    shutil.copytree(run, tmp_path / folder)
    predictions = next((tmp_path / folder).glob("*.xlsx"))
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(predictions), "--format", "vlmeval", "--kind", kind, "-o", str(cal),
                 "--alpha", "0.25"]) == 0
    assert main(["apply", str(cal), str(predictions), "--format", "vlmeval", "--strict",
                 "--json", str(tmp_path / "s.json")]) == 0
    own_data_drift(json.loads((tmp_path / "s.json").read_text(encoding="utf-8")))


def test_fitted_and_loaded_calibrators_test_drift_alike() -> None:
    data = simulate_likert_judge(n=600, seed=8)
    cal = calibrate(data.take(np.arange(300)), method="naive")
    loaded = Calibrator.from_dict(json.loads(json.dumps(cal.to_dict())))
    run = data.take(np.arange(300, 600))
    fitted_drift, loaded_drift = apply(cal, run).summary["drift"], apply(loaded, run).summary["drift"]
    assert fitted_drift == loaded_drift and math.isfinite(fitted_drift["p_value"])
