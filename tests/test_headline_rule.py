"""The headline rule (issue 38, item 1), for every registered kind: no primary metric reads
as a perfect judge when the judge abstains on, or fails, every item; and the harnesses' tables
show what the headline says.

Three useless judges per kind, on exchangeable items with a known truth:

* ``abstains``: every answer equally likely on every item (a Likert or option set is the whole
  scale, a pairwise controller accepts no verdict);
* ``fails``: confidently wrong on every item;
* ``silent``: no usable output at all (every record without logprobs): the study has no
  metrics, and the harness's error report has no primary number.

For each, the kind's primary metrics (:func:`judgecp.workflows.headline.primary_metrics`) exist, none is
at its best value, a metric without a best value (a conformal coverage) never stands alone,
VLMEvalKit's ``|overall`` copies are exactly the defined ones, and lm-eval's table
(:mod:`judgecp.kinds.metrics`) has the same numbers (an undefined one is NaN there). Deterministic: no
draw can fail these.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from judgecp import Protocol, evaluate
from judgecp.adapters.vlmeval.summary import OVERALL, primary_keys, with_overall
from judgecp.base.errors import InputError
from judgecp.base.records import choice_record, pair_record, score_record
from judgecp.kinds import get_kind, kind_names
from judgecp.kinds.ensemble.study import study_report, study_settings
from judgecp.kinds.metrics import PrimaryMetric, flatten, metric_values
from judgecp.kinds.reading import from_records
from judgecp.workflows.headline import primary_metrics, report_headline

BEHAVIOURS = ("abstains", "fails", "silent")
#: log-probability of an answer a confident judge does not give
NEVER = -30.0


def judge_logprobs(
    answers: list[str], truth: set[str], behaviour: str, rng: np.random.Generator
) -> dict[str, float]:
    """Log-probability of each answer: uniform (abstains) or all on a wrong one (fails)."""
    if behaviour == "abstains":
        return {a: -math.log(len(answers)) for a in answers}
    wrong = [a for a in answers if a not in truth]
    pick = wrong[int(rng.integers(len(wrong)))]
    return {a: 0.0 if a == pick else NEVER for a in answers}


def likeliest(lp: dict[str, float] | None) -> str | None:
    return None if lp is None else max(lp, key=lambda a: lp[a])


def likert_records(behaviour: str, n: int = 200) -> list[dict[str, Any]]:
    rng = np.random.default_rng(1)
    scale = [str(s) for s in range(1, 6)]
    out = []
    for i in range(n):
        label = int(rng.integers(1, 6))
        lp = None if behaviour == "silent" else judge_logprobs(scale, {str(label)}, behaviour, rng)
        pred = likeliest(lp)
        out.append(
            score_record(
                f"r{i}",
                label=label,
                logprobs=lp,
                prediction=None if pred is None else int(pred),
                group=f"g{i % 3}",
            )
        )
    return out


def pairwise_records(behaviour: str, n: int = 120) -> list[dict[str, Any]]:
    rng = np.random.default_rng(2)
    out = []
    for i in range(n):
        preferred = "AB"[int(rng.integers(2))]  # the preference in the original order
        for order in ("fwd", "rev"):
            shown = preferred if order == "fwd" else {"A": "B", "B": "A"}[preferred]
            lp = (
                None
                if behaviour == "silent"
                else judge_logprobs(["A", "B"], {shown}, behaviour, rng)
            )
            out.append(
                pair_record(
                    f"p{i}/{order}",
                    pair_id=f"p{i}",
                    order=order,
                    label=preferred,
                    logprobs=lp,
                    prediction=likeliest(lp),
                )
            )
    return out


def mcq_records(behaviour: str, n: int = 200) -> list[dict[str, Any]]:
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        options = list("ABCD")
        correct = options[int(rng.integers(4))]
        lp = None if behaviour == "silent" else judge_logprobs(options, {correct}, behaviour, rng)
        out.append(
            choice_record(
                f"q{i}",
                options=options,
                label=[correct],
                logprobs=lp,
                prediction=likeliest(lp),
                task="toy",
            )
        )
    return out


def parc_records(behaviour: str, n: int = 60) -> list[dict[str, Any]]:
    rng = np.random.default_rng(4)
    out = []
    for s in range(n):
        options = list("ABC")
        c = int(rng.integers(3))
        for variation, correct in (
            ("O", [c]),
            ("LR-I", [c]),
            ("LS-N", [j for j in range(3) if j != c]),
        ):
            truth = {options[j] for j in correct}
            lp = None if behaviour == "silent" else judge_logprobs(options, truth, behaviour, rng)
            out.append(
                choice_record(
                    f"m/s{s}/{variation}",
                    options=options,
                    label=sorted(truth),
                    logprobs=lp,
                    prediction=likeliest(lp),
                    source_id=f"s{s}",
                    variation=variation,
                    task="toy",
                    judge="m",
                )
            )
    return out


def ensemble_records(behaviour: str, n: int = 80, prompts: int = 3) -> list[dict[str, Any]]:
    rng = np.random.default_rng(5)
    out = []
    for i in range(n):
        preferred = "AB"[int(rng.integers(2))]
        for p in range(prompts):
            lp = (
                None
                if behaviour == "silent"
                else judge_logprobs(["A", "B"], {preferred}, behaviour, rng)
            )
            out.append(
                pair_record(
                    f"item{i}/p{p}",
                    pair_id=f"item{i}",
                    order="fwd",
                    label=preferred,
                    logprobs=lp,
                    prediction=likeliest(lp),
                    prompt=f"p{p}",
                    meta={"item": f"item{i}", "answer_key": {"A": "A", "B": "B"}},
                )
            )
    return out


RECORDS: dict[str, Callable[[str], list[dict[str, Any]]]] = {
    "likert": likert_records,
    "pairwise": pairwise_records,
    "mcq": mcq_records,
    "parc": parc_records,
    "ensemble": ensemble_records,
}
PROTOCOL = Protocol(alpha=0.1, splits=20, random_state=0)


def study(kind: str, records: list[dict[str, Any]]) -> tuple[dict[str, Any], Protocol]:
    """The kind's report of the records (JSON round trip, as a harness reads it), or the
    harness's error report."""
    try:
        if kind == "ensemble":
            report = study_report(records, study_settings({"validation": 40, "seeds": 3}))
        else:
            report = evaluate(from_records(records, kind=kind), PROTOCOL)
    except InputError as exc:  # what both adapters then report: the counts, no metrics
        report = {"kind": kind, "error": str(exc), "n": 0, "n_read": len(records), "excluded": []}
    return json.loads(json.dumps(report, default=float)), PROTOCOL


