"""The request/result contract of the one model layer (prefill and benchmark alike)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.fields import FieldType

PARSED = "parsed"
MODEL_FAILURE = "model_failure"
INFRA_MISSING = "infra_missing"
NOT_RUN = "not_run"
"""Status of a request the runner never sent (budget reached, Ctrl-C); nothing is stored."""


@dataclass
class ModelRequest:
    """One question to one model about one item. Everything the cache key needs is here."""

    project: str
    item_id: int | None
    purpose: str  # "prefill" | "benchmark" | "check"
    system: str | None
    user: str
    images: list[Path]
    fields: Mapping[str, FieldType]
    settings: dict[str, Any]
    context: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelResult:
    """The one outcome of a request: parsed, model failure or infrastructure missing."""

    response_id: int
    cache_key: str
    status: str
    reason: str | None
    values: dict[str, Any]
    field_errors: dict[str, str]
    raw: str | None
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_thinking: int = 0
    cost_usd: float = 0.0
    latency_s: float | None = None
    cached: bool = False
    """Taken from the store (an answer stored before this call), not sent."""
    attempts: int = 1
    simulated: bool = False
    stored_at: datetime | None = None
    """When the answer was stored (cached results: where a reused answer came from)."""
    origin: str | None = None
    """The purpose of the request that stored it (``prefill``, ``benchmark``, ``check``)."""


@dataclass
class Completion:
    """What a backend returns for one request that reached the model."""

    text: str | None
    finish_reason: str | None = "stop"
    refusal: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_thinking: int = 0
    raw: str | None = None
    """The raw answer to store (defaults to ``text``)."""


class InfraError(Exception):
    """The request did not reach a model answer (transport, 5xx, 429, timeout).

    ``retry`` says whether retrying the same inputs can help; ``retry_after`` is the
    server's Retry-After in seconds, when it sent one.
    """

    def __init__(
        self, reason: str, detail: str = "", *, retry: bool = True, retry_after: float | None = None
    ):
        self.reason = reason
        self.detail = detail
        self.retry = retry
        self.retry_after = retry_after
        super().__init__(f"{reason}: {detail}" if detail else reason)


class AuthError(InfraError):
    """The endpoint rejected the API key (HTTP 401, or 403: no access to this model).

    An ``InfraError`` that no retry fixes (``retry=False``, ``reason`` ``http_401`` /
    ``http_403``): every later call would fail the same way, so the runner stops the run at
    the first one instead of paying a round trip per item. The key itself is never in it."""

    def __init__(self, status: int, detail: str = ""):
        self.status = status
        super().__init__(f"http_{status}", detail or _AUTH_DETAIL.get(status, ""), retry=False)


_AUTH_DETAIL = {
    401: "HTTP 401: the API key was rejected (check the key; it is not shown)",
    403: "HTTP 403: the API key has no access to this model",
}


class EndpointFailingError(TruthlineError):
    """A run stopped because the endpoint kept failing in a way no retry fixes (down,
    key rejected, wrong URL); what was answered is stored. Exit code 1."""
