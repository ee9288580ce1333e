"""Shared parts of the RealityBench-style environments (tape_gap, slope_gauge, plate,
label_board, vehicle_face, damage_view): the phone camera, the camera rig around a planar
target, the bad-factor sampler, analytic ground truth and occlusion, a planar proxy render
for host-side rate estimates, and the bpy builders the worker uses.

Everything GT-relevant is analytic from the params (pure numpy, host and worker alike);
the worker only adds the ray-cast occlusion and a cross-check of the projection. ``bpy`` is
imported inside the ``bpy_*`` functions only.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from truthline.scenes._accept import Thresholds, image_terms
from truthline.scenes._accept import score as accept_score
from truthline.scenes._camera import camera_to_world, f_px, project, view_angle_deg
from truthline.scenes._types import Acceptability, CameraPose, CameraSpec, Effects, SceneError

IN = 0.0254  # metres per inch

# A phone main camera (1/2.55-inch class sensor, 26 mm equivalent) rendered at 960 x 720;
# zoom multiplies the focal length (3x and 6x telephoto for plates).
PHONE_SENSOR_MM = (6.17, 4.63)
PHONE_FOCAL_MM = 4.3
RES = (960, 720)
Vec = Sequence[float] | np.ndarray


def phone(zoom: float = 1.0, res: Sequence[int] = RES, fstop: float = 1.8) -> CameraSpec:
    return CameraSpec(
        sensor_w_mm=PHONE_SENSOR_MM[0],
        sensor_h_mm=PHONE_SENSOR_MM[0] * res[1] / res[0],
        focal_mm=PHONE_FOCAL_MM * zoom,
        res_x=int(res[0]),
        res_y=int(res[1]),
        fstop=fstop,
    )


# -- the target and the rig --------------------------------------------------------------
@dataclass(frozen=True)
class Plane:
    """A planar target: centre, unit normal, in-plane axes ``u`` (right) and ``v`` (up) and
    half sizes along them (metres). ``feature_dir`` and ``feature_len_m`` give the smallest
    detail that must resolve and its direction in the plane."""

    centre: np.ndarray
    normal: np.ndarray
    u: np.ndarray
    v: np.ndarray
    half_u: float
    half_v: float
    feature_len_m: float
    feature_dir: np.ndarray

    def corners(self) -> np.ndarray:
        c, u, v = self.centre, self.u * self.half_u, self.v * self.half_v
        return np.array([c - u + v, c + u + v, c + u - v, c - u - v])

    def grid(self, nu: int = 5, nv: int = 3) -> np.ndarray:
        """``nu x nv`` sample points on the patch (the occlusion rays' ends), inset by 10 %."""
        su = np.linspace(-0.9, 0.9, nu) * self.half_u
        sv = np.linspace(-0.9, 0.9, nv) * self.half_v
        return np.array([self.centre + a * self.u + b * self.v for b in sv for a in su])


def unit(v: Vec) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    return a / np.linalg.norm(a)


def plane(
    centre: Vec,
    normal: Vec,
    u: Vec,
    half_u: float,
    half_v: float,
    feature_len_m: float,
    feature_dir: Vec | None = None,
) -> Plane:
    n = unit(normal)
    uu = unit(np.asarray(u, dtype=float) - np.dot(u, n) * n)
    vv = np.cross(n, uu)
    fd = uu if feature_dir is None else unit(feature_dir)
    return Plane(np.asarray(centre, float), n, uu, vv, half_u, half_v, feature_len_m, fd)


def rig_pose(
    target: Plane,
    distance_m: float,
    view_deg: float,
    around_deg: float,
    aim: Sequence[float],
    roll_deg: float,
    spec: CameraSpec,
) -> CameraPose:
    """A camera ``distance_m`` from the target centre, ``view_deg`` off its normal, turned
    ``around_deg`` about the normal from its ``v`` axis towards ``u``; then aimed off the
    centre by ``aim`` (fractions of the half-frame: 1.0 puts the centre on the frame edge)
    and rolled by ``roll_deg``."""
    t, p = math.radians(view_deg), math.radians(around_deg)
    d = math.cos(t) * target.normal + math.sin(t) * (
        math.cos(p) * target.v + math.sin(p) * target.u
    )
    pos = target.centre + distance_m * d
    base = CameraPose(tuple(pos), tuple(target.centre), roll_deg)
    m = camera_to_world(base)
    half_w = distance_m * spec.sensor_w_mm / (2 * spec.focal_mm)
    half_h = half_w * spec.res_y / spec.res_x
    look = target.centre + aim[0] * half_w * m[:3, 0] + aim[1] * half_h * m[:3, 1]
    return CameraPose(tuple(float(x) for x in pos), tuple(float(x) for x in look), roll_deg)


# -- bad factors ----------------------------------------------------------------------------
def draw_factors(
    rng: np.random.Generator,
    factors: Sequence[str],
    strata: Mapping[str, Any] | None,
    p_clean: float = 0.5,
) -> list[str]:
    """Which bad factors this frame gets: none with probability ``p_clean`` (the positive
    stratum), else one (70 %) or two distinct ones. ``strata`` may fix them:
    ``{"bad": ["defocus"]}`` or ``{"bad": []}`` (a clean frame)."""
    if strata and "bad" in strata:
        bad = list(strata["bad"])
        unknown = set(bad) - set(factors)
        if unknown:
            raise SceneError(f"unknown bad factor(s) {sorted(unknown)}; known: {list(factors)}")
        return bad
    if rng.random() < p_clean:
        return []
    k = 1 if rng.random() < 0.7 else 2
    return sorted(str(x) for x in rng.choice(list(factors), size=k, replace=False))


def u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def sample_effects(
    rng: np.random.Generator, bad: Sequence[str], distance_m: float
) -> dict[str, Any]:
    """Camera effects: focus on the target unless ``defocus`` (locked at x0.3 or x4), shake
    below 0.04 deg unless ``shake`` (0.4-1.2 deg), mild sensor noise and WB; ``glare`` is a
    low-contrast frame (veiling glare lifting the blacks, a strong WB cast, AgX tone mapping,
    under-exposure pushed by gain)."""
    focus = "on"
    if "defocus" in bad:
        focus = "near" if rng.random() < 0.5 else "far"
    glare = "glare" in bad
    return {
        "focus": focus,
        "focus_distance_m": distance_m * {"on": 1.0, "near": 0.3, "far": 4.0}[focus],
        "fstop": 1.8,
        "shake_deg": u(rng, 0.4, 1.2) if "shake" in bad else u(rng, 0.0, 0.04),
        "exposure": u(rng, 0.15, 0.3) if glare else u(rng, 0.8, 1.1),
        "wb_gains": [u(rng, 0.6, 0.75), 1.0, u(rng, 1.3, 1.6)]
        if glare
        else [u(rng, 0.95, 1.05), 1.0, u(rng, 0.95, 1.05)],
        "haze": u(rng, 0.6, 0.8) if glare else u(rng, 0.0, 0.08),
        "view_transform": "AgX" if glare else "Standard",
    }


def post_seed(params: Mapping[str, Any]) -> int:
    """A stable noise seed from the params (same frame, same noise)."""
    import hashlib
    import json

    blob = json.dumps(params, sort_keys=True, default=str).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "big")


