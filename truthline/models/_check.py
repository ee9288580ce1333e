"""``models check``: one small request to a model spec, with a clear verdict."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from truthline.errors import TruthlineError
from truthline.fields import Boolean, FieldSpec
from truthline.models._registry import get_backend
from truthline.models._runner import classify
from truthline.models._spec import parse_model_spec
from truthline.models._types import InfraError, ModelRequest

_HINTS = {
    "connection": "the endpoint is down or unreachable (is the server running at {url}?)",
    "timeout": "the endpoint did not answer in time",
    "http_401": "the API key was rejected (the key itself is not shown)",
    "http_403": "the API key has no access to this model",
    "http_404": "the endpoint does not serve this model or path (check the name and /v1)",
}


def _where(be: Any) -> str:
    """The host a backend sends to (``host`` of remote backends), else what it is."""
    host = getattr(be, "host", None)
    return str(host) if host else be.describe()


def check_model(spec_text: str, *, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """Send one test request (not cached); raises TruthlineError with a hint on failure."""
    spec = parse_model_spec(spec_text)
    be = get_backend(spec)
    be.prepare_check()
    req = ModelRequest(
        project="",
        item_id=None,
        purpose="check",
        system=None,
        user='Reply with exactly this JSON object and nothing else: {"ok": true}',
        images=[],
        fields={"ok": Boolean("ok", FieldSpec(type="boolean"))},
        settings={"temperature": 0.0, "max_tokens": 32},
        context=context or {},
    )

    async def go():
        try:
            return await be.complete(req)
        finally:
            await be.aclose()

    t0 = time.perf_counter()
    try:
        comp = asyncio.run(go())
    except InfraError as exc:
        hint = _HINTS.get(exc.reason, exc.detail or "").format(url=_where(be))
        raise TruthlineError(f"model {spec.alias}: {exc.reason}: {hint}") from None
    status, reason, values, _ = classify(req.fields, comp)
    return {
        "model": spec.alias,
        "endpoint": be.describe(),
        "host": getattr(be, "host", None),
        "simulated": be.simulated,
        "status": status,
        "reason": reason,
        "answer_ok": values.get("ok"),
        "latency_s": round(time.perf_counter() - t0, 3),
        "tokens_in": comp.tokens_in,
        "tokens_out": comp.tokens_out,
    }
