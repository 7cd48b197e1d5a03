"""``judgecp-hf``: a Hugging Face vision-language judge for lmms-eval that captures score-token logprobs.

lmms-eval's generic HF vision-language path (its ``huggingface`` chat model)
loads ``AutoModelForImageTextToText`` with ``AutoProcessor`` and builds the
prompt with the processor's chat template; it has no ``loglikelihood`` and
its generation returns text only. ``judgecp-hf`` loads the same way (falling
back to ``AutoModelForCausalLM``) and is a *simple* lmms-eval model (requests
``(context, continuation | generation settings, doc_to_visual, doc_id, task,
split)``), so judgecp's tasks, which build simple requests, work with it:

* ``loglikelihood`` (direct scoring): a document's requests (same task,
  document and context) become **one forward pass**: the prompt with its
  images, plus the continuations' common prefix; every label's
  log-likelihood is read at the last position (judgecp's
  :func:`~judgecp.adapters.capture.logits.plan_document` and
  :func:`~judgecp.adapters.capture.logits.read_continuations`, shared with lm-eval's
  judge models). Documents run ``batch_size`` at a time, right-padded, their
  image inputs concatenated. The request's task metadata may name a
  ``gen_prefix`` (lm-eval's answer prefix, e.g. ``Score:``): it starts the
  answer, after the prompt, as lm-eval puts it.
* ``generate_until`` (chain of thought): ``generate(output_logits=True,
  return_dict_in_generate=True)``, left-padded batches; judgecp's extractor
  finds the score position in each row's own tokens and reads the rating
  tokens' log-softmax there, from raw logits
  (:func:`~judgecp.adapters.capture.logits.capture_generation`,
  :func:`~judgecp.adapters.capture.logits.judge_response_from_ids`). The answer is the
  ``score`` judge output as JSON, as lm-eval's judge models return it.

The prompt: the processor's (or tokenizer's) chat template with one
``{"type": "image"}`` part per image and the text, with the generation
prompt; without a template, lmms-eval's ``llava_hf`` convention: the image
tokens, a newline, the text. A text with one ``<image>`` placeholder per
image keeps the images at the placeholders (interleaved). ``--model_args``: ``pretrained``, ``device``
(cpu), ``dtype`` (``auto``, or e.g. ``float32``), ``batch_size``,
``max_new_tokens`` (default for generation when the task sets none),
``chat_template`` (a Jinja string or file), ``scale`` (1:5), ``floor`` (log
1e-5), ``trust_remote_code``, ``record`` (a JSONL path: every document's answers,
for ``judgecp-replay recording=PATH``).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from lmms_eval.api.model import lmms

from judgecp.adapters.capture.logits import (
    RatingVocabulary,
    capture_generation,
    judge_response_from_ids,
    plan_document,
    read_continuations,
)
from judgecp.adapters.lm_eval import set_model_name
from judgecp.base.scale import LikertScale
from judgecp.data.extraction import DEFAULT_FLOOR

logger = logging.getLogger("lmms_eval.judgecp")

DEFAULT_IMAGE_TOKEN = "<image>"


def _flatten(visuals: Any) -> list[Any]:
    """``doc_to_visual``'s answer as a flat list (``None`` and nested lists allowed)."""
    if visuals is None:
        return []
    out: list[Any] = []
    for v in visuals if isinstance(visuals, (list, tuple)) else [visuals]:
        out.extend(_flatten(v) if isinstance(v, (list, tuple)) else [v])
    return out


def _per_token(value: Any, context_length: int, width: int) -> Any:
    """An image input as a batch row: a per-token one (``mm_token_type_ids``: one value per context token)
    extended with zeros (text) to the row's ``width``; any other (pixels, grids) as it is."""
    if isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape == (1, context_length):
        return torch.nn.functional.pad(value, (0, width - context_length))
    return value


def with_prefix(prompt: str, prefix: str | None) -> str:
    """``prompt`` followed by the answer prefix, a space between them unless one is there (lm-eval's rule)."""
    if not prefix:
        return prompt
    if prompt and not (prompt[-1].isspace() or prefix[0].isspace()):
        return f"{prompt} {prefix}"
    return prompt + prefix


