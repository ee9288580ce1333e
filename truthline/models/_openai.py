"""``openai:MODEL[@URL]`` — any OpenAI-compatible chat-completions server.

Where a request goes (``endpoint``): the spec's ``@URL``; else ``OPENAI_BASE_URL`` (the
SDK's own variable: the user named the host); else https://api.openai.com/v1. The first
call prints ``sending to HOST`` on stderr, so a wrong host is seen before data leaves.

Which key goes there (``api_key``): the variable named by ``key_env`` or the file named by
``key_file`` (the user bound that key to this spec's host); else ``OPENAI_API_KEY``, but
only to api.openai.com or the ``OPENAI_BASE_URL`` host. A server named in the spec (vLLM,
SGLang, Ollama, LM Studio) gets ``EMPTY`` and none of the SDK's environment headers
(organization, project, ``OPENAI_CUSTOM_HEADERS``): OpenAI credentials never reach a host
the user did not pair them with. A key with a character HTTP cannot carry is refused when
the backend is built. The SDK's own retries are off: the runner retries infrastructure
failures itself (one retry policy for every backend). The key is never printed, logged or
stored; a rejected key raises ``AuthError`` so the runner can stop at once.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from truthline.errors import TruthlineError
from truthline.models._image_cache import ImageCache, default_image_cache_dir, memory_cache
from truthline.models._registry import Backend, backend
from truthline.models._spec import ModelSpec, endpoint_url, redact_url, url_host
from truthline.models._types import AuthError, Completion, InfraError, ModelRequest

_PASS = ("temperature", "top_p", "seed", "reasoning_effort", "stop")

OPENAI_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"
BASE_URL_ENV = "OPENAI_BASE_URL"
KEY_ENV = "OPENAI_API_KEY"
_ENV_HEADERS = ("OpenAI-Organization", "OpenAI-Project")
"""Headers the SDK fills from the environment (OPENAI_ORG_ID, OPENAI_PROJECT_ID)."""


@dataclass(frozen=True)
class Endpoint:
    """Where a spec's requests go. ``url`` may hold a password: show ``host`` only."""

    url: str
    host: str
    source: str
    """``spec`` (its ``@URL``), ``OPENAI_BASE_URL`` or ``default`` (api.openai.com)."""

    @property
    def origin(self) -> tuple[str, str, int]:
        """``(scheme, host, port)`` with the scheme's default port filled in."""
        parts = urlsplit(self.url)
        return _origin(parts.scheme, parts.hostname or "", parts.port)

    @property
    def official(self) -> bool:
        """api.openai.com over https (its default port)."""
        return self.origin == ("https", OPENAI_HOST, 443)

    @property
    def env_bound(self) -> bool:
        """The SDK's environment credentials may go here: the host is OpenAI's, or the user
        named it in ``OPENAI_BASE_URL`` (the variable the SDK pairs with the key)."""
        return self.official or self.source == BASE_URL_ENV


def _origin(scheme: str, host: str, port: int | None) -> tuple[str, str, int]:
    scheme = scheme.lower()
    return scheme, host.lower().strip("[]"), port or (443 if scheme == "https" else 80)


def endpoint(spec: ModelSpec) -> Endpoint:
    """The endpoint of a spec (see the module docstring); a malformed ``OPENAI_BASE_URL``
    is one error naming the variable."""
    if spec.url:
        return Endpoint(spec.url, url_host(spec.url), "spec")
    env = os.environ.get(BASE_URL_ENV, "").strip()
    if env:
        url = endpoint_url(env, f"the environment variable {BASE_URL_ENV}")
        return Endpoint(url, url_host(url), BASE_URL_ENV)
    return Endpoint(OPENAI_URL, OPENAI_HOST, "default")


def _checked_key(spec: ModelSpec, key: str, where: str) -> str:
    """``key`` if every character is one an HTTP header carries (printable ASCII, no
    space); else one error naming where it came from (the key itself is never shown)."""
    bad = next((i for i, c in enumerate(key) if not "!" <= c <= "~"), None)
    if bad is not None:
        what = "a non-ASCII" if ord(key[bad]) > 127 else "a space or control"
        raise TruthlineError(
            f"model {spec.alias}: the API key in {where} has {what} character at position "
            f"{bad + 1}, which no HTTP request can carry; copy the key again (it is not shown)"
        )
    return key


