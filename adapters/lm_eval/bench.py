"""``judgecp bench capture``: cost of judgecp's scoring paths against the harness's own, on one random judge.

One random LLaVA (CLIP vision tower + Llama) is built once, in memory,
straight on the device and in the dtype asked for (``--hidden``,
``--layers`` and ``--vocab`` make it as wide and deep as a real judge;
``--device cuda --dtype bfloat16`` on a GPU); its language model doubles as
the text judge (:func:`judgecp.bench.tiny_models.text_model_of`, the same
weights). At each ``--batch-size``, measured in one run, the compared paths
alternating:

* direct scoring of image documents (``multiple_choice`` over "1".."5"):
  ``hf-multimodal-judge`` in one forward pass per document against the same
  model scoring one pass per label (``scoring=per_label``: what lm-eval's
  multiple_choice costs; stock ``hf-multimodal`` refuses image
  log-likelihoods); forward passes counted with a hook on the model;
* direct scoring of text documents: ``hf-judge`` against lm-eval's stock
  ``hf`` on the same requests (``auto``: the size hf-judge's detection
  found, given to stock ``hf`` as a number, as a run detects once);
* chain-of-thought capture (``generate_until`` with ``output_logits`` and
  score extraction) against lm-eval's plain ``hf-multimodal`` generation of
  the same tokens.

Times are medians per document: wall time, and on a CPU also the process's
CPU time (steadier on a shared machine). The numbers are about the harness
path, not about judging. Nothing is written but a few kilobytes (the
processor, the documents) in a temporary folder, removed however the run
ends (SIGTERM and Ctrl-C included). Timings live here, never in tests.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import shutil
import signal
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from judgecp.adapters.lm_eval import tasks_path
from judgecp.adapters.lm_eval.fixtures import build_mllm_judge_dir
from judgecp.adapters.lm_eval.models import HFMultimodalJudgeLM
from judgecp.base.errors import InputError, require

SECTIONS = ("image", "text", "cot")


@contextlib.contextmanager
def scratch_dir(prefix: str = "judgecp-bench-") -> Iterator[Path]:
    """A temporary folder removed when the block ends, also on SIGTERM (turned into ``SystemExit(143)``) and Ctrl-C."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    if main:
        signal.signal(signal.SIGTERM, stop)
    try:
        yield path
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def quiet_harness() -> Iterator[None]:
    """No progress bars and no harness warnings inside the bench (its own table is the output)."""
    import tqdm

    loggers = [logging.getLogger(name) for name in ("lm_eval", "transformers", "datasets", "accelerate")]
    levels = [lg.level for lg in loggers]
    init = tqdm.tqdm.__init__

    @functools.wraps(init)
    def silent(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["disable"] = True
        init(self, *args, **kwargs)

    tqdm.tqdm.__init__ = silent  # type: ignore[method-assign]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        tqdm.tqdm.__init__ = init  # type: ignore[method-assign]
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def parse_batch_sizes(text: str) -> list[int | str]:
    """``"1,8,auto"`` -> ``[1, 8, "auto"]`` (a bad entry is one line naming it)."""
    sizes: list[int | str] = []
    for part in (p.strip() for p in str(text).split(",")):
        if part == "auto":
            sizes.append(part)
        elif part.isdigit() and int(part) > 0:
            sizes.append(int(part))
        else:
            raise InputError(f"--batch-size: {part!r} is not a positive integer or auto")
    return sizes


def _requests(task_name: str, data_dir: Path) -> list[Any]:
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(tasks_path()), include_defaults=False, metadata={"data_dir": str(data_dir)})
    task = manager.load([task_name])["tasks"][task_name]
    task.build_all_requests(rank=0, world_size=1, limit=None)
    return list(task.instances)


def _count_forward(model: Any) -> tuple[list[int], Any]:
    calls = [0]

    def hook(*_: Any) -> None:
        calls[0] += 1

    return calls, model.register_forward_pre_hook(hook)


def _interleaved(models: dict[str, Any], fn: Callable[[Any], Any], repeats: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of ``fn(model)`` per model, the models alternating so drift hits all alike."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in models}
    for _ in range(repeats):
        for name, model in models.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn(model)
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for name, v in times.items()}


def _passes_and_times(models: dict[str, Any], requests: list[Any], repeats: int) -> dict[str, tuple[int, float, float]]:
    """Forward passes (counted on a warm-up run) and median (wall, CPU) time of each model's
    ``loglikelihood(requests)``."""
    passes = {}
    for name, lm in models.items():
        calls, handle = _count_forward(lm.model)
        lm.loglikelihood(requests, disable_tqdm=True)
        passes[name] = calls[0]
        handle.remove()
    times = _interleaved(models, lambda lm: lm.loglikelihood(requests, disable_tqdm=True), repeats)
    return {name: (passes[name], *times[name]) for name in models}