def apply_post(gt: Mapping[str, Any], image: Any) -> np.ndarray:
    """:func:`post_process` on an 8-bit sRGB render, with the effects stored in the GT."""
    from truthline.scenes import _isp

    a = np.asarray(image)
    x = a.astype(np.float32) / 255.0 if a.dtype == np.uint8 else a.astype(np.float32)
    pe = dict(gt.get("post_effects") or {})
    return post_process(_isp.srgb_decode(x[..., :3]), pe, int(pe.get("seed", 0)))


def post_process(img_linear: np.ndarray, effects: Mapping[str, Any], seed: int = 0) -> np.ndarray:
    """Host-side post effects on a linear render (``_isp``): exposure with auto gain (so
    under-exposure shows as noise, not darkness), sensor noise, white balance, sRGB encode,
    then veiling glare (``haze`` lifts the blacks towards white). Returns sRGB in [0, 1]."""
    from truthline.scenes import _isp

    exp = float(effects.get("exposure", 1.0))
    img = _isp.sensor_noise(
        np.asarray(img_linear, np.float32) * exp, np.random.default_rng(seed), gain=1.0 / exp
    )
    img = _isp.white_balance(img, tuple(effects.get("wb_gains", (1, 1, 1))))
    out = _isp.srgb_encode(np.clip(img, 0, 1))
    h = float(effects.get("haze", 0.0))
    return np.clip(h + (1 - h) * out, 0, 1).astype(np.float32)


