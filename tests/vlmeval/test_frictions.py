"""What a VLMEvalKit user tripped on (issue 38), held where a test can hold it, without VLMEvalKit.

The launcher's checks before ``run.py`` (a judgecp dataset with a model that records no logprobs,
``--use-vllm`` with a capturing model) against a stand-in model registry; its logging (tracebacks
and VLMEvalKit's ".env" error kept off the console, the exit status of a ``run.py`` that stops);
the install hint; the post-hoc hint; counts that read as contradictions; the install script's
folding of pip's resolver block. The same against the real VLMEvalKit:
tests/vlmeval/test_integration.py.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from judgecp.adapters.vlmeval.api_judge import JudgeCPOpenAI
from judgecp.adapters.vlmeval.launcher import (
    ENV_FILE_ERROR,
    check_run,
    run_script,
    vlmeval_logging,
)
from judgecp.adapters.vlmeval.register import JudgeCPLogprobs, VLMEvalKitMissing, build_lp
from judgecp.base.errors import InputError
from judgecp.cli import main
from judgecp.kinds.likert.present import stratum_count

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"


class LocalModel:  # a VLMEvalKit model class: generates locally
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class RemoteModel:  # a VLMEvalKit API class
    is_api = True


#: supported_VLM as the launcher sees it after registration: each entry a partial, every local
#: entry with its -lp twin
REGISTRY = {
    "tiny": partial(LocalModel, model_path="x"),
    "tiny-lp": partial(build_lp, "tiny"),
    "gpt": partial(RemoteModel),
    "critic": partial(JudgeCPOpenAI, model="m", api_base="http://127.0.0.1:1/v1"),
}


def check(*argv: str) -> list[str]:
    return check_run(argv, REGISTRY, dataset_classes=("MLLMJudgeCP", "PARCCP"))


# -- item 2: no -lp hint before inference ----------------------------------------------------------


def test_a_judgecp_dataset_with_a_model_without_logprobs_is_refused_naming_its_lp_twin() -> None:
    with pytest.raises(
        InputError,
        match=r"tiny records no logprobs, so MLLMJudge_CP, PARC_toy would end "
        r"without metrics .*use --model tiny-lp, its capturing twin, or --mode infer",
    ):
        check("--data", "MLLMJudge_CP", "MMBench_DEV_EN", "PARC_toy", "--model", "tiny-lp", "tiny")
    with pytest.raises(InputError, match="tiny records no logprobs"):  # the default mode is all
        check("--model", "tiny", "--data", "MLLMJudgePair_CP", "--mode", "all", "--work-dir", "out")
    with pytest.raises(InputError, match="ImagePrefEnsemble_HPDv2 would end without metrics"):
        check("--data", "ImagePrefEnsemble_HPDv2", "--model", "tiny")
    with pytest.raises(InputError, match="through JudgeCPOpenAI"):  # an API model has no -lp twin
        check("--data", "Polaris_CP", "--model", "gpt")


def test_what_the_lp_check_lets_through() -> None:
    assert check("--data", "MLLMJudge_CP", "--model", "tiny-lp", "critic") == []  # both capture
    assert check("--data", "MMBench_DEV_EN", "--model", "tiny") == []  # VLMEvalKit's own benchmark
    assert check("--data", "MLLMJudge_CP", "--model", "unknown-model") == []  # run.py says it
    assert (
        check("--data", "MLLMJudge_CP", "--model", "tiny", "--mode", "eval") == []
    )  # the error says it
    (warning,) = check("--data", "MLLMJudge_CP", "--model", "tiny", "--mode", "infer")  # on purpose
    assert warning.startswith("tiny records no logprobs") and "tiny-lp" in warning
    assert (
        check("--data") == [] and check("--mode") == []
    )  # argv run.py will refuse: not checked here


def test_config_files_are_checked_too(tmp_path: Path) -> None:
    config = tmp_path / "run.json"
    data = {
        "MLLMJudge_CP": {"class": "MLLMJudgeCP", "dataset": "MLLMJudge_CP"},
        "mine": {"class": "PARCCP", "dataset": "PARC_mine"},
        "MMB": {"class": "ImageMCQDataset"},
    }
    model = {"plain": {"class": "DOCLING", "model_path": "x"}}
    config.write_text(json.dumps({"model": model, "data": data}))
    with pytest.raises(
        InputError,
        match=r'plain records no logprobs, so MLLMJudge_CP, mine .*"class": '
        r'"JudgeCPLogprobs", "base_model": "plain"',
    ):
        check("--config", str(config))
    config.write_text(config.read_text().replace('"DOCLING"', '"JudgeCPLogprobs"'))
    assert check("--config", str(config)) == []
    config.write_text("model: yaml")
    assert check("--config", str(config)) == []  # not a JSON config: run.py reads it


# -- item 4: --use-vllm ----------------------------------------------------------------------------


def test_use_vllm_is_refused_for_every_capturing_model(tmp_path: Path) -> None:
    for argv in (
        ("--data", "MLLMJudge_CP", "--model", "tiny-lp", "--use-vllm"),
        ("--data", "MMBench_DEV_EN", "--model", "tiny-lp", "--use-vllm"),
    ):  # any -lp model, any data
        with pytest.raises(InputError, match="--use-vllm: tiny-lp captures logprobs"):
            check(*argv)
    assert (
        check("--data", "MMBench_DEV_EN", "--model", "tiny", "--use-vllm") == []
    )  # not judgecp's business
    assert (
        check("--data", "MLLMJudge_CP", "--model", "critic", "--use-vllm") == []
    )  # an endpoint: no vLLM here
    config = tmp_path / "run.json"
    config.write_text(
        '{"model": {"j": {"class": "JudgeCPLogprobs", "base_class": "DOCLING"}}, "data": {}}'
    )
    with pytest.raises(InputError, match="--use-vllm: j captures"):
        check("--config", str(config), "--use-vllm")
    # plain run.py: --config --use-vllm puts use_vllm into the model's arguments; -lp entries get
    # it for Qwen2-VL, Qwen2.5-VL and Llama-4 models
    with pytest.raises(InputError, match="run without --use-vllm"):
        JudgeCPLogprobs(base_class="DOCLING", use_vllm=True)
    with pytest.raises(InputError, match="run without --use-vllm"):
        build_lp("Qwen2.5-VL-7B-Instruct", use_vllm=True)


# -- item 3: exit status and tracebacks ------------------------------------------------------------


@pytest.fixture
def vlmeval_logger(tmp_path: Path) -> Any:
    """VLMEvalKit's logger as run.py sets it up: a console handler, a log file, not propagating."""
    logger = logging.getLogger("vlmeval")
    console, log_file = io.StringIO(), tmp_path / "logs" / "T1.log"
    log_file.parent.mkdir()
    handlers = [logging.StreamHandler(console), logging.FileHandler(log_file)]
    for h in handlers:
        logger.addHandler(h)
    saved = logger.propagate
    logger.propagate = False
    yield console, log_file
    for h in handlers:
        logger.removeHandler(h)
        h.close()
    logger.propagate = saved


