"""The scene library's contract: plain data shared by the host and the Blender worker.

Host-importable with no bpy (stdlib only): the project's environment samples parameters,
scores images and writes records; the worker (its own venv with bpy 5.0.1 and numpy<2) builds
scenes and renders. Both sides speak these types, serialised as JSON.

Adding an environment (what helper B and any plug-in does)
----------------------------------------------------------
1. Create a module in the system that owns it (``truthline/systems/<paper>/envs/<name>.py``,
   or a third-party package) and declare it in the entry-point group
   ``truthline.scenes.environments`` as ``<name> = "<module>:<Class>"``. At module top import only the stdlib,
   numpy, PIL, cv2 and ``truthline.scenes`` itself: the module is imported on the host *and*
   in the worker. ``import bpy`` only inside ``build``/``extract`` (worker side).
2. Subclass :class:`BaseEnvironment`, set ``name`` and ``version`` (bump ``version`` when the
   scene or its ground truth changes: it is part of every frame's job key, so old frames are
   not mistaken for new ones), and decorate the class with ``@register_environment``.
3. Implement ``sample`` (host: a JSON-able params dict from an ``np.random.Generator``),
   ``build`` (worker: make the scene with ``ctx`` helpers, return handles), ``camera``
   (worker: ``(CameraSpec, CameraPose, Effects)``), ``extract`` (worker: the GT dict, JSON-able;
   use ``ctx.project_points``/``ctx.object_bbox_px`` for pixel GT), ``questions`` (host) and
   optionally ``score`` (host, returns an :class:`Acceptability`) and ``grids`` (named
   declared grids, see :class:`Grid`).
4. Post effects (noise, white balance, PSF, night-vision ISP) are NOT render-time: they are
   host functions on the linear/RGB arrays, so one render yields several variants.

The worker renders, for every job: ``rgb`` (8-bit PNG, Standard view transform unless the
Effects say otherwise), ``linear`` (float EXR, when ``RenderSettings.exr``) and ``mask``
(Workbench flat render: objects named in ``ctx.mask_objects`` white, everything else black;
the visible pixels of the subject, occlusion included).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from itertools import product
from typing import Any, ClassVar, Literal, Protocol, TypeVar, runtime_checkable

from truthline._registry import Registry
from truthline.errors import TruthlineError

SCHEMA_VERSION = 1
"""Version of :class:`FrameRecord`'s JSON layout; bump on any incompatible change."""

Vec3 = tuple[float, ...]
"""Three coordinates (typed loosely so numpy-built tuples pass; checked at construction)."""
Engine = Literal["CYCLES", "BLENDER_WORKBENCH"]
Denoise = Literal["FAST", "HIGH"]
IMAGE_VARIANTS = ("rgb", "linear", "mask", "nv")
"""Image variants a record may hold: the render, its linear EXR, the visible mask, and the
night-vision ISP output (added on the host by ``_isp``)."""


class SceneError(TruthlineError):
    """A scene job cannot run (bad params, missing environment, worker failure)."""


class WorkerError(SceneError):
    """The Blender worker failed on a job (crash, timeout or an error raised in the scene)."""


def _tuple3(v: Sequence[float]) -> Vec3:
    if len(v) != 3:
        raise SceneError(f"expected 3 coordinates, got {list(v)!r}")
    return (float(v[0]), float(v[1]), float(v[2]))


