"""label_board: text to document — a repair-order board beside the car (RO number, VIN) or
an equipment nameplate on an inverter (model, serial number).

The strings are generated without ambiguous glyphs (no O/0, I/1, Q); ground truth is the
rows as drawn. The feature that must resolve is the height of the value characters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from truthline.scenes._accept import Thresholds
from truthline.scenes._camera import f_px
from truthline.scenes._textures import (
    PLATE_DIGITS,
    Texture,
    label_texture,
    serial_string,
    vin_string,
)
from truthline.scenes._types import register_environment
from truthline.systems.realitybench.envs._car import CAR_LENGTH, CAR_WIDTH, build_car
from truthline.systems.realitybench.envs._common import (
    Box,
    PlanarEnv,
    Plane,
    bpy_box,
    bpy_material,
    bpy_quad,
    phone,
    plane,
    q,
    u,
)

MIN_CHAR_PX = 8.0
# variant -> (face width m, face height m, texture px, centre, normal)
VARIANTS: dict[str, tuple[float, float, tuple[int, int], tuple[float, float, float]]] = {
    "ro_board": (0.5, 0.3, (800, 480), (CAR_WIDTH / 2 + 0.9, CAR_LENGTH / 2 - 0.6, 1.0)),
    "equipment_label": (0.12, 0.072, (800, 480), (0.0, -0.072, 1.4)),
}


@lru_cache(maxsize=64)
def _label(rows: tuple[tuple[str, str], ...], title: str, size: tuple[int, int]) -> Texture:
    return label_texture(list(rows), title, size)


@register_environment
class LabelBoard(PlanarEnv):
    name = "label_board"
    version = "2"
    detail_ratio = 0.2
    dist_good = (0.35, 0.8)
    dist_bad = (1.3, 2.2)
    view_good = (0.0, 40.0)
    view_bad = (62.0, 78.0)
    cam_z = (0.4, 2.3)
    thresholds = Thresholds(
        min_feature_px=MIN_CHAR_PX,
        max_distance_m=4.0,
        max_view_angle_deg=55.0,
        min_size_frac=0.05,
        min_sharpness=0.085,
    )

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        variant = "ro_board" if rng.random() < 0.5 else "equipment_label"
        if variant == "ro_board":
            rows = [["RO", serial_string(rng, 6, PLATE_DIGITS)], ["VIN", vin_string(rng)]]
            title = "REPAIR ORDER"
        else:
            model = "SE" + serial_string(rng, 4, PLATE_DIGITS) + "H"
            rows = [["MODEL", model], ["S/N", serial_string(rng, 10)]]
            title = "INVERTER"
        return {
            "variant": variant,
            "title": title,
            "rows": rows,
            "colour": [round(u(rng, 0.05, 0.8), 3) for _ in range(3)],
        }

    def _char_m(self, params: Mapping[str, Any]) -> float:
        s = params["scene"]
        tex = self.texture(params)
        _, h_m, (_, th), _ = VARIANTS[s["variant"]]
        inks = [r["value_ink"]["ink_px"] for r in tex.gt["rows"]]
        return min(i[3] - i[1] for i in inks) / th * h_m

    def distance_scale(self, params: Mapping[str, Any]) -> float:
        spec = phone(params["camera"]["zoom"], params["camera"]["res"])
        return f_px(spec) * self._char_m(params) / MIN_CHAR_PX

    def target(self, params: Mapping[str, Any]) -> Plane:
        w_m, h_m, _, c = VARIANTS[params["scene"]["variant"]]
        return plane(
            c,
            (0, -1, 0) if params["scene"]["variant"] == "equipment_label" else (0, 1, 0),
            (1, 0, 0) if params["scene"]["variant"] == "equipment_label" else (-1, 0, 0),
            w_m / 2,
            h_m / 2,
            self._char_m(params),
            (0, 0, 1),
        )

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        s = params["scene"]
        return {
            "variant": s["variant"],
            "title": s["title"],
            "rows": {k: v for k, v in s["rows"]},
            "font": self.texture(params).gt["font"],
        }

    def texture(self, params: Mapping[str, Any]) -> Texture:
        s = params["scene"]
        rows = tuple((str(k), str(v)) for k, v in s["rows"])
        return _label(rows, s["title"], VARIANTS[s["variant"]][2])

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        s = params["scene"]
        t = self.target(params)
        if s["variant"] == "ro_board":
            build_car("sedan", tuple(s["colour"]))
            bpy_box(
                "easel",
                # behind the board (its front face 1 cm behind the board's plane)
                Box(tuple(t.centre - t.normal * 0.04 - [0, 0, 0.35]), (0.03, 0.03, 0.5)),
                bpy_material("wood", (0.4, 0.3, 0.2)),
            )
        else:
            bpy_box(
                "wall",
                Box((0, 0.06, 1.2), (2.0, 0.05, 1.5)),
                bpy_material("stucco", (0.7, 0.68, 0.62), rough=0.95),
            )
            bpy_box(
                "inverter",
                Box((0, -0.03, 1.3), (0.2, 0.04, 0.3)),
                bpy_material("inverter", (0.75, 0.75, 0.77)),
            )
        bpy_quad(
            "target", t.corners(), bpy_material("label", image=self._tex_path(tex_path), rough=0.4)
        )
        return {"target": "target"}

    @staticmethod
    def _tex_path(p: str) -> str:
        return p

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        out = []
        for key, value in gt["rows"].items():
            field = {
                "RO": "ro_number",
                "VIN": "vin",
                "MODEL": "equipment_model",
                "S/N": "serial_number",
            }[key]
            out.append(
                q(field, f"What is the {key} on the {gt['title'].lower()} label?", value, "reading")
            )
        return out
