"""Issue 25's rows about files, flags, readers and levels: one test per row.

Each row ends in a clear error (exit 2, one line naming the flag, file or field) or a counted
exclusion, before any work where it can be; never a traceback, a hang, a NaN table with exit 0, or
a changed input file. Commands that could hang run in a subprocess with a timeout (a guard, not a
timing check).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from judgecp.base.outputs import TEMP_MARK
from judgecp.cli import main
from judgecp.stats.conformal import conformal_rank, min_calibration_size
from judgecp.synthetic.judges import simulate_likert_judge
from tests.helpers import write_likert_csv
from tests.test_hostile_input import one_line_error, run, samples_file

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def likert_csv(tmp_path: Path) -> Path:
    d = simulate_likert_judge(n=300, seed=3)
    return write_likert_csv(tmp_path / "features.csv", d, abs_error=np.abs(d.parsed - d.labels.astype(int)))


def judgecp(*args: str, timeout: float = 300, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([*prefix, sys.executable, "-m", "judgecp.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def one_line(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    one_line_error(proc.returncode, proc.stderr, *needles)


# -- levels: closed-form calibration size, tiny alphas ------------------------------------------------


def test_min_calibration_size_is_the_loop_it_replaces() -> None:
    def loop(alpha: float) -> int:
        n = 1
        while conformal_rank(n, alpha) > n:
            n += 1
        return n

    rng = np.random.default_rng(0)
    alphas = [*np.linspace(0.002, 0.998, 600), *(10 ** rng.uniform(-3, 0, 600)), 0.1, 0.05, 0.01, 0.2, 1 / 3]
    for alpha in alphas:
        if 0 < alpha < 1:
            assert min_calibration_size(float(alpha)) == loop(float(alpha)), alpha


def test_min_calibration_size_of_tiny_levels_returns_at_once() -> None:
    code = ("from judgecp.stats.conformal import min_calibration_size as m; "
            "print(m(1e-9), m(1e-17) > 10**16, m(1e-300) > 10**299, m(5e-324) > 10**300)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["999999968", "True", "True", "True"], proc.stderr
    assert conformal_rank(999999968, 1e-9) <= 999999968 < conformal_rank(999999967, 1e-9) + 1


@pytest.mark.parametrize("alpha", ["1e-9", "1e-17", "1e-300"])
def test_evaluate_at_a_tiny_level_is_flagged_full_range(tmp_path: Path, alpha: str) -> None:
    out = tmp_path / "r.json"
    proc = judgecp("evaluate", "--example", "--alpha", alpha, "--methods", "naive,cqr,lac", "--splits", "2",
                   "--quiet", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert {m: r["full_range"] for m, r in report["methods"].items()} == {"naive": 1.0, "cqr": 1.0, "lac": 1.0}
    assert report["protocol"]["min_calibration_for_alpha"] > report["protocol"]["n_calibration"]


@pytest.mark.parametrize(("alpha", "needle"), [("1e-9", "999,999,968"), ("1e-300", "about 1e+300"), ("0.001", "999")])
def test_calibrate_refuses_a_level_the_data_cannot_reach_before_fitting(likert_csv: Path, tmp_path: Path,
                                                                      alpha: str, needle: str) -> None:
    out = tmp_path / "cal.json"
    proc = judgecp("calibrate", str(likert_csv), "-o", str(out), "--alpha", alpha, "--method", "cqr", timeout=300)
    one_line(proc, f"alpha {float(alpha):g} needs at least {needle} calibration items", "there are 300")
    assert not out.exists()


def test_calibrate_refuses_a_fitted_method_whose_threshold_part_is_too_small(likert_csv: Path, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """12 items reach alpha 0.1 (9 needed), but lvd fits its model on 6 and sets its threshold on the other 6:
    the calibrator would predict the full range for every item (it was saved so, exit 0)."""
    small = tmp_path / "small.csv"
    small.write_text("".join(likert_csv.read_text().splitlines(keepends=True)[:13]))
    out = tmp_path / "cal.json"
    code, _, err = run(capsys, "calibrate", str(small), "-o", str(out), "--method", "lvd")
    one_line_error(code, err, "lvd fits its model on part of the 12 items", "the other 6", "at least 9")
    assert not out.exists()
    # cqr's state is a model: refused before it is fitted at all, whatever the size
    code, _, err = run(capsys, "calibrate", str(small), "-o", str(out), "--method", "cqr")
    one_line_error(code, err, "cqr: its fitted state is a model")
    assert not out.exists()
    assert main(["calibrate", str(small), "-o", str(out), "--method", "naive"]) == 0


LEVEL_FLAGS = [
    ("evaluate", "--example", "--alpha"),
    ("evaluate", "--example", "--alphas"),
    ("evaluate", "--example", "--cal-fraction"),
    ("evaluate", "--example --kind pairwise", "--delta"),
    ("calibrate", "x.csv -o cal.json", "--alpha"),
    ("estimate", "x.csv", "--alpha"),
    ("apply", "cal.json x.csv", "--drift-level"),
    ("report", "r.json -o out", "--alphas"),
    ("bench", "scope", "--alphas"),
]


@pytest.mark.parametrize(("command", "rest", "flag"), LEVEL_FLAGS)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "1", "2", "-1", "abc", "1e400"])
def test_every_level_flag_is_checked_when_parsed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch, command: str, rest: str,
                                                 flag: str, value: str) -> None:
    monkeypatch.chdir(tmp_path)  # the files named do not exist: the flag must be refused before they are read
    code, _, err = run(capsys, command, *rest.split(), f"{flag}={value}")
    one_line_error(code, err, flag, repr(value))
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["0.1,nan", "0.1,0.1", ",", "0.05,1"])
def test_alphas_lists_are_checked_item_by_item(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, _, err = run(capsys, "evaluate", "--example", f"--alphas={value}")
    one_line_error(code, err, "--alphas must list")


def test_number_and_count_flags_name_themselves(capsys: pytest.CaptureFixture[str]) -> None:
    for args, needle in [
        (["evaluate", "--example", "--floor", "nan"], "--floor must be a finite number"),
        (["evaluate", "--example", "--kind", "ensemble", "--clusters", "0"], "--clusters must be a whole number >= 1"),
        (["evaluate", "--example", "--kind", "ensemble", "--concentration", "inf"], "--concentration must be a finite"),
        (["bench", "scale", "--rows", "-5"], "--rows must be a whole number >= 2"),
        (["evaluate", "--example", "--kind", "nonsense"], "--kind: invalid choice: 'nonsense'"),
    ]:
        code, _, err = run(capsys, *args)
        one_line_error(code, err, needle)


# -- outputs: never an input, never a folder where a file goes, checked before any work ----------------


def test_no_command_writes_over_its_input(likert_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = likert_csv.read_bytes()
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(likert_csv), "-o", str(cal)]) == 0
    saved = cal.read_bytes()
    (tmp_path / "link.csv").symlink_to(likert_csv)
    os.link(likert_csv, tmp_path / "hard.csv")
    capsys.readouterr()
    csv = str(likert_csv)
    cases = [
        (["evaluate", csv, "--json", csv], "--json"),
        (["evaluate", csv, "--json", str(tmp_path / "link.csv")], "--json"),
        (["evaluate", csv, "--json", str(tmp_path / "hard.csv")], "--json"),
        (["records", csv, "-o", csv], "--output"),
        (["calibrate", csv, "-o", str(tmp_path / "link.csv")], "--output"),
        (["estimate", csv, "--json", csv], "--json"),
        (["apply", str(cal), csv, "-o", csv], "--output"),
        (["apply", str(cal), csv, "--json", str(cal)], "--json"),
        (["evaluate", csv, "--join", f"{tmp_path / 'j.csv'}:x_", "--json", str(tmp_path / "j.csv")], "--json"),
    ]
    for args, flag in cases:
        code, _, err = run(capsys, *args)
        one_line_error(code, err, flag, "the same file as the input")
    code, _, err = run(
        capsys, "apply", str(cal), csv, "-o", str(tmp_path / "a.json"), "--json", str(tmp_path / "a.json")
    )
    one_line_error(code, err, "--json", "the same file as --output")
    assert likert_csv.read_bytes() == data and cal.read_bytes() == saved
    assert not [p for p in tmp_path.rglob("*") if TEMP_MARK in p.name]


def test_ensemble_outputs_are_checked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "evaluate", "--example", "--kind", "ensemble", "--json", str(tmp_path))
    one_line_error(code, err, "--json", "a directory")
    code, _, err = run(capsys, "evaluate", "--example", "--kind", "ensemble", "--json", str(tmp_path / "a.json"),
                       "--predictions", str(tmp_path / "a.json"))
    one_line_error(code, err, "--predictions", "the same file as --json")


def test_a_file_where_a_folder_is_wanted(likert_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    assert main(["evaluate", "--example", "--methods", "naive", "--splits", "2", "--quiet", "--json", str(report)]) == 0
    existing = tmp_path / "taken"
    existing.write_text("a file")
    code, _, err = run(capsys, "report", str(report), "-o", str(existing))
    one_line_error(code, err, "-o", "a file, not a folder")
    code, _, err = run(capsys, "parc", "build", str(likert_csv), "-o", str(existing), "--variations", "VR-B")
    one_line_error(code, err, "a file, not a folder")
    assert existing.read_text() == "a file"


# -- inputs that are not readable files ---------------------------------------------------------------


def test_inputs_that_are_not_readable_files(
    likert_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dangling = tmp_path / "gone.csv"
    dangling.symlink_to(tmp_path / "deleted.csv")
    for command in (["evaluate"], ["records", "-o", str(tmp_path / "o.jsonl")], ["estimate"]):
        code, _, err = run(capsys, *command, str(dangling))
        one_line_error(code, err, str(dangling), "a symbolic link to a missing file")
        code, _, err = run(capsys, *command, str(tmp_path))
        one_line_error(code, err, str(tmp_path), "a directory, not a file")
    code, _, err = run(capsys, "evaluate", str(tmp_path), "--format", "lm-eval")
    one_line_error(code, err, "a directory, not a file")


def unprivileged() -> tuple[str, ...]:
    """How to run a command that permissions apply to: as it is, or (as root) in a user namespace,
    where root's files are owned by an unmapped user and a 0o555 folder is really read-only."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("unshare") is None:
        pytest.skip("running as root without unshare: permissions cannot be made to apply")
    probe = subprocess.run(["unshare", "-U", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("running as root and user namespaces are not available")
    return ("unshare", "-U")


def test_a_read_only_folder_and_an_unreadable_input(likert_csv: Path, tmp_path: Path) -> None:
    prefix = unprivileged()
    locked = tmp_path / "locked"
    locked.mkdir()
    secret = tmp_path / "secret.csv"
    shutil.copy(likert_csv, secret)
    os.chmod(locked, 0o555)
    os.chmod(secret, 0o000)
    try:
        proc = judgecp("evaluate", str(likert_csv), "--json", str(locked / "r.json"), prefix=prefix)
        one_line(proc, "--json", "cannot write in the folder", "permission denied")
        proc = judgecp("records", str(likert_csv), "-o", str(locked / "r.jsonl"), prefix=prefix)
        one_line(proc, "--output", "permission denied")
        proc = judgecp("evaluate", str(secret), "--quiet", prefix=prefix)
        one_line(proc, str(secret), "cannot be read")
    finally:
        os.chmod(locked, 0o755)
        os.chmod(secret, 0o644)
    assert not list(locked.iterdir())


def test_an_unexpected_os_error_is_one_line_naming_the_path(capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import judgecp.cli.commands as commands

    def vanished(args: object) -> int:
        raise PermissionError(13, "Permission denied", "/data/run/records.jsonl")

    monkeypatch.setattr(commands, "run_methods", vanished)
    code, _, err = run(capsys, "methods")
    one_line_error(code, err, "/data/run/records.jsonl: Permission denied")


# -- readers: BOM, nested lines ---------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["pyarrow", "python"])
def test_a_csv_saved_by_excel_reads_like_the_plain_one(likert_csv: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    from judgecp.data.tables import read_table
    from judgecp.kinds.reading import from_table

    excel = tmp_path / "excel.csv"
    excel.write_bytes(b"\xef\xbb\xbf" + likert_csv.read_bytes())
    options = {"engine": "python"} if engine == "python" else {}
    plain, bom = read_table(likert_csv, **options), read_table(excel, **options)
    assert bom.names == plain.names and bom.names[0] == "sample_id"
    a, b = from_table(plain, "likert"), from_table(bom, "likert")
    assert list(a.ids) == list(b.ids) and np.array_equal(a.logprobs, b.logprobs)
    for out, source in ((tmp_path / "a.json", likert_csv), (tmp_path / "b.json", excel)):
        assert (
            main(["evaluate", str(source), "--methods", "naive", "--splits", "2", "--quiet", "--json", str(out)]) == 0
        )
    ra, rb = json.loads((tmp_path / "a.json").read_text()), json.loads((tmp_path / "b.json").read_text())
    assert ra["methods"] == rb["methods"] and ra["n"] == rb["n"] == 300


def test_a_jsonl_with_a_byte_order_mark_keeps_its_first_line(tmp_path: Path) -> None:
    from judgecp.data.tables import read_table

    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"id": "a", "x": 1}\n{"id": "b", "x": 2}\n')
    table = read_table(path)
    assert table.n_rows == 2 and not table.excluded


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_deeply_nested_line_is_a_counted_malformed_line(likert_csv: Path, tmp_path: Path) -> None:
    from judgecp.data.tables import read_table
    from judgecp.kinds.reading import from_table

    records = tmp_path / "records.jsonl"
    assert main(["records", str(likert_csv), "-o", str(records)]) == 0
    lines = records.read_text().splitlines()
    lines.insert(5, '{"id": "deep", "meta": {"x": ' + deep(100_000) + "}}")
    lines.insert(9, deep(200_000))
    records.write_text("\n".join(lines) + "\n")
    data = from_table(read_table(records), "likert")
    assert data.n == 300 and dict(data.excluded.counts) == {"malformed_json_line": 2}
    array = tmp_path / "rows.json"
    array.write_text(deep(100_000))
    with pytest.raises(Exception) as err:
        read_table(array)
    assert type(err.value).__name__ == "InputError" and "not valid JSON" in str(err.value)


def test_a_deeply_nested_line_in_an_lm_eval_samples_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, lines = samples_file(tmp_path)
    nested = json.dumps({"doc_id": 99, "metrics": ["n"]})[:-1] + ', "n": "' + deep(50_000) + '"}'
    path.write_text("\n".join([*lines, deep(100_000), nested]) + "\n")
    code, _, err = run(capsys, "evaluate", str(path), "--format", "lm-eval", "--methods", "naive", "--splits", "2",
                       "--quiet", "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    excluded = {e["reason"]: e["count"] for e in json.loads((tmp_path / "r.json").read_text())["excluded"]}
    assert excluded == {"malformed_json_line": 1, "no_record_in_sample": 1}


# -- scales, ensemble seeds ---------------------------------------------------------------------------


@pytest.mark.parametrize("scale", ["1:1000000000", "0:101", "-5000:5000"])
def test_a_scale_with_too_many_labels_is_refused_before_allocating(likert_csv: Path, capsys: pytest.CaptureFixture[str],
                                                                   scale: str) -> None:
    code, _, err = run(capsys, "evaluate", str(likert_csv), f"--scale={scale}")
    one_line_error(code, err, f"scale {scale}", "judgecp takes at most 101")


@pytest.mark.parametrize("seeds", ["0", "-1", "3,3", ","])
def test_ensemble_seeds_that_give_no_repetition_are_refused(capsys: pytest.CaptureFixture[str], seeds: str) -> None:
    code, out, err = run(capsys, "evaluate", "--example", "--kind", "ensemble", f"--seeds={seeds}")
    one_line_error(code, err, "--seeds")
    assert not out


# -- parc build and vlmeval build-tsv -------------------------------------------------------------------


@pytest.mark.parametrize(("flag", "value", "needle"), [
    ("--brightness", "nan", "--brightness must be a finite number"),
    ("--brightness", "inf", "--brightness must be a finite number"),
    ("--brightness", "0.5", "--brightness must be a number > 1"),
    ("--brightness", "abc", "--brightness must be a number"),
    ("--blur-fraction", "nan", "--blur-fraction must be a finite number"),
    ("--blur-fraction", "1", "--blur-fraction must be a number > 0 and < 1"),
    ("--limit", "-1", "--limit must be a whole number >= 1"),
    ("--limit", "0", "--limit must be a whole number >= 1"),
    ("--limit", "2.5", "--limit must be a whole number >= 1"),
    ("--jobs", "0", "--jobs must be a whole number >= 1"),
    ("--exchange-min-gap", "nan", "--exchange-min-gap must be a finite number"),
    ("--rotation", "45", "--rotation: invalid choice: 45"),
])
def test_parc_build_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, needle: str
) -> None:
    code, _, err = run(capsys, "parc", "build", "src.jsonl", "-o", str(tmp_path / "out"), f"{flag}={value}")
    one_line_error(code, err, needle)
    assert not (tmp_path / "out").exists()


def test_parc_transform_settings_refuse_nan_from_the_api() -> None:
    from judgecp.base.errors import InputError
    from judgecp.workflows.parc_build import TransformSettings

    for field, value in (("brightness_factor", float("nan")), ("blur_fraction", float("nan")),
                         ("blur_min_radius", float("inf")), ("brightness_factor", float("inf"))):
        with pytest.raises(InputError, match=field):
            TransformSettings(**{field: value})


def test_parc_build_limit_says_how_many_rows_it_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("PIL")
    from judgecp.base.errors import InputError
    from judgecp.workflows.parc_build import build
    from tests.test_parc_build import write_originals

    src = write_originals(tmp_path / "src")  # 6 items
    out = tmp_path / "out"
    assert main(["parc", "build", str(src), "-o", str(out), "--variations", "VR-R", "--limit", "4"]) == 0
    text = capsys.readouterr().out
    assert "4 of 4 source items" in text and "--limit 4 of 6 rows" in text
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"]["limit"] == 4 and manifest["source"]["rows_in_source"] == 6
    assert manifest["counts"] == {"O": 4, "VR-R": 4}
    with pytest.raises(InputError, match="limit must be a whole number >= 1"):
        build(src, tmp_path / "api", variations="VR-R", limit=-1)


def test_vlmeval_build_tsv_leaves_out_an_image_that_does_not_decode(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("PIL")
    from judgecp.workflows.parc_build import build
    from tests.test_parc_build import write_originals

    src = write_originals(tmp_path / "src")
    build(src, tmp_path / "parc", variations="VR-R")
    garbage = tmp_path / "parc" / "images" / "mmb-1_VR-R.png"
    garbage.write_bytes(os.urandom(600))  # not an image, saved as one
    code, out, err = run(capsys, "vlmeval", "build-tsv", "parc", "--source", str(tmp_path / "parc"),
                         "--out", str(tmp_path / "lmu" / "new"), "--name", "PARC_toy")
    assert code == 0, err
    assert "wrote 11" in out and "image_unreadable 1" in out
    manifest = json.loads((tmp_path / "lmu" / "new" / "PARC_toy.judgecp.json").read_text())
    assert manifest["excluded"] == [
        {"reason": "image_unreadable", "count": 1, "examples": ["mmb-1/VR-R: images/mmb-1_VR-R.png"]}
    ]
    tsv = (tmp_path / "lmu" / "new" / "PARC_toy.tsv").read_text()
    assert "mmb-1/VR-R" not in tsv and "mmb-1/O" in tsv
    assert sorted(p.name for p in (tmp_path / "lmu").iterdir()) == ["new"]  # no temporary folder left


# -- report: what it takes ------------------------------------------------------------------------------


def test_report_refuses_json_that_is_not_a_report(likert_csv: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cal, summary, estimate = tmp_path / "cal.json", tmp_path / "summary.json", tmp_path / "estimate.json"
    assert main(["calibrate", str(likert_csv), "-o", str(cal)]) == 0
    with warnings.catch_warnings():  # scipy's ks_2samp on a run equal to its calibration (not this test's subject)
        warnings.simplefilter("ignore", RuntimeWarning)
        assert main(["apply", str(cal), str(likert_csv), "--json", str(summary)]) == 0
    assert main(["estimate", str(likert_csv), "--json", str(estimate)]) == 0
    capsys.readouterr()
    for path, what in ((cal, "a calibrator"), (summary, "an apply summary"), (estimate, "an estimate")):
        out = tmp_path / f"report-{path.stem}"
        code, _, err = run(capsys, "report", str(path), "-o", str(out))
        one_line_error(code, err, str(path), what, "judgecp report takes `judgecp evaluate --json` reports")
        assert not out.exists()
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(cal, folder / "cal.json")
    (folder / "deep.json").write_text(deep(100_000))
    (folder / "digits.json").write_text('{"kind": ' + "1" * 5000 + "}")
    code, _, err = run(capsys, "report", str(folder), "-o", str(tmp_path / "r"))
    one_line_error(code, err, "no judgecp report")
    for name in ("deep.json", "digits.json"):
        code, _, err = run(capsys, "report", str(folder / name), "-o", str(tmp_path / "r"))
        one_line_error(code, err, name, "not a JSON report")
    assert not (tmp_path / "r").exists()