def effects_of(params: Mapping[str, Any]) -> Effects:
    e = params["effects"]
    return Effects(
        dof=True,
        fstop=float(e["fstop"]),
        focus_distance_m=float(e["focus_distance_m"]),
        shake_deg=float(e["shake_deg"]),
        view_transform=str(e["view_transform"]),
    )


def blur_px(spec: CameraSpec, params: Mapping[str, Any], depth_m: float) -> dict[str, float]:
    """Predicted blur at the target: thin-lens circle of confusion and shake length, px."""
    e = params["effects"]
    f = spec.focal_mm / 1000
    s = float(e["focus_distance_m"])
    n = float(e["fstop"])
    coc_m = f * f / (n * max(s - f, 1e-6)) * abs(depth_m - s) / depth_m
    coc = coc_m * 1000 / spec.sensor_w_mm * spec.res_x
    shake = math.radians(float(e["shake_deg"])) * f_px(spec)
    return {"defocus_px": coc, "shake_px": shake}


# -- analytic GT ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Box:
    """An occluder: centre, half sizes along its own axes, yaw about world Z (degrees)."""

    centre: tuple[float, float, float]
    half: tuple[float, float, float]
    yaw_deg: float = 0.0
    pitch_x_deg: float = 0.0  # rotation about world X first (scenery only; occluders keep 0)

    def to_dict(self) -> dict[str, Any]:
        return {"centre": list(self.centre), "half": list(self.half), "yaw_deg": self.yaw_deg}


def ray_hits_box(origin: np.ndarray, end: np.ndarray, box: Box) -> bool:
    """Does the segment origin->end pass through the box (slab test in the box's frame)?"""
    c = math.cos(math.radians(-box.yaw_deg))
    s = math.sin(math.radians(-box.yaw_deg))
    rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    o = rot @ (origin - np.asarray(box.centre))
    d = rot @ (end - origin)
    t0, t1 = 0.0, 1.0
    for k in range(3):
        h = box.half[k]
        if abs(d[k]) < 1e-12:
            if abs(o[k]) > h:
                return False
            continue
        a, b = (-h - o[k]) / d[k], (h - o[k]) / d[k]
        lo, hi = min(a, b), max(a, b)
        t0, t1 = max(t0, lo), min(t1, hi)
        if t0 > t1:
            return False
    return t1 > 0.0 and t0 < 0.999


def target_gt(
    target: Plane,
    spec: CameraSpec,
    pose: CameraPose,
    occluders: Sequence[Box] = (),
    name: str = "target",
) -> dict[str, Any]:
    """Pixel polygon, distance, view angle, feature pixels and analytic occlusion."""
    res = (spec.res_x, spec.res_y)
    poly = project(target.corners(), spec, pose, res)
    c2 = project(
        np.array([target.centre, target.centre + target.feature_dir * target.feature_len_m]),
        spec,
        pose,
        res,
    )
    behind = bool((poly[:, 2] <= 0).any())
    feat = float(np.hypot(*(c2[1, :2] - c2[0, :2]))) if (c2[:, 2] > 0).all() else 0.0
    pos = np.asarray(pose.position)
    pts = target.grid()
    blocked = sum(any(ray_hits_box(pos, p, b) for b in occluders) for p in pts)
    return {
        "res": list(res),
        "target": {
            "name": name,
            "corners_world": target.corners().round(6).tolist(),
            "normal": target.normal.round(6).tolist(),
            "polygon_px": [[float("nan")] * 2] * 4 if behind else poly[:, :2].round(3).tolist(),
            "distance_m": round(float(np.linalg.norm(pos - target.centre)), 6),
            "depth_m": round(float(c2[0, 2]), 6),
            "view_angle_deg": round(view_angle_deg(pose, target.centre, target.normal), 4),
            "feature_len_m": target.feature_len_m,
            "feature_px": round(feat, 4),
        },
        "occlusion": {"rays": len(pts), "blocked": int(blocked), "method": "analytic"},
    }


def camera_dict(spec: CameraSpec, pose: CameraPose, effects: Effects) -> dict[str, Any]:
    return {"spec": spec.to_dict(), "pose": pose.to_dict(), "effects": effects.to_dict()}