def test_tracebacks_stay_in_vlmevalkit_log_file_and_the_env_error_is_dropped(
    vlmeval_logger: Any,
) -> None:
    console, log_file = vlmeval_logger
    root = io.StringIO()
    root_handler = logging.StreamHandler(root)
    logging.getLogger().addHandler(root_handler)
    try:
        with vlmeval_logging() as log:
            logging.getLogger().error(f"{ENV_FILE_ERROR} /x/.env, failed to load.")
            logging.getLogger().error("another root error")
            try:
                raise OSError("Cannot find an appropriate cached snapshot folder")
            except OSError:
                logging.getLogger("vlmeval.__main__").exception(
                    "Model m x Dataset d combination failed: boom"
                )
            try:
                raise InputError("judgecp's own error")
            except InputError:
                logging.getLogger("vlmeval.__main__").exception(
                    "Model m x Dataset e combination failed"
                )
    finally:
        logging.getLogger().removeHandler(root_handler)
    assert ENV_FILE_ERROR not in root.getvalue() and "another root error" in root.getvalue()
    shown = console.getvalue()
    assert (
        "Traceback" not in shown and f"combination failed: boom [traceback in {log_file}]" in shown
    )
    assert log.errors == [
        "Model m x Dataset d combination failed: boom",
        "Model m x Dataset e combination failed",
    ]
    kept = log_file.read_text()
    assert (
        kept.count("Traceback") == 1 and "OSError: Cannot find" in kept
    )  # judgecp's own: its line only
    # outside a launch, VLMEvalKit's logging is its own again
    try:
        raise OSError("later")
    except OSError:
        logging.getLogger("vlmeval.__main__").exception("after")
    assert "Traceback" in console.getvalue()


