"""What holds without VLMEvalKit: no harness import, install hints, run.py discovery, shipped configs."""

from __future__ import annotations

import ast
import json
import logging
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from judgecp.adapters.vlmeval.launcher import ENV_RUN, find_run_py
from judgecp.adapters.vlmeval.register import VLMEvalKitMissing, register
from judgecp.adapters.vlmeval.specs import SPECS, dataset_names
from judgecp.base.errors import InputError, MissingDependencyError
from judgecp.cli import main

ADAPTER = Path(__file__).resolve().parents[2] / "adapters" / "vlmeval"


def test_importing_judgecp_and_the_adapter_imports_no_harness_and_no_torch() -> None:
    code = (
        "import sys, judgecp, judgecp.cli, judgecp.adapters.vlmeval, judgecp.adapters.capture.generate, "
        "judgecp.adapters.capture.logits\n"
        "from judgecp.adapters.vlmeval import builders, evaluation, predictions, models, api_judge, "
        "register, launcher, cli, runtime, specs\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('vlmeval', 'torch', 'transformers', 'pandas'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture
def no_vlmeval(monkeypatch: pytest.MonkeyPatch) -> None:
    """Behave as if VLMEvalKit were not installed (whatever this venv has)."""
    for name in list(sys.modules):
        if name == "vlmeval" or name.startswith("vlmeval."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "vlmeval", None)
    monkeypatch.delenv(ENV_RUN, raising=False)


@pytest.mark.usefixtures("no_vlmeval")
def test_missing_vlmeval_gives_the_install_hint(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(VLMEvalKitMissing, match="not on PyPI") as info:
        register()
    assert isinstance(info.value, MissingDependencyError)
    assert "git clone https://github.com/open-compass/VLMEvalKit" in str(info.value)
    assert main(["vlmeval", "--data", "MLLMJudge_CP", "--model", "x-lp"]) == 2
    err = capsys.readouterr().err
    assert "judgecp: error: VLMEvalKit (vlmeval) is not installed" in err and "Traceback" not in err
    assert main(["vlmeval", "list"]) == 2


def test_run_py_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "run.py").write_text("print('hi')\n")
    monkeypatch.setenv(ENV_RUN, str(tmp_path))
    assert find_run_py() == (tmp_path / "run.py").resolve()
    monkeypatch.setenv(ENV_RUN, str(tmp_path / "run.py"))
    assert find_run_py() == (tmp_path / "run.py").resolve()
    monkeypatch.setenv(ENV_RUN, str(tmp_path / "nope"))
    with pytest.raises(InputError, match="no run.py there"):
        find_run_py()


def test_vlmeval_help_needs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vlmeval", "--help"]) == 0
    out = capsys.readouterr().out
    assert "JUDGECP_VLMEVAL_RUN" in out and "build-tsv" in out
    assert main(["vlmeval"]) == 2
    assert "usage: judgecp vlmeval" in capsys.readouterr().err


def _dataset_classes() -> dict[str, tuple[str, set[str]]]:
    """Class name -> (spec name, __init__ parameters) of adapters/vlmeval/datasets.py, read without importing it."""
    tree = ast.parse((ADAPTER / "datasets.py").read_text())
    params: set[str] = set()
    classes: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    params = {a.arg for a in item.args.args[1:]}
                if isinstance(item, ast.Assign) and any(getattr(t, "id", "") == "SPEC" for t in item.targets):
                    if isinstance(item.value, ast.Name):
                        classes[node.name] = item.value.id
    return {name: (spec, params) for name, spec in classes.items()}


def test_shipped_vlmeval_configs_name_registered_classes_and_datasets() -> None:
    classes = _dataset_classes()
    spec_names = {"MLLMJudgeCP": "MLLM_JUDGE", "PolarisCP": "POLARIS", "MLLMJudgePairCP": "MLLM_JUDGE_PAIR",
                  "PARCCP": "PARC"}
    assert {k: v[0] for k, v in classes.items()} == spec_names
    by_key = {s.key: s for s in SPECS}
    specs = {"MLLMJudgeCP": by_key["mllm_judge"], "PolarisCP": by_key["polaris"],
             "MLLMJudgePairCP": by_key["mllm_judge_pair"], "PARCCP": by_key["parc"]}
    configs = sorted(p.name for p in files("judgecp.configs").iterdir() if p.name.startswith("vlmeval_"))
    assert configs == ["vlmeval_judges_cp.json", "vlmeval_mllm_judge_cp.json", "vlmeval_mllm_judge_pair_cp.json",
                       "vlmeval_openai_judge_cp.json", "vlmeval_parc_cp.json", "vlmeval_polaris_cp.json"]
    seen = set()
    for name in configs:
        config = json.loads(files("judgecp.configs").joinpath(name).read_text())
        assert set(config) == {"model", "data"} and config["model"]
        for key, entry in config["data"].items():
            cls = entry["class"]
            assert cls in classes, (name, cls)
            seen.add(cls)
            # VLMEvalKit names image-dataset result files by the dataset, so the key must be it
            # (PARC datasets are named when built: PARC_<name>)
            assert entry["dataset"] == key and specs[cls].matches(key), (name, key)
            assert set(entry) - {"class", "dataset"} <= classes[cls][1], (name, entry)
        for model, entry in config["model"].items():
            assert model.endswith("-lp") or entry.get("class") in ("JudgeCPOpenAI", "JudgeCPLogprobs")
    assert seen == set(classes)  # every judge dataset has a ready config
    # PARC datasets have no fixed name (issue 29: PARC_CP was listed and named nothing); PARC_<name> when built
    assert set(dataset_names()) == {"MLLMJudge_CP", "MLLMJudge_CP_Lite", "Polaris_CP", "MLLMJudgePair_CP",
                                    "MLLMJudgePair_CP_Lite"}


def test_a_run_that_logs_errors_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """run.py logs a failed model (GPT4o-lp without a key), skips it and exits 0: the launcher says 1."""
    from judgecp.adapters.vlmeval.launcher import run_script

    original = logging.Logger.handle

    run_py = tmp_path / "run.py"
    run_py.write_text(
        "import logging, sys\n"
        "log = logging.getLogger('vlmeval.__main__')\n"
        "log.propagate = False  # as VLMEvalKit's setup_logger leaves it\n"
        "if '--fail' in sys.argv:\n"
        "    log.error('Model GPT4o-lp x Dataset MLLMJudge_CP combination failed: no API key, skipping')\n"
        "if '--exit3' in sys.argv:\n"
        "    sys.exit(3)\n"
    )
    assert run_script(run_py, ["--data", "MLLMJudge_CP"]) == 0
    assert run_script(run_py, ["--fail"]) == 1
    assert "VLMEvalKit logged 1 error(s) and skipped that work; first: Model GPT4o-lp" in capsys.readouterr().err
    assert run_script(run_py, ["--exit3"]) == 3  # run.py's own status wins
    assert not logging.getLogger("vlmeval").handlers  # VLMEvalKit's own logger is left alone
    assert logging.Logger.handle is original  # the counting is undone after the run
