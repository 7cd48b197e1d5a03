"""PARC scores on hand-built models whose answers are known, and eq. 6's guarantees."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgecp.base.errors import InputError
from judgecp.data import ChoiceData
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.reading import from_records
from judgecp.stats.parc import calibrated, reliability, reliability_exponent
from judgecp.workflows.study import evaluate_parc


def mcq_from_records(records: list[dict[str, object]]) -> ChoiceData:
    data = from_records(records, "parc")
    assert isinstance(data, ChoiceData)
    return data

LETTERS = "ABCDEFGH"
STRUCTURES = {
    "2 options": ((2,), 1),
    "3.7 options": ((3, 4, 4, 4, 4, 4, 4, 3, 3, 4), 1),  # mean 3.7, as MMBench
    "4 options": ((4,), 1),
    "4 options, 2 correct": ((4,), 2),
}


def build(model: str, structure: str, n: int = 2000, seed: int = 0) -> list[dict[str, object]]:
    """Records of an original prompt (O), a reformulation (LR-I) and a negation (LS-N) per item.

    ``model``: ``random`` answers uniformly with a flat distribution;
    ``right`` answers a correct option with certainty; ``wrong_under_variation``
    is right and certain on O but confidently wrong on both variations.
    """
    counts, n_correct = STRUCTURES[structure]
    rng = np.random.default_rng(seed)
    out: list[dict[str, object]] = []
    for s in range(n):
        k = int(counts[s % len(counts)])
        opts = list(LETTERS[:k])
        c = sorted(rng.choice(k, size=min(n_correct, k - 1), replace=False).tolist())
        negated = [j for j in range(k) if j not in c]
        o_answer = c[0]
        for var, correct in (("O", c), ("LR-I", c), ("LS-N", negated)):
            if model == "random":
                lp = {o: 0.0 for o in opts}
                pred = opts[int(rng.integers(k))]
            else:
                right = model == "right" or var == "O"
                if right:
                    pick = o_answer if var != "LS-N" else correct[0]
                else:  # confidently wrong: a reformulation gets another answer, a negation the old one
                    pick = (
                        next(j for j in range(k) if j not in correct and j != o_answer) if var == "LR-I" else o_answer
                    )
                lp = {o: (0.0 if j == pick else -40.0) for j, o in enumerate(opts)}
                pred = opts[pick]
            out.append({"id": f"{s}/{var}", "source_id": f"s{s}", "variation": var, "dataset": structure,
                        "options": opts, "correct": [opts[j] for j in correct], "logprobs": lp, "prediction": pred})
    return out


def scores(records: list[dict[str, object]], reference: str = "variation") -> dict[str, object]:
    return evaluate_parc(mcq_from_records(records), Protocol(seeds=(0, 1, 2), reference=reference))


def cal(report: dict[str, object], score: str, variation: str) -> float:
    return report[score]["variation"][variation]["calibrated"]  # type: ignore[index]


@pytest.mark.parametrize("structure", list(STRUCTURES))
def test_uniform_random_chooser_calibrates_to_zero(structure: str) -> None:
    r = scores(build("random", structure, n=3000))
    for v in ("O", "LR-I", "LS-N"):
        assert abs(cal(r, "accuracy", v)) < 0.05, v
        assert abs(cal(r, "reliability", v)) < 0.05, v
    for v in ("LR-I", "LS-N"):
        assert abs(cal(r, "consistency", v)) < 0.06, v
    if STRUCTURES[structure][1] == 1:
        # a flat distribution puts every option in the set: certainty exactly 0
        assert cal(r, "certainty", "O") == 0.0 and cal(r, "reliability", "O") == 0.0


@pytest.mark.parametrize("structure", list(STRUCTURES))
def test_always_right_certain_model_calibrates_to_one(structure: str) -> None:
    r = scores(build("right", structure, n=400))
    for v in ("O", "LR-I", "LS-N"):
        assert cal(r, "accuracy", v) == pytest.approx(1.0)
        assert cal(r, "certainty", v) == pytest.approx(1.0)
        assert cal(r, "reliability", v) == pytest.approx(1.0)
    for v in ("LR-I", "LS-N"):  # the same answer when reformulated, another when negated
        assert cal(r, "consistency", v) == pytest.approx(1.0)


@pytest.mark.parametrize("structure", list(STRUCTURES))
def test_always_wrong_certain_model_calibrates_to_minus_one(structure: str) -> None:
    """Certain relative to its calibrated behaviour on the original prompts, and always wrong."""
    r = scores(build("wrong_under_variation", structure, n=400), reference="original")
    for v in ("LR-I", "LS-N"):
        assert cal(r, "accuracy", v) == pytest.approx(-1.0)
        assert cal(r, "certainty", v) == pytest.approx(1.0)
        assert cal(r, "reliability", v) == pytest.approx(-1.0)
        assert cal(r, "consistency", v) == pytest.approx(-1.0)
    assert cal(r, "reliability", "O") == pytest.approx(1.0)


def test_with_its_own_calibration_a_wrong_model_is_uncertain_not_reliable() -> None:
    """Calibrating on the (wrong) variation itself makes the sets hold every class: certainty 0."""
    r = scores(build("wrong_under_variation", "4 options", n=400), reference="variation")
    assert cal(r, "certainty", "LR-I") == pytest.approx(0.0)
    assert cal(r, "reliability", "LR-I") == pytest.approx(0.0)


def test_calibration_eq5() -> None:
    assert calibrated(0.27, 0.27) == 0.0
    assert calibrated(1.0, 0.27) == 1.0 and calibrated(0.0, 0.27) == -1.0
    assert calibrated(0.635, 0.27) == pytest.approx(0.5)
    assert calibrated(0.135, 0.27) == pytest.approx(-0.5)
    assert reliability_exponent(0.5) == pytest.approx(1.0)
    assert reliability(0.27, 0.8, 0.27) == pytest.approx(0.0)
    assert reliability(0.9, 0.5) == pytest.approx(0.4)  # (2 * 0.9 - 1) * 0.5


@settings(max_examples=500, deadline=None)
@given(
    acc=st.floats(0.0, 1.0),
    cert=st.floats(0.0, 1.0),
    acc_rand=st.floats(0.02, 0.98),
)
def test_eq6_guarantees(acc: float, cert: float, acc_rand: float) -> None:
    rel = reliability(acc, cert, acc_rand)
    assert cert >= abs(rel) - 1e-12
    power = 2 * acc ** reliability_exponent(acc_rand) - 1  # the reliability's own calibration of accuracy
    if rel > 0:
        assert power >= rel - 1e-12
    if rel < 0:
        assert power <= rel + 1e-12
    linear = calibrated(acc, acc_rand)  # eq. 5
    if rel > 0 and acc_rand >= 0.5:
        assert linear >= rel - 1e-12
    if rel < 0 and acc_rand <= 0.5:
        assert linear <= rel + 1e-12


def test_eq6_with_the_linear_calibration_fails_below_half_random_accuracy() -> None:
    """The seed's reading of eq. 6 with eq. 5's calibrated accuracy has counterexamples."""
    rel = reliability(0.5, 1.0, 0.25)
    assert rel == pytest.approx(2 * math.sqrt(0.5) - 1)  # m = 0.5
    assert calibrated(0.5, 0.25) == pytest.approx(1 / 3)
    assert calibrated(0.5, 0.25) < rel
    # and for negative reliability when acc_rand > 0.5: eq. 6 wants acc_calib <= rel
    assert reliability(0.6, 1.0, 0.75) < calibrated(0.6, 0.75) < 0


def test_variation_without_original_and_unknown_family_are_counted() -> None:
    recs = build("right", "2 options", n=40)
    recs = [r for r in recs if not (r["source_id"] == "s3" and r["variation"] == "O")]
    recs.append({**recs[0], "id": "odd", "variation": "XX-1"})
    r = evaluate_parc(mcq_from_records(recs), Protocol(seeds=(0,)))
    excluded = {e["reason"]: e["count"] for e in r["excluded"]}
    assert excluded == {"no_original_prompt": 2, "variation_unknown": 1}
    with pytest.raises(InputError, match="source_id"):
        evaluate_parc(
            mcq_from_records([{k: v for k, v in x.items() if k != "source_id"} for x in recs[:9]]), Protocol()
        )


def test_report_layout() -> None:
    r = scores(build("right", "4 options", n=100))
    for score in ("accuracy", "certainty", "consistency", "reliability"):
        assert set(r[score]) == {"variation", "family", "dataset", "model"}
    assert set(r["reliability"]["family"]) == {"O", "LR", "LS"}
    cell = r["cells"]["model|4 options|LS-N"]
    assert cell["acc_rand"] == pytest.approx(0.75) and cell["family"] == "LS"
    assert cell["consistency"]["rand"] == pytest.approx(0.75)  # a different answer from 4 options
