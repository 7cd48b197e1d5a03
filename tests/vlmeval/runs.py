"""Real VLMEvalKit runs through the launcher, for the integration test and the committed fixtures.

Everything is local: tiny Idefics3 judges (VLMEvalKit's ``DOCLING`` wrapper
loads them from a folder on CPU; ``tiny-docling`` answers ``Score: N``,
``tiny-letters`` one letter), stand-in sources in the public layouts, TSVs
built by ``judgecp vlmeval build-tsv``, a small multiple-choice TSV that
VLMEvalKit reads as its own (custom) MCQ benchmark, and ``judgecp vlmeval
...`` run as a subprocess exactly as a user would (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import base64
import csv
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.vlmeval.sources import (
    mllm_judge_pair_source,
    mllm_judge_source,
    parc_source,
    png_bytes,
    polaris_source,
)

TINY = "tiny-docling"
LETTERS = "tiny-letters"
#: The multiple-choice TSV VLMEvalKit treats as its own (a custom MCQ dataset: TYPE "MCQ").
MCQ = "TinyMCQ"
#: Each ``judgecp vlmeval build-tsv`` benchmark's stand-in source, a folder in the workspace.
SOURCES = {"mllm_judge": "mllm_src", "polaris": "polaris_src", "mllm_judge_pair": "pair_src", "parc": "parc_src"}


def judgecp_cmd() -> list[str]:
    script = Path(sys.executable).with_name("judgecp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "judgecp.cli"]


@dataclass
class Workspace:
    root: Path
    model_dir: Path
    lmu: Path
    env: dict[str, str]

    def run(self, *args: str, cwd: Path | None = None, timeout: int = 900) -> subprocess.CompletedProcess[str]:
        """``judgecp <args>`` with the workspace's environment; output captured."""
        return subprocess.run(
            [*judgecp_cmd(), *args], cwd=cwd or self.root, env=self.env, text=True, capture_output=True,
            timeout=timeout, check=False,
        )

    def vlmeval(self, *args: str, work_dir: Path, **kw: object) -> subprocess.CompletedProcess[str]:
        return self.run("vlmeval", *args, "--work-dir", str(work_dir), **kw)  # type: ignore[arg-type]

    def build_tsv(self, benchmark: str, *args: str) -> subprocess.CompletedProcess[str]:
        """``judgecp vlmeval build-tsv BENCHMARK ARGS`` from the workspace's stand-in source into ``$LMUData``."""
        return self.run("vlmeval", "build-tsv", benchmark, "--source", str(self.root / SOURCES[benchmark]),
                        "--out", str(self.lmu), *args)


def workspace(root: Path, model_dir: Path, max_new_tokens: int = 12, letters_dir: Path | None = None) -> Workspace:
    """Folders, the model registry file, the environment of a run and every stand-in source.

    The sources: MLLM-as-a-Judge (24 rows and the bad ones), Polaris (16
    pairs), the pairwise one (12 pairs), PARC (20 items) and the
    multiple-choice TSV (24 rows, in ``$LMUData``).
    """
    root.mkdir(parents=True, exist_ok=True)
    lmu = root / "LMUData"
    lmu.mkdir(exist_ok=True)
    models = root / "models.json"
    entries = {TINY: {"class": "DOCLING", "model_path": str(model_dir), "max_new_tokens": max_new_tokens}}
    if letters_dir is not None:
        entries[LETTERS] = {"class": "DOCLING", "model_path": str(letters_dir), "max_new_tokens": 4}
    models.write_text(json.dumps(entries))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGECP_", "LMUData"))}
    env.update({
        "LMUData": str(lmu),
        "JUDGECP_VLMEVAL_MODELS": str(models),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONWARNINGS": "ignore",
    })
    mllm_judge_source(root / SOURCES["mllm_judge"], n=24)
    polaris_source(root / SOURCES["polaris"], n_pairs=16)
    mllm_judge_pair_source(root / SOURCES["mllm_judge_pair"], n_pairs=12)
    parc_source(root / SOURCES["parc"], n_items=20)
    mcq_tsv(lmu / f"{MCQ}.tsv", n=24)
    return Workspace(root=root, model_dir=model_dir, lmu=lmu, env=env)


def mcq_tsv(path: Path, n: int = 24) -> Path:
    """A VLMEvalKit multiple-choice TSV (``index, image, question, A..D, answer, category``).

    Three or four options per row; row 5's answer key names ``E``, an option
    it does not have (``answer_not_an_option`` in the post-hoc report).
    """
    rows = []
    for i in range(n):
        rows.append({
            "index": i, "image": base64.b64encode(png_bytes(8 + i % 5, 8, (10 * i % 256, 0, 0))).decode(),
            "question": f"What colour is square {i}?", "A": "red", "B": "blue", "C": "green",
            "D": "yellow" if i % 4 == 0 else "", "answer": "E" if i == 5 else "ABC"[i % 3],
            "category": ["colour", "shape"][i % 2],
        })
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    return path


def run_dir(work_dir: Path, model: str) -> list[Path]:
    """The run folders of a model, oldest first."""
    return sorted(p for p in (work_dir / model).iterdir() if p.is_dir())
