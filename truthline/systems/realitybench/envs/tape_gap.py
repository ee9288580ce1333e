"""tape_gap: a tape measure hooked on one solar module and laid across the gap to the next.

Ground truth is analytic (SCENES.md B): with the gap's near edge at x = 0 and its far edge
at x = g, the hook at x_hook < 0 and the tape turned ``tilt`` degrees in the module plane,
the tape's centreline crosses the far edge at reading ``t = (g - x_hook) / cos(tilt)``
inches and the near edge at ``-x_hook / cos(tilt)``. The tape "leans" when |tilt| > 5 deg.
The target is +/- 1.5 in of tape around the crossing; the detail that must resolve is 1/8 in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from truthline.scenes._textures import Texture, frac8, tape_texture
from truthline.scenes._types import register_environment
from truthline.systems.realitybench.envs._common import (
    IN,
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

TAPE_LEN_IN = 30
MODULE_TOP_Z = 0.05
MODULE_W = 1.0
MODULE_L = 1.7
TILT_LEANS_DEG = 5.0


def crossing_reading(gap_in: float, hook_in: float, tilt_deg: float) -> float:
    """Tape reading (in) where the centreline meets the far gap edge x = gap."""
    return (gap_in - hook_in) / math.cos(math.radians(tilt_deg))


@lru_cache(maxsize=1)
def _tape() -> Texture:
    return tape_texture(TAPE_LEN_IN, 128, 128)


@register_environment
class TapeGap(PlanarEnv):
    name = "tape_gap"
    version = "1"
    detail_ratio = 0.5
    dist_good = (0.2, 0.45)
    dist_bad = (1.1, 1.8)

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        # leaning tapes are a scene property, not a bad factor: a third of frames lean
        lean = rng.random() < 1 / 3
        tilt = u(rng, 6.0, 14.0) * (1 if rng.random() < 0.5 else -1) if lean else u(rng, -3.5, 3.5)
        return {
            "gap_in": round(u(rng, 0.25, 1.5), 4),
            "hook_in": round(-u(rng, 3.0, 9.0), 4),
            "tilt_deg": round(tilt, 3),
            "y_in": round(u(rng, -4.0, 4.0), 3),
        }

    def _dir(self, params: Mapping[str, Any]) -> np.ndarray:
        t = math.radians(params["scene"]["tilt_deg"])
        return np.array([math.cos(t), math.sin(t), 0.0])

    def _hook(self, params: Mapping[str, Any]) -> np.ndarray:
        s = params["scene"]
        return np.array([s["hook_in"] * IN, s["y_in"] * IN, MODULE_TOP_Z + 0.0008])

    def reading(self, params: Mapping[str, Any]) -> float:
        s = params["scene"]
        return crossing_reading(s["gap_in"], s["hook_in"], s["tilt_deg"])

    def target(self, params: Mapping[str, Any]) -> Plane:
        d = self._dir(params)
        c = self._hook(params) + d * self.reading(params) * IN
        return plane(c, (0, 0, 1), d, 1.5 * IN, 0.5 * IN, IN / 8, d)

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        s = params["scene"]
        r = self.reading(params)
        near = crossing_reading(0.0, s["hook_in"], s["tilt_deg"])
        return {
            "reading_at_crossing_in": round(r, 6),
            "reading_frac8": frac8(r),
            "reading_at_near_edge_in": round(near, 6),
            "gap_in": s["gap_in"],
            "gap_quarter_in": round(s["gap_in"] * 4) / 4,
            "tilt_deg": s["tilt_deg"],
            "is_tilted": abs(s["tilt_deg"]) > TILT_LEANS_DEG,
            "crossing_world": self.target(params).centre.round(6).tolist(),
        }

    def texture(self, params: Mapping[str, Any]) -> Texture:
        return _tape()

    def target_image(self, params: Mapping[str, Any]) -> np.ndarray:
        r = self.reading(params)
        a = np.asarray(_tape().image)
        return a[:, round((r - 1.5) * 128) : round((r + 1.5) * 128)]

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        g = params["scene"]["gap_in"] * IN
        roof = bpy_material("shingle", (0.18, 0.16, 0.15), rough=0.9)
        cell = bpy_material("cells", (0.02, 0.03, 0.08), rough=0.3)
        alu = bpy_material("alu", (0.6, 0.6, 0.62), rough=0.35)
        bpy_box("roof", Box((0, 0, -0.05), (4, 4, 0.02)), roof)
        for name, x0 in (("module_near", -MODULE_W), ("module_far", g)):
            c = (x0 + MODULE_W / 2, 0.0, MODULE_TOP_Z - 0.02)
            bpy_box(name, Box(c, (MODULE_W / 2, MODULE_L / 2, 0.02)), cell)
            bpy_box(
                name + "_frame",
                Box(
                    (c[0], c[1], c[2] - 0.005), (MODULE_W / 2 + 0.004, MODULE_L / 2 + 0.004, 0.018)
                ),
                alu,
            )
        for y in (-0.45, 0.45):
            bpy_box(f"rail_{y}", Box((0, y, 0.0), (1.5, 0.02, 0.02)), alu)
        d = self._dir(params)
        hook = self._hook(params)
        tape = plane(
            hook + d * TAPE_LEN_IN * IN / 2, (0, 0, 1), d, TAPE_LEN_IN * IN / 2, 0.5 * IN, IN / 8
        )
        bpy_quad("target", tape.corners(), bpy_material("tape", image=tex_path, rough=0.4))
        bpy_box(
            "hook",
            Box(
                tuple(hook - d * 0.002 + np.array([0, 0, -0.004])),
                (0.002, 0.014, 0.006),
                math.degrees(math.atan2(d[1], d[0])),
            ),
            alu,
        )
        case_c = hook + d * (TAPE_LEN_IN * IN + 0.04) + np.array([0, 0, 0.03])
        bpy_box(
            "case",
            Box(tuple(case_c), (0.04, 0.035, 0.035), math.degrees(math.atan2(d[1], d[0]))),
            bpy_material("case", (0.8, 0.1, 0.05)),
        )
        return {"target": "target"}

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [
            q(
                "tape_reading",
                "What does the tape read where it crosses the far edge of the gap, in inches?",
                gt["reading_at_crossing_in"],
                "number",
                tolerance=0.125,
                unit="in",
                answer_text=gt["reading_frac8"],
            ),
            q(
                "gap",
                "How wide is the gap between the modules, in inches?",
                gt["gap_in"],
                "number",
                tolerance=0.25,
                unit="in",
            ),
            q(
                "tape_leans",
                "Does the tape lean instead of running square across the gap?",
                gt["is_tilted"],
                "boolean",
            ),
        ]