class _Json:
    """to_dict/from_dict for the frozen dataclasses below (tuples come back from lists)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]):  # type: ignore[no-untyped-def]
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = set(d) - names
        if unknown:
            raise SceneError(f"{cls.__name__}: unknown field(s) {sorted(unknown)}")
        return cls(**dict(d))


@dataclass(frozen=True)
class CameraSpec(_Json):
    """The physical camera: sensor size, focal length and native resolution (pixels).

    The native resolution is what pixel densities (PPM) are quoted at; a render may be made
    at another resolution of the same aspect (``RenderSettings.res_x``/``res_y``).
    """

    sensor_w_mm: float
    sensor_h_mm: float
    focal_mm: float
    res_x: int
    res_y: int
    fstop: float | None = None
    focus_distance_m: float | None = None


@dataclass(frozen=True)
class CameraPose(_Json):
    """Where the camera is and what it looks at (world metres, Z up), plus roll."""

    position: Vec3
    look_at: Vec3
    roll_deg: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", _tuple3(self.position))
        object.__setattr__(self, "look_at", _tuple3(self.look_at))


@dataclass(frozen=True)
class Effects(_Json):
    """Render-time effects, applied by the worker (post effects live on the host).

    ``dof`` uses ``fstop``/``focus_distance_m`` (falling back to the CameraSpec's);
    ``shake_deg`` is hand-shake as in-render camera motion blur (two rotation keyframes
    ``shake_deg`` apart); ``view_transform`` is Standard unless tone mapping is the point
    (AgX/Filmic).
    """

    dof: bool = False
    fstop: float | None = None
    focus_distance_m: float | None = None
    shake_deg: float = 0.0
    view_transform: str = "Standard"


@dataclass(frozen=True)
class RenderSettings(_Json):
    """Engine settings of one render. ``res_x``/``res_y`` None = the camera's native size.

    Cycles runs with OIDN (``denoise`` FAST/HIGH, prefilter NONE for FAST) or none, on
    ``device`` (``auto``: a GPU when Cycles finds one, else the CPU; ``cpu``; ``gpu``: fail
    without one); Workbench is for previews, CI and masks. ``exr`` also writes the linear
    EXR. ``mask`` renders the visible-subject mask (Workbench, flat, AA off). ``threads`` is
    Blender's render thread count (0 = every core).
    """

    engine: Engine = "CYCLES"
    spp: int = 16
    res_x: int | None = None
    res_y: int | None = None
    denoise: Denoise | None = "FAST"
    exr: bool = False
    mask: bool = True
    threads: int = 0
    device: str = "auto"

    def __post_init__(self) -> None:
        if self.device not in ("auto", "cpu", "gpu"):
            raise SceneError(f"render device {self.device!r}: use auto, cpu or gpu")
        if self.threads < 0:
            raise SceneError(f"render threads must be >= 0 (0 = every core), got {self.threads}")
        if self.engine not in ("CYCLES", "BLENDER_WORKBENCH"):
            raise SceneError(
                f"render engine {self.engine!r}: use CYCLES or BLENDER_WORKBENCH "
                "(EEVEE is slower than Cycles on a CPU and is not offered)"
            )
        if self.denoise not in (None, "FAST", "HIGH"):
            raise SceneError(f"denoise {self.denoise!r}: use FAST, HIGH or None")
        if self.spp < 1:
            raise SceneError(f"spp must be >= 1, got {self.spp}")
        if (self.res_x is None) != (self.res_y is None):
            raise SceneError("give both res_x and res_y, or neither")


@dataclass(frozen=True)
class Target(_Json):
    """What the questions are about: a planar patch in world space (framing, occlusion,
    resolution terms). ``feature_len_m`` is the smallest detail that must resolve (1/8 in,
    a character's height, a person's height for DORI)."""

    name: str
    corners_world: tuple[Vec3, ...]
    normal: Vec3
    feature_len_m: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "corners_world", tuple(_tuple3(c) for c in self.corners_world))
        object.__setattr__(self, "normal", _tuple3(self.normal))


@dataclass(frozen=True)
class Acceptability(_Json):
    """An AND of named terms; each term is ``{"value", "threshold", "ok"}`` (all JSON-able)."""

    acceptable: bool
    terms: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        """Names of the terms that failed (why a frame is unacceptable)."""
        return [k for k, t in self.terms.items() if not t.get("ok", False)]


def canonical_json(obj: Any) -> str:
    """Sorted-key compact JSON: the form hashed into job keys."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)


def _json_default(o: Any) -> Any:
    # numpy scalars/arrays reach records from env code; keep records plain JSON.
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


def job_key(
    env: str, env_version: str, params: Mapping[str, Any], seed: int | None, render: RenderSettings
) -> str:
    """The identity of a frame: same env, version, params, seed and settings → same frame."""
    payload = {
        "env": env,
        "env_version": env_version,
        "params": params,
        "seed": seed,
        # threads and device change how fast a frame renders, not what it shows (the
        # record says which device made it), and leave older job keys as they were
        "render": {k: v for k, v in render.to_dict().items() if k not in ("threads", "device")},
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:24]


@dataclass
class FrameRecord:
    """Everything about one rendered frame, written as JSON beside the content-addressed images.

    ``images`` maps a variant (``rgb``, ``linear``, ``mask``, ``nv``) to the sha256 of its file;
    ``camera`` holds the CameraSpec/CameraPose/Effects dicts actually used; ``timings`` are
    seconds per stage (``build``, ``render``, ``mask``, ``extract``, ``total``); ``device`` is
    what the render ran on (``type`` cpu/gpu, ``backend``, ``devices``, ``threads``) and
    ``worker`` which process made it (``host``, ``pid``, ``ray_node_id`` on a Ray cluster).
    """

    env: str
    env_version: str
    params: dict[str, Any]
    seed: int | None
    render: dict[str, Any]
    blender_version: str = ""
    camera: dict[str, Any] = field(default_factory=dict)
    gt: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)
    image_ext: dict[str, str] = field(default_factory=dict)
    acceptability: dict[str, Any] | None = None
    questions: list[dict[str, Any]] = field(default_factory=list)
    device: dict[str, Any] = field(default_factory=dict)
    worker: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    job_id: str = ""

    def __post_init__(self) -> None:
        if not self.job_id:
            self.job_id = job_key(
                self.env,
                self.env_version,
                self.params,
                self.seed,
                RenderSettings.from_dict(self.render),
            )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, indent=1, default=_json_default)

    @classmethod
    def from_json(cls, text: str, *, source: str = "record") -> FrameRecord:
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SceneError(f"{source}: not a frame record (bad JSON: {exc})") from exc
        v = d.get("schema_version")
        if v != SCHEMA_VERSION:
            raise SceneError(
                f"{source}: frame record schema {v!r}, this truthline reads {SCHEMA_VERSION}; "
                "re-render into a new folder"
            )
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True)
class Grid:
    """A declared grid of an environment: the product of named axes, plus fixed params.

    Iteration order is the product in axis order (stable), so frame ``i`` of a grid is the
    same frame on every machine.
    """

    name: str
    axes: Mapping[str, tuple[Any, ...]]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    doc: str = ""

    @property
    def size(self) -> int:
        n = 1
        for v in self.axes.values():
            n *= len(v)
        return n

    def __iter__(self) -> Iterator[dict[str, Any]]:
        keys = list(self.axes)
        for combo in product(*(self.axes[k] for k in keys)):
            yield {**self.fixed, **dict(zip(keys, combo, strict=True))}


