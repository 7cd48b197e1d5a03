"""``judgecp bench capture``: cost of judgecp's scoring paths on tiny local models (CPU).

Measured in one run, as ratios against the harness's own way:

* direct scoring of image documents (``multiple_choice`` over "1".."5"):
  ``hf-multimodal-judge`` in one forward pass per document against the same
  model scoring one pass per label (``scoring=per_label``: what lm-eval's
  multiple_choice costs; stock ``hf-multimodal`` refuses image
  log-likelihoods); forward passes are counted with a hook on the model;
* chain-of-thought capture (``generate_until`` with ``output_logits`` and
  score extraction) against lm-eval's plain ``hf-multimodal`` generation of
  the same tokens.

The models are random, tiny (hidden 64, 2 layers) and built locally; the
numbers are about the harness path, not about judging. Timings live here,
never in tests.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from judgecp.errors import require


def _requests(task_name: str, data_dir: Path, lm: Any) -> list[Any]:
    from lm_eval.tasks import TaskManager

    from judgecp.adapters.lm_eval import tasks_path

    manager = TaskManager(include_path=str(tasks_path()), include_defaults=False, metadata={"data_dir": str(data_dir)})
    task = manager.load([task_name])["tasks"][task_name]
    task.build_all_requests(rank=0, world_size=1, limit=None)
    return list(task.instances)


def _count_forward(model: Any) -> tuple[list[int], Any]:
    calls = [0]

    def hook(*_: Any) -> None:
        calls[0] += 1

    return calls, model.register_forward_pre_hook(hook)


def _median_time(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_capture(*, documents: int = 24, gen_tokens: int = 64, repeats: int = 3, out: TextIO) -> None:
    require("lm_eval", "lm-eval", "judgecp bench capture")
    require("transformers", "lm-eval", "judgecp bench capture")
    import torch
    from lm_eval.models.hf_vlms import HFMultimodalLM

    from judgecp.adapters.lm_eval import register
    from judgecp.adapters.lm_eval.fixtures import build_mllm_judge_dir
    from judgecp.adapters.lm_eval.models import HFMultimodalJudgeLM
    from judgecp.adapters.lm_eval.tiny_models import build_tiny_llava

    register()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    w = out.write
    with tempfile.TemporaryDirectory(prefix="judgecp-bench-") as tmp:
        root = Path(tmp)
        model_dir = build_tiny_llava(root / "llava")
        data = build_mllm_judge_dir(root / "data", per_category=documents, categories=1, bad=False)
        args = {"pretrained": str(model_dir), "dtype": "float32", "device": "cpu", "batch_size": 1, "max_length": 4096}
        judge = HFMultimodalJudgeLM(**args)
        per_label = HFMultimodalJudgeLM(**args, scoring="per_label")
        plain = HFMultimodalLM(**args)
        w(f"bench capture: tiny LLaVA (CLIP 2 layers + Llama hidden 64, 2 layers), CPU, {torch.get_num_threads()} threads, "
          f"{documents} MLLM-as-a-Judge-format documents with images, median of {repeats}\n")

        # -- direct scoring -------------------------------------------------------
        mc = _requests("mllm_judge_cp_coco", data, judge)
        n_docs = len({r.doc_id for r in mc})
        results = {}
        for name, lm in (("one pass per document (hf-multimodal-judge)", judge), ("one pass per label (scoring=per_label)", per_label)):
            calls, handle = _count_forward(lm.model)
            lm.loglikelihood(mc)  # warm-up, and the pass count
            passes = calls[0]
            handle.remove()
            seconds = _median_time(lambda lm=lm: lm.loglikelihood(mc), repeats)
            results[name] = (passes, seconds)
        w("\nDirect scoring (multiple_choice over 1..5, image documents)\n")
        w(f"  {'path':46s} {'passes/doc':>10s} {'ms/doc':>8s}\n")
        for name, (passes, seconds) in results.items():
            w(f"  {name:46s} {passes / n_docs:10.2f} {1000 * seconds / n_docs:8.2f}\n")
        (p1, s1), (p5, s5) = results.values()
        w(f"  ratio per-label / one-pass: passes {p5 / p1:.2f}x, wall time {s5 / s1:.2f}x\n")
        try:
            plain.loglikelihood(mc[:1])
        except NotImplementedError:
            w("  (stock hf-multimodal refuses image log-likelihood requests: NotImplementedError)\n")

        # -- chain of thought -----------------------------------------------------
        gen = _requests("mllm_judge_cp_cot_coco", data, judge)
        for req in gen:
            req.arguments = (req.arguments[0], {**req.arguments[1], "max_gen_toks": gen_tokens, "until": []}, req.arguments[2])
        timings: dict[str, list[float]] = {"plain": [], "capture": []}
        judge.generate_until(gen)  # warm-up (also builds the rating vocabulary)
        plain.generate_until(gen)
        for _ in range(repeats):  # interleaved, so drift hits both alike
            for name, lm in (("plain", plain), ("capture", judge)):
                t0 = time.perf_counter()
                lm.generate_until(gen)
                timings[name].append(time.perf_counter() - t0)
        plain_s, capture_s = (statistics.median(timings[k]) for k in ("plain", "capture"))
        w(f"\nChain of thought (generate_until, {gen_tokens} new tokens, greedy, batch 1)\n")
        w(f"  plain hf-multimodal generation        {1000 * plain_s / len(gen):8.2f} ms/doc\n")
        w(f"  hf-multimodal-judge with capture      {1000 * capture_s / len(gen):8.2f} ms/doc\n")
        w(f"  capture overhead: {100 * (capture_s / plain_s - 1):+.1f}% (target: within 5%)\n")
