"""Calibrator loading on hostile input (issue 25): random bytes, cut files, byte-order marks, huge and nested
values, and random edits of a valid calibrator's numbers, with the digest left stale and recomputed.

Allowed outcomes: a one-line :class:`InputError` (at load, or when the calibrator is checked against the run),
or a calibrator that predicts exactly what the original does. Never another exception, never a calibrator
that loads and predicts something else.

What no check can see: a tamperer who recomputes the digest may replace the calibration data themselves
by other data, consistently (all scores and the threshold together, LVD's kernel anchors). Edits of one
number are what these tests make; for LVD's kernel (anchors, their labels and residuals, the standardizing
mean and scale, the bandwidth) only the digest and range checks stand guard, so its numbers are edited with
the digest left stale only.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgecp import from_records
from judgecp.base.errors import InputError
from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_pairwise_judge,
)
from judgecp.workflows.calibrators import Calibrator, calibrate, check_compatible, content_digest
from judgecp.workflows.calibrators.fileformat import canonical_json

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
#: LVD's kernel: data a consistent replacement of which no check can tell from the original (module docstring).
KERNEL = {"mean", "std", "bandwidth", "anchors", "anchor_labels", "anchor_residuals"}


def predictions(cal: Calibrator, data: Any) -> list[Any]:
    """What apply would output per item (after its compatibility check): accept, option sets, or label sets
    with the intervals (NaN for set methods) and full-range flags."""
    check_compatible(cal, data)
    est = cal.estimator
    if cal.kind == "pairwise":
        return [est.predict(data).accept]
    if cal.kind == "mcq":
        return [est.predict(data).sets]
    pred = est.predict(data, groups=cal.groups) if est.mondrian_ is not None else est.predict(data)
    return [pred.sets, pred.lower, pred.upper, pred.full_range]


def same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
                                    for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def cases() -> dict[str, tuple[dict[str, Any], Any, Any]]:
    """Small calibrators of every kind (and the methods with a fitted part or randomness), each with a run
    and the predictions it makes there."""
    likert = simulate_likert_judge(n=160, seed=1)
    cal_half, run = likert.take(np.arange(80)), likert.take(np.arange(80, 160))
    choices = from_records(simulate_mcq_records(160, seed=1))
    pairs = simulate_pairwise_judge(240, seed=1)
    fitted = {
        "naive": (calibrate(cal_half, method="naive"), run),
        "aps": (calibrate(cal_half, method="aps", random_state=4), run),
        "raps": (calibrate(cal_half, method="raps", random_state=4), run),
        "lvd": (calibrate(cal_half, method="lvd"), run),
        "mondrian": (calibrate(cal_half, method="lac", groups="group"), run),
        "mcq": (calibrate(choices.take(np.arange(80)), method="lac"), choices.take(np.arange(80, 160))),
        "pairwise": (calibrate(pairs.take(np.arange(120)), alpha=0.2), pairs.take(np.arange(120, 240))),
    }
    out = {}
    for name, (cal, data) in fitted.items():
        obj = json.loads(json.dumps(cal.to_dict()))
        out[name] = (obj, data, predictions(Calibrator.from_dict(obj), data))
    return out


def outcome(path: Path, text: bytes, data: Any, expected: Any) -> str:
    """``"refused"`` (a one-line InputError) or ``"same"`` (loaded, the same predictions); anything else fails."""
    path.write_bytes(text)
    try:
        cal = Calibrator.load(path)
        got = predictions(cal, data)
    except InputError as exc:
        message = str(exc)
        assert message.strip() and "\n" not in message.strip(), message
        return "refused"
    assert same(got, expected), "a calibrator that loads must predict what the original does"
    return "same"


def numeric_paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in numeric_paths(v, (*prefix, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in numeric_paths(v, (*prefix, i))]
    return [prefix] if isinstance(obj, (int, float)) and not isinstance(obj, bool) else []


def set_path(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def new_number(draw: Any, old: float) -> Any:
    kind = draw(st.sampled_from(["float", "int", "nudge", "same", "scale", "special", "step"]))
    if kind == "step":  # a nearby value of the same type: another seed, count, rank or grid value
        return old + draw(st.integers(-3, 3)) * (1 if isinstance(old, int) else draw(st.sampled_from([0.01, 0.1, 1.0])))
    if kind == "float":
        return draw(st.floats(allow_nan=True, allow_infinity=True))
    if kind == "int":
        return draw(st.integers(-(2**70), 2**70))
    if kind == "nudge":  # the smallest change a float can take
        return float(np.nextafter(float(old), math.inf if draw(st.booleans()) else -math.inf))
    if kind == "same":
        return old
    if kind == "scale":
        return old * draw(st.sampled_from([-1, 0, 2, 10, 1e-3]))
    return draw(st.sampled_from([0, 1, -1, 0.5, 1e308, -5, 10**7, 2**63]))


NAMES = ["naive", "aps", "raps", "lvd", "mondrian", "mcq", "pairwise"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("stale", [True, False], ids=["digest stale", "digest recomputed"])
@settings(SETTINGS, max_examples=100)
@given(draw=st.data())
def test_random_edits_of_a_number_are_refused_or_change_nothing(
    name: str, stale: bool, draw: Any, cases: dict[str, Any], tmp_path: Path
) -> None:
    original, data, expected = cases[name]
    paths = [p for p in numeric_paths(original) if stale or not KERNEL.intersection(map(str, p))]
    # A field first, then one of its numbers: a scalar (a threshold, a seed) is as likely as an array.
    fields = sorted({tuple(k for k in p if isinstance(k, str)) for p in paths})
    field = draw.draw(st.sampled_from(fields))
    path = draw.draw(st.sampled_from([p for p in paths if tuple(k for k in p if isinstance(k, str)) == field]))
    obj = json.loads(json.dumps(original))
    old: Any = obj
    for key in path:
        old = old[key]
    set_path(obj, path, new_number(draw.draw, old))
    if not stale:
        obj["digest"] = content_digest(obj)
    result = outcome(tmp_path / "edited.json", json.dumps(obj).encode(), data, expected)
    if stale and canonical_json(obj) != canonical_json(original):
        assert result == "refused"  # any change of content: the digest does not match


@pytest.mark.parametrize("name", ["naive", "pairwise", "mcq"])
@SETTINGS
@given(noise=st.binary(max_size=3000))
def test_random_bytes_are_refused(name: str, noise: bytes, cases: dict[str, Any], tmp_path: Path) -> None:
    _, data, expected = cases[name]
    assert outcome(tmp_path / "noise.json", noise, data, expected) == "refused"


@pytest.mark.parametrize("name", ["naive", "raps", "pairwise"])
@SETTINGS
@given(draw=st.data())
def test_cut_files_and_byte_order_marks(name: str, draw: Any, cases: dict[str, Any], tmp_path: Path) -> None:
    original, data, expected = cases[name]
    text = (json.dumps(original, indent=2) + "\n").encode()
    cut = draw.draw(st.integers(0, len(text)))
    body = text[:cut]
    if draw.draw(st.booleans()):
        body = b"\xef\xbb\xbf" * draw.draw(st.integers(1, 2)) + body
    result = outcome(tmp_path / "cut.json", body, data, expected)
    whole = text[:cut].strip() == text.strip() and not body.startswith(b"\xef\xbb\xbf" * 2)
    assert result == ("same" if whole else "refused")


HUGE = [
    b"[" * 100_000 + b"]" * 100_000,  # nested deeper than any parser's recursion
    b"9" * 5000,  # an integer past Python's digit limit
    b"1e400",  # infinity once read
    b'"' + b"x" * 1_000_000 + b'"',  # a megabyte of text
    b"[" + b"1," * 50_000 + b"1]",  # a long array where a number was
    b'{"a": ' * 1000 + b"1" + b"}" * 1000,
]


@pytest.mark.parametrize("name", ["naive", "mcq", "pairwise"])
@pytest.mark.parametrize("huge", range(len(HUGE)))
@settings(SETTINGS, max_examples=10)
@given(draw=st.data())
def test_huge_and_nested_values_are_refused(name: str, huge: int, draw: Any, cases: dict[str, Any],
                                             tmp_path: Path) -> None:
    original, data, expected = cases[name]
    paths = [*numeric_paths(original), ("source",), ("method",), ("kind",), ("identity",)]
    path = draw.draw(st.sampled_from(paths))
    obj = json.loads(json.dumps(original))
    set_path(obj, path, "@@HUGE@@")
    text = json.dumps(obj).encode().replace(b'"@@HUGE@@"', HUGE[huge])
    assert outcome(tmp_path / "huge.json", text, data, expected) == "refused"  # the digest no longer matches
    # With the digest recomputed (where the value can be read at all), the field checks refuse it or it is harmless.
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return
    parsed["digest"] = content_digest(parsed)
    outcome(tmp_path / "huge.json", json.dumps(parsed).encode(), data, expected)


def test_the_fuzz_can_fail() -> None:
    """Negative control: a loader that ignored the stored threshold's check would accept an edited quantile."""
    import judgecp.stats.conformal as saved_state  # where the calibrator loader checks the threshold

    obj = calibrate(simulate_likert_judge(n=80, seed=1), method="naive").to_dict()
    obj["state"]["method"]["quantile"] = 0.01
    obj["digest"] = content_digest(obj)
    with pytest.raises(InputError):
        Calibrator.from_dict(obj)
    original = saved_state.check_threshold
    try:
        saved_state.check_threshold = lambda *args, **kwargs: None  # type: ignore[assignment]
        assert Calibrator.from_dict(obj).estimator.method_.quantile_ == 0.01
    finally:
        saved_state.check_threshold = original
