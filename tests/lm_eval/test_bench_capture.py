"""``judgecp bench capture`` on CPU with a tiny random judge: its table, its flags, and its clean-up when stopped.

Timings are printed by the bench, never checked here: the tests check what
was measured (forward passes per document, the sections, the batch sizes)
and that nothing is left on disk however the run ends.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lm_eval.helpers import offline_env, skip_without_lm_eval

skip_without_lm_eval()

BENCH = [sys.executable, "-m", "judgecp.cli", "bench", "capture"]


def bench_env(tmp_path: Path) -> dict[str, str]:
    """The bench's environment: its temporary folder under ``tmp_path/tmp``, so the test sees all it writes."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return offline_env(tmp_path, TMPDIR=str(tmp_path / "tmp"), JUDGECP_DISABLE_PLUGIN_AUTOLOAD="0")


def leftovers(tmp_path: Path) -> list[str]:
    """What the bench left in its temporary folder (torch's own compile cache folder, empty, is torch's)."""
    return sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "tmp").rglob("*")
                  if not (p.name.startswith("torchinductor_") and p.is_dir() and not any(p.iterdir())))


def test_bench_capture_measures_each_section_at_each_batch_size(tmp_path: Path) -> None:
    proc = subprocess.run(
        [*BENCH, "--documents", "4", "--gen-tokens", "4", "--repeats", "1", "--batch-size", "1,2,auto"],
        env=bench_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "built on cpu" in out and "float32" in out and "its language model is the text judge" in out
    for size in ("1", "2"):
        image = out.split(f"Direct scoring, image documents (multiple_choice over 1..5), batch {size}\n")[1]
        per_doc = 1 / int(size)
        assert re.search(rf"one pass per document \(hf-multimodal-judge\) +{per_doc:.2f} ", image)
        assert re.search(rf"one pass per label \(scoring=per_label\) +{5 * per_doc:.2f} ", image)
        assert f"Direct scoring, text documents (judgecp_demo prompts), batch {size}\n" in out
        assert f"Chain of thought (generate_until, 4 new tokens, greedy), batch {size}\n" in out
    assert re.search(r"batch auto \(\d+\)\n", out) and "image documents: batch size auto skipped" in out
    assert out.count("hf-judge / stock hf: wall time") == 3 and out.count("capture overhead: wall time") == 2
    assert "CPU ms/doc" in out
    # quiet: no progress bar, no harness warning, nothing left behind
    assert "it/s]" not in proc.stderr and "%|" not in proc.stderr and "WARNING" not in proc.stderr
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(("args", "message"), [
    (["--batch-size", "1,x"], "--batch-size: 'x' is not a positive integer or auto"),
    (["--batch-size", "0"], "--batch-size: '0'"),
    (["--only", "text,images"], "--only: unknown section 'images'"),
    (["--dtype", "bf16"], "--dtype: 'bf16' is not a torch dtype"),
    pytest.param(["--device", "cuda"], "--device cuda: torch", marks=pytest.mark.skipif(
        __import__("torch").cuda.is_available(), reason="a CUDA device is here")),
])
def test_bad_options_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    proc = subprocess.run([*BENCH, *args], env=bench_env(tmp_path), capture_output=True, text=True, timeout=300)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"judgecp: error: {message}"), proc.stderr


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stopped_run_leaves_nothing_behind(tmp_path: Path, signum: int, code: int) -> None:
    """Stopped while it works (its judge built, its documents written): the folder goes with it."""
    env = bench_env(tmp_path)
    proc = subprocess.Popen([*BENCH, "--documents", "4", "--gen-tokens", "64", "--repeats", "5"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300
        while not list((tmp_path / "tmp").glob("judgecp-bench-*/data")) and proc.poll() is None:
            assert time.monotonic() < deadline, "the bench never wrote its documents"
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        os.kill(proc.pid, signum)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr[-3000:]
    assert "Traceback" not in stderr
    assert leftovers(tmp_path) == []


def test_the_judge_is_built_in_the_dtype_asked_and_its_language_model_is_the_text_judge() -> None:
    import torch

    from judgecp.bench.tiny_models import text_model_of, tiny_judge

    llava, processor = tiny_judge(vision=True, dtype="bfloat16")
    assert {p.dtype for p in llava.parameters()} == {torch.bfloat16} and torch.get_default_dtype() == torch.float32
    llava.float()
    text = text_model_of(llava)
    assert text.lm_head.weight.data_ptr() == llava.lm_head.weight.data_ptr()  # the same weights, no copy
    ids = processor.tokenizer("Judge it. Score:", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.equal(text(ids).logits, llava(input_ids=ids).logits)


def test_the_gpu_script_runs_verbatim_with_options_the_bench_takes(tmp_path: Path) -> None:
    """scripts/bench_capture_gpu.sh with its judgecp replaced by one that only parses the options (no GPU here)."""
    repo = Path(__file__).resolve().parents[2]
    stub = tmp_path / "judgecp"
    stub.write_text(
        f"#!{sys.executable}\nimport sys\nfrom judgecp.cli import build_parser\n"
        "args = build_parser().parse_args(sys.argv[1:])\nprint('parsed', args.device, args.dtype, args.batch_size)\n"
    )
    stub.chmod(0o755)
    out = tmp_path / "table.txt"
    env = {**bench_env(tmp_path), "JUDGECP": str(stub), "PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(repo / "scripts" / "bench_capture_gpu.sh"), str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "lm_eval 0.4" in text and "judgecp " in text
    assert text.count("parsed cuda bfloat16") == 2 and "--hidden 4096 --layers 8 --vocab 32000" in text
    assert "--hidden 4096 --layers 24 --vocab 32000" in text and "parsed cuda bfloat16 1,8,auto" in text