# -- host-side proxy render --------------------------------------------------------------------
def proxy_frame(
    texture: np.ndarray,
    polygon_px: Sequence[Sequence[float]] | np.ndarray,
    res: Sequence[int],
    blur: Mapping[str, float],
    effects: Mapping[str, Any],
    seed: int = 0,
    background: float = 0.35,
) -> np.ndarray:
    """The target's texture warped onto its projected quad over a flat background, with the
    predicted defocus/shake PSFs, then :func:`post_process`; sRGB in [0, 1].

    A planar stand-in for the render, good enough to estimate image terms for thousands of
    samples without Blender; the real frames are scored on their renders."""
    import cv2

    from truthline.scenes import _isp

    w, h = int(res[0]), int(res[1])
    tex = np.asarray(texture, dtype=np.float32) / 255.0
    tex = _isp.srgb_decode(tex)
    th, tw = tex.shape[:2]
    src = np.array([[0, 0], [tw, 0], [tw, th], [0, th]], dtype=np.float32)
    dst = np.asarray(polygon_px, dtype=np.float32)
    img = np.full((h, w, 3), background, dtype=np.float32)
    if np.isfinite(dst).all():
        m = cv2.getPerspectiveTransform(src, dst)
        warped = cv2.warpPerspective(tex, m, (w, h), flags=cv2.INTER_AREA, borderValue=(-1, -1, -1))
        inside = warped[..., 0] >= 0
        img[inside] = warped[inside]
    if blur.get("defocus_px", 0) > 0.5:
        img = _isp.defocus_psf(img, float(blur["defocus_px"]) / 2)
    if blur.get("shake_px", 0) > 0.5:
        img = _isp.shake_psf(img, float(blur["shake_px"]), 30.0)
    return post_process(np.clip(img, 0, 1), effects, seed)


def proxy_score(
    gt: Mapping[str, Any],
    texture: np.ndarray,
    params: Mapping[str, Any],
    spec: CameraSpec,
    th: Thresholds,
    seed: int = 0,
) -> Acceptability:
    """Scene terms from the GT and image terms from :func:`proxy_frame` (host estimate)."""
    blur = blur_px(spec, params, float(gt["target"]["depth_m"]) or 1.0)
    poly = np.asarray(gt["target"]["polygon_px"], dtype=float)
    w, h = gt["res"]
    values: dict[str, float] = {"sharpness": 0.0, "contrast": 0.0}
    if np.isfinite(poly).all():
        # only the window around the target matters: render that (PSF margin included)
        m = 4 + int(blur["defocus_px"] + blur["shake_px"])
        x0 = int(max(0, np.floor(poly[:, 0].min()) - m))
        y0 = int(max(0, np.floor(poly[:, 1].min()) - m))
        x1 = int(min(w, np.ceil(poly[:, 0].max()) + m))
        y1 = int(min(h, np.ceil(poly[:, 1].max()) + m))
        if x1 - x0 > 2 and y1 - y0 > 2:
            local = poly - [x0, y0]
            img = proxy_frame(texture, local, (x1 - x0, y1 - y0), blur, params["effects"], seed)
            values = image_terms(img, local, gt["target"].get("detail_px"))
    return accept_score(gt, None, th, image_values=values)


# -- bpy builders (worker side only) --------------------------------------------------------------
def bpy_material(
    name: str,
    colour: Sequence[float] = (0.5, 0.5, 0.5),
    image: str | None = None,
    rough: float = 0.6,
) -> Any:
    import bpy

    mat = bpy.data.materials.new(name)
    nt = mat.node_tree
    bsdf = nt.nodes.get("Principled BSDF")
    bsdf.inputs["Roughness"].default_value = rough
    if image:
        tex = nt.nodes.new("ShaderNodeTexImage")
        tex.image = bpy.data.images.load(image)
        tex.interpolation = "Cubic"
        tex.extension = "CLIP"
        nt.links.new(tex.outputs["Color"], bsdf.inputs["Base Color"])
    else:
        bsdf.inputs["Base Color"].default_value = (*colour[:3], 1.0)
    mat.diffuse_color = (*colour[:3], 1.0)
    return mat


