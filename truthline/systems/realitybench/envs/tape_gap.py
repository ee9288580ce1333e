"""tape_gap: a tape measure hooked on one solar module and laid across the gap to the next.

Ground truth is analytic (SCENES.md B): with the gap's near edge at x = 0 and its far edge
at x = g, the hook at x_hook < 0 and the tape turned ``tilt`` degrees in the module plane,
the tape's centreline crosses the far edge at reading ``t = (g - x_hook) / cos(tilt)``
inches and the near edge at ``-x_hook / cos(tilt)``. The tape "leans" when |tilt| > 5 deg.
The target is +/- 1.5 in of tape around the crossing; the detail that must resolve is 1/8 in.

Requirement (RealityBench Table 1): a photo of the tape measure hooked on one module and run
across the gap to the next, close enough to read the tape to 1/8 in where it crosses the far
module's edge, in focus and unobstructed, with the tape square across the gap (within 5 deg
of upright in the module plane): a leaning tape is not proof of the gap.

The roof, rails and modules come from ``_roof``: each frame's top lip ends exactly on the
module edge (its wall is set back beneath), so the visible gap edges are x = 0 and x = g.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from truthline.scenes._textures import Texture, frac8, tape_texture
from truthline.scenes._types import register_environment
from truthline.systems.realitybench.envs import _roof
from truthline.systems.realitybench.envs._common import (
    CAMERA_FACTORS,
    EFFECT_FACTORS,
    IN,
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

TAPE_LEN_IN = 30
MODULE_TOP_Z = _roof.MODULE_TOP_Z
MODULE_W = 1.0
MODULE_L = 1.7
RAILS_Y = (-0.45, 0.45)
TILT_LEANS_DEG = 5.0
TILT_GRAY_DEG = (4.0, 6.0)


def crossing_reading(gap_in: float, hook_in: float, tilt_deg: float) -> float:
    """Tape reading (in) where the centreline meets the far gap edge x = gap."""
    return (gap_in - hook_in) / math.cos(math.radians(tilt_deg))


@lru_cache(maxsize=1)
def _tape() -> Texture:
    return tape_texture(TAPE_LEN_IN, 128, 128)


@register_environment
class TapeGap(RequirementTerms, PlanarEnv):
    name = "tape_gap"
    version = "2"
    detail_ratio = 0.5
    dist_good = (0.2, 0.45)
    dist_bad = (1.1, 1.8)
    # "lean": the tape run more than 5 deg off square across the gap (a requirement failure)
    factors = CAMERA_FACTORS + EFFECT_FACTORS + ("lean",)
    p_clean = 0.45

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        lean = "lean" in bad
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

    def requirement_terms(self, gt: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        return {"tape_upright": env_term(abs(gt["tilt_deg"]), TILT_LEANS_DEG, "<=", TILT_GRAY_DEG)}

    def layout(self, params: Mapping[str, Any]) -> _roof.Layout:
        """Two modules either side of the gap, on two rails, over a shingled roof."""
        g = params["scene"]["gap_in"] * IN
        x0, x1 = -MODULE_W - 0.05, g + MODULE_W + 0.05
        return _roof.Layout(
            x_range=(-1.6, g + 1.6),
            y_range=(-1.3, 1.3),
            rails_y=RAILS_Y,
            rail_x=(x0, x1),
            modules=(
                _roof.Module(-MODULE_W, 0.0, -MODULE_L / 2, MODULE_L / 2),
                _roof.Module(g, g + MODULE_W, -MODULE_L / 2, MODULE_L / 2),
            ),
            attachments=tuple(
                _roof.Attachment(x, r)
                for r in range(len(RAILS_Y))
                for x in _roof.rafter_xs(x0 + 0.1, x1 - 0.1)[::3]
            ),
            mid_clamps=((0.0, g),),
        )

    def texture(self, params: Mapping[str, Any]) -> Texture:
        return _tape()

    def target_image(self, params: Mapping[str, Any]) -> np.ndarray:
        r = self.reading(params)
        a = np.asarray(_tape().image)
        return a[:, round((r - 1.5) * 128) : round((r + 1.5) * 128)]

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        built = _roof.build_roof(self.layout(params), texture_dir(ctx))
        alu = bpy_material("hook_steel", (0.6, 0.6, 0.62), rough=0.35)
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
        return {"target": "target", "roof": built}

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
