"""A small OpenAI-compatible chat completions server (real HTTP on 127.0.0.1) for the API judge test."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

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


class _Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        payload = json.dumps(_completion(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


class FakeOpenAI:
    """``with FakeOpenAI() as server: server.url``; ``server.requests`` holds the request bodies."""

    def __enter__(self) -> FakeOpenAI:
        _Handler.requests = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/chat/completions"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def requests(self) -> list[dict[str, Any]]:
        return _Handler.requests

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