def bpy_quad(name: str, corners: np.ndarray, mat: Any) -> Any:
    """A UV-mapped quad: corners TL, TR, BR, BL map to texture (0,1), (1,1), (1,0), (0,0)."""
    import bpy

    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(map(float, c)) for c in corners], [], [(3, 2, 1, 0)])
    uv = me.uv_layers.new(name="UVMap")
    for loop, (s, t) in zip(me.loops, [(0, 0), (1, 0), (1, 1), (0, 1)], strict=True):
        uv.data[loop.index].uv = (s, t)
    me.materials.append(mat)
    ob = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(ob)
    return ob


def bpy_box(name: str, box: Box, mat: Any) -> Any:
    import bpy

    me = bpy.data.meshes.new(name)
    hx, hy, hz = box.half
    v = [(sx * hx, sy * hy, sz * hz) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    f = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    me.from_pydata(v, [], f)
    me.materials.append(mat)
    ob = bpy.data.objects.new(name, me)
    ob.location = box.centre
    ob.rotation_euler = (math.radians(box.pitch_x_deg), 0, math.radians(box.yaw_deg))
    bpy.context.scene.collection.objects.link(ob)
    return ob


def bpy_lights(
    sun_w_m2: float = 3.0, world: float = 0.25, elev_deg: float = 50.0, az_deg: float = 30.0
) -> None:
    import bpy

    scn = bpy.context.scene
    if scn.world is None:
        scn.world = bpy.data.worlds.new("World")
    bg = scn.world.node_tree.nodes.get("Background")
    if bg is not None:
        bg.inputs["Color"].default_value = (world, world, world * 1.05, 1.0)
    sun = bpy.data.lights.new("sun", "SUN")
    sun.energy = sun_w_m2
    ob = bpy.data.objects.new("sun", sun)
    ob.rotation_euler = (math.radians(90 - elev_deg), 0, math.radians(az_deg))
    scn.collection.objects.link(ob)


def bpy_occlusion(
    cam_pos: Sequence[float], points: np.ndarray, target_names: Sequence[str]
) -> dict[str, Any]:
    """Cast one ray per target point from the camera; a ray is blocked when the first thing
    it hits before the point is not one of ``target_names``."""
    import bpy
    from mathutils import Vector

    scn = bpy.context.scene
    dg = bpy.context.evaluated_depsgraph_get()
    o = Vector(tuple(map(float, cam_pos)))
    blocked = 0
    hits: list[str] = []
    for p in points:
        end = Vector(tuple(map(float, p)))
        d = end - o
        dist = d.length
        ok, _loc, _n, _i, ob, _m = scn.ray_cast(dg, o, d.normalized(), distance=dist - 1e-3)
        if ok and ob is not None and ob.name not in target_names:
            blocked += 1
            hits.append(ob.name)
    return {"rays": len(points), "blocked": blocked, "method": "ray_cast", "hit": sorted(set(hits))}


def bpy_projection_check(
    spec: CameraSpec, corners: np.ndarray, polygon_px: Sequence[Sequence[float]]
) -> float | None:
    """Max distance (px) between Blender's own projection of the corners and ours."""
    import bpy
    from bpy_extras.object_utils import world_to_camera_view
    from mathutils import Vector

    scn = bpy.context.scene
    cam = scn.camera
    if cam is None:
        return None
    bpy.context.view_layer.update()
    w, h = spec.res_x, spec.res_y
    dev = 0.0
    for c, p in zip(corners, polygon_px, strict=True):
        v = world_to_camera_view(scn, cam, Vector(tuple(map(float, c))))
        x, y = v.x * w, (1 - v.y) * h
        if not all(math.isfinite(q) for q in p):
            continue
        dev = max(dev, math.hypot(x - p[0], y - p[1]))
    return dev


def render_res(ctx: Any) -> tuple[int, int] | None:
    """The resolution the worker renders at (the render settings may override the camera's)."""
    try:
        r = ctx.res
    except Exception:
        return None
    return (int(r[0]), int(r[1])) if r else None


def texture_dir(ctx: Any) -> str:
    """Where the worker writes textures: content-addressed, so one shared folder is reused."""
    import tempfile

    d = getattr(ctx, "tmp_dir", None) or os.path.join(tempfile.gettempdir(), "truthline-textures")
    os.makedirs(d, exist_ok=True)
    return str(d)


def bpy_setup(ctx: Any, mask_objects: Sequence[str]) -> None:
    """Worker-side frame setup: the visible mask shows the target; Workbench previews show
    image textures (pitfall 4); a uniform world plus a sun (pitfall 5)."""
    if hasattr(ctx, "mask_objects"):
        ctx.mask_objects = list(mask_objects)
    if hasattr(ctx, "workbench_color_type"):
        ctx.workbench_color_type = "TEXTURE"
    if hasattr(ctx, "world") and hasattr(ctx, "sun"):
        ctx.world((0.55, 0.62, 0.75), 0.35)
        ctx.sun(3.0, azimuth_deg=35.0, elevation_deg=55.0)
    else:
        bpy_lights()


# -- the shared environment skeleton -------------------------------------------------------------
def q(field: str, question: str, answer: Any, kind: str, **extra: Any) -> dict[str, Any]:
    """One documentation question with its exact answer (scored on acceptable frames)."""
    return {"field": field, "question": question, "answer": answer, "kind": kind, **extra}


CAMERA_FACTORS = ("framing", "distance", "angle", "occluded")
EFFECT_FACTORS = ("defocus", "shake", "glare")


class PlanarEnv:
    """Skeleton of an environment whose questions are about one planar target.

    Subclasses give the scene (``scene_params``, ``target``, ``env_gt``, ``texture``,
    ``build_scene``) and the camera ranges; the skeleton samples with a bad-factor budget,
    places the camera, computes the analytic GT, scores, and in the worker adds ray casts."""

    name = ""
    version = "1"
    thresholds = Thresholds()
    factors: tuple[str, ...] = CAMERA_FACTORS + EFFECT_FACTORS
    p_clean = 0.5
    zooms: tuple[float, ...] = (1.0,)
    dist_good = (0.2, 0.45)
    dist_bad = (1.1, 1.8)
    view_good = (0.0, 40.0)
    view_bad = (62.0, 80.0)
    around = (0.0, 360.0)
    roll = (-15.0, 15.0)
    aim_good = 0.3
    cam_z = (0.05, 3.0)
    target_names: tuple[str, ...] = ("target",)
    detail_ratio = 1.0
    """The finest detail the image-sharpness term asks for, as a share of the feature
    (text: a stroke is about a fifth of the character height; tape: the 1/16 ticks)."""

    # -- to override --
    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        return {}

    def target(self, params: Mapping[str, Any]) -> Plane:
        raise NotImplementedError

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def texture(self, params: Mapping[str, Any]) -> Any:
        """The target's texture (a ``_textures.Texture``), drawn the same on both sides."""
        raise NotImplementedError

    def target_image(self, params: Mapping[str, Any]) -> np.ndarray:
        """What the target patch shows (the proxy render warps it onto the target's quad)."""
        return np.asarray(self.texture(params).image)

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        raise NotImplementedError

    def distance_scale(self, params: Mapping[str, Any]) -> float:
        """Multiplier on the distance ranges (plates scale them with the zoom)."""
        return 1.0

    # -- shared --
    def sample(self, rng: Any, strata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        bad = draw_factors(rng, self.factors, strata, self.p_clean)
        p: dict[str, Any] = {"bad_factors": bad, "scene": self.scene_params(rng, bad)}
        zoom = float(self.zooms[int(rng.integers(len(self.zooms)))])
        p["camera"] = {"zoom": zoom, "res": list(RES)}
        k = self.distance_scale(p)
        for _ in range(200):
            dist = u(rng, *self.dist_bad) if "distance" in bad else u(rng, *self.dist_good)
            view = u(rng, *self.view_bad) if "angle" in bad else u(rng, *self.view_good)
            if "framing" in bad:
                a = u(rng, 0, 2 * math.pi)
                r = u(rng, 1.05, 1.5)
                aim = [r * math.cos(a), r * math.sin(a)]
            else:
                a = self.aim_good
                aim = [u(rng, -a, a), u(rng, -a, a)]
            p["camera"].update(
                distance_m=dist * k,
                view_deg=view,
                around_deg=u(rng, *self.around),
                aim=aim,
                roll_deg=u(rng, *self.roll),
            )
            _, pose = self.spec_pose(p)
            if self.cam_z[0] <= pose.position[2] <= self.cam_z[1]:
                break
        p["effects"] = sample_effects(rng, bad, p["camera"]["distance_m"])
        p["occluder"] = self.occluder(p).to_dict() if "occluded" in bad else None
        return p

    def spec_pose(
        self, params: Mapping[str, Any], res: Sequence[int] | None = None
    ) -> tuple[CameraSpec, CameraPose]:
        """The camera of the params; ``res``: the resolution the frame is rendered at when it
        is not the params' own (the render settings override it): same lens, same pose,
        pixel GT at that resolution (Blender fits the sensor horizontally)."""
        c = params["camera"]
        spec = phone(c["zoom"], c["res"])
        pose = rig_pose(
            self.target(params),
            c["distance_m"],
            c["view_deg"],
            c["around_deg"],
            c["aim"],
            c["roll_deg"],
            spec,
        )
        if res is not None and tuple(res) != (spec.res_x, spec.res_y):
            spec = phone(c["zoom"], res)
        return spec, pose

    def occluder(self, params: Mapping[str, Any]) -> Box:
        """A glove/hand-sized box between the camera and the target, covering it."""
        t = self.target(params)
        _, pose = self.spec_pose(params)
        pos = np.asarray(pose.position)
        f = 0.5
        c = t.centre + f * (pos - t.centre)
        h = 1.3 * max(t.half_u, t.half_v) * (1 - f) + 0.01
        return Box((float(c[0]), float(c[1]), float(c[2])), (h, h, h), 0.0)

    def occluders(self, params: Mapping[str, Any]) -> list[Box]:
        o = params.get("occluder")
        if not o:
            return []
        return [Box(tuple(o["centre"]), tuple(o["half"]), float(o.get("yaw_deg", 0.0)))]

    def camera(
        self, params: Mapping[str, Any], handles: Any = None
    ) -> tuple[CameraSpec, CameraPose, Effects]:
        spec, pose = self.spec_pose(params)
        return spec, pose, effects_of(params)

    def host_gt(
        self, params: Mapping[str, Any], res: Sequence[int] | None = None
    ) -> dict[str, Any]:
        """Every GT value derivable from the params (no Blender), in pixels of ``res``
        (default: the params' camera resolution)."""
        spec, pose = self.spec_pose(params, res)
        gt = target_gt(
            self.target(params), spec, pose, self.occluders(params), self.target_names[0]
        )
        gt["target"]["detail_px"] = round(gt["target"]["feature_px"] * self.detail_ratio, 4)
        gt.update(self.env_gt(params))
        gt["blur_px"] = {
            k: round(v, 3)
            for k, v in blur_px(spec, params, max(gt["target"]["depth_m"], 1e-3)).items()
        }
        gt["bad_factors"] = list(params.get("bad_factors", []))
        gt["post_effects"] = {
            k: params["effects"][k]
            for k in ("exposure", "wb_gains", "haze")
            if k in params["effects"]
        }
        gt["post_effects"]["seed"] = post_seed(params)
        return gt

    def build(self, ctx: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        tex = self.texture(params)
        path = str(tex.save(texture_dir(ctx)))
        h = self.build_scene(ctx, params, path)
        for i, b in enumerate(self.occluders(params)):
            bpy_box(f"glove_{i}", b, bpy_material("glove", (0.15, 0.12, 0.1)))
        bpy_setup(ctx, self.target_names)
        h["texture_sha256"] = tex.sha256()
        h["font"] = tex.gt.get("font")
        return h

    def extract(self, ctx: Any, params: Mapping[str, Any], handles: Any) -> dict[str, Any]:
        res = render_res(ctx)
        gt = self.host_gt(params, res)
        spec, pose = self.spec_pose(params, res)
        t = self.target(params)
        gt["occlusion_analytic"] = gt["occlusion"]
        gt["occlusion"] = bpy_occlusion(pose.position, t.grid(), self.target_names)
        gt["projection_check_px"] = bpy_projection_check(
            spec, t.corners(), gt["target"]["polygon_px"]
        )
        if isinstance(handles, Mapping):
            gt["texture_sha256"] = handles.get("texture_sha256")
            gt["font"] = handles.get("font")
        return gt

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The documentation questions with their exact answers (the environment's own)."""
        return []

    def questions(
        self, gt: Mapping[str, Any], acceptability: Acceptability | None
    ) -> list[dict[str, Any]]:
        """The documentation questions, then "acceptable?" with the scorer's verdict and
        the terms that failed (when the frame was scored)."""
        out = self.doc_questions(gt)
        if acceptability is not None:
            out.append(
                q(
                    "acceptable",
                    "Would this photo be accepted as proof of the work step?",
                    bool(acceptability.acceptable),
                    "boolean",
                    failed_terms=list(acceptability.failed),
                )
            )
        return out

    def post(self, gt: Mapping[str, Any], image: Any) -> np.ndarray:
        """The frame as the camera delivers it: the render (8-bit sRGB, render-time DOF and
        shake already in) with the host-side post effects of ``gt["post_effects"]``."""
        return apply_post(gt, image)

    def score(self, gt: Mapping[str, Any], image: Any) -> Acceptability:
        """Acceptability of a rendered frame: post effects applied, then every term."""
        img = None if image is None else self.post(gt, image)
        return accept_score(gt, img, self.thresholds)

    def proxy_score(self, params: Mapping[str, Any], seed: int = 0) -> Acceptability:
        spec, _ = self.spec_pose(params)
        gt = self.host_gt(params)
        tex = self.target_image(params)
        return proxy_score(gt, tex, params, spec, self.thresholds, seed)


def estimate_rates(
    env: PlanarEnv, n: int = 2000, seed: int = 0, proxy: bool = True
) -> dict[str, Any]:
    """Sample ``n`` frames without rendering and report how many pass the scene terms and,
    with ``proxy``, the full AND with image terms measured on the planar proxy render."""
    rng = np.random.default_rng(seed)
    scene_ok = full_ok = 0
    fails: dict[str, int] = {}
    clean = clean_ok = 0
    for i in range(n):
        p = env.sample(rng)
        acc = env.proxy_score(p, seed + i) if proxy else env.score(env.host_gt(p), None)
        sterms = {k: t for k, t in acc.terms.items() if t["kind"] == "scene"}
        scene_ok += all(t["ok"] for t in sterms.values())
        full_ok += acc.acceptable
        if not p["bad_factors"]:
            clean += 1
            clean_ok += acc.acceptable
        for k in acc.failed:
            fails[k] = fails.get(k, 0) + 1
    return {
        "env": env.name,
        "n": n,
        "scene_acceptable": scene_ok / n,
        "acceptable": full_ok / n if proxy else None,
        "clean_frames": clean,
        "clean_acceptable": clean_ok / clean if clean else None,
        "failed_terms": dict(sorted(fails.items())),
    }


# -- environment-specific acceptability terms ----------------------------------------------------
def env_term(
    value: float | bool | None,
    threshold: float,
    op: str,
    gray: float | tuple[float, float] | None = None,
    kind: str = "scene",
) -> dict[str, Any]:
    """One requirement term beyond ``_accept``'s fixed set (same keys: value, threshold, op,
    ok, kind, gray). ``gray``: a relative half-width around the threshold, or an explicit
    ``(low, high)`` range of values near it."""
    v = float("nan") if value is None else float(value)
    ok = bool(math.isfinite(v) and (v >= threshold if op == ">=" else v <= threshold))
    if gray is None or not math.isfinite(v):
        near = False
    elif isinstance(gray, tuple):
        near = gray[0] <= v <= gray[1]
    else:
        near = abs(v - threshold) <= abs(threshold) * gray
    return {
        "value": None if not math.isfinite(v) else round(v, 6),
        "threshold": threshold,
        "op": op,
        "ok": ok,
        "kind": kind,
        "gray": near,
    }


def with_terms(acc: Acceptability, extra: Mapping[str, Mapping[str, Any]]) -> Acceptability:
    """``acc`` with the environment's own requirement terms ANDed in."""
    terms = {**dict(acc.terms), **{k: dict(v) for k, v in extra.items()}}
    return Acceptability(acceptable=all(t["ok"] for t in terms.values()), terms=terms)


class RequirementTerms:
    """Mixin for a :class:`PlanarEnv`: ``requirement_terms(gt)`` (scene state the
    requirement itself asks about: the tape square across the gap, the attachment's part in
    view) is ANDed into both the render score and the host proxy score."""

    def requirement_terms(self, gt: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        return {}

    def score(self, gt: Mapping[str, Any], image: Any) -> Acceptability:
        acc = super().score(gt, image)  # type: ignore[misc]
        return with_terms(acc, self.requirement_terms(gt))

    def proxy_score(self, params: Mapping[str, Any], seed: int = 0) -> Acceptability:
        acc = super().proxy_score(params, seed)  # type: ignore[misc]
        gt = self.host_gt(params)  # type: ignore[attr-defined]
        return with_terms(acc, self.requirement_terms(gt))
