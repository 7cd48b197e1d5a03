"""``judgecp report``: each figure's content through matplotlib's objects, the Markdown and the HTML."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")

from judgecp.base.jsonio import dumps
from judgecp.cli import main
from judgecp.kinds.protocol import Protocol
from judgecp.kinds.reading import from_records
from judgecp.synthetic.judges import (
    simulate_likert_judge,
    simulate_mcq_records,
    simulate_pairwise_judge,
    simulate_parc_records,
)
from judgecp.workflows.reports import build_document, write_report
from judgecp.workflows.reports import figures as F
from judgecp.workflows.reports.figures import Missing, Plot
from judgecp.workflows.reports.load import load_runs
from judgecp.workflows.results import with_digest
from judgecp.workflows.study import evaluate

METHODS = ("naive", "lac")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small reports of every kind, written as `judgecp evaluate --json` writes them."""
    d = tmp_path_factory.mktemp("reports")
    likert = simulate_likert_judge(600)
    other = simulate_parc_records(150, seed=1, models=("m1", "m2"), dataset="other")
    parc = simulate_parc_records(150, models=("m1", "m2")) + [{**r, "id": "other/" + r["id"]} for r in other]
    made = {
        "pooled": evaluate(likert, Protocol(methods=METHODS, splits=3, group="group", alphas=(0.05, 0.2))),
        "mondrian": evaluate(likert, Protocol(methods=METHODS, splits=3, mondrian="group", alphas=(0.05, 0.2))),
        "plain": evaluate(simulate_likert_judge(400, seed=2), Protocol(methods=METHODS, splits=3)),
        "pairwise": evaluate(simulate_pairwise_judge(400), Protocol(splits=40)),
        "mcq": evaluate(from_records(simulate_mcq_records(400), source="sim"),
                        Protocol(methods=("lac", "aps"), splits=3, alphas=(0.05, 0.2))),
        "parc": evaluate(from_records(parc, source="sim"), Protocol(splits=3)),
    }
    out = {}
    for name, report in made.items():
        out[name] = d / f"{name}.json"
        out[name].write_text(dumps(report))
    return out


def runs(reports: dict[str, Path], *names: str):
    return load_runs([reports[n] for n in names])


def target_lines(ax) -> list:
    return [ln for ln in ax.get_lines() if ln.get_label().startswith("target")]


def data_lines(ax) -> list:
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith(("target", "_"))]


def test_likert_sweep_one_line_per_method_and_the_target(reports) -> None:
    (run,) = runs(reports, "pooled")
    plot = F.likert_sweep([run], "naive")
    assert isinstance(plot, Plot)
    ax_cov, ax_w = plot.figure.axes
    assert plot.figure.get_suptitle() == "Coverage and width against α"
    assert ax_cov.get_xlabel() == "α (miscoverage level)"
    assert ax_cov.get_ylabel() == "coverage of the label sets"
    assert ax_w.get_ylabel() == "mean label-set width (scale points)"
    assert [ln.get_label() for ln in data_lines(ax_cov)] == list(METHODS)
    (target,) = target_lines(ax_cov)
    np.testing.assert_allclose(target.get_ydata(), 1 - np.asarray(target.get_xdata()))
    sweep = run.report["alpha_sweep"]["methods"]["lac"]
    lac = data_lines(ax_cov)[1]
    np.testing.assert_allclose(lac.get_xdata(), [0.05, 0.1, 0.2])
    np.testing.assert_allclose(lac.get_ydata(), [sweep[k]["labels"]["coverage"] for k in ("0.05", "0.1", "0.2")])
    assert len(data_lines(ax_w)) == 2 and not target_lines(ax_w)


def test_several_reports_one_line_per_report(reports) -> None:
    rs = runs(reports, "pooled", "mondrian")
    plot = F.likert_sweep(rs, "lac")
    assert [ln.get_label() for ln in data_lines(plot.figure.axes[0])] == ["pooled", "mondrian"]
    plot = F.coverage_by_label(rs, "lac")
    ax = plot.figure.axes[0]
    assert [ln.get_label() for ln in data_lines(ax)] == ["pooled", "mondrian"]
    assert ax.get_xlabel() == "human label" and len(target_lines(ax)) == 1
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == ["1", "2", "3", "4", "5"]


