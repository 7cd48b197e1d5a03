"""``vllm-judge`` / ``vllm-vlm-judge``: lm-eval's vLLM models returning chain-of-thought judge responses.

Generation asks vLLM for the top-``top_logprobs`` logprobs of every
generated token (``SamplingParams(logprobs=k)``); the score position is
found by judgecp's extractor, exactly as for the HF models, and a label
missing from a top-k list gets ``floor`` and a ``missing_token`` flag. The
answer/capture pairing, de-duplication and ``record=`` are the HF models'
(:mod:`judgecp.adapters.lm_eval.pairing`); converting vLLM's outputs is in
:mod:`judgecp.adapters.capture.logits` (the core), tested without vLLM. Direct scoring
(``multiple_choice``) is lm-eval's own vLLM scoring, one request per label
(vLLM's prefix cache shares the context).

vLLM needs a GPU and is not installed in judgecp's test environment: only
the conversion functions are tested (with fake vLLM outputs), not this module.
"""

from __future__ import annotations

from typing import Any

from lm_eval.models.vllm_causallms import VLLM
from lm_eval.models.vllm_vlms import VLLM_VLM

from judgecp.adapters.capture.logits import capture_from_vllm_output, response_from_vllm_capture
from judgecp.adapters.lm_eval.pairing import GenerationPairingMixin


class _VLLMJudgeMixin(GenerationPairingMixin):
    def __init__(self, *args: Any, top_logprobs: int | str = 20, scale: str = "1:5", floor: float | str | None = None,
                 record: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # lm-eval's vLLM model class, next in the MRO
        self._vllm_judge_init(top_logprobs, scale, floor, record)

    def _vllm_judge_init(
        self, top_logprobs: int | str, scale: str, floor: float | str | None, record: str | None
    ) -> None:
        self.top_logprobs = int(top_logprobs)
        self._pairing_init(record, scale, floor)

    def modify_gen_kwargs(self, kwargs: dict, *args: Any, **extra: Any) -> Any:
        out = super().modify_gen_kwargs(kwargs, *args, **extra)  # type: ignore[misc]
        if self._judgecp_capturing:
            target = out[0] if isinstance(out, tuple) else out
            target["logprobs"] = self.top_logprobs
        return out

    def _judgecp_queue(self, outputs: Any) -> Any:
        if self._judgecp_capturing:
            self._judgecp_pending.extend(capture_from_vllm_output(o) for o in outputs)
        return outputs

    def _judgecp_respond(self, text: str, capture: Any) -> str:
        return response_from_vllm_capture(text, capture, self.tokenizer, self.judgecp_scale, self.judgecp_floor)


class VLLMJudge(_VLLMJudgeMixin, VLLM):
    """``vllm-judge`` (text)."""

    def _model_generate(self, requests: Any, generate: bool = False, sampling_params: Any = None) -> Any:  # type: ignore[override]
        outputs = super()._model_generate(requests=requests, generate=generate, sampling_params=sampling_params)
        return self._judgecp_queue(outputs) if generate else outputs


class VLLMVLMJudge(_VLLMJudgeMixin, VLLM_VLM):
    """``vllm-vlm-judge`` (image + text)."""

    def _multimodal_model_generate(
        self,
        requests: Any = None,
        generate: bool = False,
        max_tokens: int | None = None,
        stop: Any = None,
        **kwargs: Any,
    ) -> Any:  # type: ignore[override]
        outputs = super()._multimodal_model_generate(
            requests, generate=generate, max_tokens=max_tokens, stop=stop, **kwargs
        )
        return self._judgecp_queue(outputs) if generate else outputs
