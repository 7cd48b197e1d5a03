"""``judgecp bench capture``: cost of judgecp's scoring paths on small local models (CPU or GPU).

Measured in one run, as ratios against the harness's own way:

* direct scoring of image documents (``multiple_choice`` over "1".."5"):
  ``hf-multimodal-judge`` in one forward pass per document against the same
  model scoring one pass per label (``scoring=per_label``: what lm-eval's
  multiple_choice costs; stock ``hf-multimodal`` refuses image
  log-likelihoods); forward passes are counted with a hook on the model;
* chain-of-thought capture (``generate_until`` with ``output_logits`` and
  score extraction) against lm-eval's plain ``hf-multimodal`` generation of
  the same tokens.

The models are random and built locally (by default tiny: hidden 64, 2
layers; ``--hidden``, ``--layers`` and ``--vocab`` make them as wide and as
deep as a small real judge, ``--device cuda`` runs them on a GPU); the
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


def _passes_and_times(models: dict[str, Any], requests: list[Any], repeats: int) -> dict[str, tuple[int, float]]:
    """Forward passes (counted on a warm-up run) and median wall time of each model's ``loglikelihood(requests)``."""
    passes = {}
    for name, lm in models.items():
        calls, handle = _count_forward(lm.model)
        lm.loglikelihood(requests)
        passes[name] = calls[0]
        handle.remove()
    times = _interleaved(models, lambda lm: lm.loglikelihood(requests), repeats)
    return {name: (passes[name], times[name]) for name in models}


def _interleaved(models: dict[str, Any], fn: Callable[[Any], Any], repeats: int) -> dict[str, float]:
    """Median wall time of ``fn(model)`` per model, the models alternating so drift hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(repeats):
        for name, model in models.items():
            t0 = time.perf_counter()
            fn(model)
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(values) for name, values in times.items()}


def bench_capture(
    *,
    documents: int = 24,
    gen_tokens: int = 64,
    repeats: int = 3,
    device: str = "cpu",
    dtype: str = "float32",
    hidden: int = 64,
    layers: int = 2,
    vocab: int | None = None,
    out: TextIO,
) -> None:
    require("lm_eval", "lm-eval", "judgecp bench capture")
    require("transformers", "lm-eval", "judgecp bench capture")
    import torch
    from lm_eval.models.hf_vlms import HFMultimodalLM

    from judgecp.adapters.lm_eval import register
    from judgecp.adapters.lm_eval.fixtures import build_mllm_judge_dir
    from judgecp.adapters.lm_eval.models import HFMultimodalJudgeLM
    from judgecp.tiny_models import build_tiny_llava

    register()
    w = out.write
    with tempfile.TemporaryDirectory(prefix="judgecp-bench-") as tmp:
        root = Path(tmp)
        size = {"hidden": hidden, "layers": layers, "vocab": vocab}
        model_dir = build_tiny_llava(root / "llava", **size)
        data = build_mllm_judge_dir(root / "data", per_category=documents, categories=1, bad=False)
        args = {"pretrained": str(model_dir), "dtype": dtype, "device": device, "batch_size": 1, "max_length": 4096}
        judge = HFMultimodalJudgeLM(**args)
        per_label = HFMultimodalJudgeLM(**args, scoring="per_label")
        plain = HFMultimodalLM(**args)
        where = torch.cuda.get_device_name() if device.startswith("cuda") else f"CPU, {torch.get_num_threads()} torch threads"
        params = sum(p.numel() for p in judge.model.parameters())
        w(f"bench capture: random LLaVA (CLIP {layers} layers + Llama hidden {hidden}, {layers} layers, "
          f"vocabulary {judge.model.get_output_embeddings().weight.shape[0]}, {params / 1e6:.1f}M parameters, {dtype}), {where}, "
          f"{documents} MLLM-as-a-Judge-format documents with images (prompt B.1), median of {repeats}\n")

        # -- direct scoring -------------------------------------------------------
        mc = _requests("mllm_judge_cp_coco", data, judge)
        n_docs = len({r.doc_id for r in mc})
        paths = {"one pass per document (hf-multimodal-judge)": judge, "one pass per label (scoring=per_label)": per_label}
        results = _passes_and_times(paths, mc, repeats)
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

        # -- text: lm-eval's own hf scoring for comparison ---------------------------
        from lm_eval.models.huggingface import HFLM

        from judgecp.adapters.lm_eval.models import HFJudgeLM
        from judgecp.tiny_models import build_tiny_llama

        llama = build_tiny_llama(root / "llama", **size)
        text_args = {"pretrained": str(llama), "dtype": dtype, "device": device, "batch_size": 1}
        text = [r for r in _requests("judgecp_demo_all", data, judge) if r.doc_id < documents]
        w("\nDirect scoring, text (judgecp_demo prompts, tiny Llama)\n")
        text_models = {"hf-judge": HFJudgeLM(**text_args), "stock hf (lm-eval)": HFLM(**text_args)}
        for name, (passes, seconds) in _passes_and_times(text_models, text, repeats).items():
            w(f"  {name:46s} {passes / documents:10.2f} {1000 * seconds / documents:8.2f}\n")
        w("  (lm-eval's hf reuses logits when every choice is one token, as \"Ġ1\"..\"Ġ5\" are here;\n"
          "   tokenizers that split \" 1\" into two tokens, like Llama 2's, cost it one pass per label)\n")

        # -- chain of thought -----------------------------------------------------
        gen = _requests("mllm_judge_cp_cot_coco", data, judge)
        for req in gen:
            req.arguments = (req.arguments[0], {**req.arguments[1], "max_gen_toks": gen_tokens, "until": []}, req.arguments[2])
        judge.generate_until(gen)  # warm-up (also builds the rating vocabulary)
        plain.generate_until(gen)
        times = _interleaved({"plain": plain, "capture": judge}, lambda lm: lm.generate_until(gen), repeats)
        plain_s, capture_s = times["plain"], times["capture"]
        w(f"\nChain of thought (generate_until, {gen_tokens} new tokens, greedy, batch 1)\n")
        w(f"  plain hf-multimodal generation        {1000 * plain_s / len(gen):8.2f} ms/doc\n")
        w(f"  hf-multimodal-judge with capture      {1000 * capture_s / len(gen):8.2f} ms/doc\n")
        w(f"  capture overhead: {100 * (capture_s / plain_s - 1):+.1f}% (target: within 5%)\n")
