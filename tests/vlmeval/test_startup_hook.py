"""The VLMEvalKit startup hook (issue 29, item 14): judgecp joins VLMEvalKit's registries in plain ``run.py``.

Against a stand-in ``vlmeval`` package (no VLMEvalKit needed): the hook calls
judgecp right after ``vlmeval.dataset``, ``vlmeval.config`` and
``vlmeval.inference`` load, nothing before, never twice; a failure is a
warning and VLMEvalKit still imports; ``JUDGECP_VLMEVAL_AUTOLOAD=0`` turns it
off; the launcher makes it stand aside. The real thing (plain ``run.py`` and
``scripts/summarize.py`` of a VLMEvalKit checkout) is in test_integration.py;
the wheel shipping the hook in tests/lm_eval/test_install.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HOOK = Path(__file__).resolve().parents[2] / "adapters" / "vlmeval" / "_startup_hook.py"

SCRIPT = """
import importlib.util, json, os, sys, warnings
sys.path.insert(0, {fake!r})
os.environ["JUDGECP_VLMEVAL_AUTOLOAD"] = {switch!r}  # read by install(); the installed .pth was off at start
spec = importlib.util.spec_from_file_location("_judgecp_vlmeval_hook", {hook!r})
hook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hook)
from judgecp.adapters.vlmeval import discovery
calls = []
def record(name):
    def callback(module):
        calls.append([name, module.__name__, getattr(module, "READY", None)])
        if name == "inference":
            raise RuntimeError("boom")
    return callback
discovery.after_dataset_registry = record("dataset")
discovery.after_model_registry = record("config")
discovery.after_inference = record("inference")
if {launcher!r}:
    discovery._deferred = False
hook.install()
hook.install()  # once only
import vlmeval
before = list(calls)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import vlmeval.dataset, vlmeval.config, vlmeval.inference, vlmeval.smp
    import vlmeval.dataset  # already loaded: no second call
print(json.dumps({{"before": before, "calls": calls, "warnings": [str(w.message) for w in caught],
                  "inference_ready": vlmeval.inference.READY,
                  "finders": sum(type(f).__name__ == "Finder" and f.__module__ == "_judgecp_vlmeval_hook"
                                 for f in sys.meta_path)}}))
"""


def fake_vlmeval(root: Path) -> Path:
    pkg = root / "vlmeval"
    (pkg / "dataset").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "smp.py").write_text("READY = True\n")
    for name in ("dataset/__init__.py", "config.py", "inference.py"):
        (pkg / name).write_text("READY = True  # judgecp is called after the module body ran\n")
    return root


def run_hook(tmp_path: Path, switch: str = "1", launcher: bool = False) -> dict[str, Any]:
    code = SCRIPT.format(fake=str(fake_vlmeval(tmp_path)), hook=str(HOOK), switch=switch, launcher=launcher)
    env = {**os.environ, "JUDGECP_VLMEVAL_AUTOLOAD": "0"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_the_hook_calls_judgecp_after_each_watched_module(tmp_path: Path) -> None:
    result = run_hook(tmp_path)
    assert result["before"] == []  # `import vlmeval` alone costs nothing
    assert result["calls"] == [["dataset", "vlmeval.dataset", True], ["config", "vlmeval.config", True],
                               ["inference", "vlmeval.inference", True]]
    assert result["finders"] == 1 and result["inference_ready"] is True  # the failing callback broke nothing
    (warning,) = result["warnings"]
    assert warning.startswith("judgecp could not extend VLMEvalKit (RuntimeError: boom)")
    assert "JUDGECP_VLMEVAL_AUTOLOAD=0" in warning


def test_the_switch_turns_it_off(tmp_path: Path) -> None:
    result = run_hook(tmp_path, switch="off")
    assert result["calls"] == [] and result["finders"] == 0 and result["warnings"] == []


def test_the_launcher_makes_the_callbacks_stand_aside(monkeypatch: Any) -> None:
    import importlib

    from judgecp.adapters.vlmeval import discovery

    registry = importlib.import_module("judgecp.adapters.vlmeval.register")  # the package exports a register()
    monkeypatch.setattr(discovery, "_deferred", False)
    calls: list[str] = []
    monkeypatch.setattr(registry, "register_datasets", lambda **kw: calls.append("datasets"))
    discovery.after_dataset_registry(object())
    assert calls == ["datasets"]
    discovery.defer_to_launcher()
    discovery.after_dataset_registry(object())
    discovery.after_model_registry(object())
    discovery.after_inference(object())
    assert calls == ["datasets"]
