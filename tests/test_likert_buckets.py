"""The Likert detail lines: a bucket without test rows prints "-", never a coverage (issue 38: Polaris printed
``5: 1.000/4.00 (n 0)``)."""

from __future__ import annotations

from judgecp.kinds.likert.present import bucket_cell, stratum_count


def test_an_empty_bucket_prints_a_dash_and_a_full_one_its_numbers() -> None:
    empty = {"n": 0, "labels": {"coverage": 1.0, "width": 4.0}}
    assert f"5: {bucket_cell(empty, 'labels')} (n {stratum_count(empty['n'])})" == "5: - (n 0)"
    assert bucket_cell({"n": 3.0, "labels": {"coverage": None, "width": None}}, "labels") == "-"
    assert bucket_cell({"n": 2.5, "labels": {"coverage": 0.9, "width": 1.5}}, "labels") == "0.900/1.50"
    assert bucket_cell({"n": 0.5, "interval": {"coverage": 1.0, "width": 2.25}}, "interval") == "1.000/2.25"