class _Bench:
    """The sections of one run: the judge built once, the documents, the table written to ``out``."""

    def __init__(self, llava: Any, text: Any, tokenizer: Any, data: Path, *, documents: int, gen_tokens: int,
                 repeats: int, on_cpu: bool, out: TextIO) -> None:
        self.llava, self.text, self.tokenizer, self.data = llava, text, tokenizer, data
        self.documents, self.gen_tokens, self.repeats, self.on_cpu, self.w = (
            documents,
            gen_tokens,
            repeats,
            on_cpu,
            out.write,
        )

    def row(self, name: str, passes: float | None, wall: float, cpu: float, n: int) -> None:
        cells = f"{'' if passes is None else f'{passes / n:.2f}':>10s} {1000 * wall / n:9.2f}"
        self.w(f"  {name:46s} {cells}" + (f" {1000 * cpu / n:9.2f}\n" if self.on_cpu else "\n"))

    def head(self, title: str) -> None:
        self.w(
            f"\n{title}\n  {'path':46s} {'passes/doc':>10s} {'ms/doc':>9s}"
            + (f" {'CPU ms/doc':>9s}\n" if self.on_cpu else "\n")
        )

    def ratio(self, label: str, a: tuple[float, float], b: tuple[float, float], target: str) -> None:
        cpu = f", CPU time {a[1] / b[1]:.3f}x" if self.on_cpu else ""
        self.w(f"  {label} wall time {a[0] / b[0]:.3f}x{cpu} ({target})\n")

    def image(self, batch_size: int | str) -> None:
        from lm_eval.models.hf_vlms import HFMultimodalLM

        from judgecp.adapters.lm_eval.models import (
            HFMultimodalJudgeLM,  # lazy: imports the harness (torch, lm-eval)
        )

        if batch_size == "auto":
            self.w("\nDirect scoring, image documents: batch size auto skipped (lm-eval's hf-multimodal has none)\n")
            return
        args = {"pretrained": self.llava, "batch_size": batch_size, "max_length": 4096}
        judge, per_label = HFMultimodalJudgeLM(**args), HFMultimodalJudgeLM(**args, scoring="per_label")
        requests = _requests("mllm_judge_cp_coco", self.data)
        n = len({r.doc_id for r in requests})
        results = _passes_and_times({"one pass per document (hf-multimodal-judge)": judge,
                                     "one pass per label (scoring=per_label)": per_label}, requests, self.repeats)
        self.head(f"Direct scoring, image documents (multiple_choice over 1..5), batch {batch_size}")
        for name, (passes, wall, cpu) in results.items():
            self.row(name, passes, wall, cpu, n)
        (p1, *one), (p5, *five) = results.values()
        self.ratio(
            f"one pass per label / one per document: passes {p5 / p1:.2f}x,",
            tuple(five),
            tuple(one),  # type: ignore[arg-type]
            "lm-eval's way, on the same model",
        )
        try:
            HFMultimodalLM(**args).loglikelihood(requests[:1], disable_tqdm=True)
        except NotImplementedError:
            self.w("  (stock hf-multimodal refuses image log-likelihood requests: NotImplementedError)\n")

    def text_direct(self, batch_size: int | str) -> None:
        from lm_eval.models.huggingface import HFLM

        from judgecp.adapters.lm_eval.models import (
            HFJudgeLM,  # lazy: imports the harness (torch, lm-eval)
        )

        requests = [r for r in _requests("judgecp_demo_all", self.data) if r.doc_id < self.documents]
        n = len({r.doc_id for r in requests})
        args = {"pretrained": self.text, "tokenizer": self.tokenizer, "max_length": 4096}
        judge = HFJudgeLM(**args, batch_size=batch_size)
        shown = str(batch_size)
        if batch_size == "auto":  # detect once (as a run does), then give stock hf the same size
            judge.loglikelihood(requests, disable_tqdm=True)
            batch_size = max(judge._judgecp_auto_sizes.values())
            shown = f"auto ({batch_size})"
        stock = HFLM(**args, batch_size=batch_size)
        results = _passes_and_times({"hf-judge": judge, "stock hf (lm-eval)": stock}, requests, self.repeats)
        self.head(f"Direct scoring, text documents (judgecp_demo prompts), batch {shown}")
        for name, (passes, wall, cpu) in results.items():
            self.row(name, passes, wall, cpu, n)
        (_, *ours), (_, *theirs) = results.values()
        self.ratio("hf-judge / stock hf:", tuple(ours), tuple(theirs), "target: at most 1.05x on a GPU, 1.1x on a CPU")  # type: ignore[arg-type]

    def cot(self, batch_size: int | str) -> None:
        from lm_eval.models.hf_vlms import HFMultimodalLM

        if batch_size == "auto":
            self.w("\nChain of thought: batch size auto skipped (lm-eval's hf-multimodal has none)\n")
            return
        args = {"pretrained": self.llava, "batch_size": batch_size, "max_length": 4096}
        models = {"plain hf-multimodal generation": HFMultimodalLM(**args),
                  "hf-multimodal-judge with capture": HFMultimodalJudgeLM(**args)}
        requests = _requests("mllm_judge_cp_cot_coco", self.data)
        for req in requests:  # every row generates the same number of tokens
            req.arguments = (req.arguments[0], {**req.arguments[1], "max_gen_toks": self.gen_tokens, "until": []},
                             req.arguments[2])
        for lm in models.values():  # warm-up (also builds the rating vocabulary)
            lm.generate_until(requests, disable_tqdm=True)
        times = _interleaved(models, lambda lm: lm.generate_until(requests, disable_tqdm=True), self.repeats)
        self.head(f"Chain of thought (generate_until, {self.gen_tokens} new tokens, greedy), batch {batch_size}")
        for name, (wall, cpu) in times.items():
            self.row(name, None, wall, cpu, len(requests))
        plain, capture = times.values()
        cpu = f", CPU time {100 * (capture[1] / plain[1] - 1):+.1f}%" if self.on_cpu else ""
        self.w(f"  capture overhead: wall time {100 * (capture[0] / plain[0] - 1):+.1f}%{cpu} (target: within 3%)\n")


