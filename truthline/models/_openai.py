"""``openai:MODEL[@URL]`` — any OpenAI-compatible chat-completions server.

api.openai.com by default (key from ``OPENAI_API_KEY``, or the variable named by the
``key_env`` option); with ``@URL`` any compatible server (vLLM, SGLang, Ollama, LM
Studio), where a missing key is sent as ``EMPTY``. The SDK's own retries are off: the
runner retries infrastructure failures itself (one retry policy for every backend).
The key is never printed, logged or stored.
"""

from __future__ import annotations

import os
import time
from email.utils import parsedate_to_datetime
from typing import Any

from truthline.errors import TruthlineError
from truthline.models._images import data_url
from truthline.models._registry import Backend, backend
from truthline.models._types import Completion, InfraError, ModelRequest

_PASS = ("temperature", "top_p", "seed", "reasoning_effort", "stop")


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


def api_key(spec: Any) -> str:
    env = spec.opt("key_env", "OPENAI_API_KEY")
    key = os.environ.get(env or "OPENAI_API_KEY")
    if key:
        return key
    file = spec.opt("key_file")
    if file and os.path.isfile(file):
        with open(file, encoding="utf-8") as fh:
            return fh.read().strip()
    if spec.url:
        return "EMPTY"
    raise TruthlineError(
        f"model {spec.alias}: no API key; set the environment variable {env} "
        "(or pass ;key_env=NAME or ;key_file=PATH in the spec)"
    )


def build_messages(req: ModelRequest, detail: str | None = None) -> list[dict[str, Any]]:
    policy = req.settings.get("image_policy") or {}
    detail = detail or policy.get("detail", "auto")
    content: list[dict[str, Any]] = [{"type": "text", "text": req.user}]
    for p in req.images:
        content.append(
            {"type": "image_url", "image_url": {"url": data_url(p, policy), "detail": detail}}
        )
    msgs: list[dict[str, Any]] = []
    if req.system:
        msgs.append({"role": "system", "content": req.system})
    msgs.append({"role": "user", "content": content})
    return msgs


def completion_from(resp: Any) -> Completion:
    """A Completion from a chat.completions response object."""
    if not getattr(resp, "choices", None):
        raise InfraError("bad_response", "the server returned no choices")
    ch = resp.choices[0]
    msg = ch.message
    usage = getattr(resp, "usage", None)
    tin = int(getattr(usage, "prompt_tokens", 0) or 0)
    tout = int(getattr(usage, "completion_tokens", 0) or 0)
    details = getattr(usage, "completion_tokens_details", None)
    think = int(getattr(details, "reasoning_tokens", 0) or 0)
    return Completion(
        text=msg.content,
        finish_reason=ch.finish_reason,
        refusal=getattr(msg, "refusal", None),
        tokens_in=tin,
        tokens_out=max(0, tout - think),
        tokens_thinking=think,
        raw=msg.content if msg.content is not None else getattr(msg, "refusal", None),
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
        retry = code in (408, 409, 429) or code >= 500
        ra = retry_after_seconds(getattr(exc.response, "headers", None))
        hint = " (check the API key)" if code in (401, 403) else ""
        return InfraError(f"http_{code}", f"HTTP {code}{hint}", retry=retry, retry_after=ra)
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

    def __init__(self, spec):
        super().__init__(spec)
        self._key = api_key(spec)
        self._client: Any = None
        self._options: Any = None
        self.timeout = spec.opt_float("timeout", 120.0)

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self._key, base_url=self.spec.url, max_retries=0, timeout=self.timeout
            )
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
        body = {"model": self.spec.name, "messages": build_messages(request), **kwargs}
        try:
            resp = await self._post(body)
        except (openai.OpenAIError, ValueError) as exc:
            raise infra_error(exc) from None
        return completion_from(resp)

    async def _post(self, body: dict[str, Any]) -> Any:
        """``chat.completions.create`` without the SDK's per-call TypedDict transform
        (~1 ms CPU per request walking the messages, an identity for the plain JSON
        built here): the same request path, auth, errors and response parsing."""
        from openai.types.chat import ChatCompletion

        if self._options is None:
            self._options = _request_options()
        return await self._get_client().post(
            "/chat/completions", body=body, cast_to=ChatCompletion, options=self._options
        )

    def describe(self) -> str:
        return f"{self.spec.alias} at {self.spec.safe_url or 'https://api.openai.com/v1'}"

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
