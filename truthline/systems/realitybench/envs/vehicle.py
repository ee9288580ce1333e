"""vehicle_face and damage_view: the procedural car (``_car``: sedan, hatchback, SUV,
pickup) seen whole (which sides are visible, body style) or close up on a damaged panel
(damage type, severity, which part).

vehicle_face GT: a side counts as visible when it faces the camera (normal within 80 deg
of the view ray) and at least 20 % of its rectangle projects inside the frame; thirds
(front/middle/rear) likewise from the flanks split in three. The question is answered right
when it names any visible side (the paper, section 5, scores its real car frames so: "any
labelled part counts"). The target polygon is the car's bounding box from every vertex the
worker builds; the style's dimensions are in the GT. ``params["id_pass"]`` (a measurement
pass, not a sampled factor) renders the face classes in flat ID colours.

damage_view GT: the damaged panel's name and face, damage type and severity as drawn, the
damage's extent in metres and its pixel polygon, the patch's pixel polygon. "About arm's
length" is the distance requirement: <= 1.5 m passes, 1.5-3 m is the paper's gray zone
(section 4: gray frames are left out of the acceptability set), beyond fails; the
sampler's "too far" frames lie beyond 3 m so that they are clear rejections.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from truthline.scenes._accept import Thresholds, framing
from truthline.scenes._camera import f_px, project
from truthline.scenes._textures import DAMAGE_TYPES, SEVERITIES, Texture, damage_texture
from truthline.scenes._types import register_environment
from truthline.systems.realitybench.envs._car import (
    BODY_STYLES,
    FACES,
    PATCH_HALF,
    STYLES,
    bpy_paint_texture,
    build_car,
    car_part_names,
    car_vertices,
    face_rect,
    panels,
    patch_centre,
)
from truthline.systems.realitybench.envs._common import (
    PlanarEnv,
    Plane,
    bpy_material,
    bpy_quad,
    plane,
    q,
    u,
)

VISIBLE_MIN_SHARE = 0.2
FACING_MAX_DEG = 80.0
TEXTURE_PX = 512
# the damage's largest extent per severity: the texture draws 7.5 / 13.5 / 21 cm (a dent's
# shading reaches 8 % past its extent, its faint rim is barely visible); the bands split
# about halfway between them
SEVERITY_BANDS_M = {"minor": (0.0, 0.1), "moderate": (0.1, 0.17), "severe": (0.17, 0.3)}


def _srgb(x: float) -> float:
    return 12.92 * x if x <= 0.0031308 else 1.055 * x ** (1 / 2.4) - 0.055


def _colour(rng: np.random.Generator) -> list[float]:
    return [round(u(rng, 0.05, 0.8), 3) for _ in range(3)]


@register_environment
class VehicleFace(PlanarEnv):
    name = "vehicle_face"
    version = "3"
    # at 6-9 m a phone lens is past its hyperfocal distance: defocus is not a factor here
    factors = ("framing", "distance", "occluded", "shake", "glare")
    dist_good = (6.0, 9.0)
    dist_bad = (17.0, 28.0)
    view_good = (62.0, 88.0)  # from the top normal: elevation 2-28 deg
    aim_good = 0.08
    around = (0.0, 360.0)
    cam_z = (0.4, 6.0)
    thresholds = Thresholds(
        min_size_frac=0.3,
        max_distance_m=15.0,
        max_view_angle_deg=None,
        min_feature_px=None,
        min_sharpness=0.006,
    )

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        return {"body": BODY_STYLES[int(rng.integers(len(BODY_STYLES)))], "colour": _colour(rng)}

    def target(self, params: Mapping[str, Any]) -> Plane:
        # the rig orbits the car's centre; "view" is measured from the vertical and "around"
        # from v (+Y, the front); the occlusion rays end inside the car's footprint
        st = STYLES[params["scene"]["body"]]
        return plane((0, 0, st.height / 2), (0, 0, 1), (1, 0, 0), st.width / 2, st.length / 2, 0.05)

    def host_gt(
        self, params: Mapping[str, Any], res: Sequence[int] | None = None
    ) -> dict[str, Any]:
        spec, pose = self.spec_pose(params, res)
        gt = super().host_gt(params, res)
        res = (spec.res_x, spec.res_y)
        style = params["scene"]["body"]
        # the car's bounding box from every vertex the worker builds (bevels only shrink it)
        pts = project(car_vertices(style), spec, pose, res)
        if (pts[:, 2] > 0).all():
            x0, y0 = pts[:, 0].min(), pts[:, 1].min()
            x1, y1 = pts[:, 0].max(), pts[:, 1].max()
            gt["target"]["polygon_px"] = [
                [round(float(a), 3), round(float(b), 3)]
                for a, b in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))
            ]
        gt["target"]["name"] = "car"
        gt["target"]["view_angle_deg"] = None
        gt["target"]["feature_px"] = round(
            f_px(spec) * 0.05 / max(gt["target"]["depth_m"], 1e-3), 4
        )
        gt["target"]["detail_px"] = gt["target"]["feature_px"]
        faces, thirds, facing = _visible_faces(style, spec, pose, res)
        gt.update(
            visible_faces=faces,
            visible_thirds=sorted({t.split("_")[1] for t in thirds}),
            visible_side_thirds=thirds,
            facing_deg=facing,
            body_style=style,
            dimensions=STYLES[style].dims(),
        )
        return gt

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def texture(self, params: Mapping[str, Any]) -> Texture:
        return Texture(_car_side(params["scene"]["colour"]), {"kind": "car_side_proxy"})

    def build(self, ctx: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        from truthline.systems.realitybench.envs._common import bpy_box, bpy_setup

        style = params["scene"]["body"]
        id_pass = bool(params.get("id_pass"))
        build_car(style, tuple(params["scene"]["colour"]), id_pass=id_pass)
        for i, b in enumerate(self.occluders(params)):
            bpy_box(f"occluder_{i}", b, bpy_material("van", (0.8, 0.8, 0.82)))
        bpy_setup(ctx, car_part_names(style))
        if id_pass:  # flat face-class colours (the ID pass) instead of image textures
            ctx.workbench_color_type = "MATERIAL"
        return {"target": "body"}

    def extract(self, ctx: Any, params: Mapping[str, Any], handles: Any) -> dict[str, Any]:
        from truthline.systems.realitybench.envs._common import bpy_occlusion, render_res

        gt = self.host_gt(params, render_res(ctx))
        _, pose = self.spec_pose(params)
        gt["occlusion_analytic"] = gt["occlusion"]
        gt["occlusion"] = bpy_occlusion(
            pose.position, self.target(params).grid(), car_part_names(params["scene"]["body"])
        )
        return gt

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [
            q(
                "visible_face",
                "Which side of the car is visible (front, rear, left or right)?",
                gt["visible_faces"],
                "any_of",
            ),
            q(
                "body_style",
                "What is the car's body style?",
                gt["body_style"],
                "choice",
                options=sorted(BODY_STYLES),
            ),
        ]


def _paint_srgb(colour: Sequence[float]) -> tuple[int, int, int]:
    """The paint material's linear colour as the texture's 8-bit sRGB."""
    r, g, b = (round(255 * _srgb(v)) for v in colour[:3])
    return r, g, b


def _drawn_box(image: Image.Image, paint: tuple[int, int, int]) -> list[int]:
    """The damage's box in texture pixels as drawn: every pixel off the paint colour, above
    the centimetre scale (the bottom 6 %, drawn over any damage reaching it)."""
    a = np.asarray(image.convert("RGB")).astype(int)
    off = np.abs(a - np.array(paint)).max(axis=2) > 0
    off[int(a.shape[0] * 0.94) :] = False
    ys, xs = np.nonzero(off)
    return [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]


def _visible_faces(
    style: str, spec: Any, pose: Any, res: tuple[int, int]
) -> tuple[list[str], list[str], dict[str, float]]:
    """Visible faces, visible side thirds ("left_front", ...) and each face's angle between
    its normal and the ray to the camera, from the style's face rectangles."""
    pos = np.asarray(pose.position)
    faces, thirds, facing = [], [], {}
    for face in FACES:
        c, n, uu, hu, hv = face_rect(face, style)
        to_cam = pos - c
        cosang = float(n @ to_cam / np.linalg.norm(to_cam))
        facing[face] = round(math.degrees(math.acos(max(-1.0, min(1.0, cosang)))), 3)
        if cosang < math.cos(math.radians(FACING_MAX_DEG)):
            continue
        vv = np.cross(n, uu)
        if face in ("front", "rear"):
            parts = [(face, c, hu)]
        else:
            parts = [
                (f"{face}_{name}", c + k * (2 * hu / 3) * np.array([0, 1.0, 0]), hu / 3)
                for k, name in ((1, "front"), (0, "middle"), (-1, "rear"))
            ]
        seen = False
        for label, pc, phu in parts:
            corners = np.array(
                [
                    pc - phu * uu + hv * vv,
                    pc + phu * uu + hv * vv,
                    pc + phu * uu - hv * vv,
                    pc - phu * uu - hv * vv,
                ]
            )
            pp = project(corners, spec, pose, res)
            if (pp[:, 2] <= 0).any():
                continue
            share, _ = framing(pp[:, :2], *res)
            if share >= VISIBLE_MIN_SHARE:
                seen = True
                if face not in ("front", "rear"):
                    thirds.append(label)
        if seen:
            faces.append(face)
    return faces, sorted(thirds), facing


