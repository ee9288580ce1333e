"""The backend registry: a model client is one class decorated with ``@backend("kind")``.

Backends are found through the ``truthline.backends`` entry-point group (declared in
pyproject.toml; third-party packages add their own the same way), loaded only when a spec
names their kind: importing ``truthline.models`` imports no client library (torch,
ultralytics, openai) and no simulation code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from truthline._registry import Registry
from truthline.errors import TruthlineError
from truthline.models._prices import Price, price_for
from truthline.models._spec import ModelSpec, parse_model_spec
from truthline.models._types import Completion, InfraError, ModelRequest


@dataclass
class Detection:
    """One detected object in pixels of the frame it was found in."""

    x: float
    y: float
    width: float
    height: float
    confidence: float
    label: str = "person"


@dataclass
class FrameRef:
    """A frame handed to a detector: pixels (BGR) plus where it came from."""

    video: str
    t: float
    image: Any = None


class Backend:
    """A model client. Override ``complete`` (one request), or ``complete_batch`` and set
    ``batch_size`` (local models that batch); detectors also implement ``detect``."""

    kind: ClassVar[str] = ""
    simulated: ClassVar[bool] = False
    reads_context: ClassVar[bool] = False
    """The answer depends on the request's ``context`` (a SIMULATED model reads the item's
    known truth; a rule reads the gold), not only on prompt and images: the cache key must
    then include the item and its context, or identical prompts would share one answer."""
    batch_size: int = 1
    max_concurrency: int | None = None
    """Cap on parallel calls regardless of the runner's concurrency (local models: 1)."""
    paid: ClassVar[bool] = False
    """Calls cost money (a remote API): a budget then needs declared prices. Local,
    simulated, scripted and rule backends are free."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.store: Any = None

    def bind(self, store: Any) -> None:
        """Called by the runner before the first request (some backends read the store)."""
        self.store = store

    @property
    def price(self) -> Price:
        return price_for(self.spec)

    async def complete(self, request: ModelRequest) -> Completion:
        out = await self.complete_batch([request])
        res = out[0]
        if isinstance(res, InfraError):
            raise res
        return res

    async def complete_batch(
        self, requests: Sequence[ModelRequest]
    ) -> list[Completion | InfraError]:
        out: list[Completion | InfraError] = []
        for r in requests:
            try:
                out.append(await self.complete(r))
            except InfraError as exc:
                out.append(exc)
        return out

    def worst_case_tokens(self, request: ModelRequest) -> tuple[int, int]:
        """``(prompt, output)`` tokens a request can cost at most, for the budget's
        reservation: one token per UTF-8 byte of text (no tokenizer makes more), a
        high-detail image at its largest tiling (``image_tokens`` option, default 1445),
        and the output cap (``max_tokens``, else 16384)."""
        text = sum(len((t or "").encode()) for t in (request.system, request.user)) + 16
        policy = request.settings.get("image_policy") or {}
        per_image = 85 if policy.get("detail") == "low" else 1445
        per_image = self.spec.opt_int("image_tokens", per_image)
        out = request.settings.get("max_tokens") or 16384
        return text + per_image * len(request.images), int(out)

    def prepare_check(self) -> None:
        """Called before the endpoint check's one request (``item_id=None``, fields
        ``{"ok": boolean}``); a backend answering from known truth provides it here."""
        return None

    def detect(self, frames: Sequence[FrameRef]) -> list[list[Detection]]:
        raise TruthlineError(f"{self.spec.alias} is not a detector (kind {self.kind!r})")

    def describe(self) -> str:
        return self.spec.alias

    async def aclose(self) -> None:
        return None


ENTRY_POINT_GROUP = "truthline.backends"
BACKENDS: Registry[type[Backend]] = Registry("backend", entry_point_group=ENTRY_POINT_GROUP)


def backend(kind: str):
    """Register a Backend subclass for specs ``KIND:...``."""

    def deco(cls: type[Backend]) -> type[Backend]:
        cls.kind = kind
        return BACKENDS.register(kind)(cls)

    return deco


def registered_backends() -> list[str]:
    """Every backend kind, the entry points' included (none of them is imported)."""
    return BACKENDS.names()


def get_backend(spec: str | ModelSpec) -> Backend:
    """An instance of the backend a spec names; unknown kinds list the known ones."""
    ms = parse_model_spec(spec) if isinstance(spec, str) else spec
    if ms.kind not in BACKENDS:
        raise TruthlineError(
            f"model spec {ms.text!r}: unknown kind {ms.kind!r} (known: {', '.join(BACKENDS.names())})"
        )
    cls = BACKENDS.get(ms.kind)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TruthlineError(
            f"model spec {ms.text!r}: the {ENTRY_POINT_GROUP!r} entry point {ms.kind!r} "
            f"is {cls!r}, not a Backend class"
        )
    return cls(ms)