def test_sweep_missing_is_reported_not_drawn(reports) -> None:
    (run,) = runs(reports, "plain")
    result = F.likert_sweep([run], "naive")
    assert isinstance(result, Missing) and "--alphas" in result.reason
    mixed = F.likert_sweep(runs(reports, "pooled", "plain"), "naive")
    assert "Not shown (alpha_sweep missing): plain" in mixed.caption


def test_likert_methods_bars_and_target(reports) -> None:
    (run,) = runs(reports, "plain")
    plot = F.likert_methods([run], "naive")
    ax_cov, ax_w = plot.figure.axes
    assert [t.get_text() for t in ax_cov.get_yticklabels()] == list(METHODS)
    (target,) = target_lines(ax_cov)
    assert target.get_xdata()[0] == pytest.approx(0.9)
    widths = [p.get_width() for p in ax_cov.patches]
    assert widths == pytest.approx([run.report["methods"][m]["labels"]["coverage"] for m in METHODS])
    assert ax_w.get_xlabel() == "mean label-set width (scale points)"


def test_group_coverage_pooled_against_mondrian(reports) -> None:
    rs = runs(reports, "pooled", "mondrian")
    plot = F.group_coverage(rs, "naive")
    ax = plot.figure.axes[0]
    assert ax.get_title() == "Coverage per group: pooled and Mondrian calibration"
    assert ax.get_ylabel() == "coverage of the label sets"
    assert len(ax.containers) == 2  # one bar series per report
    groups = [t.get_text() for t in ax.get_xticklabels()]
    assert sorted(groups) == ["easy", "hard", "medium"]
    heights = [p.get_height() for p in ax.containers[1]]
    expected = [rs[1].report["groups"][g]["methods"]["naive"]["labels"]["coverage"] for g in groups]
    assert heights == pytest.approx(expected)
    assert target_lines(ax)[0].get_ydata()[0] == pytest.approx(0.9)
    labels = [t.get_text() for t in plot.figure.legends[0].get_texts()]
    assert labels[1:] == ["pooled", "mondrian"]  # the names say the calibration already
    named = load_runs([reports["pooled"], reports["mondrian"]], ["judge", "judge again"])
    labels = [t.get_text() for t in F.group_coverage(named, "naive").figure.legends[0].get_texts()]
    assert labels[1:] == ["judge (pooled calibration)", "judge again (Mondrian calibration)"]
    (single,) = runs(reports, "mondrian")
    assert F.group_coverage([single], "naive").figure.axes[0].get_title() == "Coverage per group (Mondrian calibration)"
    assert isinstance(F.group_coverage(runs(reports, "plain"), "naive"), Missing)


def test_confusion_width_distribution_and_rsg(reports) -> None:
    rs = runs(reports, "pooled", "plain")
    plot = F.confusion(rs, "naive")
    images = [ax.images[0] for ax in plot.figure.axes if ax.images]
    assert len(images) == 2
    np.testing.assert_allclose(images[0].get_array(), np.asarray(rs[0].report["confusion"]["row_percent"], float))
    assert plot.figure.axes[0].get_xlabel() == "judge score" and plot.figure.axes[0].get_ylabel() == "human label"
    wd = F.width_distribution(rs[:1], "naive").figure.axes[0]
    assert wd.get_xlabel() == "share of test items" and len(wd.containers) == 3
    inf = rs[0].report["methods"]["lac"]["informativeness"]
    assert [c.patches[1].get_width() for c in wd.containers] == pytest.approx(
        [inf[b] for b in ("decisive", "moderate", "uninformative")]
    )
    rsg = F.rsg(rs, "naive")
    ax = rsg.figure.axes[0]
    assert ax.get_ylabel().startswith("RSG") and len(ax.containers) == 1
    assert "Not shown (per-group table missing): plain" in rsg.caption


