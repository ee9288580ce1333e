"""slope_gauge: an angle gauge on a pitched roof, digital (LCD to 0.1 deg) or a magnifying
pendulum dial on the gauge's side.

The roof is pitched ``slope_deg`` about world X (rising towards +Y); the gauge's long axis
runs up the slope, so what it shows is the pitch itself: ``slope_deg`` exactly (the LCD
shows it rounded to 0.1; the dial's needle is drawn at the exact angle). Documentation
asks for the slope within 0.2 deg.

Requirement (RealityBench Table 1): a photo of the angle gauge resting on a module of the
array (the array's tilt is what is documented), its reading legible to 0.2 deg, in focus,
unobstructed. A gauge set on the shingles next to the array is not acceptable proof (scene
term ``gauge_on_module``). Legibility is the feature-pixel term: LCD characters at least
8 px tall; on the dial, 1-deg ticks at least 5 px apart (so 0.2 deg moves the needle tip by
a pixel): the dial's feature is 1.6 tick spacings against the same 8 px.

The roof, rails and modules come from ``_roof``, tilted by the pitch; the gauge lies on the
second module's glass (or, with the ``off_module`` factor, on the shingle butts beside the
array, which are parallel to the roof: the reading is the same, the placement is wrong).
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
from truthline.systems.realitybench.envs import _roof
from truthline.systems.realitybench.envs._common import (
    CAMERA_FACTORS,
    EFFECT_FACTORS,
    Box,
    PlanarEnv,
    Plane,
    RequirementTerms,
    bpy_box,
    bpy_material,
    bpy_quad,
    env_term,
    plane,
    q,
    texture_dir,
    u,
)

DIGITAL_FACE_M = (0.14, 0.0525)  # 640 x 240 px texture
DIAL_FACE_M = 0.08  # 512 x 512 px texture
DIAL_GAIN = 3.0
DIAL_FEATURE_TICKS = 1.6  # 8 px over 1.6 one-degree ticks: ticks >= 5 px apart
MIN_FEATURE_PX = 8.0
MODULES = (_roof.Module(-1.0, 0.0, -0.85, 0.85), _roof.Module(0.02, 1.02, -0.85, 0.85))
RAILS_Y = (-0.45, 0.45)
SPOTS = {  # where the gauge lies (roof frame x, y, z of its underside)
    "module": (0.52, 0.0, _roof.MODULE_TOP_Z - _roof.GLASS_DROP),
    "shingles": (1.45, 0.0, _roof.SHINGLE_HI),
}


@lru_cache(maxsize=64)
def _face(style: str, slope_deg: float) -> Texture:
    if style == "digital":
        return digital_level_texture(slope_deg)
    # the needle hangs towards the downhill side of the dial face: -slope in its convention
    return dial_gauge_texture(-slope_deg, 512, 30.0, 0.5, DIAL_GAIN)


@register_environment
class SlopeGauge(RequirementTerms, PlanarEnv):
    name = "slope_gauge"
    version = "2"
    detail_ratio = 0.5
    dist_good = (0.12, 0.3)
    aim_good = 0.2
    dist_bad = (1.0, 1.8)
    factors = CAMERA_FACTORS + EFFECT_FACTORS + ("off_module",)
    p_clean = 0.42
    thresholds = Thresholds(min_feature_px=MIN_FEATURE_PX, max_distance_m=1.0)

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        style = "digital" if rng.random() < 0.5 else "dial"
        return {
            "style": style,
            "slope_deg": round(u(rng, 4.0, 29.0), 3),
            "on": "shingles" if "off_module" in bad else "module",
        }

    def distance_scale(self, params: Mapping[str, Any]) -> float:
        """The dial's ticks are finer than the LCD's digits: hold the phone closer."""
        return 0.8 if params["scene"]["style"] == "dial" else 1.0

    def _base(self, params: Mapping[str, Any]) -> np.ndarray:
        """World position of the gauge's underside centre (the roof tilted by the pitch)."""
        spot = SPOTS[params["scene"].get("on", "module")]
        return _roof.pitch_matrix(params["scene"]["slope_deg"]) @ np.array(spot)

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
                self._base(params) + n * 0.0305,
                n,
                up_slope,
                DIGITAL_FACE_M[0] / 2,
                DIGITAL_FACE_M[1] / 2,
                char_m,
                np.cross(n, up_slope),
            )
        r_m = 0.46 * DIAL_FACE_M
        feat = DIAL_FEATURE_TICKS * r_m * math.radians(DIAL_GAIN * 1.0)  # 1-deg ticks' arc
        return plane(
            self._base(params) + n * 0.05 + np.array([0.0105, 0, 0]),
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
        out = {
            "style": s["style"],
            "slope_deg": s["slope_deg"],
            "font": tex.gt.get("font"),
            "gauge_on": s.get("on", "module"),
        }
        if s["style"] == "digital":
            out.update(shown_deg=tex.gt["shown_deg"], display=tex.gt["display"])
        return out

    def requirement_terms(self, gt: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        return {"gauge_on_module": env_term(float(gt["gauge_on"] == "module"), 1.0, ">=")}

    def layout(self) -> _roof.Layout:
        return _roof.Layout(
            x_range=(-1.4, 2.2),
            y_range=(-1.3, 1.3),
            rails_y=RAILS_Y,
            rail_x=(-1.05, 1.07),
            modules=MODULES,
            attachments=tuple(
                _roof.Attachment(x, r)
                for r in range(len(RAILS_Y))
                for x in _roof.rafter_xs(-0.95, 0.97)[::3]
            ),
            mid_clamps=((MODULES[0].x1, MODULES[1].x0),),
        )

    def texture(self, params: Mapping[str, Any]) -> Texture:
        s = params["scene"]
        return _face(s["style"], float(s["slope_deg"]))

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        slope = params["scene"]["slope_deg"]
        _, n = self._axes(params)
        built = _roof.build_roof(self.layout(), texture_dir(ctx), pitch_deg=slope)
        body = bpy_material("gauge_body", (0.12, 0.12, 0.14), rough=0.5)
        b = self._base(params)
        if params["scene"]["style"] == "digital":  # body top 0.4 mm under the face quad
            bpy_box("gauge", Box(tuple(b + n * 0.0151), (0.035, 0.08, 0.015), 0, slope), body)
        else:
            bpy_box("gauge", Box(tuple(b + n * 0.05), (0.01, 0.05, 0.05), 0, slope), body)
        t = self.target(params)
        bpy_quad("target", t.corners(), bpy_material("face", image=tex_path, rough=0.3))
        return {"target": "target", "roof": built}

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