Params = dict[str, Any]
Handles = Any


@runtime_checkable
class Environment(Protocol):
    """A scene family. Host side: sample, questions, score. Worker side: build, camera, extract."""

    name: str
    version: str
    grids: Mapping[str, Grid]

    def sample(self, rng: Any, strata: Mapping[str, Any] | None = None) -> Params: ...

    def build(self, ctx: Any, params: Params) -> Handles: ...

    def camera(
        self, params: Params, handles: Handles
    ) -> tuple[CameraSpec, CameraPose, Effects]: ...

    def extract(self, ctx: Any, params: Params, handles: Handles) -> dict[str, Any]: ...

    def questions(
        self, gt: Mapping[str, Any], acceptability: Acceptability | None
    ) -> list[dict[str, Any]]: ...

    def score(self, gt: Mapping[str, Any], image: Any) -> Acceptability | None: ...


class BaseEnvironment:
    """Defaults for the optional parts of :class:`Environment` (no grids, no score)."""

    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    grids: Mapping[str, Grid] = {}

    def sample(self, rng: Any, strata: Mapping[str, Any] | None = None) -> Params:
        raise SceneError(f"scene environment {self.name!r} has no sampler; use a grid")

    def build(self, ctx: Any, params: Params) -> Handles:
        raise NotImplementedError

    def camera(self, params: Params, handles: Handles) -> tuple[CameraSpec, CameraPose, Effects]:
        raise NotImplementedError

    def targets(self, params: Params, handles: Handles) -> list[Target]:
        return []

    def check(self, params: Params) -> None:
        """Raise :class:`SceneError` (one line naming the field) for bad params. Host side,
        before any job is sent."""

    def render_overrides(self, params: Params) -> dict[str, Any]:
        """RenderSettings fields this frame needs whatever the run asked (e.g. a night frame
        keeps its linear EXR). Host side; applied before the job key is made."""
        return {}

    def extract(self, ctx: Any, params: Params, handles: Handles) -> dict[str, Any]:
        return {}

    def questions(
        self, gt: Mapping[str, Any], acceptability: Acceptability | None
    ) -> list[dict[str, Any]]:
        return []

    def score(self, gt: Mapping[str, Any], image: Any) -> Acceptability | None:
        return None

    def grid(self, name: str) -> Grid:
        """The declared grid ``name``; an unknown name lists the declared ones."""
        try:
            return self.grids[name]
        except KeyError:
            known = ", ".join(sorted(self.grids)) or "none"
            raise SceneError(
                f"scene environment {self.name!r} has no grid {name!r} (declared: {known})"
            ) from None


environment: Registry[Environment] = Registry(
    "scene environment", entry_point_group="truthline.scenes.environments"
)
"""Registered scene environments (instances), by name."""

E = TypeVar("E", bound=type)


def register_environment(cls: E) -> E:
    """Class decorator: register one instance of ``cls`` under ``cls.name``."""
    name = getattr(cls, "name", "")
    if not name:
        raise SceneError(f"{cls.__qualname__}: set a class attribute 'name' before registering")
    environment.add(name, cls())
    return cls


def get_environment(name: str) -> Environment:
    """The environment ``name``: registered, or imported from the plug-in that declares it in
    the entry-point group ``truthline.scenes.environments`` (the paper systems' environments
    come this way)."""
    try:
        return environment.get(name)
    except SceneError:
        raise
    except TruthlineError as exc:  # unknown name: one SceneError for every scene failure
        raise SceneError(str(exc)) from None
