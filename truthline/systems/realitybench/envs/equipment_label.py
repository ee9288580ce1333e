"""equipment_label: the inverter's nameplate photographed at the array's inverter.

Requirement: "The inverter's nameplate must be documented: the model and the serial number
(S/N) readable — label in frame and unobstructed, characters large and sharp enough, not
viewed too obliquely."

Scene: a stucco wall with a string inverter (heat-sink fins, status display, a DC
disconnect below it, conduit to the wall) and a 120 x 72 mm nameplate on the inverter's
front. Ground truth: the rows as drawn (model, serial number), every string's ink box in
texture pixels, the nameplate's pixel polygon; the feature is the value characters' height.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from truthline.scenes._textures import PLATE_DIGITS, serial_string
from truthline.scenes._types import register_environment
from truthline.systems.realitybench.envs._common import (
    Box,
    bpy_box,
    bpy_material,
    bpy_quad,
    q,
)
from truthline.systems.realitybench.envs.label_board import LabelEnv

FIELDS = {"MODEL": "equipment_model", "S/N": "serial_number"}
INVERTER = Box((0.0, -0.03, 1.3), (0.2, 0.04, 0.3))
"""The inverter's body; its front face is at y = -0.07 (the nameplate sits 2 mm proud)."""


@register_environment
class EquipmentLabel(LabelEnv):
    name = "equipment_label"
    version = "1"
    size_m = (0.12, 0.072)
    tex_px = (800, 480)
    centre = (0.0, -0.072, 1.4)
    normal = (0.0, -1.0, 0.0)
    right = (1.0, 0.0, 0.0)
    cam_z = (0.4, 2.3)

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        model = "SE" + serial_string(rng, 4, PLATE_DIGITS) + "H"
        return {"title": "INVERTER", "rows": [["MODEL", model], ["S/N", serial_string(rng, 10)]]}

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        grey = bpy_material("inverter", (0.72, 0.73, 0.75), rough=0.4)
        dark = bpy_material("fins", (0.25, 0.26, 0.28), rough=0.5)
        bpy_box(
            "wall",
            Box((0, 0.06, 1.2), (2.0, 0.05, 1.5)),
            bpy_material("stucco", (0.7, 0.68, 0.62), rough=0.95),
        )
        bpy_box(
            "ground",
            Box((0, -1.5, -0.01), (4.0, 1.6, 0.01)),
            bpy_material("concrete", (0.45, 0.45, 0.44), rough=0.9),
        )
        bpy_box("inverter", INVERTER, grey)
        for i in range(7):  # heat-sink fins on the sides
            for sx in (-1, 1):
                bpy_box(
                    f"fin_{sx}_{i}",
                    Box((sx * 0.205, -0.03, 1.08 + 0.07 * i), (0.006, 0.035, 0.025)),
                    dark,
                )
        bpy_box(
            "display",
            Box((0.0, -0.071, 1.52), (0.05, 0.001, 0.022)),
            bpy_material("lcd", (0.03, 0.05, 0.06), rough=0.2),
        )
        bpy_box("disconnect", Box((0.0, -0.04, 0.85), (0.09, 0.035, 0.11)), grey)
        bpy_box(
            "handle",
            Box((0.0, -0.085, 0.85), (0.012, 0.012, 0.05)),
            bpy_material("red", (0.6, 0.05, 0.04)),
        )
        bpy_box("conduit", Box((0.14, -0.02, 0.55), (0.015, 0.015, 0.45)), dark)
        bpy_quad(
            "target",
            self.target(params).corners(),
            bpy_material("label", image=tex_path, rough=0.4),
        )
        return {"target": "target"}

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [
            q(FIELDS[k], f"What is the {k} on the inverter's nameplate?", v, "reading")
            for k, v in gt["rows"].items()
        ]
