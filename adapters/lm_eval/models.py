"""Hugging Face judge models for lm-eval: ``hf-judge`` (text) and ``hf-multimodal-judge`` (image + text).

They are lm-eval's ``hf`` and ``hf-multimodal`` with two changes:

* ``loglikelihood`` groups a document's requests (same context, same images)
  and reads every label's log-likelihood from **one forward pass** per
  document (``scoring=per_label`` restores one pass per choice, for
  comparison). Identical documents in several tasks (a category task and the
  pooled task) are scored once. The per-document work stays below the stock
  model's on the same requests: each distinct string is tokenised once (lm-eval
  encodes a document's context twice per choice), the model computes logits
  only at the positions that predict a label, and each batch's values reach
  the host in one copy. ``batch_size`` N and ``auto`` batch documents of
  different lengths (right-padded).
* ``generate_until`` generates with ``output_logits=True,
  return_dict_in_generate=True`` and returns a JSON judge response: the text
  and the rating-token logprobs at the score position found by judgecp's
  extractor, from raw logits.

Extra ``--model_args``: ``scale`` (``1:5``), ``floor`` (log 1e-5, for a label
missing from a top-k list; full-vocabulary logprobs are never floored),
``scoring`` (``one_pass`` | ``per_label``), ``record`` (a JSONL path: write
every document's scores, for :mod:`judgecp.adapters.lm_eval.replay`).
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import torch
from lm_eval.models.hf_vlms import DEFAULT_IMAGE_PLACEHOLDER, HFMultimodalLM
from lm_eval.models.huggingface import HFLM
from lm_eval.models.utils import has_bos_prefix, replace_placeholders, resize_image

from judgecp.adapters.capture.logits import (
    GenerationCapture,
    RatingVocabulary,
    capture_generation,
    judge_response_from_ids,
    plan_document,
    read_continuations,
)
from judgecp.adapters.lm_eval import set_model_name
from judgecp.adapters.lm_eval.pairing import GenerationPairingMixin
from judgecp.data import images

logger = logging.getLogger("lm_eval.judgecp")

SCORING_MODES = ("one_pass", "per_label")


class JudgeCaptureMixin(GenerationPairingMixin):
    """One-pass direct scoring and logprob-capturing generation for HF models (see the module doc)."""

    def __init__(
        self,
        *args: Any,
        scale: str = "1:5",
        floor: float | str | None = None,
        scoring: str = "one_pass",
        record: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)  # lm-eval's model class, next in the MRO
        self._judgecp_init(scale, floor, scoring, record)

    def _judgecp_init(self, scale: str, floor: float | str | None, scoring: str, record: str | None) -> None:
        if scoring not in SCORING_MODES:
            raise ValueError(f"scoring must be one of {SCORING_MODES}, got {scoring!r}")
        self.judgecp_scoring = scoring
        #: forward_passes (model calls of direct scoring), documents, per_label_documents (fallbacks)
        self.judgecp_stats: Counter[str] = Counter()
        self._judgecp_vocabulary: RatingVocabulary | None = None
        self._judgecp_auto_sizes: dict[int, int] = {}
        self._pairing_init(record, scale, floor)
        self._judgecp_cpu_data_parallel()
        set_model_name(self._judgecp_model_name())

    def _judgecp_model_name(self) -> str | None:
        """The ``pretrained`` id or path the model was loaded from (records of PARC tasks carry it)."""
        name = getattr(self, "pretrained", None)
        if isinstance(name, str):
            return name
        return getattr(getattr(self, "model", None), "name_or_path", None)

    def _judgecp_cpu_data_parallel(self) -> None:
        """Split the documents over ``accelerate launch`` processes on CPU too.

        lm-eval 0.4.13 shards documents only when it counts more than one GPU;
        on CPU every process would evaluate everything. Launched as
        ``ACCELERATE_USE_CPU=true accelerate launch --multi_gpu --num_processes N -m lm_eval``,
        each process takes its share and rank 0 gathers the records (gloo).
        """
        accelerator = getattr(self, "accelerator", None)
        if accelerator is None or accelerator.num_processes <= 1 or self._world_size > 1:
            return
        if self.device.type != "cpu":
            return
        self._rank = accelerator.process_index
        self._world_size = accelerator.num_processes
        logger.info("judgecp: CPU data parallel, process %d of %d", self._rank, self._world_size)

    # -- direct scoring ------------------------------------------------------

    def _judgecp_score(
        self,
        documents: Sequence[tuple[list[int], list[list[int]], dict[str, Any] | None]],
    ) -> list[list[tuple[float, bool]]]:
        """Log-likelihood and greediness of every continuation of every document.

        ``documents``: (context ids, continuation ids, extra model inputs such as
        pixel values, batch dimension 1). Rows (one per document, or one per
        choice when the choices differ in more than their last token) run in
        batches of ``batch_size`` (``auto``: lm-eval's detection on the longest
        row), longest first, right-padded. The model computes logits only from
        the earliest context end of the batch on (right padding keeps every
        row's positions there), and each batch's reads reach the host in one
        copy (:func:`~judgecp.adapters.capture.logits.read_continuations`).
        """
        one_pass = self.judgecp_scoring == "one_pass"
        max_length = self.max_length
        rows: list[tuple[int, list[int], int]] = []  # (document, input ids, context length)
        reads: list[list[tuple[int, list[int]]]] = []  # per row: (read index in its document, tokens)
        results: list[list[tuple[float, bool] | None]] = []
        for d, (context, continuations, extra) in enumerate(documents):
            plan = plan_document(continuations, one_pass=one_pass)
            if not plan.single_pass:
                self.judgecp_stats["per_label_documents"] += 1
            first = len(rows)
            for extension in plan.rows:
                ids, context_length = self._judgecp_fit(context, extension, max_length, multimodal=extra is not None)
                rows.append((d, ids, context_length))
                reads.append([])
            for k, (row, tokens) in enumerate(plan.reads):
                reads[first + row].append((k, tokens))
            results.append([None] * len(plan.reads))
        self.judgecp_stats["documents"] += len(documents)
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i][1]))
        batch_size = self._judgecp_batch_size(rows[order[0]][1]) if rows else 1
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            width = len(rows[batch[0]][1])
            inputs = torch.tensor(
                [rows[i][1] + [pad] * (width - len(rows[i][1])) for i in batch], dtype=torch.long
            ).to(self.device)
            extras = [documents[rows[i][0]][2] for i in batch]
            extra = None if extras[0] is None else {k: torch.cat([e[k] for e in extras], dim=0) for k in extras[0]}  # type: ignore[index]
            # Only the positions from the earliest context end on predict continuation tokens.
            keep = max(width - rows[i][2] + 1 for i in batch)
            logits = self._judgecp_forward(inputs, extra, keep if keep < width else None)
            self.judgecp_stats["forward_passes"] += 1
            offset = width - logits.shape[1]  # positions not computed (logits_to_keep)
            wanted = [(b, rows[i][2] - 1 - offset, tokens) for b, i in enumerate(batch) for _k, tokens in reads[i]]
            owners = [(rows[i][0], k) for i in batch for k, _tokens in reads[i]]
            for (d, k), value in zip(owners, read_continuations(logits, wanted), strict=True):
                results[d][k] = value
            del logits
        return results  # type: ignore[return-value]

    def _judgecp_batch_size(self, longest: list[int]) -> int:
        """``batch_size``, or with ``auto`` the size lm-eval's own detection finds for the longest row (once per
        length)."""
        size = self.batch_size
        if isinstance(size, int) and size > 0:
            return size
        if not str(size).startswith("auto"):
            return 1
        detected = self._judgecp_auto_sizes.get(len(longest))
        if detected is None:
            detected = int(self._detect_batch_size([(None, longest, [0])], 0))
            self._judgecp_auto_sizes[len(longest)] = detected
            logger.info("judgecp: batch_size auto: %d rows of %d tokens", detected, len(longest))
        return max(detected, 1)

    def _judgecp_forward(self, inputs: torch.Tensor, extra: dict[str, Any] | None, keep: int | None) -> torch.Tensor:
        """The model's logits for ``inputs`` (the last ``keep`` positions when the model can limit them)."""
        kwargs = dict(extra or {})
        if keep is not None and self._judgecp_keeps_logits():
            kwargs["logits_to_keep"] = keep
        with (
            torch.no_grad(),
            torch.autocast(
                device_type=self.device.type,
                dtype=self.mixed_precision_dtype,
                enabled=self.mixed_precision_dtype is not None,
            ),
        ):
            return self.model(inputs, **kwargs).logits  # type: ignore[no-any-return]

    def _judgecp_keeps_logits(self) -> bool:
        if not hasattr(self, "_judgecp_logits_to_keep"):
            import inspect

            self._judgecp_logits_to_keep = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        return self._judgecp_logits_to_keep

    @staticmethod
    def _judgecp_fit(
        context: list[int], extension: list[int], max_length: int, *, multimodal: bool
    ) -> tuple[list[int], int]:
        """Context + extension within the model's length (left-truncating text contexts, like lm-eval)."""
        ids = context + extension
        if len(ids) <= max_length:
            return ids, len(context)
        if multimodal:
            raise ValueError(
                f"a judge prompt with its image is {len(ids)} tokens, longer than max_length={max_length}; "
                "pass a larger max_length in --model_args"
            )
        cut = len(ids) - max_length
        return ids[cut:], len(context) - cut

    def _loglikelihood_tokens(
        self,
        requests: list[tuple[tuple[str, str], list[int], list[int]]],
        disable_tqdm: bool = False,
        override_bs: int | None = None,
    ) -> list[tuple[float, bool]]:
        """Text requests, grouped by context: one row per distinct context (causal models;
        encoder-decoder models keep lm-eval's own scoring)."""
        if self.backend != "causal":
            return super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs)  # type: ignore[misc,no-any-return]
        by_context: dict[tuple[int, ...], list[int]] = {}
        for i, (_strings, context, _continuation) in enumerate(requests):
            by_context.setdefault(tuple(context), []).append(i)
        documents = []
        members = []
        for context, idx in by_context.items():
            unique = list(dict.fromkeys(tuple(requests[i][2]) for i in idx))
            documents.append((list(context), [list(c) for c in unique], None))
            members.append((idx, unique))
        results = self._judgecp_scatter(documents, members, len(requests), lambda i: tuple(requests[i][2]))
        for request, result in zip(requests, results, strict=True):
            self.cache_hook.add_partial("loglikelihood", request[0], result)
        return results

    def _judgecp_scatter(self, documents: list[Any], members: list[tuple[list[int], list[Any]]], n: int,
                         key: Callable[[int], Any]) -> list[tuple[float, bool]]:
        """Score the documents; request ``i`` gets the value of its continuation ``key(i)``
        (``members``: per document, its requests and its distinct continuations)."""
        scored = self._judgecp_score(documents)
        results: list[tuple[float, bool] | None] = [None] * n
        for (idx, unique), values in zip(members, scored, strict=True):
            lookup = dict(zip(unique, values, strict=True))
            for i in idx:
                results[i] = lookup[key(i)]
        self._judgecp_log_stats()
        return results  # type: ignore[return-value]

    def _judgecp_log_stats(self) -> None:
        s = self.judgecp_stats
        logger.info(
            "judgecp: %d documents scored in %d forward passes (%d needed one pass per choice)",
            s["documents"], s["forward_passes"], s["per_label_documents"],
        )

    # -- chain of thought ----------------------------------------------------

    def _judgecp_vocab(self) -> RatingVocabulary:
        if self._judgecp_vocabulary is None:
            self._judgecp_vocabulary = RatingVocabulary(self.tokenizer, self.judgecp_scale)
        return self._judgecp_vocabulary

    def _judgecp_stop_ids(self) -> set[int]:
        ids = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids.update(eos if isinstance(eos, (list, tuple)) else [eos])
        return {i for i in ids if i is not None}

    def _judgecp_generate(self, generate: Callable[..., Any], prompt_length: int, **kwargs: Any) -> Any:
        """Run ``generate`` capturing raw logits; queue the captures; return the sequences."""
        if not self._judgecp_capturing:
            return generate(**kwargs)
        out = generate(output_logits=True, return_dict_in_generate=True, **kwargs)
        # lm-eval pairs a batch's answers right after its call: captures still queued from an earlier
        # call keep their values but let go of that call's logits (memory stays at one call's).
        for capture in self._judgecp_pending:
            capture.release()
        self._judgecp_pending.extend(
            capture_generation(out, prompt_length, self._judgecp_vocab(), self._judgecp_stop_ids())
        )
        return out.sequences

    def _model_generate(self, context: torch.Tensor, max_length: int, stop: list[str], **generation_kwargs: Any) -> Any:
        parent = super()._model_generate  # type: ignore[misc]

        def generate(**extra: Any) -> Any:
            return parent(context, max_length, stop, **generation_kwargs, **extra)

        return self._judgecp_generate(generate, context.shape[1])

    def _judgecp_respond(self, text: str, capture: GenerationCapture) -> str:
        return judge_response_from_ids(text, capture, self.tokenizer, self._judgecp_vocab(), floor=self.judgecp_floor)