def test_a_run_py_that_stops_is_one_line_and_exit_status_1(
    tmp_path: Path, vlmeval_logger: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _, log_file = vlmeval_logger
    run_py = tmp_path / "run.py"
    run_py.write_text(
        "raise FileNotFoundError('Cannot find an appropriate cached snapshot folder\\nmore')\n"
    )
    assert run_script(run_py, []) == 1
    err = capsys.readouterr().err
    assert err == (
        f"judgecp: error: VLMEvalKit stopped: FileNotFoundError: Cannot find an appropriate cached "
        f"snapshot folder [traceback in {log_file}]\n"
    )
    assert "Traceback" in log_file.read_text()
    run_py.write_text("from judgecp.base.errors import InputError\nraise InputError('bad setting')\n")
    with pytest.raises(
        InputError, match="bad setting"
    ):  # judgecp's own: exit status 2 (judgecp's CLI)
        run_script(run_py, [])
    run_py.write_text("import logging\nlogging.getLogger('vlmeval').error('Model m failed')\n")
    assert run_script(run_py, []) == 1
    assert (
        "VLMEvalKit logged 1 error(s) and skipped that work; first: Model m failed"
        in capsys.readouterr().err
    )
    run_py.write_text("import sys\nsys.exit(3)\n")
    assert run_script(run_py, []) == 3


# -- item 5: the install hint ----------------------------------------------------------------------


def test_missing_vlmevalkit_points_to_the_cpu_install_script() -> None:
    text = str(VLMEvalKitMissing("`judgecp vlmeval`"))
    assert (
        "bash scripts/install_vlmeval_cpu.sh" in text
        and "e8e78f05" in text
        and "CUDA torch" in text
    )


# -- item 2 post hoc, item 8: messages and counts --------------------------------------------------


def run_judgecp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "judgecp.cli", *args],
        text=True,
        capture_output=True,
        check=False,
        cwd=REPO,
    )


def fixture_file(folder: str) -> str:
    return str(next((FIXTURES / folder).glob("*/*/*.xlsx")))


def test_post_hoc_error_names_the_lp_twin(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--format", "vlmeval", fixture_file("plain")]) == 2
    err = capsys.readouterr().err
    assert (
        "no usable rows (no_logprob_record: 24); the model wrote no logprob records: "
        "run its -lp twin "
        "(`--model tiny-docling-lp`" in err
    )


def test_parc_console_keeps_records_without_an_original_prompt_apart(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["evaluate", "--format", "vlmeval", fixture_file("parc"), "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "records used 82 (read 82); excluded: none\n" in out
    assert "flags (kept): no_original_prompt (no consistency) 1" in out


def test_a_stratum_with_rows_never_reads_n_0(capsys: pytest.CaptureFixture[str]) -> None:
    # rounded as before (2.4 rows per split: "2"), but a stratum with rows never reads "0"
    counts = (0, 0.04, 0.5, 1.6, 2.4, 12.0)
    assert [stratum_count(n) for n in counts] == ["0", "0.04", "0.5", "2", "2", "12"]
    # Polaris against the annotators' mean: label 5 has 5 test rows over 10 splits
    assert (
        main(
            [
                "evaluate",
                "--format",
                "vlmeval",
                fixture_file("polaris"),
                "--methods",
                "naive,chr",
                "--label",
                "score_mean",
                "--label-scale",
                "0:1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "5: 1.000/4.00 (n 0.5)" in out and "(n 0)" not in out


# -- item 6: the install script's pip output -------------------------------------------------------


def fold(text: str) -> str:
    """The install script's ``fold_vlmeval_requirements`` applied to ``text``."""
    script = (REPO / "scripts" / "install_vlmeval_cpu.sh").read_text()
    start = script.index("fold_vlmeval_requirements() {")
    body = script[start : script.index("\n}\n", start) + 3]
    return subprocess.run(
        ["bash", "-c", body + "fold_vlmeval_requirements"],
        input=text,
        text=True,
        capture_output=True,
        check=True,
    ).stdout


def test_install_script_folds_the_resolver_block_of_vlmevalkit_requirements_only() -> None:
    header = (
        "ERROR: pip's dependency resolver does not currently take into account all the packages "
        "that are "
        "installed. This behaviour is the source of the following dependency conflicts.\n"
    )
    missing = "".join(
        f"vlmeval 0.1.0 requires {p}, which is not installed.\n"
        for p in ("anls>=0.0.2", "litellm<1.85,>=1.55", "torchvision")
    )
    out = fold(
        "Installing collected packages: x\n" + header + missing + "Successfully installed x\n"
    )
    assert out == (
        "Installing collected packages: x\n(pip listed 3 requirements of VLMEvalKit that this "
        'script leaves out on purpose: harmless, docs/vlmeval.md "Expected noise")\n'
        "Successfully installed x\n"
    )
    other = "foo 1.0 requires bar<2, but you have bar 3.0 which is incompatible.\n"
    assert fold(header + other + missing) == header + other + (
        "(pip listed 3 requirements of VLMEvalKit that this script leaves out on purpose: "
        "harmless, "
        'docs/vlmeval.md "Expected noise")\n'
    )
