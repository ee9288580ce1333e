"""Model spec strings: which backend, which model, where, and per-spec options.

Grammar::

    SPEC    := KIND ":" NAME [ "@" URL ] { ";" KEY "=" VALUE }
    KIND    := a registered backend (openai, hf, yolo, simulated, scripted, ...)
    URL     := "http://" or "https://" HOST [ ":" PORT ] [ PATH ]

Examples::

    openai:gpt-4o-mini                          api.openai.com, key from OPENAI_API_KEY
    openai:qwen2.5-vl@http://127.0.0.1:8000/v1  any OpenAI-compatible server (vLLM, Ollama, ...)
    openai:gpt-4o;key_env=AZURE_KEY;alias=gpt4o-azure;timeout=30
    hf:/models/llava-tiny;batch=4;device=cpu     local transformers image-text-to-text model
    yolo:yolo11n.yaml  yolo:/weights/best.pt;conf=0.25
    simulated:steel-v1                           a SIMULATED model (truthline.simulate)
    scripted:/data/detections.json               a scripted detector (tests, benchmarks)

The first ``@`` ends the model name: everything after it is the endpoint, an absolute
``http(s)://`` URL (scheme lower-cased, host checked strictly), or the spec is refused. A
URL without a scheme (``@127.0.0.1:8000/v1``) used to be read as part of the model name and
sent the prompts and the key to the public endpoint; there is no reading of a spec in which
the host a request goes to differs from the host written (``ModelSpec.host``).

Options are checked against the backend's known keys (a typo such as ``timout`` is an error
listing them) and their values against their type. Options every backend understands:
``alias`` (the name stored as model version; default ``KIND:NAME``; no ``@vN``, which is the
version suffix of re-asked predictions), ``price_in`` / ``price_out`` (USD per million
tokens, >= 0, overriding the declared price table), ``price_date`` (ISO date the price was
read off the provider's pricing page; set cost tables print it), ``group`` (a model-scale
group, e.g. ``small``, for group means), ``replicate`` (ask again under a distinct cache key)
and ``image_tokens`` (the budget's worst-case tokens per image). A backend outside this
package declares its own keys as a class attribute ``spec_options = ("key", ...)``.

The alias never contains the URL or a key; a password inside the URL
(``http://user:PASSWORD@host/v1``) is redacted from ``text`` (what is stored and printed),
and only ``url`` (never shown) keeps it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from urllib.parse import urlsplit

from truthline.errors import TruthlineError


class ModelSpecError(TruthlineError):
    """A model spec string is malformed; the message is one line showing the (redacted)
    spec and what to write instead."""


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
            val = float(raw)
        except ValueError:
            val = math.nan
        if not math.isfinite(val):
            raise ModelSpecError(
                f"model spec {self.text!r}: option {key}={raw!r} is not a finite number"
            )
        return val

    def opt_int(self, key: str, default: int) -> int:
        val = self.opt_float(key, float(default))
        return int(val if val is not None else default)

    @property
    def host(self) -> str | None:
        """``HOST[:PORT]`` of the URL (lower case, no user or password): where a request
        goes. None without a URL (the backend's default endpoint)."""
        return url_host(self.url) if self.url else None

    @property
    def safe_url(self) -> str | None:
        """The URL with any password replaced, safe to print or store."""
        return redact_url(self.url) if self.url else self.url

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

# -- options ------------------------------------------------------------------------------

COMMON_OPTIONS = (
    "alias",
    "price_in",
    "price_out",
    "price_date",
    "group",
    "replicate",
    "image_tokens",
)
"""Options every backend accepts (the runner, the budget and the tables read them)."""

KIND_OPTIONS: dict[str, tuple[str, ...]] = {
    "openai": ("timeout", "key_env", "key_file", "cap_param"),
    "hf": ("batch", "device"),
    "yolo": ("conf", "imgsz", "device"),
    "simulated": ("error", "fail"),
    "scripted": (),
    "rule": (),
    "simulated-dori": (),
}
"""The backends of this package and their own options."""

LOCAL_KINDS = ("hf", "yolo", "simulated", "scripted", "rule", "simulated-dori")
"""Backends that run in this process and take no ``@URL`` (one would be silently ignored)."""

_KEY = re.compile(r"[a-z][a-z0-9_]*\Z")
_KIND = re.compile(r"[a-z][a-z0-9_.-]*\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VERSION_SUFFIX = re.compile(r"@v\d")


def _number(lo: float, hi: float = math.inf, *, lo_open: bool = False, integer: bool = False):
    """A check that a value is a finite number in ``[lo, hi]`` (``(lo, hi]``)."""
    low = f"> {lo:g}" if lo_open else f">= {lo:g}"
    what = ("an integer " if integer else "a number ") + low
    if hi < math.inf:
        what += f" and <= {hi:g}"

    def check(raw: str) -> str | None:
        try:
            val = int(raw) if integer else float(raw)
        except ValueError:
            return f"must be {what}"
        if not math.isfinite(val) or val < lo or (lo_open and val == lo) or val > hi:
            return f"must be {what}"
        return None

    return check


def _alias(raw: str) -> str | None:
    if _VERSION_SUFFIX.search(raw):
        return (
            "must not contain '@v' and a digit: ALIAS@vN names version N of ALIAS's "
            "predictions (use e.g. alias=NAME-v2)"
        )
    return None


def _iso_date(raw: str) -> str | None:
    try:
        date.fromisoformat(raw)
    except ValueError:
        return "must be an ISO date, e.g. 2026-10-01"
    return None


def _env_name(raw: str) -> str | None:
    return None if _ENV_NAME.match(raw) else "must be an environment variable name, e.g. MY_KEY"


def _cap_param(raw: str) -> str | None:
    ok = ("max_tokens", "max_completion_tokens")
    return None if raw in ok else f"must be one of {', '.join(ok)}"


_CHECKS: dict[str, Callable[[str], str | None]] = {
    "alias": _alias,
    "price_in": _number(0),
    "price_out": _number(0),
    "price_date": _iso_date,
    "image_tokens": _number(0, integer=True),
    "timeout": _number(0, 86400, lo_open=True),
    "key_env": _env_name,
    "cap_param": _cap_param,
    "batch": _number(1, integer=True),
    "imgsz": _number(1, integer=True),
    "conf": _number(0, 1),
    "error": _number(0, 1),
    "fail": _number(0, 1),
}
"""What a valid value of an option looks like (an error says so), beyond not empty."""


def known_options(kind: str) -> tuple[str, ...] | None:
    """The option keys a spec of ``kind`` accepts; None for a kind nobody registered (the
    backend lookup reports it, listing the known kinds)."""
    own = KIND_OPTIONS.get(kind)
    if own is None:
        from truthline.models._registry import BACKENDS

        if kind not in BACKENDS:
            return None
        own = tuple(getattr(BACKENDS.get(kind), "spec_options", ()) or ())
    return (*COMMON_OPTIONS, *own)


# -- URLs ---------------------------------------------------------------------------------

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_URL_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,=%]*\Z")  # RFC 3986, no ';'
_HOSTNAME = re.compile(
    r"(?=.{1,253}\Z)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*\.?\Z"
)
"""A DNS name (labels of letters, digits, hyphens; underscores too, as Docker service names)."""
_PORT = re.compile(r"[1-9][0-9]{0,4}\Z")
_IPV6 = re.compile(r"\[[0-9a-f:.]+\]\Z")


def url_host(url: str) -> str:
    """``HOST[:PORT]`` of a URL this module accepted (lower case, no user or password)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port is not None else host


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    return parts._replace(netloc=f"{user}:***@{parts.netloc.rpartition('@')[2]}").geturl()


def _url_problem(url: str) -> str | None:
    """Why ``url`` is not an endpoint URL this tool sends to (None: it is)."""
    m = _SCHEME.match(url)
    if m is None:
        return "has no scheme"
    if m.group(1).lower() not in ("http", "https"):
        return f"has scheme {m.group(1)!r}; only http:// and https:// are served"
    if not _URL_CHARS.match(url):
        return "has a character a URL cannot hold (spaces, quotes, non-ASCII): percent-encode it"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not 0-65535)
    except ValueError:
        return "has an invalid port or host (a port is 1-65535)"
    if parts.query or parts.fragment or "?" in url or "#" in url:
        return "has a query or fragment ('?', '#'): give the base URL, e.g. http://HOST:PORT/v1"
    authority = parts.netloc.rpartition("@")[2]
    if "@" in parts.netloc and not parts.username:
        return "has an empty user name before '@'"
    raw_host, raw_port = authority, None
    if not raw_host.startswith("[") and ":" in raw_host:
        raw_host, _, raw_port = raw_host.partition(":")
    elif raw_host.startswith("[") and "]:" in raw_host:
        raw_host, _, raw_port = raw_host.partition("]:")
        raw_host += "]"
    if raw_port is not None and not _PORT.match(raw_port):
        what = "an empty port" if not raw_port else f"port {raw_port!r}"
        return f"has {what} after ':' (a port is 1-65535, no leading zero)"
    host = raw_host.lower()
    if not host:
        return "has no host"
    if not (_HOSTNAME.match(host) or _IPV6.match(host)):
        return f"has an invalid host {raw_host!r} (write the host name in ASCII, e.g. punycode)"
    return None


def _endpoint(url: str, shown: str, *, masked: bool) -> str:
    """The URL normalised (scheme lower-cased), or a one-line error saying what to write."""
    url = url.strip()
    m = _SCHEME.match(url)
    if m is not None:
        url = m.group(1).lower() + url[len(m.group(1)) :]
    problem = _url_problem(url)
    if problem is None:
        return url
    own = _SCHEME.match(url) is None and url and not masked  # its own URL with a scheme
    example = f"http://{url}" if own else "http://127.0.0.1:8000/v1"
    raise ModelSpecError(
        f"model spec {shown!r}: the endpoint after '@' {problem}; write KIND:NAME@URL with "
        f"a full URL, e.g. @{example} (a model name cannot contain '@')"
    )


def endpoint_url(url: str, where: str) -> str:
    """``url`` checked as an endpoint URL like a spec's ``@URL`` (scheme lower-cased); a
    problem is one ``ModelSpecError`` naming ``where`` it came from (e.g. a variable)."""
    url = url.strip()
    m = _SCHEME.match(url)
    if m is not None:
        url = m.group(1).lower() + url[len(m.group(1)) :]
    problem = _url_problem(url)
    if problem is not None:
        raise ModelSpecError(
            f"{where}: the URL {_mask(url)!r} {problem}; give a full URL, e.g. "
            "http://127.0.0.1:8000/v1"
        )
    return url


# -- parsing ------------------------------------------------------------------------------


_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/{0,2}")


def _mask(url: str) -> str:
    """``url`` as an error may show it: everything up to its last ``@`` (where a user and
    password would be) hidden, the scheme kept. A password always ends at an ``@``."""
    if "@" not in url:
        return url
    m = _PREFIX.match(url)
    return (m.group(0) if m else "") + "***@" + url.rpartition("@")[2]


def _shown(text: str) -> str:
    """The spec as an error may show it: anything that may be a URL password hidden, also
    the rest of one a ``;`` cut off into the options (a segment with ``@`` before ``=``)."""
    head, *opts = text.split(";")
    name, at, url = head.partition("@")
    if not at:
        return text
    parts = [url, *opts]

    def continues_url(k: int, seg: str) -> bool:
        i = seg.find("@")
        return i >= 0 and (k == 0 or "=" not in seg[:i])

    last = max((k for k, seg in enumerate(parts) if continues_url(k, seg)), default=None)
    if last is None:
        return text
    m = _PREFIX.match(url)
    masked = (m.group(0) if m else "") + "***@" + parts[last].rpartition("@")[2]
    return ";".join([f"{name}@{masked}", *parts[last + 1 :]])


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``KIND:NAME[@URL][;key=value...]`` strictly; every problem is one
    ``ModelSpecError`` line saying what a valid spec looks like."""
    text = spec.strip()
    shown = _shown(text)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise ModelSpecError(f"model spec {shown!r}: contains a control character")
    head, *opts = text.split(";")
    kind, sep, rest = head.partition(":")
    kind = kind.strip().lower()
    if not sep or not kind or not rest.strip():
        raise ModelSpecError(
            f"model spec {shown!r}: expected KIND:NAME, e.g. openai:gpt-4o-mini, "
            "hf:/path/to/model, yolo:yolo11n.yaml, simulated:steel-v1"
        )
    if not _KIND.match(kind):
        raise ModelSpecError(
            f"model spec {shown!r}: kind {kind!r} is not a backend name (letters, digits, "
            "'-', '_'), e.g. openai:gpt-4o-mini"
        )
    name, at, raw_url = rest.partition("@")
    name = name.strip()
    if not name:
        raise ModelSpecError(f"model spec {shown!r}: empty model name")
    url = None
    if at:
        if kind in LOCAL_KINDS:
            raise ModelSpecError(
                f"model spec {shown!r}: a {kind} model runs locally and takes no @URL "
                "(a model name cannot contain '@')"
            )
        url = _endpoint(raw_url, shown, masked=shown != text)
        text = ";".join([f"{head.partition('@')[0]}@{redact_url(url)}", *opts])
    options = _options(kind, opts, shown)
    return ModelSpec(kind=kind, name=name, url=url, options=options, text=text)


def _options(kind: str, opts: list[str], shown: str) -> dict[str, str]:
    """The ``KEY=VALUE`` options, each key known to the backend and each value valid."""
    known = known_options(kind)
    options: dict[str, str] = {}
    for o in opts:
        if not o.strip():
            continue
        k, eq, v = o.partition("=")
        k, v = k.strip(), v.strip()
        if not eq or not k:
            what = "an option" if "@" in o else f"option {o!r}"
            raise ModelSpecError(
                f"model spec {shown!r}: {what} is not KEY=VALUE (a ';' inside a URL must be "
                "written %3B)"
            )
        if not _KEY.match(k):
            raise ModelSpecError(
                f"model spec {shown!r}: option key {k!r} is not a lower-case name, e.g. timeout"
            )
        if known is not None and k not in known:
            raise ModelSpecError(
                f"model spec {shown!r}: unknown option {k!r} for kind {kind} "
                f"(known: {', '.join(sorted(known))})"
            )
        if k in options:
            raise ModelSpecError(f"model spec {shown!r}: option {k!r} is given twice")
        if not v:
            raise ModelSpecError(f"model spec {shown!r}: option {k!r} has an empty value")
        check = _CHECKS.get(k)
        problem = check(v) if check is not None else None
        if problem is not None:
            raise ModelSpecError(f"model spec {shown!r}: option {k}={v!r} {problem}")
        options[k] = v
    return options