class HFJudgeLM(JudgeCaptureMixin, HFLM):
    """``hf-judge``: lm-eval's ``hf`` with one-pass direct scoring and logprob capture."""

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        """lm-eval's ``loglikelihood`` with each distinct string tokenised once, in one call
        (:meth:`_judgecp_encode_pairs`); other backends and settings keep lm-eval's own path."""
        if self.backend != "causal" or getattr(self, "enable_thinking", False):
            return super().loglikelihood(requests, disable_tqdm=disable_tqdm)
        encoded = self._judgecp_encode_pairs([req.args for req in requests])
        results = self._loglikelihood_tokens(encoded, disable_tqdm=disable_tqdm)
        self._judgecp_write_record("direct", requests, results)
        return results

    def _judgecp_encode_pairs(
        self, pairs: Sequence[tuple[str, str]]
    ) -> list[tuple[tuple[str, str], list[int], list[int]]]:
        """The requests as lm-eval 0.4.13 encodes them (``TemplateLM.loglikelihood``, ``_encode_pair``,
        ``HFLM.tok_encode``: trailing context spaces move to the continuation; the continuation's tokens
        are those of context + continuation past the context's), each distinct string encoded once.

        A document's choices share its context: lm-eval encodes that context twice per choice; here it
        is encoded once, and every string in one batched tokenizer call. An empty context keeps
        lm-eval's own encoding (the prefix token).
        """
        splits: list[tuple[str, str] | None] = []
        for context, continuation in pairs:
            if context == "":
                splits.append(None)
                continue
            stripped = context.rstrip()
            splits.append((stripped, context[len(stripped) :] + continuation))
        strings = list(dict.fromkeys(x for split in splits if split for x in (split[0], split[0] + split[1])))
        ids = dict(zip(strings, self._judgecp_tok_encode_many(strings), strict=True))
        out = []
        for (context, continuation), split in zip(pairs, splits, strict=True):
            if split is None:  # lm-eval's empty context: the prefix token, unless the continuation starts with it
                tokens = self.tok_encode(continuation, add_special_tokens=False)
                prefix = self.prefix_token_id
                head, tail = ([prefix], tokens) if prefix != tokens[0] else (tokens[:1], tokens[1:])
                out.append(((context, continuation), head, tail))
                continue
            context_ids = ids[split[0]]
            out.append(((context, continuation), context_ids, ids[split[0] + split[1]][len(context_ids) :]))
        return out

    def _judgecp_tok_encode_many(self, strings: Sequence[str]) -> list[list[int]]:
        """``[self.tok_encode(s) for s in strings]`` in one tokenizer call per special-token setting."""
        bos = self.tokenizer.decode(self.prefix_token_id)
        default = {} if self.add_bos_token is None else {"add_special_tokens": self.add_bos_token}
        groups: dict[bool, list[int]] = {}
        for i, string in enumerate(strings):
            groups.setdefault(has_bos_prefix(string, bos), []).append(i)
        out: list[list[int]] = [[] for _ in strings]
        for starts_with_bos, idx in groups.items():
            kwargs = {"add_special_tokens": False} if starts_with_bos else default
            encoded = self.tokenizer([strings[i] for i in idx], **kwargs)["input_ids"]
            for i, row in zip(idx, encoded, strict=True):
                out[i] = list(row)
        return out


