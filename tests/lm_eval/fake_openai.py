"""A small OpenAI-compatible chat completions server (real HTTP on 127.0.0.1) for the API judge test."""

from __future__ import annotations

from typing import Any

from tests.json_server import JSONServer

#: The judge's answer, token by token; at the score token the top-k list lacks "1" and "2".
TOKENS = [" Fine", ".", " Score", ":", " 4"]
SCORE_TOP = {" 4": -0.3, " 3": -1.6, "4": -3.0, " 5": -4.1}


def _completion(request: dict[str, Any]) -> dict[str, Any]:
    k = int(request.get("top_logprobs", 0))
    content = []
    for token in TOKENS:
        top = SCORE_TOP if token == " 4" else {token: -0.05, " the": -4.0}
        content.append({
            "token": token, "logprob": top[token],
            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in list(top.items())[:k]],
        })
    return {
        "id": "cmpl-test", "object": "chat.completion", "model": request.get("model"),
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "".join(TOKENS)},
                     "logprobs": {"content": content} if request.get("logprobs") else None}],
    }


class FakeOpenAI(JSONServer):
    """``with FakeOpenAI() as server: server.url``, the chat completions endpoint; ``server.requests``: see
    JSONServer."""

    def __init__(self) -> None:
        super().__init__(lambda body, path, headers: _completion(body))

    def __enter__(self) -> FakeOpenAI:
        super().__enter__()
        self.url += "/v1/chat/completions"
        return self
