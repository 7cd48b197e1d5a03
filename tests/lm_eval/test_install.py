"""The startup hook ships in both kinds of install, and uninstalling removes only judgecp's files."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.lm_eval.helpers import offline_env, run, skip_without_lm_eval

skip_without_lm_eval()

REPO = Path(__file__).resolve().parents[2]
HOOK_FILES = {"_judgecp_lm_eval_hook.py", "judgecp-lm-eval.pth",
              "_judgecp_vlmeval_hook.py", "judgecp-vlmeval.pth",  # VLMEvalKit's (docs/vlmeval.md)
              "_judgecp_lmms_eval_hook.py", "judgecp-lmms-eval.pth",  # lmms-eval's (docs/lmms_eval.md)
              "_judgecp_startup_hook.py"}  # the watcher the three share


def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def record_paths(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        record = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
        return [line.split(",")[0] for line in zf.read(record).decode().splitlines() if line]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        offline_env(out),
    )
    return next(out.glob("judgecp-*.whl"))


def test_wheel_ships_the_hook_at_its_root_and_only_judgecp_files(wheel: Path) -> None:
    names = wheel_names(wheel)
    assert HOOK_FILES <= set(names)
    assert {"judgecp/tasks/mllm_judge_cp/_template_direct_yaml", "judgecp/tasks/mllm_judge_cp/utils.py",
            "judgecp/tasks/polaris_cp/polaris_cp.yaml", "judgecp/tasks/judgecp_demo/_judgecp_demo.yaml",
            "judgecp/base/records/record.schema.json", "judgecp/workflows/calibrators/calibrator.schema.json",
            "judgecp/workflows/results/results.schema.json"} <= set(names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read(entry_points).decode()
    assert "[judgecp]" in text and "judgecp.adapters.lm_eval.plugin" in text  # the adapters reach the core this way
    # RECORD is what `pip uninstall judgecp` removes: judgecp's package, its metadata and the hook.
    for path in record_paths(wheel):
        assert path.startswith(("judgecp/", "judgecp-0")) or path in HOOK_FILES, path


def test_editable_wheel_ships_the_hook_too(tmp_path: Path) -> None:
    code = f"from setuptools import build_meta; print(build_meta.build_editable({str(tmp_path)!r}))"
    name = run([sys.executable, "-c", code], offline_env(tmp_path), cwd=REPO).stdout.strip().splitlines()[-1]
    names = wheel_names(tmp_path / name)
    assert HOOK_FILES <= set(names)
    assert all(p.startswith(("judgecp-0", "__editable__")) or p in HOOK_FILES for p in record_paths(tmp_path / name))


def test_installed_wheel_registers_models_and_tasks_through_its_own_hook(wheel: Path, tmp_path: Path) -> None:
    """Install the wheel into a bare folder and start Python without the environment's own .pth
    files (-S), so only the installed hook can make lm-eval see judgecp."""
    target = tmp_path / "site"
    run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)],
        offline_env(tmp_path),
    )
    assert HOOK_FILES <= {p.name for p in target.iterdir()}
    import lm_eval

    env_site = str(Path(lm_eval.__file__).resolve().parents[1])
    code = f"""
import site, sys
sys.path.append({env_site!r})          # lm-eval and the rest, without that folder's .pth files
site.addsitedir({str(target)!r})       # the installed wheel, processing its judgecp-lm-eval.pth
import judgecp, _judgecp_lm_eval_hook
assert judgecp.__file__.startswith({str(target)!r}), judgecp.__file__
from lm_eval.api.registry import get_model
assert get_model("hf").__name__ == "HFLM"
assert get_model("hf-judge").__name__ == "HFJudgeLM"
from lm_eval.tasks import TaskManager
tm = TaskManager()
assert {{"mllm_judge_cp", "mllm_judge_cp_cot_wit", "polaris_cp", "judgecp_demo"}} <= set(tm.all_tasks)
print("ok", tm.task_index["polaris_cp"].yaml_path)
"""
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code], env=offline_env(tmp_path), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.startswith("ok " + str(target))
