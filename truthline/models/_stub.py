"""A local OpenAI-compatible stub server (aiohttp) for tests, benchmarks and offline demos.

It answers ``POST /v1/chat/completions`` from a script and logs every request. A request
picks its behaviour by a marker ``[[case:NAME]]`` in its text; each case is a list of
steps, one per attempt (the last repeats). Steps: ``ok`` (the default answer), ``json:TEXT``
(answer TEXT), ``CODE[:SECONDS]`` (an HTTP error, e.g. 429:2 with Retry-After), ``timeout`` (never answers in
time), ``length`` (finish_reason=length), ``refusal``, ``badbody`` (a non-JSON body),
``garbage`` (a completion whose text is not JSON). ``fault_rate`` turns that share of
unscripted requests (chosen by a seeded hash of request and attempt) into one of
``FAULTS``; ``log[i].billed`` says whether a request got a completion (what an API bills).
Binds 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_CASE = re.compile(r"\[\[case:([A-Za-z0-9_.-]+)\]\]")
FAULTS = ("429", "500", "503", "timeout", "badbody", "garbage")


@dataclass
class StubLog:
    case: str | None
    attempt: int
    step: str
    digest: str
    text: str
    at: float
    billed: bool = False
    done_at: float = 0.0
    """When the answer was sent (billed requests)."""


@dataclass
class StubServer:
    answer: Callable[[dict[str, Any]], str] = lambda body: '{"ok": true}'
    cases: dict[str, list[str]] = field(default_factory=dict)
    latency_s: float = 0.0
    timeout_sleep_s: float = 5.0
    log: list[StubLog] = field(default_factory=list)
    fault_rate: float = 0.0
    fault_seed: int = 0
    port: int = 0
    _attempts: dict[str, int] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- server --------------------------------------------------------------------------
    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        text, images = _content(body)
        digest = hashlib.sha256("\x1f".join([text, *images]).encode()).hexdigest()
        m = _CASE.search(text)
        case = m.group(1) if m else None
        steps = self.cases.get(case or "", ["ok"])
        ident = case or digest
        n = self._attempts.get(ident, 0)
        self._attempts[ident] = n + 1
        step = steps[min(n, len(steps) - 1)]
        if self.fault_rate and case is None:
            h = hashlib.sha256(f"{self.fault_seed}|{digest}|{n}".encode()).digest()
            u = int.from_bytes(h[:8], "big") / 2**64
            if u < self.fault_rate:
                step = FAULTS[h[8] % len(FAULTS)]
        entry = StubLog(case, n + 1, step, digest, text, time.time())
        self.log.append(entry)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        kind, _, arg = step.partition(":")
        if kind.isdigit():
            headers = {"Retry-After": arg} if arg else {}
            return web.json_response(
                {"error": {"message": f"status {kind}"}}, status=int(kind), headers=headers
            )
        if kind == "timeout":
            await asyncio.sleep(self.timeout_sleep_s)
            return web.json_response({"error": {"message": "late"}}, status=504)
        if kind == "badbody":
            return web.Response(text="<html>not json", content_type="application/json")
        entry.billed = True
        entry.done_at = time.time()
        content: str | None = arg if kind == "json" else self.answer(body)
        if kind == "garbage":
            content = "Sure! The scene shows some workers."
        finish, refusal = "stop", None
        if kind == "length":
            finish = "length"
            content = (content or "")[: max(1, len(content or "") // 2)]
        if kind == "refusal":
            content, refusal = None, "I can't help with that."
        return web.json_response(_completion(body, content, finish, refusal))

    def start(self) -> StubServer:
        """Serve in a background thread; returns once the port is bound."""
        ready = threading.Event()

        def run() -> None:
            from aiohttp import web

            async def main() -> None:
                app = web.Application(client_max_size=64 * 1024 * 1024)
                app.router.add_post("/v1/chat/completions", self._handle)
                self._runner = web.AppRunner(app, access_log=None)
                await self._runner.setup()
                site = web.TCPSite(self._runner, "127.0.0.1", self.port)
                await site.start()
                self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
                self._stop = asyncio.Event()
                ready.set()
                await self._stop.wait()
                await self._runner.cleanup()

            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(main())

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("stub server did not start")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(5)


def _content(body: dict[str, Any]) -> tuple[str, list[str]]:
    texts, images = [], []
    for msg in body.get("messages", []):
        c = msg.get("content")
        if isinstance(c, str):
            texts.append(c)
        elif isinstance(c, list):
            for part in c:
                if part.get("type") == "text":
                    texts.append(part.get("text", ""))
                elif part.get("type") == "image_url":
                    images.append(part["image_url"]["url"])
    return "\n".join(texts), images


def _completion(
    body: dict[str, Any], content: str | None, finish: str, refusal: str | None
) -> dict[str, Any]:
    text, images = _content(body)
    out_tokens = len(content or refusal or "") // 4 + 1
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": [
            {
                "index": 0,
                "finish_reason": finish,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
            }
        ],
        "usage": {
            "prompt_tokens": len(text) // 4 + 85 * len(images),
            "completion_tokens": out_tokens,
            "total_tokens": 0,
        },
    }


def answer_json(obj: dict[str, Any]) -> Callable[[dict[str, Any]], str]:
    """An answer function that always returns ``obj`` as JSON."""
    text = json.dumps(obj)
    return lambda body: text
