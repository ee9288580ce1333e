"""plate: a licence plate on the rear bumper of the procedural car (any of the four body
styles, ``_car.plate_mount``), seen by a phone at 1x/3x/6x zoom.

Ground truth (SCENES.md C): the plate string and state (no ambiguous glyphs: O/0, I/1 and Q
are never generated), plate corners in pixels, character height in pixels (the feature the
readability rule asks >= 8 px of), view angle and distance. Distances scale with the zoom so
each zoom sees both readable and unreadable plates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from truthline.scenes._accept import Thresholds
from truthline.scenes._camera import f_px
from truthline.scenes._textures import PLATE_MM, Texture, plate_string, plate_texture
from truthline.scenes._types import register_environment
from truthline.systems.realitybench.envs._car import BODY_STYLES, build_car, plate_mount
from truthline.systems.realitybench.envs._common import (
    PlanarEnv,
    Plane,
    bpy_material,
    bpy_quad,
    phone,
    plane,
    q,
    u,
)

STATES = ("OHIO", "TEXAS", "UTAH", "MAINE", "NEVADA", "KANSAS", "GEORGIA", "VERMONT")
MIN_CHAR_PX = 8.0


@register_environment
class Plate(PlanarEnv):
    name = "plate"
    version = "2"
    detail_ratio = 0.2
    zooms = (1.0, 3.0, 6.0)
    dist_good = (0.35, 0.8)  # x the distance at which characters are MIN_CHAR_PX tall
    dist_bad = (1.3, 2.2)
    view_good = (0.0, 45.0)
    view_bad = (63.0, 78.0)
    cam_z = (0.3, 2.5)
    thresholds = Thresholds(
        min_feature_px=MIN_CHAR_PX,
        max_distance_m=25.0,
        max_view_angle_deg=60.0,
        min_size_frac=0.02,
        min_sharpness=0.11,
    )

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        return {
            "text": plate_string(rng),
            "state": STATES[int(rng.integers(len(STATES)))],
            "body": BODY_STYLES[int(rng.integers(len(BODY_STYLES)))],
            "colour": [round(u(rng, 0.05, 0.8), 3) for _ in range(3)],
        }

    def _char_m(self, params: Mapping[str, Any]) -> float:
        return float(self.texture(params).gt["char_height_mm"]) / 1000

    def distance_scale(self, params: Mapping[str, Any]) -> float:
        spec = phone(params["camera"]["zoom"], params["camera"]["res"])
        return f_px(spec) * self._char_m(params) / MIN_CHAR_PX

    def target(self, params: Mapping[str, Any]) -> Plane:
        y, z = plate_mount(params["scene"]["body"])
        c = (0.0, y, z)
        return plane(
            c,
            (0, -1, 0),
            (1, 0, 0),
            PLATE_MM[0] / 2000,
            PLATE_MM[1] / 2000,
            self._char_m(params),
            (0, 0, 1),
        )

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        s = params["scene"]
        tex = self.texture(params)
        return {
            "plate": s["text"],
            "state": s["state"],
            "char_height_mm": tex.gt["char_height_mm"],
            "font": tex.gt["font"],
        }

    def texture(self, params: Mapping[str, Any]) -> Texture:
        s = params["scene"]
        return _plate(s["text"], s["state"])

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        build_car(params["scene"]["body"], tuple(params["scene"]["colour"]))
        bpy_quad(
            "target",
            self.target(params).corners(),
            bpy_material("plate", image=tex_path, rough=0.3),
        )
        return {"target": "target"}

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [
            q("plate", "What are the licence plate's characters?", gt["plate"], "reading"),
            q("plate_state", "Which state issued the plate?", gt["state"], "reading"),
        ]


_CACHE: dict[tuple[str, str], Texture] = {}


def _plate(text: str, state: str) -> Texture:
    key = (text, state)
    if key not in _CACHE:
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[key] = plate_texture(text, state)
    return _CACHE[key]
