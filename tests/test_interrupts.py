"""SIGINT and SIGTERM midway through writing an output: exit 130 / 143, one line, the old output intact.

Each command runs in a subprocess through ``tests/pause_midway.py``, which pauses it at a known
point (a file's bytes in its temporary file, or a folder built but not moved into place); the test
sends the signal there and checks the exit status, that stderr is the single line
``judgecp: interrupted``, that the previous output is byte for byte what it was, and that no
temporary file or folder is left.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from judgecp.base.outputs import TEMP_MARK
from judgecp.synthetic.judges import simulate_likert_judge
from tests.helpers import write_likert_csv

ROOT = Path(__file__).resolve().parents[1]
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


def snapshot(path: Path) -> dict[str, bytes]:
    if path.is_file():
        return {"": path.read_bytes()}
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def interrupt(tmp_path: Path, sig: signal.Signals, output: Path, *args: str) -> None:
    """Run ``judgecp ARGS`` paused midway, send ``sig``, check status, stderr and ``output``."""
    before = snapshot(output)
    ready = tmp_path / "paused"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.Popen([sys.executable, "-m", "tests.pause_midway", str(ready), *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(3000):  # up to ~5 minutes on a busy machine; the command itself takes seconds
            if ready.exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert ready.exists(), f"never paused: {proc.poll()} {proc.stderr.read() if proc.stderr else ''}"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT[sig], err
    assert err.splitlines() == ["judgecp: interrupted"], err
    assert snapshot(output) == before
    assert not [p for p in output.parent.rglob("*") if TEMP_MARK in p.name]


@pytest.fixture
def likert_csv(tmp_path: Path) -> Path:
    d = simulate_likert_judge(n=300, seed=3)
    return write_likert_csv(tmp_path / "features.csv", d, abs_error=np.abs(d.parsed - d.labels.astype(int)))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_records_interrupted_while_writing(tmp_path: Path, likert_csv: Path, sig: signal.Signals) -> None:
    out = tmp_path / "out" / "records.jsonl"
    out.parent.mkdir()
    out.write_text('{"an": "earlier output"}\n')
    interrupt(tmp_path, sig, out, "records", str(likert_csv), "-o", str(out))


def test_calibrate_interrupted_while_saving(tmp_path: Path, likert_csv: Path) -> None:
    out = tmp_path / "out" / "cal.json"
    out.parent.mkdir()
    out.write_text("{}\n")
    interrupt(tmp_path, signal.SIGINT, out, "calibrate", str(likert_csv), "-o", str(out))


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="report needs matplotlib (judgecp[report])")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_report_interrupted_before_the_folder_is_in_place(tmp_path: Path, sig: signal.Signals) -> None:
    from judgecp.cli import main

    report = tmp_path / "likert.json"
    assert main(["evaluate", "--example", "--methods", "naive", "--splits", "2", "--quiet", "--json", str(report)]) == 0
    out = tmp_path / "out" / "report"
    out.mkdir(parents=True)
    (out / "report.md").write_text("# the earlier report\n")
    (out / "figures").mkdir()
    (out / "figures" / "old.png").write_bytes(b"an earlier figure")
    interrupt(tmp_path, sig, out, "report", str(report), "-o", str(out))
    (tmp_path / "paused").unlink()
    fresh = tmp_path / "out" / "fresh"  # a new folder: none at all after the interruption
    interrupt(tmp_path, sig, fresh, "report", str(report), "-o", str(fresh))
    assert not fresh.exists()


@pytest.mark.skipif(importlib.util.find_spec("PIL") is None, reason="parc build's vision variations need Pillow")
def test_parc_build_interrupted_before_the_folder_is_in_place(tmp_path: Path) -> None:
    from tests.test_parc_build import write_originals

    src = write_originals(tmp_path / "src")
    out = tmp_path / "out" / "parc"
    from judgecp.workflows.parc_build import build

    build(src, out, variations="VR-B")
    interrupt(tmp_path, signal.SIGINT, out, "parc", "build", str(src), "-o", str(out), "--variations", "VR-R",
              "--overwrite")
