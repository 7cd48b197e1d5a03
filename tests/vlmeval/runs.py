"""Real VLMEvalKit runs through the launcher, for the integration test and the committed fixtures.

Everything is local: a tiny Idefics3 judge (VLMEvalKit's ``DOCLING`` wrapper
loads it from a folder on CPU), stand-in sources in the public layouts, TSVs
built by ``judgecp vlmeval build-tsv``, and ``judgecp vlmeval ...`` run as a
subprocess exactly as a user would (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.vlmeval.sources import mllm_judge_source, polaris_source

TINY = "tiny-docling"


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


def workspace(root: Path, model_dir: Path, max_new_tokens: int = 12) -> Workspace:
    """Folders, the model registry file and the environment of a run."""
    root.mkdir(parents=True, exist_ok=True)
    lmu = root / "LMUData"
    lmu.mkdir(exist_ok=True)
    models = root / "models.json"
    models.write_text(json.dumps({
        TINY: {"class": "DOCLING", "model_path": str(model_dir), "max_new_tokens": max_new_tokens},
    }))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGECP_", "LMUData"))}
    env.update({
        "LMUData": str(lmu),
        "JUDGECP_VLMEVAL_MODELS": str(models),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONWARNINGS": "ignore",
    })
    return Workspace(root=root, model_dir=model_dir, lmu=lmu, env=env)


def build_sources(ws: Workspace, n: int = 24, n_pairs: int = 16) -> tuple[Path, Path]:
    mllm = mllm_judge_source(ws.root / "mllm_src", n=n)
    polaris = polaris_source(ws.root / "polaris_src", n_pairs=n_pairs)
    return mllm, polaris


def run_dir(work_dir: Path, model: str) -> list[Path]:
    """The run folders of a model, oldest first."""
    return sorted(p for p in (work_dir / model).iterdir() if p.is_dir())