def bench_capture(
    *,
    documents: int = 24,
    gen_tokens: int = 64,
    repeats: int = 3,
    device: str = "cpu",
    dtype: str | None = None,
    hidden: int = 64,
    layers: int = 2,
    vocab: int | None = None,
    batch_sizes: Sequence[int | str] = (1,),
    sections: Sequence[str] = SECTIONS,
    out: TextIO,
) -> None:
    """Build the random judge once and run the ``sections`` at each batch size (module docstring)."""
    require("lm_eval", "lm-eval", "judgecp bench capture")
    require("transformers", "lm-eval", "judgecp bench capture")
    import torch

    from judgecp.adapters.lm_eval import register  # lazy: imports the harness (torch, lm-eval)
    from judgecp.bench.tiny_models import (  # lazy: imports the harness (torch, lm-eval)
        text_model_of,
        tiny_judge,
    )

    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        raise InputError(f"--only: unknown section {unknown[0]!r}; choose from {', '.join(SECTIONS)}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"--device {device}: torch {torch.__version__} sees no CUDA device here")
    if not isinstance(getattr(torch, dtype or "float32", None), torch.dtype):
        raise InputError(f"--dtype: {dtype!r} is not a torch dtype (bfloat16, float16, float32)")
    dtype = dtype or ("bfloat16" if device.startswith("cuda") else "float32")
    register()
    with scratch_dir() as root, quiet_harness():
        started = time.perf_counter()
        llava, processor = tiny_judge(
            vision=True, hidden=hidden, layers=layers, vocab=vocab, device=device, dtype=dtype
        )
        processor.save_pretrained(root / "processor")  # hf-multimodal loads the processor by the model's name
        llava.name_or_path = str(root / "processor")
        built = time.perf_counter() - started
        data = build_mllm_judge_dir(root / "data", per_category=documents, categories=1, bad=False)
        where = (
            torch.cuda.get_device_name(device)
            if device.startswith("cuda")
            else f"CPU, {torch.get_num_threads()} torch threads"
        )
        params = sum(p.numel() for p in llava.parameters())
        size = f"{params / 1e9:.2f}B" if params >= 1e9 else f"{params / 1e6:.1f}M"
        out.write(
            f"bench capture: random LLaVA (CLIP {layers} layers + Llama hidden {hidden}, {layers} layers, vocabulary "
            f"{llava.get_output_embeddings().weight.shape[0]}, {size} parameters, {dtype}; built on "
            f"{device} in {built:.1f} s; its language model is the text judge), {where}, torch {torch.__version__}, "
            f"{documents} MLLM-as-a-Judge-format documents with images (prompt B.1), median of {repeats}\n"
        )
        bench = _Bench(llava, text_model_of(llava), processor.tokenizer, data, documents=documents,
                       gen_tokens=gen_tokens, repeats=repeats, on_cpu=not device.startswith("cuda"), out=out)
        for size in batch_sizes:
            for section in SECTIONS:
                if section in sections:
                    {"image": bench.image, "text": bench.text_direct, "cot": bench.cot}[section](size)
        out.write(f"\n(whole run {time.perf_counter() - started:.0f} s)\n")