def test_pairwise_figures(reports) -> None:
    (run,) = runs(reports, "pairwise")
    rc = F.risk_coverage([run], "scope").figure.axes[0]
    signals = list(run.report["risk_coverage"])
    assert [ln.get_label() for ln in rc.get_lines() if ln.get_label().startswith("signal")] == [
        f"signal {s}" for s in signals
    ]
    markers = [ln for ln in rc.get_lines() if " at α = 0.1" in ln.get_label()]
    assert len(markers) == len(run.report["controllers"])
    assert target_lines(rc)[0].get_ydata()[0] == pytest.approx(0.1)
    assert rc.get_xlabel().startswith("coverage") and rc.get_ylabel().startswith("risk")
    risk = F.risk_vs_alpha([run], "scope").figure.axes[0]
    (target,) = target_lines(risk)
    np.testing.assert_allclose(target.get_xdata(), target.get_ydata())  # risk = alpha
    assert len(risk.containers) == len(run.report["controllers"])  # one errorbar series per controller
    share = F.accepted_share([run], "scope").figure.axes[0]
    assert share.get_ylabel() == "accepted share of test judgments" and not target_lines(share)


def test_mcq_and_parc_figures(reports) -> None:
    (mcq,) = runs(reports, "mcq")
    ax_cov, ax_s = F.mcq_sweep([mcq], "lac").figure.axes
    assert len(data_lines(ax_cov)) == 2 and len(target_lines(ax_cov)) == 1
    assert ax_s.get_ylabel() == "mean set size (options)"
    (parc,) = runs(reports, "parc")
    plot = F.parc_heatmaps([parc], "")
    heat = [ax for ax in plot.figure.axes if ax.images]
    assert len(heat) == 4  # two models x (reliability, consistency)
    assert heat[0].get_title().startswith("calibrated reliability")
    assert [t.get_text() for t in heat[0].get_xticklabels()] == ["comparative", "other"]
    rows = [t.get_text().split(" ")[0] for t in heat[0].get_yticklabels()]
    assert rows[0] == "O"
    arr = heat[0].images[0].get_array()
    cell = parc.report["cells"][f"m1|comparative|{rows[1]}"]
    assert arr[1, 0] == pytest.approx(cell["reliability"]["calibrated"])
    assert np.ma.is_masked(heat[1].images[0].get_array()[0, 0]) or np.isnan(heat[1].images[0].get_array()[0, 0])


def test_documents_tables_and_embedded_figures(reports, tmp_path) -> None:
    paths = [reports[n] for n in ("pooled", "mondrian", "plain", "pairwise", "mcq", "parc")]
    written = write_report(paths, tmp_path / "out")
    md = written.markdown.read_text()
    page = written.html.read_text()
    assert "| judge | naive | lac |" in md  # judges as rows, methods as columns
    assert re.search(r"^\| pooled \| 0\.\d{3} / \d\.\d\d \| ", md, re.M)
    figures = re.findall(r"!\[[^]]*\]\((figures/[^)]+\.png)\)", md)
    assert len(figures) == len({p.stem for p in written.figures})
    for f in figures:
        assert (tmp_path / "out" / f).is_file() and (tmp_path / "out" / f).with_suffix(".svg").is_file()
    assert "Not drawn (missing from the report)" not in md  # every figure's data is in these reports
    assert "Not shown (alpha_sweep missing): plain" in md  # ... but not in every report
    lonely = write_report([reports["plain"]], tmp_path / "plain").markdown.read_text()
    assert "## Likert judges" in lonely and "### Not drawn (missing from the report)" in lonely
    assert (
        "- Coverage and width against α: no `alpha_sweep` in the report: run `judgecp evaluate` with `--alphas"
        in lonely
    )
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len(figures)
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    assert "<script" not in page and 'src="http' not in page and "<table>" in page
    n_tables = len(re.findall(r"^\|---", md, re.M))
    assert n_tables >= 5 and page.count("<table>") == n_tables


