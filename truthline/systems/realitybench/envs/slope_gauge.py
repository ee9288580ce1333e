"""slope_gauge: an angle gauge on a pitched roof, digital (LCD to 0.1 deg) or a magnifying
pendulum dial on the gauge's side.

The roof is pitched ``slope_deg`` about world X (rising towards +Y); the gauge's long axis
runs up the slope, so what it shows is the pitch itself: ``slope_deg`` exactly (the LCD
shows it rounded to 0.1; the dial's needle is drawn at the exact angle). Documentation
asks for the slope within 0.2 deg.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from truthline.scenes._accept import Thresholds
from truthline.scenes._textures import Texture, dial_gauge_texture, digital_level_texture
from truthline.scenes._types import register_environment
from truthline.systems.realitybench.envs._common import (
    Box,
    PlanarEnv,
    Plane,
    bpy_box,
    bpy_material,
    bpy_quad,
    plane,
    q,
    u,
)

DIGITAL_FACE_M = (0.14, 0.0525)  # 640 x 240 px texture
DIAL_FACE_M = 0.08  # 512 x 512 px texture
DIAL_GAIN = 3.0


@lru_cache(maxsize=64)
def _face(style: str, slope_deg: float) -> Texture:
    if style == "digital":
        return digital_level_texture(slope_deg)
    # the needle hangs towards the downhill side of the dial face: -slope in its convention
    return dial_gauge_texture(-slope_deg, 512, 30.0, 0.5, DIAL_GAIN)


@register_environment
class SlopeGauge(PlanarEnv):
    name = "slope_gauge"
    version = "1"
    detail_ratio = 0.5
    dist_good = (0.12, 0.3)
    aim_good = 0.2
    dist_bad = (1.0, 1.8)
    thresholds = Thresholds(min_feature_px=3.0, max_distance_m=1.0)

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        style = "digital" if rng.random() < 0.5 else "dial"
        return {"style": style, "slope_deg": round(u(rng, 4.0, 29.0), 3)}

    def _axes(self, params: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        t = math.radians(params["scene"]["slope_deg"])
        return np.array([0.0, math.cos(t), math.sin(t)]), np.array([0.0, -math.sin(t), math.cos(t)])

    def target(self, params: Mapping[str, Any]) -> Plane:
        up_slope, n = self._axes(params)
        if params["scene"]["style"] == "digital":
            tex = self.texture(params)
            ink = tex.gt["text"]["ink_px"]
            char_m = (ink[3] - ink[1]) / tex.gt["size_px"][1] * DIGITAL_FACE_M[1]
            return plane(
                n * 0.0305,
                n,
                up_slope,
                DIGITAL_FACE_M[0] / 2,
                DIGITAL_FACE_M[1] / 2,
                char_m,
                np.cross(n, up_slope),
            )
        r_m = 0.46 * DIAL_FACE_M
        feat = r_m * math.radians(DIAL_GAIN * 1.0)  # 1-degree ticks' spacing on the arc
        return plane(
            n * 0.05 + np.array([0.0105, 0, 0]),
            (1, 0, 0),
            up_slope,
            DIAL_FACE_M / 2,
            DIAL_FACE_M / 2,
            feat,
            up_slope,
        )

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        s = params["scene"]
        tex = self.texture(params)
        out = {"style": s["style"], "slope_deg": s["slope_deg"], "font": tex.gt.get("font")}
        if s["style"] == "digital":
            out.update(shown_deg=tex.gt["shown_deg"], display=tex.gt["display"])
        return out

    def texture(self, params: Mapping[str, Any]) -> Texture:
        s = params["scene"]
        return _face(s["style"], float(s["slope_deg"]))

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        slope = params["scene"]["slope_deg"]
        _, n = self._axes(params)
        bpy_box(
            "roof",
            Box((0, 0, 0), (3, 3, 0.005), 0, slope),
            bpy_material("shingle", (0.18, 0.16, 0.15), rough=0.9),
        )
        body = bpy_material("gauge_body", (0.12, 0.12, 0.14), rough=0.5)
        if params["scene"]["style"] == "digital":
            bpy_box("gauge", Box(tuple(n * 0.0155), (0.035, 0.08, 0.015), 0, slope), body)
        else:
            bpy_box("gauge", Box(tuple(n * 0.05), (0.01, 0.05, 0.05), 0, slope), body)
        t = self.target(params)
        bpy_quad("target", t.corners(), bpy_material("face", image=tex_path, rough=0.3))
        return {"target": "target"}

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [
            q(
                "slope",
                "What slope does the gauge read, in degrees?",
                gt["slope_deg"],
                "number",
                tolerance=0.2,
                unit="deg",
            ),
        ]
