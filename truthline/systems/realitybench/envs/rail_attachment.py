"""rail_attachment: one L-foot attachment of a rail to the roof, photographed before the
modules go over it.

Requirement (RealityBench Table 1, glossary): photograph each attachment: the L-foot
lag-bolted through flashing into the rafter, the flashing slipped under the shingle course
above (only its lower part exposed). The photo must show the whole attachment (foot,
flashing, lag bolt) in frame, unobstructed, close enough that the lag bolt's head resolves,
not too oblique, in focus; an attachment with a missing part, or flashing laid on top of the
shingles instead of under them, is not acceptable proof.

Ground truth is the scene state ``_roof`` builds from: per attachment which parts are there
(SIMULATED installation defects at a useful rate) and whether the flashing slides under the
next course. ``missing_parts`` lists the photographed attachment's missing parts (empty when
complete).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from truthline.scenes._accept import Thresholds
from truthline.scenes._textures import Texture
from truthline.scenes._types import register_environment
from truthline.systems.realitybench.envs import _roof
from truthline.systems.realitybench.envs._common import (
    CAMERA_FACTORS,
    EFFECT_FACTORS,
    PlanarEnv,
    Plane,
    RequirementTerms,
    bpy_occlusion,
    env_term,
    plane,
    q,
    texture_dir,
)

RAILS_Y = (_roof.rail_y_for_feet(0), _roof.rail_y_for_feet(8))
RAIL_X = (-2.6, 1.6)
MODULES = (_roof.Module(-2.6, -1.6, -0.24, 1.49), _roof.Module(-1.58, -0.58, -0.24, 1.49))
ATTACH_XS = tuple(_roof.rafter_xs(RAIL_X[0] + 0.1, RAIL_X[1] - 0.1)[::3])
BARE = tuple(i for i, x in enumerate(ATTACH_XS) if x > MODULES[-1].x1 + 0.2)
"""Attachments on the lower rail not yet under a module: the ones photographed."""
MISSING_WEIGHTS = {"lag_bolt": 0.5, "flashing": 0.25, "l_foot": 0.25}
PX_PER_IN = 40
MARGIN = 1.0 * _roof.IN  # shingles around the flashing in the target patch


def _missing(rng: np.random.Generator) -> list[str]:
    parts = list(MISSING_WEIGHTS)
    return [str(rng.choice(parts, p=list(MISSING_WEIGHTS.values())))]


@register_environment
class RailAttachment(RequirementTerms, PlanarEnv):
    name = "rail_attachment"
    version = "1"
    # "missing_part": the photographed attachment lacks a part; "flashing_on_top": its
    # flashing is laid over the shingles (both requirement failures)
    factors = CAMERA_FACTORS + EFFECT_FACTORS + ("missing_part", "flashing_on_top")
    p_clean = 0.4
    dist_good = (0.3, 0.8)
    dist_bad = (1.7, 2.6)
    view_good = (0.0, 45.0)
    view_bad = (64.0, 80.0)
    around = (120.0, 240.0)  # from downslope: the rail and leg are behind the bolt
    aim_good = 0.25
    detail_ratio = 0.5
    # min_sharpness from paired Cycles frames (960x720, 4 spp): in focus 0.013-0.015, a 2-3 px
    # circle of confusion 0.012-0.013, 6-10 px 0.005-0.007 (the proxy reads ~1.6x higher)
    thresholds = Thresholds(
        min_feature_px=8.0, max_distance_m=1.2, max_view_angle_deg=55.0, min_sharpness=0.0105
    )

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        others = {
            str(i): (_missing(rng) if rng.random() < 0.25 else []) for i in range(len(ATTACH_XS))
        }
        target = BARE[int(rng.integers(len(BARE)))]
        others[str(target)] = _missing(rng) if "missing_part" in bad else []
        on_top = "flashing_on_top" in bad and "flashing" not in others[str(target)]
        return {"target": int(target), "missing": others, "flashing_on_top": bool(on_top)}

    def layout(self, params: Mapping[str, Any]) -> _roof.Layout:
        s = params["scene"]
        atts = []
        for i, x in enumerate(ATTACH_XS):
            miss = s["missing"][str(i)]
            for r in range(len(RAILS_Y)):
                gone = miss if r == 0 else []
                atts.append(
                    _roof.Attachment(
                        x,
                        r,
                        l_foot="l_foot" not in gone,
                        flashing="flashing" not in gone,
                        lag_bolt="lag_bolt" not in gone,
                        flashing_under_shingles=not (
                            r == 0 and i == s["target"] and s["flashing_on_top"]
                        ),
                    )
                )
        return _roof.Layout(
            x_range=(-2.8, 2.0),
            y_range=(-0.9, 1.9),
            rails_y=RAILS_Y,
            rail_x=RAIL_X,
            modules=MODULES,
            attachments=tuple(atts),
            mid_clamps=((MODULES[0].x1, MODULES[1].x0),),
        )

    def attachment(self, params: Mapping[str, Any]) -> tuple[_roof.Layout, int, _roof.Attachment]:
        lay = self.layout(params)
        k = 2 * int(params["scene"]["target"])  # rail 0 of that rafter
        return lay, k, lay.attachments[k]

    def target(self, params: Mapping[str, Any]) -> Plane:
        """The exposed attachment seen from above: flashing's lower edge to the rail's face."""
        lay, _, a = self.attachment(params)
        lo, _ = _roof.flashing_y(lay, a)
        lo -= MARGIN
        hi = lay.rails_y[a.rail] - _roof.RAIL_W / 2
        # the foot's top as installed (flashing in): the patch does not move with the defects
        z = _roof.base_z(lay, replace(a, flashing=True)) + _roof.FOOT_BASE[2]
        return plane(
            (a.x, (lo + hi) / 2, z),
            (0, 0, 1),
            (1, 0, 0),
            _roof.FLASH_W / 2 + MARGIN,
            (hi - lo) / 2,
            _roof.BOLT_HEAD_M,
        )

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        lay, k, a = self.attachment(params)
        return {
            "attachment": {
                "index": k,
                "x": a.x,
                "parts": {p: getattr(a, p) for p in _roof.PARTS},
                "missing_parts": a.missing(),
                "flashing_under_shingles": a.flashing_under_shingles if a.flashing else None,
                "part_points": {
                    p: v.round(6).tolist() for p, v in _roof.part_points(lay, a).items()
                },
            },
            "attachments": [
                {"x": b.x, "rail": b.rail, "missing_parts": b.missing()} for b in lay.attachments
            ],
            "lag_bolt": a.lag_bolt,
            "missing_parts": a.missing(),
            "flashing_under_shingles": bool(a.flashing and a.flashing_under_shingles),
        }

    def requirement_terms(self, gt: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        att = gt["attachment"]
        return {
            "parts_complete": env_term(len(att["missing_parts"]), 0, "<="),
            "flashing_under_shingles": env_term(
                0.0 if att["flashing_under_shingles"] is False else 1.0, 1, ">="
            ),
        }

    def texture(self, params: Mapping[str, Any]) -> Texture:
        return _roof.cell_texture()

    def target_image(self, params: Mapping[str, Any]) -> np.ndarray:
        """A top-down drawing of the target patch (the proxy render's stand-in)."""
        lay, _, a = self.attachment(params)
        t = self.target(params)
        w, h = (
            round(2 * t.half_u / _roof.IN * PX_PER_IN),
            round(2 * t.half_v / _roof.IN * PX_PER_IN),
        )
        rng = np.random.default_rng(0)
        grain = rng.normal(0, 14, (h, w, 1)) + np.array([46.0, 43, 41])
        img = Image.fromarray(np.clip(grain, 0, 255).astype(np.uint8))
        d = ImageDraw.Draw(img)
        top = t.centre[1] + t.half_v

        def box(x0: float, x1: float, y0: float, y1: float, fill: tuple[int, int, int]) -> None:
            k = PX_PER_IN / _roof.IN
            d.rectangle(
                [
                    (x0 - a.x + t.half_u) * k,
                    (top - y1) * k,
                    (x1 - a.x + t.half_u) * k,
                    (top - y0) * k,
                ],
                fill=fill,
            )

        lo, butt = _roof.flashing_y(lay, a)
        box(a.x - t.half_u, a.x + t.half_u, butt - 0.002, butt, (12, 12, 12))  # butt shadow
        if a.flashing:
            box(a.x - _roof.FLASH_W / 2, a.x + _roof.FLASH_W / 2, lo, butt, (120, 120, 124))
        fy = _roof.foot_y(lay, a)
        if a.l_foot:
            hx, hy = _roof.FOOT_BASE[0] / 2, _roof.FOOT_BASE[1] / 2
            box(a.x - hx, a.x + hx, fy - hy, fy + hy, (175, 176, 182))
        bx, by = _roof.bolt_xy(lay, a)
        r = _roof.WASHER_R if a.lag_bolt else 0.2 * _roof.IN
        box(bx - r, bx + r, by - r, by + r, (150, 152, 150) if a.lag_bolt else (5, 5, 5))
        return np.asarray(img)

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        return {"roof": _roof.build_roof(self.layout(params), texture_dir(ctx))}

    def part_names(self, handles: Mapping[str, Any], params: Mapping[str, Any]) -> list[str]:
        _, k, _ = self.attachment(params)
        return list(handles["roof"]["attachments"][str(k)])

    def build(self, ctx: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        """As :class:`PlanarEnv`, with the visible mask showing the photographed
        attachment's parts (or only ``params["mask_part"]``'s object: per-part ID masks)."""
        h = super().build(ctx, params)
        names = self.part_names(h, params)
        part = params.get("mask_part")
        if part is not None:
            names = [n for n in names if n.endswith("_" + str(part))]
        if hasattr(ctx, "mask_objects"):
            ctx.mask_objects = names
        return h

    def extract(self, ctx: Any, params: Mapping[str, Any], handles: Any) -> dict[str, Any]:
        gt = super().extract(ctx, params, handles)
        _, pose = self.spec_pose(params)
        gt["occlusion"] = bpy_occlusion(
            pose.position, self.target(params).grid(), self.part_names(handles, params)
        )
        return gt

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [
            q(
                "lag_bolt",
                "Is a lag bolt installed through the L-foot at this attachment?",
                gt["lag_bolt"],
                "boolean",
            ),
            q(
                "missing_parts",
                "Which parts of this attachment are missing (L-foot, flashing, lag bolt)? "
                "Answer with an empty list if none is missing.",
                gt["missing_parts"],
                "multi_choice",
                choices=list(_roof.PARTS),
            ),
            q(
                "flashing_under_shingles",
                "Does the flashing slide under the shingle course above it?",
                gt["flashing_under_shingles"],
                "boolean",
            ),
        ]