def _car_side(colour: Sequence[float]) -> Image.Image:
    """A flat side view for the proxy render: paint, glass, wheels, door seams."""
    c = tuple(round(255 * _srgb(v)) for v in colour[:3])
    img = Image.new("RGB", (880, 260), (90, 90, 92))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 110, 879, 220], fill=c)
    d.rectangle([220, 30, 660, 110], fill=(25, 28, 32))
    for x in (330, 450, 560):
        d.line([x, 110, x, 215], fill=(30, 30, 30), width=2)
    for x in (170, 710):
        d.ellipse([x - 60, 170, x + 60, 258], fill=(15, 15, 15))
    return img


@register_environment
class DamageView(PlanarEnv):
    name = "damage_view"
    version = "5"
    # a dented or scratched panel is mostly paint: text-style contrast does not apply
    factors = ("framing", "distance", "angle", "occluded", "defocus", "shake")
    dist_good = (0.5, 1.2)
    # past the paper's 1.5-3 m gray zone: a "too far" frame is a clear rejection, not a
    # gray one the acceptability set would drop
    dist_bad = (3.1, 5.0)
    view_good = (0.0, 45.0)
    view_bad = (62.0, 80.0)
    cam_z = (0.15, 2.2)
    thresholds = Thresholds(
        max_distance_m=1.5,
        max_view_angle_deg=60.0,
        min_feature_px=3.0,
        min_size_frac=0.1,
        min_contrast=None,
        min_sharpness=0.12,
        gray={
            "distance": (1.5, 3.0),
            "view_angle": 0.08,
            "feature_px": 0.15,
            "sharpness": 0.15,
            "contrast": 0.1,
        },
    )

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        body = BODY_STYLES[int(rng.integers(len(BODY_STYLES)))]
        ps = [p for p in panels(body) if p.face != "top"]
        part = ps[int(rng.integers(len(ps)))]
        return {
            "body": body,
            "colour": _colour(rng),
            "part": part.name,
            "damage_type": DAMAGE_TYPES[int(rng.integers(3))],
            "severity": SEVERITIES[int(rng.integers(3))],
            # where the patch sits in the panel's slack (-1..1 along its u and v)
            "offset": [round(u(rng, -1.0, 1.0), 3), round(u(rng, -1.0, 1.0), 3)],
            "seed": int(rng.integers(1 << 30)),
        }

    def _panel(self, params: Mapping[str, Any]) -> Any:
        s = params["scene"]
        return next(p for p in panels(s["body"]) if p.name == s["part"])

    def target(self, params: Mapping[str, Any]) -> Plane:
        p = self._panel(params)
        c = patch_centre(p, params["scene"]["offset"])
        return plane(c, p.normal, p.u, PATCH_HALF, PATCH_HALF, 0.01)

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        s = params["scene"]
        p = self._panel(params)
        tex = self.texture(params)
        box = _drawn_box(tex.image, _paint_srgb(s["colour"]))
        size = 2 * PATCH_HALF / TEXTURE_PX
        return {
            "damaged_part": p.name,
            "damaged_face": p.face,
            "damage_type": s["damage_type"],
            "severity": s["severity"],
            "body_style": s["body"],
            "damage_box_tex_px": box,
            # along the panel (u): every damage type is drawn ``extent`` wide (a dent's rim
            # a little wider); scratches may wander past their nominal box across it
            "damage_extent_m": round((box[2] - box[0]) * size, 4),
            "severity_band_m": list(SEVERITY_BANDS_M[s["severity"]]),
        }

    def host_gt(
        self, params: Mapping[str, Any], res: Sequence[int] | None = None
    ) -> dict[str, Any]:
        gt = super().host_gt(params, res)
        spec, pose = self.spec_pose(params, res)
        t = self.target(params)
        x0, y0, x1, y1 = (v / TEXTURE_PX for v in gt["damage_box_tex_px"])
        # texture (0,0) is the patch's top-left: u right, v up
        corners = np.array(
            [
                t.centre + (2 * a - 1) * t.half_u * t.u + (1 - 2 * b) * t.half_v * t.v
                for a, b in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))
            ]
        )
        pp = project(corners, spec, pose, (spec.res_x, spec.res_y))
        gt["damage_polygon_px"] = (
            pp[:, :2].round(3).tolist() if (pp[:, 2] > 0).all() else [[float("nan")] * 2] * 4
        )
        return gt

    def texture(self, params: Mapping[str, Any]) -> Texture:
        s = params["scene"]
        return damage_texture(
            s["damage_type"],
            s["severity"],
            _paint_srgb(s["colour"]),
            TEXTURE_PX,
            s["seed"],
        )

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        build_car(params["scene"]["body"], tuple(params["scene"]["colour"]))
        bpy_quad(
            "target",
            self.target(params).corners(),
            bpy_paint_texture("damage", tex_path),
        )
        return {"target": "target"}

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        part = gt["damaged_part"]
        return [
            q(
                "damage_type",
                "What kind of damage is shown?",
                gt["damage_type"],
                "choice",
                options=list(DAMAGE_TYPES),
            ),
            q(
                "damage_severity",
                "How severe is the damage?",
                gt["severity"],
                "choice",
                options=list(SEVERITIES),
            ),
            q(
                "damaged_part",
                "Which part of the car is damaged?",
                [part, part.replace("_", " ")],
                "any_of",
            ),
        ]
