"""Regenerate ``tests/vlmeval/fixtures`` from real VLMEvalKit runs (needs a VLMEvalKit venv).

    python -m tests.vlmeval.make_fixtures [--out tests/vlmeval/fixtures]

Runs ``judgecp vlmeval`` with the tiny local judge (see :mod:`tests.vlmeval.runs`)
and copies the prediction files and sidecars the CI tests read:

* ``clean/``: one run of ``tiny-docling-lp`` on ``MLLMJudge_CP`` (24 rows);
* ``resume/``: an inference-only run on the first 10 rows, then ``--reuse``
  on all 24 (VLMEvalKit writes ``str(dict)`` into 14 predictions and drops
  ``extra_records``);
* ``plain/``: ``tiny-docling`` without ``-lp`` (no records at all);
* ``polaris/``: ``tiny-docling-lp`` on ``Polaris_CP`` (16 pairs).

The run folders keep VLMEvalKit's layout (``<model>/<eval id>/...``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.vlmeval.runs import TINY, Workspace, build_sources, run_dir, workspace
from tests.vlmeval.tiny_models import tiny_idefics3

KEEP = ("_MLLMJudge_CP.xlsx", "_Polaris_CP.xlsx", "_lprecords.jsonl", "status.json")


def check(proc: object) -> None:
    code = getattr(proc, "returncode", 1)
    if code != 0:
        sys.stderr.write(getattr(proc, "stdout", "") + getattr(proc, "stderr", ""))
        raise SystemExit(f"run failed with exit status {code}")


def copy_runs(work: Path, model: str, dest: Path) -> None:
    for run in run_dir(work, model):
        target = dest / model / run.name
        target.mkdir(parents=True, exist_ok=True)
        for f in run.iterdir():
            if f.is_file() and f.name.endswith(KEEP):
                shutil.copy2(f, target / f.name)


def build(ws: Workspace, *extra: str) -> None:
    check(ws.run("vlmeval", "build-tsv", "mllm_judge", "--source", str(ws.root / "mllm_src"), "--out",
                 str(ws.lmu), *extra))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).parent / "fixtures"))
    args = parser.parse_args()
    out = Path(args.out)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = workspace(root / "ws", tiny_idefics3(root / "tiny-idefics3"))
        build_sources(ws, n=24, n_pairs=16)
        lp = f"{TINY}-lp"

        build(ws)
        check(ws.vlmeval("--data", "MLLMJudge_CP", "--model", lp, work_dir=root / "clean"))
        check(ws.vlmeval("--data", "MLLMJudge_CP", "--model", TINY, work_dir=root / "plain"))

        build(ws, "--limit", "10")
        check(ws.vlmeval("--data", "MLLMJudge_CP", "--model", lp, "--mode", "infer", work_dir=root / "resume"))
        time.sleep(1.1)
        build(ws)
        check(ws.vlmeval("--data", "MLLMJudge_CP", "--model", lp, "--reuse", work_dir=root / "resume"))

        check(ws.run("vlmeval", "build-tsv", "polaris", "--source", str(ws.root / "polaris_src"), "--out",
                     str(ws.lmu)))
        check(ws.vlmeval("--data", "Polaris_CP", "--model", lp, work_dir=root / "polaris"))

        for name in ("clean", "plain", "resume", "polaris"):
            if (out / name).exists():
                shutil.rmtree(out / name)
        copy_runs(root / "clean", lp, out / "clean")
        copy_runs(root / "plain", TINY, out / "plain")
        copy_runs(root / "resume", lp, out / "resume")
        copy_runs(root / "polaris", lp, out / "polaris")
    print(f"fixtures written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
