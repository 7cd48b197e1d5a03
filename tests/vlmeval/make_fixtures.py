"""Regenerate ``tests/vlmeval/fixtures`` from real VLMEvalKit runs (needs a VLMEvalKit venv).

    python -m tests.vlmeval.make_fixtures [--out tests/vlmeval/fixtures]

Runs ``judgecp vlmeval`` with the tiny local judge (see :mod:`tests.vlmeval.runs`)
and copies the prediction files and sidecars the CI tests read:

* ``clean/``: one run of ``tiny-docling-lp`` on ``MLLMJudge_CP`` (24 rows);
* ``resume/``: an inference-only run on the first 10 rows, then ``--reuse``
  on all 24 (VLMEvalKit writes ``str(dict)`` into 14 predictions and drops
  ``extra_records``);
* ``plain/``: ``tiny-docling`` without ``-lp`` (no records at all);
* ``polaris/``: ``tiny-docling-lp`` on ``Polaris_CP`` (16 pairs);
* ``pairwise/``: ``tiny-letters-lp`` on ``MLLMJudgePair_CP`` (12 pairs, 24 rows);
* ``pairwise_resume/``: an inference-only run on the first 4 pairs, then
  ``--reuse`` on all 12 (``str(dict)`` in 16 predictions);
* ``parc/``: ``tiny-letters-lp`` on ``PARC_toy`` (82 rows);
* ``mcq/``: ``tiny-letters-lp`` on ``TinyMCQ``, a multiple-choice TSV that
  VLMEvalKit evaluates as its own (plain predictions, records in the sidecar).

The run folders keep VLMEvalKit's layout (``<model>/<eval id>/...``).
Pass ``--only NAME ...`` to regenerate some of them.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.vlmeval.runs import (
    LETTERS,
    MCQ,
    TINY,
    Workspace,
    build_letter_sources,
    build_sources,
    run_dir,
    workspace,
)
from tests.vlmeval.tiny_models import tiny_idefics3

KEEP = ("_MLLMJudge_CP.xlsx", "_Polaris_CP.xlsx", "_MLLMJudgePair_CP.xlsx", "_PARC_toy.xlsx", f"_{MCQ}.xlsx",
        "_lprecords.jsonl", "status.json")
ALL = ("clean", "plain", "resume", "polaris", "pairwise", "pairwise_resume", "parc", "mcq")


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
    parser.add_argument("--only", nargs="+", choices=ALL, default=list(ALL))
    args = parser.parse_args()
    out = Path(args.out)
    only = set(args.only)
    likert = only & {"clean", "plain", "resume", "polaris"}
    letters = only - likert
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = workspace(root / "ws", tiny_idefics3(root / "tiny-idefics3") if likert else root / "unused",
                       letters_dir=tiny_idefics3(root / "tiny-letters", task="letters") if letters else None)
        build_sources(ws, n=24, n_pairs=16)
        build_letter_sources(ws)
        lp, llp = f"{TINY}-lp", f"{LETTERS}-lp"
        made: list[tuple[str, str]] = []

        if "clean" in only or "plain" in only:
            build(ws)
        if "clean" in only:
            check(ws.vlmeval("--data", "MLLMJudge_CP", "--model", lp, work_dir=root / "clean"))
            made.append(("clean", lp))
        if "plain" in only:
            check(ws.vlmeval("--data", "MLLMJudge_CP", "--model", TINY, work_dir=root / "plain"))
            made.append(("plain", TINY))
        if "resume" in only:
            build(ws, "--limit", "10")
            check(ws.vlmeval("--data", "MLLMJudge_CP", "--model", lp, "--mode", "infer", work_dir=root / "resume"))
            time.sleep(1.1)
            build(ws)
            check(ws.vlmeval("--data", "MLLMJudge_CP", "--model", lp, "--reuse", work_dir=root / "resume"))
            made.append(("resume", lp))
        if "polaris" in only:
            check(ws.run("vlmeval", "build-tsv", "polaris", "--source", str(ws.root / "polaris_src"), "--out",
                         str(ws.lmu)))
            check(ws.vlmeval("--data", "Polaris_CP", "--model", lp, work_dir=root / "polaris"))
            made.append(("polaris", lp))
        pair = ("vlmeval", "build-tsv", "mllm_judge_pair", "--source", str(ws.root / "pair_src"), "--out", str(ws.lmu))
        if "pairwise" in only:
            check(ws.run(*pair))
            check(ws.vlmeval("--data", "MLLMJudgePair_CP", "--model", llp, work_dir=root / "pairwise"))
            made.append(("pairwise", llp))
        if "pairwise_resume" in only:
            check(ws.run(*pair, "--limit", "4"))
            check(ws.vlmeval("--data", "MLLMJudgePair_CP", "--model", llp, "--mode", "infer",
                             work_dir=root / "pairwise_resume"))
            time.sleep(1.1)
            check(ws.run(*pair))
            check(ws.vlmeval("--data", "MLLMJudgePair_CP", "--model", llp, "--reuse", work_dir=root / "pairwise_resume"))
            made.append(("pairwise_resume", llp))
        if "parc" in only:
            check(ws.run("vlmeval", "build-tsv", "parc", "--source", str(ws.root / "parc_src"), "--out", str(ws.lmu)))
            check(ws.vlmeval("--data", "PARC_toy", "--model", llp, work_dir=root / "parc"))
            made.append(("parc", llp))
        if "mcq" in only:
            check(ws.vlmeval("--data", MCQ, "--model", llp, "--judge", "exact_matching", work_dir=root / "mcq"))
            made.append(("mcq", llp))

        for name, model in made:
            if (out / name).exists():
                shutil.rmtree(out / name)
            copy_runs(root / name, model, out / name)
    print(f"fixtures written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
