"""A JSON-over-HTTP server on 127.0.0.1 for the tests of HTTP clients (OpenAI-compatible endpoints)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: ``reply(body, path, headers)``: a JSON object (sent with status 200) or a bare status code.
Reply = Callable[[dict[str, Any], str, dict[str, str]], "dict[str, Any] | int"]


class JSONServer:
    """``with JSONServer(reply) as server:`` serves ``server.url`` (``http://127.0.0.1:PORT``).

    Every POST's JSON body is kept in ``server.requests`` with its ``path``
    and ``headers`` (in arrival order) and answered with ``reply``.
    """

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []

    def __enter__(self) -> JSONServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = dict(self.headers)
                server.requests.append({"body": body, "path": self.path, "headers": headers})
                answer = server.reply(body, self.path, headers)
                if isinstance(answer, int):
                    self.send_response(answer)
                    self.end_headers()
                    return
                payload = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()
