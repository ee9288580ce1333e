"""DORI person (SynDORBench): one mannequin seen by a fixed CCTV camera at DORI distances.

Parameters: ``pose`` (an action, or ``absent`` for a person-absent frame from the same
camera), ``distance_m``, ``azimuth_deg``/``elevation_deg`` (hemisphere camera around the
subject, azimuth 0 in front of it), ``lighting`` (morning, noon, evening, midnight),
``scene`` (field, desert, wharf), ``outfit`` (skin, short-sleeved shirt, trousers, shoes
and hair colours; stands in for the paper's SMPLitex textures); optional render-time effects
beyond the paper: ``shake_deg`` (hand-shake blur), ``dof`` (the camera's f/1.4, focused at
the subject or at ``focus_m``) and ``view_transform``. The camera is
:data:`truthline.scenes._camera.PAPER_CAMERA` (1080p, f = 2.8 mm, f/1.4) aimed at the
subject's centre; midnight frames always carry the linear
EXR (a physically dim frame looks black in 8 bits; the night-vision ISP starts from it).

Ground truth per frame: presence, action, the projected bbox (evaluated vertices) and the
visible-mask bbox and pixel count (Workbench mask, occlusion included), the subject's true
height, PPM by formula (``f_px / depth`` at 1080p, what the DORI class is read from) and
apparent (projected bbox height / true height), and the DORI class of both.

Props never stand between the camera and the subject: everything is placed beyond 28 m
from it, farther than the farthest camera (23 m).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from truthline.scenes import _camera
from truthline.scenes._humanoid import ACTION_WORDS, PAPER_ACTIONS, POSES, part_of
from truthline.scenes._types import (
    Acceptability,
    BaseEnvironment,
    CameraPose,
    CameraSpec,
    Effects,
    Grid,
    SceneError,
    register_environment,
)

LIGHTINGS = ("morning", "noon", "evening", "midnight")
SCENES = ("field", "desert", "wharf")
ABSENT = "absent"
AIM_HEIGHT_M = 0.875
"""The camera aims here (half a 1.75 m person) whether or not the person is there, so a
person-absent frame is the same view without the person."""

# (skin, shirt, pants, shoes, hair), linear RGB. Shirt and trousers differ at least 2x in
# luminance or clearly in hue, so the torso reads apart from the legs; forearms and hands are
# skin (short sleeves) against the shirt; hair caps the head.
OUTFITS: tuple[tuple[tuple[float, float, float], ...], ...] = (
    ((0.6, 0.4, 0.3), (0.05, 0.1, 0.35), (0.4, 0.38, 0.33), (0.05, 0.05, 0.05), (0.03, 0.02, 0.01)),
    ((0.35, 0.2, 0.12), (0.6, 0.05, 0.04), (0.15, 0.18, 0.3), (0.3, 0.3, 0.3), (0.02, 0.02, 0.01)),
    ((0.8, 0.6, 0.45), (0.7, 0.7, 0.65), (0.25, 0.2, 0.12), (0.1, 0.06, 0.03), (0.35, 0.22, 0.1)),
    ((0.45, 0.3, 0.2), (0.08, 0.25, 0.08), (0.35, 0.3, 0.2), (0.05, 0.05, 0.05), (0.06, 0.04, 0.0)),
    ((0.2, 0.12, 0.08), (0.55, 0.45, 0.05), (0.05, 0.05, 0.07), (0.4, 0.4, 0.4), (0.0, 0.0, 0.0)),
    ((0.7, 0.5, 0.38), (0.02, 0.02, 0.02), (0.1, 0.12, 0.22), (0.02, 0.02, 0.02), (0.45, 0.4, 0.3)),
)  # fmt: skip

PRESENCE_PROMPT = (
    "Respond only with 1 or 0. Respond with 1 if a person is visible in the image, "
    "and 0 if not. Is there a person visible in the image?"
)
ACTION_PROMPT = (
    "Respond only with the name of the action. What action is the person performing in the image?"
)

_ELEVATIONS = (0.0, 15.0, 30.0, 45.0)

GRIDS: dict[str, Grid] = {
    "paper": Grid(
        "paper",
        {
            "distance_m": _camera.PAPER_DISTANCES_M,
            "azimuth_deg": _camera.azimuths(8),
            "elevation_deg": _ELEVATIONS,
            "lighting": LIGHTINGS,
            "pose": (*PAPER_ACTIONS, ABSENT),
            "scene": SCENES,
        },
        doc="SynDORBench: 3 DORI distances × 8 azimuths × 4 elevations × 4 lightings × "
        "(8 actions + person absent) × 3 scenes",
    ),
    "small": Grid(
        "small",
        {
            "distance_m": _camera.PAPER_DISTANCES_M,
            "azimuth_deg": (0.0, 135.0),
            "elevation_deg": (0.0, 30.0),
            "lighting": ("noon", "midnight"),
            "pose": ("walking", "guard_up", ABSENT),
        },
        fixed={"scene": "field"},
        doc="a demo-sized slice: every distance, 2 views, day and night, 2 actions + absent",
    ),
    "tiny": Grid(
        "tiny",
        {"distance_m": (5.4, 23.0), "pose": ("standing", ABSENT)},
        fixed={"azimuth_deg": 0.0, "elevation_deg": 0.0, "lighting": "noon", "scene": "field"},
        doc="4 frames: tests and smoke runs",
    ),
}


def _stable_int(*parts: Any) -> int:
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:8], 16)


def _outfit(params: Mapping[str, Any]) -> int:
    if "outfit" in params:
        return int(params["outfit"]) % len(OUTFITS)
    # a stable outfit per (pose, distance, view) so a grid spreads outfits evenly
    key = (params.get("pose"), params.get("distance_m"), params.get("azimuth_deg"),
           params.get("elevation_deg"), params.get("scene"))  # fmt: skip
    return _stable_int(*key) % len(OUTFITS)


def check_params(params: Mapping[str, Any]) -> None:
    """One clear line for a bad parameter (the worker would fail less clearly)."""
    pose = params.get("pose")
    if pose != ABSENT and pose not in POSES:
        raise SceneError(f"dori: pose {pose!r} is not one of {', '.join([*POSES, ABSENT])}")
    if params.get("lighting") not in LIGHTINGS:
        raise SceneError(f"dori: lighting {params.get('lighting')!r} is not one of {LIGHTINGS}")
    if params.get("scene") not in SCENES:
        raise SceneError(f"dori: scene {params.get('scene')!r} is not one of {SCENES}")
    d = float(params.get("distance_m", 0))
    if not 0.5 <= d <= 500:
        raise SceneError(f"dori: distance_m {d} is outside 0.5..500 m")
    el = float(params.get("elevation_deg", 0))
    if not -10 <= el <= 89:
        raise SceneError(f"dori: elevation_deg {el} is outside -10..89")


@register_environment
class DoriPerson(BaseEnvironment):
    """SynDORBench-style human presence / action frames at DORI-calibrated distances."""

    name = "dori"
    version = "4"
    grids = GRIDS
    spec: CameraSpec = _camera.PAPER_CAMERA

    # -- host ----------------------------------------------------------------------------
    def sample(self, rng: Any, strata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One frame's params, each factor drawn uniformly (the paper's factor-wise
        stratified sampling); ``strata`` fixes any factor."""
        s = dict(strata or {})
        p = {
            "distance_m": s.get("distance_m", float(rng.choice(_camera.PAPER_DISTANCES_M))),
            "azimuth_deg": s.get("azimuth_deg", float(rng.choice(_camera.azimuths(8)))),
            "elevation_deg": s.get("elevation_deg", float(rng.choice(_ELEVATIONS))),
            "lighting": s.get("lighting", str(rng.choice(LIGHTINGS))),
            "pose": s.get("pose", str(rng.choice([*PAPER_ACTIONS, ABSENT]))),
            "scene": s.get("scene", str(rng.choice(SCENES))),
            "outfit": s.get("outfit", int(rng.integers(len(OUTFITS)))),
        }
        check_params(p)
        return p

    def check(self, params: Mapping[str, Any]) -> None:
        check_params(params)

    def render_overrides(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Midnight frames always keep the linear EXR (the ISP's input)."""
        return {"exr": True} if params.get("lighting") == "midnight" else {}

    def questions(
        self, gt: Mapping[str, Any], acceptability: Acceptability | None
    ) -> list[dict[str, Any]]:
        """The paper's two tasks: presence (1/0) on every frame; action when present."""
        present = bool(gt.get("present"))
        qs = [
            {
                "id": "presence",
                "task": "hpc",
                "question": PRESENCE_PROMPT,
                "answer": "1" if present else "0",
                "kind": "binary",
            }
        ]
        if present:
            qs.append(
                {
                    "id": "action",
                    "task": "action",
                    "question": ACTION_PROMPT,
                    "answer": ACTION_WORDS[str(gt["pose"])],
                    "kind": "open",
                }
            )
        return qs

    # -- worker --------------------------------------------------------------------------
    def camera(
        self, params: Mapping[str, Any], handles: Any
    ) -> tuple[CameraSpec, CameraPose, Effects]:
        target = (0.0, 0.0, AIM_HEIGHT_M)
        pos = _camera.orbit_position(
            target,
            float(params["distance_m"]),
            float(params["azimuth_deg"]),
            float(params["elevation_deg"]),
        )
        fx = Effects(
            dof=bool(params.get("dof", False)),
            focus_distance_m=float(params["focus_m"]) if params.get("focus_m") else None,
            shake_deg=float(params.get("shake_deg", 0.0)),
            view_transform=str(params.get("view_transform", "Standard")),
        )
        return self.spec, CameraPose(pos, target), fx

    def build(self, ctx: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        from truthline.scenes.worker._humanoid import add_figure

        check_params(params)
        rng = np.random.default_rng(_stable_int(params.get("scene"), params.get("layout", 0)))
        _lighting(ctx, str(params["lighting"]))
        _background(ctx, str(params["scene"]), rng)
        handles: dict[str, Any] = {"person": None, "outfit": _outfit(params)}
        if params["pose"] != ABSENT:
            skin, shirt, pants, shoes, hair = OUTFITS[handles["outfit"]]
            mats = {
                "skin": ctx.material("skin", skin, 0.5),
                "shirt": ctx.material("shirt", shirt, 0.8),
                "pants": ctx.material("pants", pants, 0.8),
                "shoes": ctx.material("shoes", shoes, 0.4),
                "hair": ctx.material("hair", hair, 0.6),
            }
            obj, _joints = add_figure(ctx, str(params["pose"]), 1.75, None)
            _assign_parts(obj, str(params["pose"]), mats)
            ctx.mask_objects.append(obj.name)
            handles["person"] = obj
        return handles

    def extract(self, ctx: Any, params: Mapping[str, Any], handles: Any) -> dict[str, Any]:
        spec = self.spec
        rx, _ry = ctx.res
        depth = float(params["distance_m"])  # the camera aims at the subject's centre
        ppm_formula = _camera.ppm_at(spec, depth)
        gt: dict[str, Any] = {
            "present": handles["person"] is not None,
            "pose": params["pose"] if handles["person"] is not None else None,
            "action": ACTION_WORDS.get(str(params["pose"])),
            "outfit": handles["outfit"],
            "distance_m": depth,
            "ppm_formula": ppm_formula,
            "ppm_render": _camera.ppm_at(spec, depth, rx),
            "dori_class": _camera.dori_class(ppm_formula),
            "render_scale": rx / spec.res_x,
            "f_px_native": _camera.f_px(spec),
        }
        if handles["person"] is None:
            gt.update(bbox_proj=None, subject_height_m=None, ppm_apparent=None,
                      dori_class_apparent=None)  # fmt: skip
            gt["action"] = None
            return gt
        verts = ctx.evaluated_vertices(handles["person"])
        height = float(verts[:, 2].max() - verts[:, 2].min())
        bbox = ctx.object_bbox_px(handles["person"])
        gt["subject_height_m"] = height
        gt["bbox_proj"] = bbox
        # apparent density: the unclipped projected height at the native resolution
        p = _camera.project(verts, spec, ctx.pose)
        h_px_native = float(p[:, 1].max() - p[:, 1].min())
        gt["ppm_apparent"] = h_px_native / height
        gt["dori_class_apparent"] = _camera.dori_class(gt["ppm_apparent"])
        return gt


def _assign_parts(obj: Any, pose: str, mats: Mapping[str, Any]) -> None:
    """Give each capsule its outfit part's material (faces come in bone order)."""
    from truthline.scenes._humanoid import figure_mesh

    bones: list[str] = []
    figure_mesh(pose, 1.75, face_bones=bones)
    order = list(mats)
    for m in mats.values():
        obj.data.materials.append(m)
    idx = [order.index(part_of(b)) for b in bones]
    obj.data.polygons.foreach_set("material_index", idx)
    obj.data.update()


def _lighting(ctx: Any, lighting: str) -> None:
    """Uniform world + sun by day; moon + a sodium street lamp at midnight."""
    if lighting == "morning":
        ctx.world((0.42, 0.52, 0.68), 0.5)
        ctx.sun(2.6, azimuth_deg=60, elevation_deg=14, color=(1.0, 0.86, 0.7))
    elif lighting == "noon":
        ctx.world((0.5, 0.62, 0.85), 0.4)
        ctx.sun(2.3, azimuth_deg=150, elevation_deg=68, color=(1.0, 0.98, 0.95))
    elif lighting == "evening":
        ctx.world((0.32, 0.3, 0.42), 0.45)
        ctx.sun(2.2, azimuth_deg=250, elevation_deg=7, color=(1.0, 0.6, 0.35))
    elif lighting == "midnight":
        ctx.world((0.012, 0.015, 0.03), 0.05)
        ctx.sun(0.004, azimuth_deg=200, elevation_deg=40, color=(0.75, 0.8, 1.0), name="Moon")
        ctx.point((2.5, -2.0, 4.5), 8.0, color=(1.0, 0.62, 0.22), radius_m=0.15, name="Sodium")
    else:
        raise SceneError(f"dori: unknown lighting {lighting!r}")


def _ground(
    ctx: Any,
    color: tuple[float, float, float],
    size: float = 600.0,
    roughness: float = 0.9,
    dunes: bool = False,
    rng: Any = None,
) -> None:
    """The ground: flat within 30 m of the subject; optional dunes farther out."""
    n = 48 if dunes else 2
    xs = np.linspace(-size / 2, size / 2, n)
    gx, gy = np.meshgrid(xs, xs)
    gz = np.zeros_like(gx)
    if dunes and rng is not None:
        r = np.hypot(gx, gy)
        ph = rng.uniform(0, 2 * math.pi, 3)
        wave = np.sin(gx / 23 + ph[0]) + np.sin(gy / 31 + ph[1]) + np.sin((gx + gy) / 17 + ph[2])
        gz = np.clip((r - 40) / 40, 0, 1) * (1.6 + 1.4 * wave)
    verts = np.column_stack([gx.ravel(), gy.ravel(), gz.ravel()])
    faces = [(i * n + j, i * n + j + 1, (i + 1) * n + j + 1, (i + 1) * n + j)
             for i in range(n - 1) for j in range(n - 1)]  # fmt: skip
    ctx.mesh("Ground", verts, faces, ctx.material("ground", color, roughness), smooth=dunes)


def _ring_positions(rng: Any, n: int, r0: float, r1: float) -> list[tuple[float, float, float]]:
    """``n`` (x, y, heading) spots between radii r0 and r1 (all beyond the cameras)."""
    out = []
    for _ in range(n):
        a, r = rng.uniform(0, 2 * math.pi), rng.uniform(r0, r1)
        out.append((r * math.cos(a), r * math.sin(a), float(rng.uniform(0, 180))))
    return out


def _background(ctx: Any, scene: str, rng: Any) -> None:
    if scene == "field":
        _ground(ctx, (0.09, 0.2, 0.05))
        trunk = ctx.material("trunk", (0.12, 0.07, 0.03))
        leaves = ctx.material("leaves", (0.04, 0.14, 0.03))
        bush = ctx.material("bush", (0.06, 0.16, 0.04))
        for i, (x, y, h) in enumerate(_ring_positions(rng, 28, 30, 110)):
            s = float(rng.uniform(0.7, 1.4))
            ctx.box(f"trunk{i}", (x, y, 1.5 * s), (0.35 * s, 0.35 * s, 3 * s), trunk, h)
            ctx.box(f"crown{i}", (x, y, 4.2 * s), (2.8 * s, 2.8 * s, 3.2 * s), leaves, h + 20)
        for i, (x, y, h) in enumerate(_ring_positions(rng, 25, 29, 60)):
            ctx.box(f"bush{i}", (x, y, 0.4), (1.4, 1.0, 0.8), bush, h)
    elif scene == "desert":
        _ground(ctx, (0.55, 0.4, 0.22), dunes=True, rng=rng)
        rock = ctx.material("rock", (0.3, 0.22, 0.15), 0.95)
        for i, (x, y, h) in enumerate(_ring_positions(rng, 18, 30, 90)):
            s = float(rng.uniform(0.5, 2.0))
            ctx.box(f"rock{i}", (x, y, 0.3 * s), (1.6 * s, 1.1 * s, 0.9 * s), rock, h)
    elif scene == "wharf":
        _ground(ctx, (0.28, 0.28, 0.27), roughness=0.8)
        water = ctx.material("water", (0.02, 0.05, 0.07), 0.05)
        ctx.box("water", (0, 120, -0.6), (600, 160, 1.0), water)
        colors = [(0.5, 0.07, 0.04), (0.05, 0.15, 0.4), (0.1, 0.3, 0.1), (0.55, 0.35, 0.05)]
        mats = [ctx.material(f"container{i}", c, 0.5, 0.3) for i, c in enumerate(colors)]
        for i, (x, y, h) in enumerate(_ring_positions(rng, 30, 32, 100)):
            stack = int(rng.integers(1, 4))
            for k in range(stack):
                ctx.box(f"cont{i}_{k}", (x, y, 1.3 + 2.6 * k), (12.2, 2.44, 2.59),
                        mats[int(rng.integers(len(mats)))], round(h / 90) * 90)  # fmt: skip
        bollard = ctx.material("bollard", (0.05, 0.05, 0.05))
        for i in range(12):
            ctx.box(f"bollard{i}", (-60 + i * 11, 38.5, 0.4), (0.4, 0.4, 0.8), bollard)
        crane = ctx.material("crane", (0.7, 0.45, 0.05), 0.6, 0.4)
        ctx.box("crane_leg1", (-20, 45, 15), (1.2, 1.2, 30), crane)
        ctx.box("crane_leg2", (-20, 60, 15), (1.2, 1.2, 30), crane)
        ctx.box("crane_beam", (-20, 52, 30), (2.0, 40, 2.0), crane)
    else:
        raise SceneError(f"dori: unknown scene {scene!r}")