def test_output_is_deterministic(reports, tmp_path) -> None:
    paths = [reports["pooled"], reports["pairwise"]]
    a = write_report(paths, tmp_path / "a")
    write_report(paths, tmp_path / "b")
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) == 2 + 2 * (len(a.figures) // 2)
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    svg = next((tmp_path / "a" / "figures").glob("*.svg")).read_text()
    assert "<dc:date>" not in svg
    assert b"Software" not in next((tmp_path / "a" / "figures").glob("*.png")).read_bytes()


def test_cli(reports, tmp_path, capsys) -> None:
    out = tmp_path / "cli"
    assert main(["report", str(reports["pooled"]), str(reports["plain"]), "-o", str(out),
                 "--names", "judge A,judge B", "--method", "lac"]) == 0
    text = capsys.readouterr().out
    assert "report.html" in text
    md = (out / "report.md").read_text()
    assert "| judge A |" in md and "method `lac`" in md
    assert main(["report", str(reports["pooled"]), "-o", str(out), "--names", "a,b"]) == 2
    assert main(["report", str(tmp_path / "absent.json"), "-o", str(out)]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hello": 1}))
    assert main(["report", str(bad), "-o", str(out)]) == 2
    bad.write_text(json.dumps({"kind": "ensemble", "methods": {}}))
    assert main(["report", str(bad), "-o", str(out)]) == 2
    assert "a ensemble report; judgecp report draws likert, pairwise, mcq, parc reports" in capsys.readouterr().err
    assert main(["report", str(reports["pooled"]), "-o", str(out), "--method", "nope"]) == 2
    assert "not in every likert report" in capsys.readouterr().err


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def open_in_chromium(browser: str, page: Path, shot: Path) -> tuple[list[str], np.ndarray]:
    """Console messages (errors included) and the screenshot's RGB pixels of ``page`` in headless chromium."""
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
           "--v=0", f"--screenshot={shot}", "--window-size=1200,2400", page.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    from matplotlib.image import imread

    return console, imread(str(shot))[..., :3]


def not_blank(pixels: np.ndarray) -> bool:
    """Many distinct colours, and a good share of the page not white."""
    colours = len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    return colours > 50 and float((pixels.min(axis=2) < 0.9).mean()) > 0.02


def test_html_opens_in_headless_chromium(reports, tmp_path) -> None:
    """The page renders with no console message and a screenshot that is not blank."""
    browser = chromium()
    if browser is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install chromium)")
    written = write_report([reports["pooled"], reports["pairwise"]], tmp_path / "out")
    console, pixels = open_in_chromium(browser, written.html, tmp_path / "shot.png")
    assert not console, console
    assert pixels.shape[0] > 100 and not_blank(pixels)
    # negative controls: the same checks see a script error and a blank page
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><p>x</p><script>undefinedFunction();</script></body></html>")
    console, pixels = open_in_chromium(browser, broken, tmp_path / "broken.png")
    assert any("undefinedFunction" in line for line in console)
    assert not not_blank(pixels)


def test_without_matplotlib_an_install_hint(reports, tmp_path, monkeypatch, capsys) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["report", str(reports["plain"]), "-o", str(tmp_path / "x")]) == 2
    assert "pip install judgecp[report]" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_folder_of_vlmeval_reports(reports, tmp_path) -> None:
    """VLMEvalKit writes the same reports as <model>_<dataset>_cp.json; lm-eval's results files are left out."""
    folder = tmp_path / "outputs" / "Qwen-lp"
    folder.mkdir(parents=True)
    shutil.copy(reports["pooled"], folder / "Qwen-lp_MLLMJudge_CP_cp.json")
    shutil.copy(reports["pairwise"], folder / "Qwen-lp_MLLMJudgePair_CP_selective.json")
    (folder / "results_2026-01-01T00-00-00.json").write_text(json.dumps({"results": {}}))
    (folder / "status.json").write_text(json.dumps({"ok": True}))
    written = write_report([tmp_path / "outputs"], tmp_path / "out")
    md = written.markdown.read_text()
    assert "| Qwen-lp/Qwen-lp_MLLMJudge_CP_cp | likert |" in md
    assert "| Qwen-lp/Qwen-lp_MLLMJudgePair_CP_selective | pairwise |" in md
    assert "results_" not in md and "status" not in md
    assert main(["report", str(tmp_path / "nothing"), "-o", str(tmp_path / "o2")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty"), "-o", str(tmp_path / "o2")]) == 2


@pytest.mark.slow
def test_an_lm_eval_output_folder_in_one_command(tmp_path) -> None:
    """`lm_eval ... --log_samples` then `judgecp report OUTPUT_DIR`: the samples files are evaluated and drawn."""
    from tests.lm_eval.helpers import lm_eval_cmd, offline_env, run, skip_without_lm_eval

    skip_without_lm_eval()
    out = tmp_path / "lm_out"
    run(lm_eval_cmd("--model", "judgecp-replay", "--tasks", "judgecp_demo_easy", "--output_path", str(out),
                    "--log_samples"), offline_env(tmp_path))
    written = write_report([out], tmp_path / "report", alphas=(0.05, 0.2))
    md = written.markdown.read_text()
    assert re.search(r"^\| [^|]*judgecp_demo_easy \| likert \|", md, re.M)
    assert (tmp_path / "report" / "figures" / "likert_sweep.png").is_file()
    runs_ = load_runs([out], alphas=(0.05, 0.2))
    assert runs_[0].report["alpha_sweep"]["alphas"] == [0.05, 0.1, 0.2]


def test_diagram_data_agree_with_the_reported_numbers(reports) -> None:
    from judgecp.stats.diagrams import reliability_bins
    from judgecp.stats.signals import expected_calibration_error

    rng = np.random.default_rng(0)
    conf = rng.random(500)
    correct = rng.random(500) < conf
    bins = reliability_bins(conf, correct)
    assert bins["ece"] == pytest.approx(expected_calibration_error(conf, correct.astype(int)))
    assert sum(b["n"] for b in bins["bins"]) == 500
    (pair,) = runs(reports, "pairwise")
    for sig, diag in pair.report["reliability_diagram"].items():
        assert diag["ece"] == pytest.approx(pair.report["uncertainty"][sig]["ece"])
    (mcq,) = runs(reports, "mcq")
    for spec, dist in mcq.report["set_size_distribution"].items():
        assert sum(dist.values()) == pytest.approx(1.0)
        mean = sum(int(k) * v for k, v in dist.items())
        assert mean == pytest.approx(mcq.report["methods"][spec]["set_size"])  # equal test halves: same mean
        assert dist["0"] == pytest.approx(mcq.report["methods"][spec]["empty"])
    (lik,) = runs(reports, "plain")
    diag = lik.report["reliability_diagram"]
    assert sum(b["n"] for b in diag["bins"]) == lik.report["n"]


def test_reliability_and_set_size_figures(reports) -> None:
    (lik,) = runs(reports, "plain")
    ax = F.judge_reliability([lik], "naive").figure.axes[0]
    (line,) = data_lines(ax)
    pts = [b for b in lik.report["reliability_diagram"]["bins"] if b["n"]]
    np.testing.assert_allclose(line.get_ydata(), [b["accuracy"] for b in pts])
    (target,) = target_lines(ax)
    np.testing.assert_allclose(target.get_xdata(), target.get_ydata())
    assert ax.get_xlabel().startswith("confidence") and "ECE" in line.get_label()
    (pair,) = runs(reports, "pairwise")
    ax = F.signal_reliability([pair], "scope").figure.axes[0]
    assert len(data_lines(ax)) == len(pair.report["reliability_diagram"])
    (mcq,) = runs(reports, "mcq")
    ax = F.set_size_hist([mcq], "lac").figure.axes[0]
    assert len(ax.containers) == 2 and ax.get_xlabel() == "set size (options)"
    assert [p.get_height() for p in ax.containers[0]] == pytest.approx(
        list(mcq.report["set_size_distribution"]["lac"].values())
    )
    old = {k: v for k, v in lik.report.items() if k != "reliability_diagram"}
    from judgecp.present.runs import Run

    assert isinstance(F.judge_reliability([Run("old", "old.json", old)], "naive"), Missing)


@pytest.mark.shared_data
def test_real_judge_coverage_by_label_figure(tmp_path) -> None:
    """LLaVA-Critic-7B on MLLM-as-a-Judge, naive CP calibrated per task at alpha 0.1: the figure shows the
    issue's finding, coverage 0.90 overall but about 0.64 on items humans rated 1 and 0.79 on those rated 2."""
    from tests.helpers import shared_file

    features = shared_file("mllm_judge", "llava_critic_7b_features.csv")
    tasks = shared_file("mllm_judge", "task_labels.csv")
    out = tmp_path / "llava.json"
    assert main(["evaluate", str(features), "--join", str(tasks), "--mondrian", "orig_dataset", "--methods", "naive",
                 "--json", str(out), "--quiet"]) == 0
    (run,) = load_runs([out], ["LLaVA-Critic-7B"])
    ax = F.coverage_by_label([run], "naive").figure.axes[0]
    (line,) = data_lines(ax)
    cov = dict(zip(line.get_xdata(), line.get_ydata(), strict=True))
    assert run.report["methods"]["naive"]["labels"]["coverage"] == pytest.approx(0.90, abs=0.005)
    assert cov[1.0] == pytest.approx(0.64, abs=0.01) and cov[2.0] == pytest.approx(0.79, abs=0.01)
    assert cov[3.0] > 0.9 and cov[4.0] > 0.9
    diag = F.judge_reliability([run], "naive").figure.axes[0]
    # over-confident judge: every non-empty bin's accuracy lies below its confidence
    (points,) = data_lines(diag)
    assert np.all(np.asarray(points.get_ydata()) < np.asarray(points.get_xdata()))


def test_mcq_groups_figure(reports) -> None:
    (mcq,) = runs(reports, "mcq")
    plot = F.mcq_groups([mcq], "lac")
    ax_d, ax_c = plot.figure.axes
    assert ax_d.get_xlabel() == "dataset" and ax_c.get_xlabel() == "category"
    assert len(ax_d.containers) == len(mcq.report["methods"]) and len(target_lines(ax_d)) == 1
    groups = [t.get_text() for t in ax_d.get_xticklabels()]
    assert [p.get_height() for p in ax_d.containers[0]] == pytest.approx(
        [mcq.report["by_dataset"][g]["methods"]["lac"]["coverage"] for g in groups])
    assert isinstance(F.mcq_groups(runs(reports, "plain"), "naive"), Missing)


def write_lm_eval_run(folder: Path, date: str, model_args: str, tasks: dict[str, list[dict]],
                      groups: dict[str, list[str]]) -> None:
    """An lm-eval output folder as `lm_eval ... --log_samples` writes it: a results file and a samples file per task."""
    folder.mkdir(parents=True, exist_ok=True)
    results = {"results": {t: {} for t in tasks}, "group_subtasks": {**groups, **{t: [] for t in tasks}},
               "config": {"model": "hf", "model_args": model_args}, "model_name": "eh27apdj"}
    (folder / f"results_{date}.json").write_text(json.dumps(results))
    for task, records in tasks.items():
        lines = [json.dumps({"doc_id": i, "resps": [], "metrics": ["n"], "n": r}) for i, r in enumerate(records)]
        (folder / f"samples_{task}_{date}.jsonl").write_text("\n".join(lines) + "\n")


def test_an_lm_eval_folder_names_judges_by_model_and_task_and_groups_subtasks(tmp_path) -> None:
    """Judges named from the results file (not lm-eval's folder name), a group's subtasks one judge with groups."""
    from judgecp.kinds.reading import to_records

    records = to_records(simulate_likert_judge(600))
    by_group = {g: [r for r in records if r["group"] == g] for g in ("easy", "medium", "hard")}
    out = tmp_path / "out"
    write_lm_eval_run(
        out / "eh27apdj",
        "2026-01-01T00-00-00.000001",
        "pretrained=/models/llava-critic-7b,dtype=float32",
        {**{f"demo_{g}": rs for g, rs in by_group.items()}, "demo_all": records},
        {"demo": ["demo_easy", "demo_medium", "demo_hard", "demo_all"]},
    )
    write_lm_eval_run(out / "eh27apdj", "2026-01-02T00-00-00.000001", "pretrained=org/other-judge",
                      {"solo": to_records(simulate_likert_judge(300, seed=5))}, {})
    runs_ = load_runs([out], alphas=(0.05, 0.2))
    assert [r.name for r in runs_] == ["llava-critic-7b: demo", "org/other-judge: solo"]
    grouped = runs_[0].report
    assert grouped["n"] == 600  # demo_all holds the subtasks' items: none counted twice
    assert set(grouped["groups"]) == {"easy", "medium", "hard"} and grouped["protocol"]["mondrian"] == "subtask"
    assert {g: e["n"] for g, e in grouped["groups"].items()} == {g: len(rs) for g, rs in by_group.items()}
    assert grouped["lm_eval"]["subtasks"] == ["demo_easy", "demo_medium", "demo_hard", "demo_all"]
    written = write_report([out], tmp_path / "report", alphas=(0.05, 0.2))
    md = written.markdown.read_text()
    assert "| llava-critic-7b: demo | likert |" in md and "eh27apdj" not in md.split("## ")[1]
    assert (tmp_path / "report" / "figures" / "group_coverage.png").is_file()
    # A single samples file is named the same way; the same model and task twice get their dates in the name.
    assert (
        load_runs([out / "eh27apdj" / "samples_solo_2026-01-02T00-00-00.000001.jsonl"])[0].name
        == "org/other-judge: solo"
    )
    write_lm_eval_run(out / "second", "2026-01-03T00-00-00.000001", "pretrained=org/other-judge",
                      {"solo": to_records(simulate_likert_judge(300, seed=6))}, {})
    names = [r.name for r in load_runs([out])]
    assert names[1:] == ["org/other-judge: solo, 2026-01-02 00:00", "org/other-judge: solo, 2026-01-03 00:00"]


def test_subtasks_without_a_covering_task_are_put_together() -> None:
    from judgecp.data.formats import RecordBatch
    from judgecp.kinds.reading import to_records
    from judgecp.workflows.reports.collect import combine_subtasks

    a, b = to_records(simulate_likert_judge(50, seed=1)), to_records(simulate_likert_judge(40, seed=2))
    both = combine_subtasks("g", {"g_a": RecordBatch(a, "a", n_read=50), "g_b": RecordBatch(b, "b", n_read=40)})
    assert len(both.records) == 90 and both.n_read == 90
    assert {r["subtask"] for r in both.records} == {"a", "b"}
    assert len({r["id"] for r in both.records}) == 90 and both.records[0]["id"] == "a/item00000"  # ids shared: prefixed


def test_reliability_map_width_per_group_judges_side_by_side(reports) -> None:
    """The seed paper's figure 1: label-set (and interval) width per group, one bar series per judge, sorted."""
    (pooled,) = runs(reports, "pooled")
    plot = F.reliability_map([pooled], "naive")
    assert isinstance(plot, Plot) and plot.title == "Reliability map: set width per group"
    ax = plot.figure.axes[0]
    groups = [t.get_text() for t in ax.get_xticklabels()]
    widths = [pooled.report["groups"][g]["methods"]["naive"]["labels"]["width"] for g in groups]
    assert sorted(groups) == ["easy", "hard", "medium"] and widths == sorted(widths)
    assert [p.get_height() for p in ax.containers[0]] == pytest.approx(widths)
    (diamonds,) = [ln for ln in ax.get_lines() if ln.get_label() == "interval width (continuous)"]
    assert list(diamonds.get_ydata()) == pytest.approx(
        [pooled.report["groups"][g]["methods"]["naive"]["interval"]["width"] for g in groups])
    (scale,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("the whole scale")]
    assert scale.get_ydata()[0] == 4 and ax.get_ylim()[0] == 0
    assert ax.get_ylabel() == "mean width (scale points)" and ax.get_xlabel() == "group (group)"
    lac = F.reliability_map([pooled], "lac").figure.axes[0]  # a set method: no interval diamonds
    assert not [ln for ln in lac.get_lines() if ln.get_label().startswith("interval")]
    both = F.reliability_map(runs(reports, "pooled", "mondrian", "plain"), "naive")
    ax = both.figure.axes[0]
    assert len(ax.containers) == 2 and "Spearman rank correlation" in both.caption and "mondrian ρ = " in both.caption
    assert "Not shown (per-group table missing): plain" in both.caption
    missing = F.reliability_map(runs(reports, "plain"), "naive")
    assert isinstance(missing, Missing) and "--group FIELD" in missing.reason
    doc_figures = [v.id for k, v in build_document(runs(reports, "pooled"))[0].blocks if k == "figure"]
    assert doc_figures[0] == "reliability_map"  # the headline figure, first in every Likert report with groups


def lab(hex_colors: list[str]) -> np.ndarray:
    """sRGB -> CIELAB (D65), to compare colours as people see them."""
    from matplotlib.colors import to_rgb

    rgb = np.asarray([to_rgb(c) for c in hex_colors])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = linear @ np.asarray([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    f = np.cbrt(np.maximum(xyz / [0.95047, 1.0, 1.08883], 0.008856))
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=1)


def test_fourteen_methods_get_fourteen_distinct_colours(reports) -> None:
    from judgecp.present.figures import colors, series_style

    palette = lab(colors(16))
    distance = np.linalg.norm(palette[:, None] - palette[None], axis=2) + np.eye(16) * 1e9
    assert distance.min() >= 25  # CIELAB Delta E; tab20's first 14 colours came within 16.6 of each other
    styles = {(s["color"], s["linestyle"]) for s in map(series_style, range(64))}
    assert len(styles) == 64 and len({series_style(i)["marker"] for i in range(16)}) == 16
    report = json.loads(reports["pooled"].read_text())
    names = [f"m{i}" for i in range(14)]
    report["methods"] = {n: report["methods"]["naive"] for n in names}
    report["alpha_sweep"]["methods"] = {n: report["alpha_sweep"]["methods"]["naive"] for n in names}
    fake = reports["pooled"].parent / "fourteen.json"
    fake.write_text(json.dumps(with_digest(report)))  # an edited report, its digest recomputed
    for figure in (F.likert_sweep, F.coverage_by_label):
        ax = figure(load_runs([fake]), "m0").figure.axes[0]
        assert len({ln.get_color() for ln in data_lines(ax)}) == 14, figure.__name__


def test_coverage_axes_start_at_zero_and_hold_the_target(reports) -> None:
    """Bars of coverage from 0 to 1 (an axis from 0.86 made small differences look large)."""
    for ax, lim in ((F.likert_methods(runs(reports, "plain"), "naive").figure.axes[0], "x"),
                    (F.group_coverage(runs(reports, "pooled", "mondrian"), "naive").figure.axes[0], "y"),
                    (F.mcq_groups(runs(reports, "mcq"), "lac").figure.axes[0], "y")):
        low, high = ax.get_xlim() if lim == "x" else ax.get_ylim()
        assert (low, high) == (0.0, 1.0)
        (target,) = target_lines(ax)
        assert low < (target.get_xdata() if lim == "x" else target.get_ydata())[0] < high
