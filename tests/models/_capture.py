"""A tiny OpenAI-compatible server that records every request's headers (the shared stub
logs bodies only): what a key-routing test needs to see what reached a host."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class CaptureServer:
    """Answers ``POST /v1/chat/completions`` with ``answer`` (HTTP ``status``) and records
    ``(path, headers)`` per request; ``usage`` is the usage block sent back."""

    answer: str = '{"ok": true}'
    status: int = 200
    usage: dict[str, Any] = field(
        default_factory=lambda: {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    )
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> CaptureServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                self.rfile.read(n)
                outer.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                body = {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": outer.answer},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": outer.usage,
                }
                if outer.status != 200:
                    body = {"error": {"message": "denied", "type": "auth", "code": None}}
                data = json.dumps(body).encode()
                self.send_response(outer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
