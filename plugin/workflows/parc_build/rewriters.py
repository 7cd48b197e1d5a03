"""Rewriters: what turns PARC's language-model prompt (A7.2) into a varied question.

A rewriter is any object with ``rewrite(prompt: str) -> str`` and
``identity() -> dict`` (written to the build manifest so a study can be
rebuilt). Three come with judgecp:

* :class:`OpenAIRewriter`: any OpenAI-compatible chat completions endpoint
  (vLLM, TGI, llama.cpp, OpenAI), over plain HTTP with ``urllib``;
  greedy (temperature 0) by default. PARC used LLaMA3-70B.
* :class:`HFRewriter`: a local Hugging Face causal language model
  (``transformers``, imported on first use), greedy; the tokenizer's chat
  template is used when it has one.
* :class:`FunctionRewriter`: a Python function (tests, rule sets, caches).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any, Protocol, runtime_checkable

from judgecp.base.errors import InputError, require


@runtime_checkable
class Rewriter(Protocol):
    def rewrite(self, prompt: str) -> str: ...

    def identity(self) -> dict[str, Any]: ...


class FunctionRewriter:
    """``fn(prompt) -> text`` as a rewriter; ``name`` identifies it in the manifest."""

    def __init__(self, fn: Callable[[str], str], name: str = "function") -> None:
        self.fn = fn
        self.name = name

    def rewrite(self, prompt: str) -> str:
        return str(self.fn(prompt))

    def identity(self) -> dict[str, Any]:
        return {"kind": "function", "name": self.name}


class RewriterError(InputError):
    """The rewriter could not be reached or answered with something that is not a completion."""


@dataclass(frozen=True)
class OpenAIRewriter:
    """Chat completions at ``url`` (``.../v1`` or the full ``.../chat/completions``).

    The API key is read from the environment variable ``api_key_env`` (never
    stored in the manifest); none is sent when it is unset (local servers).
    A frozen dataclass: the endpoint's settings are all it holds.
    """

    url: str
    model: str
    _: KW_ONLY
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = 128
    timeout: float = 60.0
    retries: int = 2
    system: str | None = None

    @property
    def endpoint(self) -> str:
        url = self.url.rstrip("/")
        return url if url.endswith("/chat/completions") else url + "/chat/completions"

    def identity(self) -> dict[str, Any]:
        return {"kind": "openai", "endpoint": self.endpoint, "model": self.model, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "system": self.system}

    def rewrite(self, prompt: str) -> str:
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": prompt}]
        body = json.dumps({"model": self.model, "messages": messages, "temperature": self.temperature,
                           "max_tokens": self.max_tokens}).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.endpoint, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = json.loads(response.read().decode("utf-8"))
                break
            except urllib.error.HTTPError as exc:
                last = exc
                if exc.code < 500 and exc.code != 429:
                    raise RewriterError(f"rewriter {self.endpoint}: HTTP {exc.code} {exc.reason}") from None
            except (urllib.error.URLError, TimeoutError, ValueError) as exc:
                last = exc
            if attempt < self.retries:
                time.sleep(0.5 * 2**attempt)
        else:
            raise RewriterError(f"rewriter {self.endpoint} failed after {self.retries + 1} tries: {last}")
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise RewriterError(f"rewriter {self.endpoint}: no choices[0].message.content in the answer") from None
        return "" if content is None else str(content)


class HFRewriter:
    """A local Hugging Face causal LM (a hub id or a directory), greedy decoding on ``device``."""

    def __init__(self, model: str, *, max_new_tokens: int = 64, device: str = "cpu", dtype: str = "auto") -> None:
        self.model_name = model
        self.max_new_tokens = max_new_tokens
        self.device = device
        self.dtype = dtype
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        transformers: Any = require("transformers", "lm-eval", "a local Hugging Face rewriter")
        self._tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_name)
        kwargs = {} if self.dtype == "auto" else {"dtype": self.dtype}
        self._model = transformers.AutoModelForCausalLM.from_pretrained(self.model_name, **kwargs).to(self.device)
        self._model.eval()

    def identity(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "hf", "model": self.model_name, "max_new_tokens": self.max_new_tokens,
                               "decoding": "greedy"}
        if self._model is not None:
            out["commit"] = getattr(self._model.config, "_commit_hash", None)
        return out

    def rewrite(self, prompt: str) -> str:
        import torch

        if self._model is None:
            self._load()
        tok = self._tokenizer
        if getattr(tok, "chat_template", None):
            ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                          return_tensors="pt", return_dict=True)
        else:
            ids = tok(prompt, return_tensors="pt")
        ids = {k: v.to(self.device) for k, v in ids.items()}
        with torch.no_grad():
            out = self._model.generate(
                **ids,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
            )
        new = out[0, ids["input_ids"].shape[1]:]
        return str(tok.decode(new, skip_special_tokens=True))
