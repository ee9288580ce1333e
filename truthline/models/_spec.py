"""Model spec strings: which backend, which model, where, and per-spec options.

Grammar::

    SPEC    := KIND ":" NAME [ "@" URL ] { ";" KEY "=" VALUE }
    KIND    := a registered backend (openai, hf, yolo, simulated, scripted, ...)

Examples::

    openai:gpt-4o-mini                          api.openai.com, key from OPENAI_API_KEY
    openai:qwen2.5-vl@http://127.0.0.1:8000/v1  any OpenAI-compatible server (vLLM, Ollama, ...)
    openai:gpt-4o;key_env=AZURE_KEY;alias=gpt4o-azure;timeout=30
    hf:/models/llava-tiny;batch=4;device=cpu     local transformers image-text-to-text model
    yolo:yolo11n.yaml  yolo:/weights/best.pt;conf=0.25
    simulated:steel-v1                           a SIMULATED model (truthline.simulate)
    scripted:/data/detections.json               a scripted detector (tests, benchmarks)

Options every backend understands: ``alias`` (the name stored as model version; default
``KIND:NAME``), ``price_in`` / ``price_out`` (USD per million tokens, overriding the
declared price table), ``price_date`` (when that price was read off the provider's
pricing page; set cost tables print it) and ``group`` (a model-scale group, e.g.
``small``, for group means). The alias never contains the URL or a key; a password inside
the URL (``http://user:PASSWORD@host/v1``) is redacted from ``text`` (what is stored and
printed) with the store's own ``redact_url``, and only ``url`` (never shown) keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from truthline.errors import TruthlineError


def _redact(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***`` (the store's redaction)."""
    from urllib.parse import urlsplit

    from truthline.store import redact_url

    try:
        has_password = urlsplit(url).password is not None
    except ValueError:
        has_password = True
    return redact_url(url) if has_password else url


@dataclass(frozen=True)
class ModelSpec:
    kind: str
    name: str
    url: str | None = field(default=None, repr=False)
    options: dict[str, str] = field(default_factory=dict)
    text: str = ""

    @property
    def alias(self) -> str:
        return self.options.get("alias") or f"{self.kind}:{self.name}"

    def opt(self, key: str, default: str | None = None) -> str | None:
        return self.options.get(key, default)

    def opt_float(self, key: str, default: float | None = None) -> float | None:
        raw = self.options.get(key)
        if raw is None:
            return default
        try:
            return float(raw)
        except ValueError:
            raise TruthlineError(
                f"model spec {self.text!r}: option {key}={raw!r} is not a number"
            ) from None

    def opt_int(self, key: str, default: int) -> int:
        val = self.opt_float(key, float(default))
        return int(val if val is not None else default)

    @property
    def safe_url(self) -> str | None:
        """The URL with any password replaced, safe to print or store."""
        return _redact(self.url) if self.url else self.url

    @property
    def cache_identity(self) -> str:
        """What identifies the model for the cache: every option except those that do not
        change its answers (``NOT_IDENTITY``)."""
        opts = ";".join(
            f"{k}={v}" for k, v in sorted(self.options.items()) if k not in NOT_IDENTITY
        )
        return f"{self.kind}:{self.name}@{self.url or ''};{opts}"


NOT_IDENTITY = ("alias", "price_in", "price_out", "price_date", "timeout", "key_env", "group")
"""Spec options that never change a model's answers: its name, price (and when that price
was read), timeout, key variable and model-scale group (``group=small``, SynDORBench's
tables): tagging a model with them re-runs nothing."""


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``KIND:NAME[@URL][;key=value...]``; errors say what a valid spec looks like."""
    text = spec.strip()
    head, *opts = text.split(";")
    kind, sep, rest = head.partition(":")
    name, url = rest, None
    at = rest.find("@http")
    if at >= 0:
        name, url = rest[:at], rest[at + 1 :]
        safe = _redact(url)
        if safe != url:
            text = text.replace(url, safe)
    spec = text  # every message below shows the redacted text
    if not sep or not kind or not rest:
        raise TruthlineError(
            f"model spec {spec!r}: expected KIND:NAME, e.g. openai:gpt-4o-mini, "
            "hf:/path/to/model, yolo:yolo11n.yaml, simulated:steel-v1"
        )
    if not name:
        raise TruthlineError(f"model spec {spec!r}: empty model name")
    options: dict[str, str] = {}
    for o in opts:
        if not o.strip():
            continue
        k, eq, v = o.partition("=")
        if not eq or not k.strip():
            raise TruthlineError(f"model spec {spec!r}: option {o!r} is not KEY=VALUE")
        options[k.strip()] = v.strip()
    return ModelSpec(
        kind=kind.strip().lower(), name=name.strip(), url=url, options=options, text=text
    )