def api_key(spec: ModelSpec, ep: Endpoint | None = None) -> str:
    """The key sent to ``ep`` (see the module docstring); ``EMPTY`` where none may go."""
    ep = ep or endpoint(spec)
    env = spec.opt("key_env")
    if env:
        key = os.environ.get(env, "").strip()
        if not key:
            raise TruthlineError(
                f"model {spec.alias}: key_env={env} names an environment variable that is not "
                "set; export it, or drop key_env"
            )
        return _checked_key(spec, key, f"${env}")
    file = spec.opt("key_file")
    if file:
        try:
            with open(file, encoding="utf-8") as fh:
                key = fh.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise TruthlineError(
                f"model {spec.alias}: key_file={file}: cannot read the key ({type(exc).__name__})"
            ) from None
        if not key:
            raise TruthlineError(f"model {spec.alias}: key_file={file} is empty")
        return _checked_key(spec, key, f"key_file={file}")
    if ep.env_bound:
        key = os.environ.get(KEY_ENV, "").strip()
        if key:
            return _checked_key(spec, key, f"${KEY_ENV}")
        if ep.official:
            raise TruthlineError(
                f"model {spec.alias}: no API key; set the environment variable {KEY_ENV} "
                "(or pass ;key_env=NAME or ;key_file=PATH in the spec)"
            )
    return "EMPTY"


def _env_header_names() -> list[str]:
    """Header names ``OPENAI_CUSTOM_HEADERS`` would add (``Name: value`` per line)."""
    raw = os.environ.get("OPENAI_CUSTOM_HEADERS") or ""
    return [line.partition(":")[0].strip() for line in raw.split("\n") if ":" in line]


def client_headers(ep: Endpoint, key: str) -> dict[str, Any]:
    """Headers set on the client: the one ``Authorization`` this spec's key makes (which
    overrides any from the environment), and for a host the environment's credentials are
    not bound to, the SDK's environment headers removed."""
    from openai import Omit

    headers: dict[str, Any] = {"Authorization": f"Bearer {key}"}
    if not ep.env_bound:
        for name in (*_ENV_HEADERS, *_env_header_names()):
            if name.lower() != "authorization":
                headers[name] = Omit()
    return headers


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return float(ra)
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(ra).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def build_messages(
    req: ModelRequest, detail: str | None = None, images: ImageCache | None = None
) -> list[dict[str, Any]]:
    """Chat messages of a request; images as data URLs from ``images`` (default: the
    process's memory cache), each encoded once."""
    policy = req.settings.get("image_policy") or {}
    detail = detail or policy.get("detail", "auto")
    cache = images or memory_cache()
    content: list[dict[str, Any]] = [{"type": "text", "text": req.user}]
    for p in req.images:
        url = cache.data_url(p, policy)
        content.append({"type": "image_url", "image_url": {"url": url, "detail": detail}})
    msgs: list[dict[str, Any]] = []
    if req.system:
        msgs.append({"role": "system", "content": req.system})
    msgs.append({"role": "user", "content": content})
    return msgs


def _tokens(value: Any) -> int:
    """A usage count as the server reported it, never negative: a negative count would be
    a negative cost, which the budget would count as money back."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):
        return 0


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` of a JSON object, ``obj.name`` of an SDK object; None if missing."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def completion_from(resp: Any) -> Completion:
    """A Completion from a chat.completions response: its JSON body (a dict, what
    ``_post`` reads) or the SDK's response object. A body without a first choice holding
    a message is ``bad_response``."""
    choices = _field(resp, "choices")
    if not choices or not isinstance(choices, list | tuple):
        raise InfraError("bad_response", "the server returned no choices")
    ch = choices[0]
    msg = _field(ch, "message")
    if msg is None or isinstance(msg, str | int | float | list):
        raise InfraError("bad_response", "the server's first choice has no message")
    usage = _field(resp, "usage")
    tin = _tokens(_field(usage, "prompt_tokens"))
    tout = _tokens(_field(usage, "completion_tokens"))
    details = _field(usage, "completion_tokens_details")
    think = min(_tokens(_field(details, "reasoning_tokens")), tout)
    content, refusal = _field(msg, "content"), _field(msg, "refusal")
    if content is not None and not isinstance(content, str):
        raise InfraError("bad_response", "the server's message content is not text")
    return Completion(
        text=content,
        finish_reason=_field(ch, "finish_reason"),
        refusal=refusal,
        tokens_in=tin,
        tokens_out=max(0, tout - think),
        tokens_thinking=think,
        raw=content if content is not None else refusal,
    )


def infra_error(exc: Exception) -> InfraError:
    """Map an OpenAI SDK exception to the runner's infrastructure failure."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return InfraError("timeout", "no answer before the timeout")
    if isinstance(exc, openai.APIConnectionError):
        return InfraError("connection", type(exc.__cause__ or exc).__name__)
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        if code in (401, 403):
            return AuthError(code)
        retry = code in (408, 409, 429) or code >= 500
        ra = retry_after_seconds(getattr(exc.response, "headers", None))
        return InfraError(f"http_{code}", f"HTTP {code}", retry=retry, retry_after=ra)
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return InfraError("bad_response", f"{type(exc).__name__}: malformed response body")
    return InfraError("client_error", f"{type(exc).__name__}: {exc}", retry=False)