class HFMultimodalJudgeLM(JudgeCaptureMixin, HFMultimodalLM):
    """``hf-multimodal-judge``: lm-eval's ``hf-multimodal`` with image ``multiple_choice`` scoring
    (one forward pass per document) and logprob capture."""

    def _model_multimodal_generate(
        self, inputs: Any, max_length: int, stop: list[str], **generation_kwargs: Any
    ) -> Any:
        def generate(**extra: Any) -> Any:
            return HFMultimodalLM._model_multimodal_generate(
                self, inputs, max_length, stop, **generation_kwargs, **extra
            )

        return self._judgecp_generate(generate, inputs["input_ids"].shape[1])

    def _judgecp_encode_image_document(self, context: str, visuals: list[Any]) -> tuple[list[int], str, dict[str, Any]]:
        """Context ids with the image tokens expanded, the context text, and the pixel inputs."""
        text = context
        if not self.chat_applied:
            text = replace_placeholders(context, DEFAULT_IMAGE_PLACEHOLDER, self.image_token, self.max_images)
        visuals = [resize_image(img, self.image_width, self.image_height, self.image_max_side) for img in visuals]
        visuals = visuals[: self.max_images]
        if self.rgb:
            visuals = [img.convert("RGB") for img in visuals]
        # lm-eval's convention (tok_batch_multimodal_encode): one image list per text, flat for llava.
        images = visuals if getattr(self.config, "model_type", "") == "llava" else [visuals]
        encoding = self.processor(text=[text], images=images, return_tensors="pt")
        ids = encoding.pop("input_ids")[0].tolist()
        encoding.pop("attention_mask", None)
        extra = {
            k: (v.to(self.device, self.model.dtype) if v.is_floating_point() else v.to(self.device))
            for k, v in encoding.items()
        }
        return ids, text, extra

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        if not requests or len(requests[0].args) < 3:
            return super().loglikelihood(requests, disable_tqdm=disable_tqdm)
        # Group by context, then by image content when several documents share a context.
        by_context: dict[str, list[int]] = defaultdict(list)
        for i, req in enumerate(requests):
            by_context[req.args[0]].append(i)
        groups: list[list[int]] = []
        for idx in by_context.values():
            by_images: dict[Any, list[int]] = defaultdict(list)
            visuals_of = {id(requests[i].args[2]["visual"]) for i in idx}
            for i in idx:
                key = (
                    id(requests[i].args[2]["visual"])
                    if len(visuals_of) == 1
                    else images.fingerprint(requests[i].args[2]["visual"])
                )
                by_images[key].append(i)
            groups.extend(by_images.values())
        documents = []
        members = []
        for idx in groups:
            context, _, aux = requests[idx[0]].args
            # Trailing whitespace moves to the continuations, as lm-eval's own encoding does.
            stripped = context.rstrip()
            spaces = context[len(stripped) :]
            ids, text, extra = self._judgecp_encode_image_document(stripped, list(aux["visual"]))
            # The continuation's tokens as lm-eval splits them: context + continuation's, past the context's.
            context_length = len(self.tok_encode(text))
            continuations = {}
            for i in idx:
                continuation = requests[i].args[1]
                if continuation not in continuations:
                    continuations[continuation] = self.tok_encode(text + spaces + continuation)[context_length:]
            unique = list(continuations)
            documents.append((ids, [continuations[c] for c in unique], extra))
            members.append((idx, unique))
        results = self._judgecp_scatter(documents, members, len(requests), lambda i: requests[i].args[1])
        self._judgecp_write_record("direct", requests, results)
        return results
