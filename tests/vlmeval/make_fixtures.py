"""Regenerate ``tests/vlmeval/fixtures`` from real VLMEvalKit runs (needs a VLMEvalKit venv).

    python -m tests.vlmeval.make_fixtures [--out tests/vlmeval/fixtures]

Runs ``judgecp vlmeval`` with the tiny local judge (see :mod:`tests.vlmeval.runs`)
and copies the prediction files and sidecars the CI tests read:

* ``clean/``: one run of ``tiny-docling-lp`` on ``MLLMJudge_CP`` (24 rows);
* ``resume/``: an inference-only run on the first 10 rows, then ``--reuse``
  on all 24 (VLMEvalKit writes ``str(dict)`` into 14 predictions and drops
  ``extra_records``);
* ``plain/``: ``tiny-docling`` without ``-lp`` (no records at all): the
  launcher refuses it with a judgecp dataset in ``--mode all``, so
  ``--mode infer``, then ``--mode eval`` (which fails, exit status 1: no
  usable row);
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

from tests.vlmeval.runs import LETTERS, MCQ, TINY, run_dir, workspace
from tests.vlmeval.tiny_models import tiny_idefics3

KEEP = ("_MLLMJudge_CP.xlsx", "_Polaris_CP.xlsx", "_MLLMJudgePair_CP.xlsx", "_PARC_toy.xlsx", f"_{MCQ}.xlsx",
        "_lprecords.jsonl", "status.json")
LP, LLP = f"{TINY}-lp", f"{LETTERS}-lp"
#: Each fixture's run: the TSV built (none: it is in $LMUData already), the dataset, the model, the
#: --limit of a first inference-only run (a resumed run) and further arguments.
RUNS: dict[str, tuple[str, str, str, str | None, tuple[str, ...]]] = {
    "clean": ("mllm_judge", "MLLMJudge_CP", LP, None, ()),
    "plain": ("mllm_judge", "MLLMJudge_CP", TINY, None, ()),
    "resume": ("mllm_judge", "MLLMJudge_CP", LP, "10", ()),
    "polaris": ("polaris", "Polaris_CP", LP, None, ()),
    "pairwise": ("mllm_judge_pair", "MLLMJudgePair_CP", LLP, None, ()),
    "pairwise_resume": ("mllm_judge_pair", "MLLMJudgePair_CP", LLP, "4", ()),
    "parc": ("parc", "PARC_toy", LLP, None, ()),
    "mcq": ("", MCQ, LLP, None, ("--judge", "exact_matching")),
}
ALL = tuple(RUNS)
#: Runs that fail on purpose (a dataset with no usable row fails the launcher: exit status 1).
EXIT_STATUS = {"plain": 1}
#: Runs of a model without capture: inference only (the launcher refuses them in --mode all), then
#: the evaluation of those predictions.
INFER_THEN_EVAL = {"plain"}


def check(proc: object, expected: int = 0) -> None:
    code = getattr(proc, "returncode", 1)
    if code != expected:
        sys.stderr.write(getattr(proc, "stdout", "") + getattr(proc, "stderr", ""))
        raise SystemExit(f"run failed with exit status {code}")


def copy_runs(work: Path, model: str, dest: Path) -> None:
    for run in run_dir(work, model):
        target = dest / model / run.name
        target.mkdir(parents=True, exist_ok=True)
        for f in run.iterdir():
            if f.is_file() and f.name.endswith(KEEP):
                shutil.copy2(f, target / f.name)


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
        made: list[tuple[str, str]] = []
        for name in ALL:
            if name not in only:
                continue
            benchmark, dataset, model, first, extra = RUNS[name]
            flags = ("--data", dataset, "--model", model, *extra)
            if first is not None:  # an inference-only run on the first rows, then --reuse on all
                check(ws.build_tsv(benchmark, "--limit", first))
                check(ws.vlmeval(*flags, "--mode", "infer", work_dir=root / name))
                time.sleep(1.1)  # VLMEvalKit's run ids have one-second resolution
                flags = (*flags, "--reuse")
            if benchmark:
                check(ws.build_tsv(benchmark))
            if name in INFER_THEN_EVAL:
                check(ws.vlmeval(*flags, "--mode", "infer", work_dir=root / name))
                time.sleep(1.1)
                flags = (*flags, "--mode", "eval")
            check(ws.vlmeval(*flags, work_dir=root / name), EXIT_STATUS.get(name, 0))
            made.append((name, model))

        for name, model in made:
            if (out / name).exists():
                shutil.rmtree(out / name)
            copy_runs(root / name, model, out / name)
    print(f"fixtures written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
