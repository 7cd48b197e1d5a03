"""``openai-judge``: a chain-of-thought judge behind an OpenAI-compatible chat completions endpoint.

lm-eval's ``local-chat-completions`` asking for ``logprobs=true,
top_logprobs=k`` (``--model_args top_logprobs=20``, the most OpenAI allows)
and returning, for each generation, a JSON judge response: the text and the
rating-token logprobs at the score position, read from the top-k list. A
label missing from that list gets ``floor`` (log 1e-5) and the record a
``missing_token`` flag, as in the seed paper's Gemini runs. Use
``--apply_chat_template`` (chat endpoints take messages) and the
chain-of-thought tasks (``*_cot``); chat endpoints give no prompt
log-likelihoods, so direct (``multiple_choice``) scoring is not available.
Text only: images are not sent.
"""

from __future__ import annotations

import logging
from typing import Any

from lm_eval.models.openai_completions import LocalChatCompletion

from judgecp.adapters.capture.logits import response_from_candidates
from judgecp.base.scale import LikertScale
from judgecp.data.extraction import DEFAULT_FLOOR, openai_logprob_positions

logger = logging.getLogger("lm_eval.judgecp")


def response_from_chat_choice(choice: dict[str, Any], scale: LikertScale, floor: float) -> str:
    """The judge response for one ``choices[i]`` of a chat completion with logprobs."""
    text = (choice.get("message") or {}).get("content") or ""
    parsed = openai_logprob_positions(choice.get("logprobs"))
    tokens, positions = parsed if parsed is not None else ([], [])
    if not tokens:
        logger.warning("judgecp: a chat completion came without logprobs; is top_logprobs supported by the server?")
    return response_from_candidates(text, tokens, positions, scale, floor=floor)


class OpenAIJudge(LocalChatCompletion):
    """lm-eval's ``local-chat-completions`` returning judge responses (see the module docstring)."""

    def __init__(
        self,
        *args: Any,
        top_logprobs: int | str = 20,
        scale: str = "1:5",
        floor: float | str | None = None,
        tokenizer_backend: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, tokenizer_backend=tokenizer_backend, **kwargs)
        self.top_logprobs = int(top_logprobs)
        self.judgecp_scale = LikertScale.parse(str(scale))
        self.judgecp_floor = DEFAULT_FLOOR if floor in (None, "") else float(floor)  # type: ignore[arg-type]

    def _create_payload(
        self,
        messages: Any,
        generate: bool = False,
        gen_kwargs: dict | None = None,
        seed: int = 1234,
        eos: Any = None,
        **kwargs: Any,
    ) -> dict:  # type: ignore[override]
        payload = super()._create_payload(
            messages, generate=generate, gen_kwargs=gen_kwargs, seed=seed, eos=eos, **kwargs
        )
        payload["logprobs"] = True
        payload["top_logprobs"] = self.top_logprobs
        return payload  # type: ignore[no-any-return]

    def parse_generations(self, outputs: dict | list[dict], **kwargs: Any) -> list[str]:  # type: ignore[override]
        responses: list[str] = []
        for out in outputs if isinstance(outputs, list) else [outputs]:
            choices = sorted(out.get("choices") or [], key=lambda c: c.get("index", 0))
            if not choices:
                logger.warning("judgecp: a chat completion had no choices (content filter?); its document is excluded")
                responses.append("")
            responses += [response_from_chat_choice(c, self.judgecp_scale, self.judgecp_floor) for c in choices]
        return responses