def _request_options() -> Any:
    """The options ``create`` passes (bearer auth where this SDK version declares it)."""
    import inspect

    from openai._base_client import make_request_options

    if "security" in inspect.signature(make_request_options).parameters:
        return make_request_options(security={"bearer_auth": True})
    return make_request_options()


@backend("openai")
class OpenAIBackend(Backend):
    paid = True

    def __init__(self, spec: ModelSpec):
        super().__init__(spec)
        self.endpoint = endpoint(spec)
        self._key = api_key(spec, self.endpoint)
        self._client: Any = None
        self._options: Any = None
        self.timeout = spec.opt_float("timeout", 120.0)
        self.images = memory_cache()

    def bind(self, store: Any) -> None:
        """Images are encoded once per workspace (kept in its ``image-cache/``)."""
        super().bind(store)
        self.images = ImageCache(default_image_cache_dir(store))

    @property
    def host(self) -> str:
        """``HOST[:PORT]`` every request of this backend goes to."""
        return self.endpoint.host

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            client = openai.AsyncOpenAI(
                api_key=self._key,
                base_url=self.endpoint.url,
                max_retries=0,
                timeout=self.timeout,
                default_headers=client_headers(self.endpoint, self._key),
            )
            sent_to = _origin(client.base_url.scheme, client.base_url.host, client.base_url.port)
            if sent_to != self.endpoint.origin:  # the SDK read the URL another way: send nothing
                raise TruthlineError(
                    f"model {self.spec.alias}: the HTTP client would send to {sent_to[1]}, not "
                    f"{self.endpoint.host}; nothing was sent (report this as a bug)"
                )
            self._client = client
            via = "" if self.endpoint.source != BASE_URL_ENV else f" (from ${BASE_URL_ENV})"
            print(f"sending to {self.host}{via}: {self.spec.alias}", file=sys.stderr, flush=True)
        return self._client

    async def complete(self, request: ModelRequest) -> Completion:
        import openai

        s = request.settings
        kwargs: dict[str, Any] = {k: s[k] for k in _PASS if s.get(k) is not None}
        cap = self.spec.opt("cap_param", "max_tokens") or "max_tokens"
        if s.get("max_tokens"):
            kwargs[cap] = int(s["max_tokens"])
        if s.get("json_mode"):
            kwargs["response_format"] = {"type": "json_object"}
        body = {
            "model": self.spec.name,
            "messages": build_messages(request, images=self.images),
            **kwargs,
        }
        try:
            resp = await self._post(body)
        except (openai.OpenAIError, ValueError) as exc:
            raise infra_error(exc) from None
        return completion_from(resp)

    async def _post(self, body: dict[str, Any]) -> Any:
        """``chat.completions.create`` without the SDK's per-call TypedDict transform
        (~1 ms CPU per request walking the messages, an identity for the plain JSON
        built here) and without building its pydantic ``ChatCompletion`` (~0.15 ms per
        answer, of which the runner reads five fields): the same request path, auth and
        errors; the body is parsed as JSON (a malformed one is a ``ValueError``, which
        ``complete`` maps to ``bad_response``)."""
        if self._options is None:
            self._options = _request_options()
        raw = await self._get_client().post(
            "/chat/completions", body=body, cast_to=bytes, options=self._options
        )
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("the response body is not a JSON object")
        return data

    def describe(self) -> str:
        return f"{self.spec.alias} at {redact_url(self.endpoint.url)}"

    async def aclose(self) -> None:
        self.images.flush()  # the sources found sent as they are, for the next run
        if self._client is not None:
            await self._client.close()
            self._client = None
