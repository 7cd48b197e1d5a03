"""Issue 35, the second hour of a new user: typos and swapped arguments, what gate and apply print, the
nightly loop's report, and the names reports give lm-eval runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgecp.cli import main


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def nightly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded nightly example, calibrated: calibration.jsonl, night_a/b.jsonl, judge.cal.json."""
    folder = tmp_path_factory.mktemp("nightly") / "nightly"
    assert main(["example", str(folder)]) == 0
    assert main(["calibrate", str(folder / "calibration.jsonl"), "-o", str(folder / "judge.cal.json")]) == 0
    return folder


# -- typos and swaps ---------------------------------------------------------------------------------


def test_a_mistyped_flag_of_a_subcommand_gets_its_usage_and_the_flag_meant(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["evaluate", "x.csv", "--methd", "lac"], capsys)
    assert code == 2
    assert "usage: judgecp evaluate" in err  # the subcommand's usage, not the top-level one
    assert "unrecognized arguments: --methd lac" in err
    assert "did you mean --methods for --methd?" in err


def test_a_typo_that_leaves_a_required_flag_out_says_which_flag_was_meant(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["calibrate", "x.jsonl", "--ouput", "cal.json"], capsys)
    assert code == 2
    assert "usage: judgecp calibrate" in err
    assert "required: -o/--output" in err and "did you mean --output for --ouput?" in err


def test_a_known_prefix_or_a_far_flag_gets_no_hint(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["evaluate", "x.csv", "--zzzzzz"], capsys)
    assert code == 2 and "unrecognized arguments: --zzzzzz" in err and "did you mean" not in err


def test_apply_with_its_arguments_swapped_says_so(nightly: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal, night = nightly / "judge.cal.json", nightly / "night_a.jsonl"
    code, _, err = run(["apply", str(night), str(cal)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{cal} is the calibrator: the order is `judgecp apply CALIBRATOR INPUT`" in err
    assert f"(judgecp apply {cal} {night})" in err
    # two runs (no calibrator at all): the plain error, no swap suggested
    code, _, err = run(["apply", str(night), str(nightly / "night_b.jsonl")], capsys)
    assert code == 2 and "not a JSON calibrator" in err and "the order is" not in err


def test_a_missing_label_column_is_never_matched_to_a_judge_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "judged.csv"
    table.write_text("sample_id,s2_lp1,s2_lp2,s2_lp3,s2_lp4,s2_lp5,parsed_score,judge_score,annot\n"
                     "0,-1,-2,-3,-4,-5,1,1,2\n")
    code, _, err = run(["calibrate", str(table), "-o", str(tmp_path / "c.json"), "--label", "human_score"], capsys)
    assert code == 2 and "unknown --label column 'human_score'" in err
    assert "did you mean" not in err  # parsed_score, judge_score are the judge's: never the human label
    assert "parsed_score" in err  # still listed among the columns there are
    code, _, err = run(["calibrate", str(table), "-o", str(tmp_path / "c.json"), "--label", "annots"], capsys)
    assert code == 2 and "did you mean 'annot'?" in err


# -- gate and apply output ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def applied(nightly: Path) -> dict[str, Path]:
    """apply --json of night A (labeled: an estimate) and of night B without its labels (drift: withheld)."""
    cal = str(nightly / "judge.cal.json")
    unlabeled = nightly / "night_b_unlabeled.jsonl"
    rows = [json.loads(line) for line in (nightly / "night_b.jsonl").read_text().splitlines()]
    unlabeled.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "label"}) + "\n" for r in rows))
    out = {"a": nightly / "apply_a.json", "b": nightly / "apply_b.json"}
    assert main(["apply", cal, str(nightly / "night_a.jsonl"), "--json", str(out["a"])]) == 0
    assert main(["apply", cal, str(unlabeled), "--json", str(out["b"])]) == 0
    return out


