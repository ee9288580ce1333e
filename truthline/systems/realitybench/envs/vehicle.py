"""vehicle_face and damage_view: the car proxy seen whole (which sides are visible, body
style) or close up on a damaged panel (damage type, severity, which part).

vehicle_face GT: a side counts as visible when it faces the camera (normal within 80 deg
of the view ray) and at least 20 % of its rectangle projects inside the frame; thirds
(front/middle/rear) likewise from the side panels split in three plus the front and rear
faces. The question is answered right when it names any visible side ("any named part
counts", as the paper scores its real car frames).

damage_view GT: the damaged panel's name and face, damage type and severity as drawn, the
patch's pixel polygon. "About arm's length" is the distance requirement: <= 1.5 m passes,
1.5-3 m is the paper's gray zone (excluded from scorer-vs-rater agreement), beyond fails.
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
    CAR_LENGTH,
    FACES,
    body_corners,
    build_car,
    face_rect,
    panels,
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


def _srgb(x: float) -> float:
    return 12.92 * x if x <= 0.0031308 else 1.055 * x ** (1 / 2.4) - 0.055


def _colour(rng: np.random.Generator) -> list[float]:
    return [round(u(rng, 0.05, 0.8), 3) for _ in range(3)]


@register_environment
class VehicleFace(PlanarEnv):
    name = "vehicle_face"
    version = "2"
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
        styles = sorted(BODY_STYLES)
        return {"body": styles[int(rng.integers(len(styles)))], "colour": _colour(rng)}

    def target(self, params: Mapping[str, Any]) -> Plane:
        # the rig orbits the car's centre; "view" is measured from the vertical
        return plane((0, 0, 0.75), (0, 0, 1), (1, 0, 0), CAR_LENGTH / 2, 0.9, 0.05)

    def host_gt(
        self, params: Mapping[str, Any], res: Sequence[int] | None = None
    ) -> dict[str, Any]:
        spec, pose = self.spec_pose(params, res)
        gt = super().host_gt(params, res)
        res = (spec.res_x, spec.res_y)
        pts = project(body_corners(params["scene"]["body"]), spec, pose, res)
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
        pos = np.asarray(pose.position)
        faces, thirds = [], set()
        for face in FACES:
            c, n, uu, hu, hv = face_rect(face)
            to_cam = pos - c
            cosang = float(n @ to_cam / np.linalg.norm(to_cam))
            if cosang < math.cos(math.radians(FACING_MAX_DEG)):
                continue
            vv = np.cross(n, uu)
            parts = (
                [(face, c, hu)]
                if face in ("front", "rear")
                else [
                    (
                        {1: "front", 0: "middle", -1: "rear"}[k],
                        c + k * (2 * hu / 3) * np.array([0, 1.0, 0]),
                        hu / 3,
                    )
                    for k in (1, 0, -1)
                ]
            )
            seen = False
            for third, pc, phu in parts:
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
                    thirds.add(third)
            if seen:
                faces.append(face)
        gt.update(
            visible_faces=faces, visible_thirds=sorted(thirds), body_style=params["scene"]["body"]
        )
        return gt

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def texture(self, params: Mapping[str, Any]) -> Texture:
        return Texture(_car_side(params["scene"]["colour"]), {"kind": "car_side_proxy"})

    def build(self, ctx: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        from truthline.systems.realitybench.envs._common import bpy_box, bpy_setup

        build_car(params["scene"]["body"], tuple(params["scene"]["colour"]))
        for i, b in enumerate(self.occluders(params)):
            bpy_box(f"occluder_{i}", b, bpy_material("van", (0.8, 0.8, 0.82)))
        bpy_setup(ctx, ["body", "cabin"])
        return {"target": "body"}

    target_names = ("body", "cabin", "wheel_-1_-1", "wheel_-1_1", "wheel_1_-1", "wheel_1_1")

    def extract(self, ctx: Any, params: Mapping[str, Any], handles: Any) -> dict[str, Any]:
        from truthline.systems.realitybench.envs._common import bpy_occlusion, render_res

        gt = self.host_gt(params, render_res(ctx))
        _, pose = self.spec_pose(params)
        gt["occlusion_analytic"] = gt["occlusion"]
        gt["occlusion"] = bpy_occlusion(
            pose.position, self.target(params).grid(), self.target_names
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
    version = "4"
    # a dented or scratched panel is mostly paint: text-style contrast does not apply
    factors = ("framing", "distance", "angle", "occluded", "defocus", "shake")
    dist_good = (0.5, 1.2)
    dist_bad = (1.6, 5.0)
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
        ps = [p for p in panels() if p.face != "top"]
        part = ps[int(rng.integers(len(ps)))]
        return {
            "body": "sedan",
            "colour": _colour(rng),
            "part": part.name,
            "damage_type": DAMAGE_TYPES[int(rng.integers(3))],
            "severity": SEVERITIES[int(rng.integers(3))],
            "offset": [round(u(rng, -0.3, 0.3), 3), round(u(rng, -0.2, 0.2), 3)],
            "seed": int(rng.integers(1 << 30)),
        }

    def _panel(self, params: Mapping[str, Any]) -> Any:
        return next(p for p in panels() if p.name == params["scene"]["part"])

    def target(self, params: Mapping[str, Any]) -> Plane:
        p = self._panel(params)
        n, uu = np.array(p.normal, float), np.array(p.u, float)
        vv = np.cross(n, uu)
        ox, oy = params["scene"]["offset"]
        c = np.array(p.centre) + n * 0.003 + ox * p.half_u * uu + oy * p.half_v * vv
        return plane(c, n, uu, 0.15, 0.15, 0.01)

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        s = params["scene"]
        p = self._panel(params)
        return {
            "damaged_part": p.name,
            "damaged_face": p.face,
            "damage_type": s["damage_type"],
            "severity": s["severity"],
        }

    def texture(self, params: Mapping[str, Any]) -> Texture:
        s = params["scene"]
        # the paint material's colour is linear; the texture's pixels are sRGB
        r, g, b = (round(255 * _srgb(v)) for v in s["colour"])
        return damage_texture(
            s["damage_type"],
            s["severity"],
            (r, g, b),
            512,
            s["seed"],
        )

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        build_car(params["scene"]["body"], tuple(params["scene"]["colour"]))
        bpy_quad(
            "target",
            self.target(params).corners(),
            bpy_material("damage", image=tex_path, rough=0.35),
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