class HFJudge(lmms):  # type: ignore[misc]
    """``judgecp-hf`` (see the module docstring)."""

    is_simple = True

    def __init__(
        self,
        pretrained: str,
        device: str | None = "cpu",
        dtype: str = "auto",
        batch_size: int | str = 1,
        max_batch_size: int | None = None,
        max_new_tokens: int | str = 512,
        chat_template: str | None = None,
        scale: str = "1:5",
        floor: float | str | None = None,
        trust_remote_code: bool | str = False,
        record: str | None = None,
        **unknown: Any,
    ) -> None:
        super().__init__()
        if unknown:
            raise ValueError(f"judgecp-hf: unknown --model_args {', '.join(sorted(unknown))}")
        if not str(batch_size).isdigit() or int(batch_size) < 1:
            raise ValueError(f"judgecp-hf: batch_size must be a positive integer, got {batch_size!r}")
        import transformers

        remote = str(trust_remote_code).lower() in ("1", "true", "yes")
        self._device = torch.device(device or "cpu")
        torch_dtype: Any = "auto" if dtype in (None, "", "auto") else getattr(torch, str(dtype))
        self.processor = transformers.AutoProcessor.from_pretrained(pretrained, trust_remote_code=remote)
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        try:
            model = transformers.AutoModelForImageTextToText.from_pretrained(
                pretrained, dtype=torch_dtype, trust_remote_code=remote)
        except ValueError:  # a text-only causal model
            model = transformers.AutoModelForCausalLM.from_pretrained(
                pretrained, dtype=torch_dtype, trust_remote_code=remote
            )
        self.model = model.to(self._device).eval()
        self.pretrained = pretrained
        self.batch_size_per_gpu = int(batch_size)
        self.max_new_tokens = int(max_new_tokens)
        template = chat_template
        if template and Path(template).is_file():
            template = Path(template).read_text(encoding="utf-8")
        self.chat_template = template or getattr(self.processor, "chat_template", None) or getattr(
            self.tokenizer, "chat_template", None)
        self.image_token = getattr(self.processor, "image_token", None) or DEFAULT_IMAGE_TOKEN
        self.judgecp_scale = LikertScale.parse(str(scale))
        self.judgecp_floor = DEFAULT_FLOOR if floor in (None, "") else float(floor)  # type: ignore[arg-type]
        self.judgecp_vocabulary = RatingVocabulary(self.tokenizer, self.judgecp_scale)
        #: forward_passes (of direct scoring), documents, per_label_documents (fallbacks), generate_calls
        self.judgecp_stats: Counter[str] = Counter()
        self.judgecp_record = Path(record) if record else None
        set_model_name(pretrained)

    @property
    def batch_size(self) -> int:
        return self.batch_size_per_gpu

    @property
    def device(self) -> torch.device:
        return self._device

    # -- prompts ---------------------------------------------------------------------

    def prompt(self, context: str, n_images: int) -> str:
        """The model's prompt for a request's context and its number of images (module docstring).

        A context with one ``<image>`` placeholder per image (lmms-eval's and judgecp's interleaved
        prompts, e.g. two candidate images of a pairwise item) keeps the images where the placeholders are.
        """
        pieces = context.split(DEFAULT_IMAGE_TOKEN)
        interleaved = n_images > 0 and len(pieces) == n_images + 1
        if self.chat_template:
            content: list[dict[str, Any]] = []
            if interleaved:
                for k, piece in enumerate(pieces):
                    if piece:
                        content.append({"type": "text", "text": piece})
                    if k < n_images:
                        content.append({"type": "image"})
            else:
                content = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": context}]
            messages = [{"role": "user", "content": content}]
            apply = getattr(self.processor, "apply_chat_template", self.tokenizer.apply_chat_template)
            return str(apply(messages, chat_template=self.chat_template, add_generation_prompt=True, tokenize=False))
        if interleaved:
            return self.image_token.join(pieces)
        if n_images:
            return " ".join([self.image_token] * n_images) + "\n" + context
        return context

    def encode(self, texts: Sequence[str], images: Sequence[Any], *, padding: bool = False) -> dict[str, Any]:
        """The model inputs of ``texts`` with their ``images`` (image tokens expanded by the processor)."""
        kwargs: dict[str, Any] = {"return_tensors": "pt"}
        if padding:
            kwargs["padding"] = True
        if images:
            encoding = self.processor(text=list(texts), images=list(images), **kwargs)
        else:
            encoding = self.tokenizer(list(texts), **kwargs)
        out = {}
        for key, value in encoding.items():
            if isinstance(value, torch.Tensor):
                value = value.to(self._device)
                if value.is_floating_point():
                    value = value.to(self.model.dtype)
            out[key] = value
        return out

    def _document(self, request: Any) -> tuple[Any, list[Any]]:
        _context, _second, doc_to_visual, doc_id, task, split = request.args[:6]
        doc = self.task_dict[task][split][doc_id]
        return doc, _flatten(doc_to_visual(doc)) if callable(doc_to_visual) else []

    # -- direct scoring ----------------------------------------------------------------

    def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
        """One forward pass per document (module docstring); each request gets its continuation's value."""
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, req in enumerate(requests):
            context, _continuation, _visual, doc_id, task, split = req.args[:6]
            groups.setdefault((task, split, doc_id, context), []).append(i)
        documents = []
        for idx in groups.values():
            first = requests[idx[0]]
            _doc, visuals = self._document(first)
            text = with_prefix(self.prompt(first.args[0], len(visuals)), (first.metadata or {}).get("gen_prefix"))
            encoding = self.encode([text], visuals)
            context_ids = encoding.pop("input_ids")[0].tolist()
            encoding.pop("attention_mask", None)
            text_length = len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            continuations: dict[str, list[int]] = {}
            for i in idx:
                continuation = requests[i].args[1]
                if continuation not in continuations:
                    ids = self.tokenizer(text + continuation, add_special_tokens=False)["input_ids"]
                    continuations[continuation] = list(ids[text_length:])
            documents.append((idx, context_ids, continuations, encoding))
        results: list[tuple[float, bool] | None] = [None] * len(requests)
        for (idx, _ids, continuations, _extra), values in zip(documents, self._score(documents), strict=True):
            lookup = dict(zip(continuations, values, strict=True))
            for i in idx:
                results[i] = lookup[requests[i].args[1]]
        logger.info("judgecp-hf: %d documents scored in %d forward passes (%d needed one pass per choice)",
                    self.judgecp_stats["documents"], self.judgecp_stats["forward_passes"],
                    self.judgecp_stats["per_label_documents"])
        self._write_record("direct", requests, results)
        return results  # type: ignore[return-value]

    def _score(
        self, documents: Sequence[tuple[Any, list[int], dict[str, list[int]], dict[str, Any]]]
    ) -> list[list[tuple[float, bool]]]:
        """Every document's continuations' (log-likelihood, greedy), in batches of ``batch_size`` rows."""
        rows: list[tuple[int, list[int], int]] = []  # (document, input ids, context length)
        reads: list[list[tuple[int, list[int]]]] = []
        out: list[list[tuple[float, bool] | None]] = []
        for d, (_idx, context, continuations, _extra) in enumerate(documents):
            plan = plan_document(list(continuations.values()))
            if not plan.single_pass:
                self.judgecp_stats["per_label_documents"] += 1
            start = len(rows)
            for extension in plan.rows:
                rows.append((d, context + extension, len(context)))
                reads.append([])
            for k, (row, tokens) in enumerate(plan.reads):
                reads[start + row].append((k, tokens))
            out.append([None] * len(plan.reads))
        self.judgecp_stats["documents"] += len(documents)
        # Rows with the same kind of image inputs batch together, longest first.
        order = sorted(range(len(rows)), key=lambda r: (sorted(documents[rows[r][0]][3]), -len(rows[r][1])))
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        batches: list[list[int]] = []
        for r in order:
            same = batches and len(batches[-1]) < self.batch_size and (
                sorted(documents[rows[batches[-1][0]][0]][3]) == sorted(documents[rows[r][0]][3]))
            if same:
                batches[-1].append(r)
            else:
                batches.append([r])
        for batch in batches:
            width = max(len(rows[r][1]) for r in batch)
            inputs = torch.tensor([rows[r][1] + [pad] * (width - len(rows[r][1])) for r in batch], device=self._device)
            extras = [documents[rows[r][0]][3] for r in batch]
            extra = {
                k: torch.cat(
                    [
                        _per_token(e[k], len(documents[rows[r][0]][1]), width)
                        for e, r in zip(extras, batch, strict=True)
                    ],
                    dim=0,
                )
                for k in extras[0]
            }
            with torch.no_grad():
                logits = self.model(input_ids=inputs, **extra).logits
            self.judgecp_stats["forward_passes"] += 1
            wanted = [(b, rows[r][2] - 1, tokens) for b, r in enumerate(batch) for _k, tokens in reads[r]]
            owners = [(rows[r][0], k) for r in batch for k, _tokens in reads[r]]
            for (d, k), value in zip(owners, read_continuations(logits, wanted), strict=True):
                out[d][k] = value
            del logits
        return out  # type: ignore[return-value]

    # -- chain of thought ---------------------------------------------------------------

    def generate_until(self, requests: list[Any]) -> list[str]:
        """Judge responses (JSON) with the score-token logprobs captured at the score position."""
        results: list[str | None] = [None] * len(requests)
        by_settings: dict[str, list[int]] = {}
        for i, req in enumerate(requests):
            by_settings.setdefault(json.dumps(req.args[1], sort_keys=True, default=str), []).append(i)
        for idx in by_settings.values():
            settings = dict(requests[idx[0]].args[1] or {})
            prepared = []
            for i in idx:
                _doc, visuals = self._document(requests[i])
                prepared.append((i, self.prompt(requests[i].args[0], len(visuals)), visuals))
            prepared.sort(key=lambda p: -len(p[1]))
            for start in range(0, len(prepared), self.batch_size):
                chunk = prepared[start : start + self.batch_size]
                for (i, _text, _visuals), response in zip(chunk, self._generate(chunk, settings), strict=True):
                    results[i] = response
        self._write_record("cot", requests, results)
        return results  # type: ignore[return-value]

    def _generate(self, chunk: Sequence[tuple[int, str, list[Any]]], settings: dict[str, Any]) -> list[str]:
        side = getattr(self.tokenizer, "padding_side", "right")
        self.tokenizer.padding_side = "left"
        try:
            encoding = self.encode([text for _i, text, _v in chunk], [v for _i, _t, visuals in chunk for v in visuals],
                                   padding=len(chunk) > 1)
        finally:
            self.tokenizer.padding_side = side
        until = settings.get("until") or []
        until = [until] if isinstance(until, str) else list(until)
        max_new = int(settings.get("max_new_tokens") or settings.get("max_gen_toks") or self.max_new_tokens)
        sampling = bool(settings.get("do_sample")) or float(settings.get("temperature") or 0) > 0
        options: dict[str, Any] = {"do_sample": sampling}
        if sampling:
            options["temperature"] = float(settings.get("temperature") or 1.0)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with torch.no_grad():
            output = self.model.generate(**encoding, max_new_tokens=max_new, pad_token_id=pad,
                                         output_logits=True, return_dict_in_generate=True, **options)
        self.judgecp_stats["generate_calls"] += 1
        captures = capture_generation(output, encoding["input_ids"].shape[1], self.judgecp_vocabulary, self._stop_ids())
        responses = []
        for capture in captures:
            text = self.tokenizer.decode(capture.ids, skip_special_tokens=True)
            for stop in until:
                if stop and stop in text:
                    text = text.split(stop)[0]
            responses.append(judge_response_from_ids(text, capture, self.tokenizer, self.judgecp_vocabulary,
                                                     floor=self.judgecp_floor))
            capture.release()
        return responses

    def _write_record(self, kind: str, requests: Sequence[Any], results: Sequence[Any]) -> None:
        """Append each document's answers to ``record`` in the replay model's format (lm-eval's:
        ``{"id", "kind": "direct", "loglikelihoods": {continuation: [ll, greedy]}}`` or ``"cot"``, ``"response"``)."""
        if self.judgecp_record is None or not requests:
            return
        by_doc: dict[str, dict[str, Any]] = {}
        for req, result in zip(requests, results, strict=True):
            _context, _second, _visual, doc_index, task, split = req.args[:6]
            doc = self.task_dict[task][split][doc_index]
            doc_id = str(doc.get("id", doc_index))
            entry = by_doc.setdefault(doc_id, {"id": doc_id, "kind": kind})
            if kind == "direct":
                entry.setdefault("loglikelihoods", {})[req.args[1]] = [float(result[0]), bool(result[1])]
            else:
                entry["response"] = result
        self.judgecp_record.parent.mkdir(parents=True, exist_ok=True)
        with self.judgecp_record.open("a", encoding="utf-8") as handle:
            for entry in by_doc.values():
                handle.write(json.dumps(entry) + "\n")

    def _stop_ids(self) -> set[int]:
        ids = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids.update(eos if isinstance(eos, (list, tuple)) else [eos])
        return {i for i in ids if i is not None}

    def generate_until_multi_round(self, requests: list[Any]) -> list[str]:
        raise NotImplementedError("judgecp-hf answers loglikelihood and generate_until requests")