def test_every_registered_kind_is_covered() -> None:
    assert set(kind_names()) == set(RECORDS)  # a new kind needs its useless judges here


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
@pytest.mark.parametrize("kind", list(RECORDS))
def test_no_primary_metric_reads_as_a_perfect_judge(kind: str, behaviour: str) -> None:
    report, protocol = study(kind, RECORDS[kind](behaviour))
    headline = report_headline(report, protocol)
    flat = flatten(headline)
    primaries = primary_metrics(headline, kind)
    if behaviour == "silent":
        assert "error" in report and all(flat[m.key] is None for m in primaries)
        assert (
            primary_keys(flatten(with_overall(headline, kind))) == []
        )  # VLMEvalKit: nothing to show as primary
        return
    assert "error" not in report, report.get("error")
    assert primaries, f"{kind}: no primary metric"
    for m in primaries:
        assert not m.reads_best(flat[m.key]), (
            f"{kind} judge that {behaviour}: {m.key} = {flat[m.key]} reads best"
        )
    # a number with a target and no best value (a coverage) comes with one that has a direction
    assert any(m.best is not None and flat[m.key] is not None for m in primaries)
    # VLMEvalKit: the |overall copies are the defined primary metrics, lead first by name
    shown = primary_keys(flatten(with_overall(headline, kind)))
    defined = [m.key for m in primaries if flat[m.key] is not None]
    assert shown == sorted(k if k.endswith(OVERALL) else k + OVERALL for k in defined)
    # lm-eval's table (and judgecp gate) read the same numbers; an undefined one is NaN there
    table = metric_values(report, get_kind(kind).study.metrics(protocol, body=report))
    for m in primaries:
        value = table[m.scalar]
        assert math.isnan(value) if flat[m.key] is None else value == pytest.approx(flat[m.key]), (
            m.key
        )


def test_pairwise_abstaining_judge_reads_coverage_zero_and_no_risk() -> None:
    """The run of the issue: SCOPE abstains on every pair; the summary shows coverage 0, not
    risk 0."""
    report, protocol = study("pairwise", pairwise_records("abstains"))
    assert report["controllers"]["scope"]["0.1"]["abstain_all"] == 1.0
    assert report["controllers"]["scope"]["0.1"]["risk"] == 0.0  # the study's convention, kept
    headline = report_headline(report, protocol)
    assert headline["scope"]["coverage"] == 0.0 and headline["scope"]["risk"] is None
    assert primary_keys(flatten(with_overall(headline, "pairwise"))) == ["scope|coverage|overall"]
    # a controller that accepts every verdict keeps its risk
    assert headline["vanilla"]["risk"] == pytest.approx(
        report["controllers"]["vanilla"]["0.1"]["risk"]
    )


def test_calibrated_headlines_follow_the_rule() -> None:
    from judgecp.workflows.calibrators import apply, calibrate
    from judgecp.workflows.headline import calibrated_headline

    for kind, behaviour in (
        ("likert", "abstains"),
        ("pairwise", "abstains"),
        ("pairwise", "fails"),
    ):
        data = from_records(RECORDS[kind](behaviour), kind=kind)
        half = np.arange(data.n // 2)
        cal = calibrate(data.take(half), alpha=0.1)
        headline = calibrated_headline(
            apply(cal, data.take(np.arange(data.n // 2, data.n))).summary
        )
        primaries = primary_metrics(headline, "calibrated")
        assert primaries and not any(m.reads_best(headline[m.key]) for m in primaries), (
            kind,
            headline,
        )


def test_reads_best() -> None:
    risk = PrimaryMetric("scope|risk", False, 0.0, "risk_scope_0.1")
    assert (
        risk.reads_best(0.0)
        and risk.reads_best(0)
        and not risk.reads_best(None)
        and not risk.reads_best(0.1)
    )
    assert not PrimaryMetric("naive|coverage", None, None, "coverage_naive").reads_best(1.0)
    assert not risk.reads_best(False)  # a flag is not a number
