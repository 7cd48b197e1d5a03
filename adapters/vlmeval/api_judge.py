"""An OpenAI-compatible API judge that asks for top-logprobs (vLLM, SGLang, LMDeploy, OpenAI, ...).

``JudgeCPOpenAI`` is a VLMEvalKit API model (``is_api = True``; VLMEvalKit
runs it in threads): each request is a chat completion with the images as
``data:`` URLs, ``logprobs: true`` and ``top_logprobs: K``. For a judgecp
judge dataset it returns ``{"prediction", "extra_records"}`` like the ``-lp``
models, with the record built by the same extractor from the returned
tokens and their top-K alternatives: a rating token missing from a top-K
list gets the floor ``log 1e-5`` and a ``missing_token`` flag (the core
counts it); an endpoint that returns no logprobs gives an
``api_no_logprobs`` record (the row is excluded and counted). Records are
``judgecp.record/1`` judge outputs (``meta.source``: ``openai_api``). Letter answers
(pairwise verdicts, PARC options, and VLMEvalKit's own multiple-choice
benchmarks when started by the launcher: sidecar only, plain prediction)
are read at the first generated letter, with the same floor for a letter
missing from the top-K list.

Only the standard library is used (``urllib``), so it runs and is tested
without VLMEvalKit. Failed requests are retried; after the last try it
returns VLMEvalKit's failure message, which VLMEvalKit retries on the next
run and the reader counts as ``inference_failed``.
"""

from __future__ import annotations

import base64
import json
import logging
import mimetypes
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judgecp.adapters.capture.generate import failed_record, positions_output
from judgecp.adapters.vlmeval.runtime import PROMPTS, capture_target, deliver, row_letters
from judgecp.adapters.vlmeval.specs import JudgeSpec, spec_for
from judgecp.data.choice import LETTERS
from judgecp.data.extraction import DEFAULT_FLOOR, openai_logprob_positions

log = logging.getLogger("judgecp.vlmeval")

FAIL_MSG = "Failed to obtain answer via API."


def _image_url(path: str) -> str:
    mime = mimetypes.guess_type(path)[0] or "image/png"
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"data:{mime};base64,{data}"


def chat_messages(message: Any, system_prompt: str | None = None) -> list[dict[str, Any]]:
    """OpenAI chat messages from a VLMEvalKit message (text and image items, in order)."""
    items = [dict(type="text", value=message)] if isinstance(message, str) else list(message)
    content: list[dict[str, Any]] = []
    for item in items:
        if item["type"] == "text":
            content.append({"type": "text", "text": str(item["value"])})
        elif item["type"] == "image":
            content.append({"type": "image_url", "image_url": {"url": _image_url(str(item["value"]))}})
        else:
            raise ValueError(f"JudgeCPOpenAI: unsupported message item type {item['type']!r}")
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    out.append({"role": "user", "content": content})
    return out


class JudgeCPOpenAI:
    """VLMEvalKit API model for any OpenAI-compatible chat endpoint, with score-token capture.

    ``api_base`` is the server root (``http://host:8000/v1``) or the full
    ``.../chat/completions`` URL; ``key`` (or ``$OPENAI_API_KEY``) is sent
    as a bearer token when set. ``top_logprobs`` defaults to 20 (OpenAI's
    maximum).
    """

    is_api = True
    INTERLEAVE = True
    allowed_types = ("text", "image")

    def __init__(
        self,
        model: str,
        api_base: str = "http://127.0.0.1:8000/v1",
        key: str | None = None,
        top_logprobs: int = 20,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        timeout: float = 120.0,
        retry: int = 3,
        wait: float = 1.0,
        system_prompt: str | None = None,
        name: str | None = None,
        floor: float = DEFAULT_FLOOR,
        extra_body: dict[str, Any] | None = None,
        verbose: bool = False,
        specs: Callable[[str], JudgeSpec | None] = spec_for,
        **kwargs: Any,
    ) -> None:
        base = api_base.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self.model = model
        self.key = key if key is not None else os.environ.get("OPENAI_API_KEY")
        self.top_logprobs = int(top_logprobs)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.timeout = float(timeout)
        self.retry = max(1, int(retry))
        self.wait = float(wait)
        self.system_prompt = system_prompt
        self.name = name or model
        self.floor = floor
        self.extra_body = dict(extra_body or {}, **kwargs)
        self.verbose = verbose
        self.specs = specs
        self.fail_msg = FAIL_MSG
        self.dump_image_func: Callable[..., Any] | None = None

    # VLMEvalKit model interface ------------------------------------------------
    def set_dump_image(self, dump_image_func: Callable[..., Any]) -> None:
        self.dump_image_func = dump_image_func

    def use_custom_prompt(self, dataset: str) -> bool:
        return False

    def request_body(self, message: Any) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": chat_messages(message, self.system_prompt),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "logprobs": True,
            "top_logprobs": self.top_logprobs,
            **self.extra_body,
        }

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode("utf-8"), headers=headers,
                                         method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            try:
                detail = exc.read()[:300].decode("utf-8", errors="replace")
            finally:
                exc.close()  # the error holds the open response
            raise ValueError(f"HTTP {exc.code} {exc.reason}: {detail}") from None
        if not isinstance(data, dict):
            raise ValueError("the endpoint did not return a JSON object")
        return data

    def generate(self, message: Any, dataset: str | None = None) -> Any:
        spec = self.specs(dataset) if dataset else None
        body = self.request_body(message)
        data: dict[str, Any] | None = None
        last_error: Exception | None = None
        for attempt in range(self.retry):
            try:
                data = self.post(body)
                break
            except (urllib.error.URLError, TimeoutError, ValueError, OSError) as exc:
                last_error = exc
                if self.verbose or attempt == self.retry - 1:
                    log.warning("JudgeCPOpenAI %s: attempt %d/%d failed: %s", self.url, attempt + 1, self.retry, exc)
                if attempt < self.retry - 1:
                    time.sleep(self.wait * (2**attempt))
        if data is None:
            return f"{self.fail_msg} {last_error}"
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            return f"{self.fail_msg} unexpected response: {json.dumps(data)[:200]}"
        kind = capture_target(spec, dataset)
        if kind is None or dataset is None:
            return text
        index, meta = PROMPTS.claim_entry(dataset, message)
        parsed = openai_logprob_positions(choice.get("logprobs"))
        if parsed is None:
            record = failed_record("api_no_logprobs", kind=kind, source="openai_api")
        else:
            record = self.record(*parsed, spec, kind=kind, letters=row_letters(meta, spec))
        return deliver(record, text, spec=spec, dataset=dataset, index=index, model=self.name)

    def record(
        self,
        tokens: Sequence[str],
        candidates: Sequence[dict[str, float]],
        spec: JudgeSpec | None,
        *,
        kind: str = "likert",
        letters: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The judge output (``judgecp.record/1``) of one answer from its tokens and top-K alternatives."""
        return positions_output(kind, tokens, candidates, scale=spec.scale if spec is not None else None,
                                letters=[str(x) for x in letters or LETTERS], floor=self.floor, source="openai_api")