def test_a_passing_gate_shows_the_values_it_checked(applied: dict[str, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    summary = json.loads(applied["a"].read_text())
    code, out, _ = run(["gate", str(applied["a"]), "--no-drift", "--max", "set_size=4",
                        "--min", "estimate.ppi.lower=2"], capsys)
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[-1] == "judgecp gate: ok (3 condition(s))"
    assert f"judgecp gate: ok set_size = {summary['mean_set_size']:.6g} <= 4" in lines
    assert f"judgecp gate: ok estimate.ppi.lower = {summary['estimate']['estimate']['ppi']['lower']:.6g} >= 2" in lines
    assert f"judgecp gate: ok no drift (drift.alarm = 0, p = {summary['drift']['p_value']:.3g})" in lines


def test_gate_list_gives_each_untrusted_reason_once(applied: dict[str, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["gate", str(applied["b"]), "--list"], capsys)
    assert code == 0
    lines = out.strip().splitlines()
    marked = [line for line in lines if line.endswith("untrusted [1]")]
    assert len(marked) >= 10  # every metric of the withheld estimate is marked ...
    reasons = [line for line in lines if line.startswith("[")]
    assert len(reasons) == 1 and reasons[0].startswith("[1] untrusted: no estimate (drift")  # ... its reason once
    assert out.count("not carried over from the calibrator") == 1


def test_apply_and_estimate_say_why_their_ppi_intervals_differ(nightly: Path, applied: dict[str, Path],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["apply", str(nightly / "judge.cal.json"), str(nightly / "night_a.jsonl")], capsys)
    summary = json.loads(applied["a"].read_text())["estimate"]
    assert code == 0 and summary["lambda_from"] == "calibrator"
    assert f"power tuning lambda {summary['lambda']:.3f} from the calibrator's labeled pairs" in out
    code, out, _ = run(["estimate", str(nightly / "night_a.jsonl"), "--json", str(nightly / "e.json")], capsys)
    own = json.loads((nightly / "e.json").read_text())
    assert code == 0 and abs(own["lambda"] - summary["lambda"]) > 1e-3  # the two intervals do differ ...
    assert f"power tuning lambda {own['lambda']:.3f} from these labels (judgecp apply takes lambda from" in out


# -- noise -------------------------------------------------------------------------------------------


def test_the_example_names_its_judge_so_apply_checks_it(nightly: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["apply", str(nightly / "judge.cal.json"), str(nightly / "night_a.jsonl")], capsys)
    assert code == 0 and "judge not checked" not in out
    assert "judge judgecp-synthetic-likert (checked against the calibrator's)" in out


def test_the_examples_intended_group_gap_is_a_note_not_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["evaluate", "--example", "--quiet", "--splits", "3"], capsys)
    assert code == 0 and "judgecp: warning" not in err
    assert err.startswith("judgecp: note: expected on the embedded example") and "cover below the target" in err


# -- the nightly loop's report -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def six_nights(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Six nights of one calibrator in one history: four healthy, then a judge grown kinder (drift)."""
    from judgecp.synthetic.judges import simulate_likert_judge
    from judgecp.workflows.calibrators import apply, calibrate
    from judgecp.workflows.results import ApplyResult

    folder = tmp_path_factory.mktemp("six")
    cal = calibrate(simulate_likert_judge(600, seed=1), method="naive")
    summaries = []
    for night in range(1, 7):
        data = simulate_likert_judge(800, seed=10 + night, judge_bias=0.3 if night <= 4 else 0.9)
        data.labels[200:] = np.nan  # 200 labels a night
        path = folder / f"night{night}.apply.json"
        path.write_text(ApplyResult(apply(cal, data, history=folder / "history.jsonl").summary).dumps())
        summaries.append(path)
    return folder / "history.jsonl", summaries


def _figure_data(report: Path) -> tuple[list[float], list[float], list[float], list[str]]:
    """What the one figure across nights draws: evidence, PPI++ means, set sizes, and the night ticks."""
    from judgecp.workflows.reports import build_document, load_runs
    from judgecp.workflows.reports.figures import Plot

    doc, _ = build_document(load_runs([str(report)] if isinstance(report, Path) else [str(p) for p in report]))
    figures = [value for kind, value in doc.blocks if kind == "figure"]
    assert len(figures) == 1 and isinstance(figures[0], Plot)  # one figure, however many nights
    drift, est, size = figures[0].figure.axes
    ticks = [t.get_text() for t in size.get_xticklabels()]
    return (list(drift.get_lines()[0].get_ydata()), list(est.containers[0].lines[0].get_ydata()),
            list(size.get_lines()[0].get_ydata()), ticks)


def test_report_of_a_history_draws_one_figure_across_its_nights(six_nights: tuple[Path, list[Path]]) -> None:
    history, summaries = six_nights
    last = json.loads(summaries[-1].read_text())
    evidence, means, sizes, ticks = _figure_data(history)
    assert evidence == pytest.approx(last["history"]["evidence_by_night"], rel=1e-9)
    assert ticks == ["1", "2", "3", "4", "5", "6"]  # whole nights, each once
    for night, path in enumerate(summaries):
        summary = json.loads(path.read_text())
        assert sizes[night] == pytest.approx(summary["mean_set_size"])
        assert means[night] == pytest.approx(summary["estimate"]["estimate"]["ppi"]["mean"])
    assert last["history"]["alarm"]  # the drift after night 4 is seen, and drawn as the first alarm
    assert max(evidence[:4]) < last["history"]["threshold"] <= evidence[-1]


def test_report_of_several_apply_summaries_is_the_same_one_figure(six_nights: tuple[Path, list[Path]]) -> None:
    history, summaries = six_nights
    assert _figure_data(summaries) == _figure_data(history)  # type: ignore[arg-type]


def test_the_nightly_report_has_its_own_header_and_a_table_per_night(
        six_nights: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history, _ = six_nights
    code, _, _ = run(["report", str(history), "-o", str(tmp_path / "rep")], capsys)
    assert code == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert md.startswith("# judgecp report: the nightly loop") and "conformal set" not in md
    rows = [line for line in md.splitlines() if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert [row.split("|")[1].strip() for row in rows] == ["1", "2", "3", "4", "5", "6"]
    assert "ALARM" in rows[-1] and "ALARM" not in rows[0]


def test_the_examples_coverage_warning_is_in_the_html_report(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "judge.json"
    assert main(["evaluate", "--example", "--group", "group", "--splits", "3", "--quiet", "--json",
                 str(report)]) == 0
    warned = json.loads(report.read_text())["warnings"]
    assert warned
    code, _, _ = run(["report", str(report), "-o", str(tmp_path / "rep")], capsys)
    html = (tmp_path / "rep" / "report.html").read_text()
    assert code == 0 and f"{len(warned)} group/method pairs" in html and "cover below the target" in html


# -- labels in reports, and the demo's one story -----------------------------------------------------


def _demo_batches() -> dict[str, Any]:
    """The demo's judge (the records judgecp-replay serves) as lm-eval's three subtasks' records."""
    from judgecp.data.formats import RecordBatch
    from judgecp.kinds.reading import to_records
    from judgecp.synthetic.judges import simulate_likert_judge

    records = to_records(simulate_likert_judge(600, seed=2026))
    return {f"judgecp_demo_{g}": RecordBatch([r for r in records if r["group"] == g], g, n_read=0, kind="likert")
            for g in ("easy", "medium", "hard")}


def _widths(report: dict[str, Any]) -> dict[str, float]:
    return {g: entry["methods"]["naive"]["labels"]["width"] for g, entry in report["groups"].items()}


def test_the_report_of_an_lm_eval_group_tells_the_story_of_lm_evals_table() -> None:
    """lm-eval's table evaluates each subtask alone; the report of the group calibrates each subtask on its
    own too (Mondrian by subtask), so its per-group widths are the table's up to the random splits, and rank
    the groups the same way (pooled calibration ranked them the other way round: issue 35)."""
    from judgecp.workflows.reports.collect import SUBTASK_FIELD, combine_subtasks, evaluate_batch

    batches = _demo_batches()
    table = {t.rsplit("_", 1)[1]: evaluate_batch(b, None)["methods"]["naive"]["labels"]["width"]
             for t, b in batches.items()}
    report = evaluate_batch(combine_subtasks("judgecp_demo", batches), None, SUBTASK_FIELD, per_group=True)
    assert report["protocol"]["mondrian"] == SUBTASK_FIELD
    widths = _widths(report)
    assert sorted(widths, key=widths.__getitem__) == sorted(table, key=table.__getitem__) == ["easy", "medium", "hard"]
    assert all(abs(widths[g] - table[g]) < 0.2 for g in table), (widths, table)
    pooled = _widths(evaluate_batch(combine_subtasks("judgecp_demo", batches), None, SUBTASK_FIELD))
    assert pooled["hard"] < pooled["easy"]  # the other story, which the report no longer tells


def test_repeated_runs_of_one_model_and_task_are_told_apart_by_their_date() -> None:
    from judgecp.workflows.reports.collect import distinct_names

    def runs(*stems: str) -> list[tuple[str, Path, Any]]:
        return [("judgecp-replay: judgecp_demo", Path(f"out/x{i}/{stem}.json"), {}) for i, stem in enumerate(stems)]

    assert distinct_names(runs("results_2026-11-28T11-59-39.291326", "results_2026-11-28T12-03-02.000001")) == [
        "judgecp-replay: judgecp_demo, 2026-11-28 11:59", "judgecp-replay: judgecp_demo, 2026-11-28 12:03"]
    assert distinct_names(runs("results_2026-11-28T11-59-39.291326", "results_2026-11-28T11-59-41.5")) == [
        "judgecp-replay: judgecp_demo, 2026-11-28 11:59:39", "judgecp-replay: judgecp_demo, 2026-11-28 11:59:41"]
    assert distinct_names(runs("results_2026-11-28T11-59-39.1", "results_2026-11-28T11-59-39.2")) == [
        "judgecp-replay: judgecp_demo, 2026-11-28 11:59:39.1", "judgecp-replay: judgecp_demo, 2026-11-28 11:59:39.2"]
    assert distinct_names(runs("a", "b")) == [
        "judgecp-replay: judgecp_demo (x0/a)",
        "judgecp-replay: judgecp_demo (x1/b)",
    ]
    assert distinct_names(runs("results_2026-11-28T11-59-39.1")) == ["judgecp-replay: judgecp_demo"]  # alone: short


def test_long_legend_labels_get_fewer_columns() -> None:
    from judgecp.present.figures import LEGEND_ROW_CHARACTERS, legend_columns

    assert legend_columns(["naive", "lac", "target"], 4) == 4  # short labels: as before
    long = ["judgecp-replay: judgecp_demo, 2026-11-28 11:59:39 (Mondrian calibration)"] * 2
    assert legend_columns(long, 4) * (len(long[0]) + 5) <= LEGEND_ROW_CHARACTERS


def test_a_folder_of_a_history_and_its_apply_summaries_draws_the_nights_once(
        six_nights: tuple[Path, list[Path]]) -> None:
    history, _ = six_nights
    assert _figure_data(history.parent) == _figure_data(history)  # type: ignore[arg-type]


def test_an_edited_night_in_a_history_is_refused_by_report(six_nights: tuple[Path, list[Path]], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    history, _ = six_nights
    lines = history.read_text().splitlines()
    night = json.loads(lines[2])
    night["applied"]["estimate"]["mean"] += 0.5  # a better night than it was
    edited = tmp_path / "history.jsonl"
    edited.write_text("\n".join([*lines[:2], json.dumps(night), *lines[3:]]) + "\n")
    code, _, err = run(["report", str(edited), "-o", str(tmp_path / "rep")], capsys)
    assert code == 2 and "line 3: its `applied` does not match its digest" in err
