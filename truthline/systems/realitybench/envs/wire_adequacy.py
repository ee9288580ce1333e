"""wire_adequacy: a module lead run along a rail, photographed from downslope.

Requirement (RealityBench Table 1, wire adequacy): the wiring is secured off the roof
surface: clipped to the rail at every planned clip (here every 12 in), no span sagging onto
the shingles. The photo must show the run (two clip spacings) in frame, unobstructed, close
enough and low enough to see the wire's clearance above the shingles, in focus; a run with
a missing clip or a wire touching the roof is not acceptable proof.

Ground truth is exact from the curve the scene is built from (``_roof.wire_z``): each span
between present clips hangs as a parabola of its sag below the clips and rests on the
shingles where it would go lower; the wire touches the roof when a span's lowest point
reaches the shingle surface under it. Sags and missing clips are SIMULATED installation
states: tight spans, slack spans, and runs with a missing clip (a double-length span).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    env_term,
    plane,
    q,
    texture_dir,
    u,
)

IN = _roof.IN
CLIP_SPACING = 12 * IN
RAIL_Y = _roof.rail_y_for_feet(0, side=1)
RAILS_Y = (RAIL_Y, RAIL_Y + 8 * _roof.COURSE_M)
RAIL_X = (-2.6, 1.8)
MODULES = (_roof.Module(-2.6, -1.6, RAIL_Y - 0.36, RAIL_Y + 1.37),
           _roof.Module(-1.58, -0.58, RAIL_Y - 0.36, RAIL_Y + 1.37))  # fmt: skip
CLIP_XS = tuple(round(-0.5 + k * CLIP_SPACING, 6) for k in range(8))
RUN_STARTS = (1, 3)  # the photographed run: clips [s, s + 1, s + 2] (bare rail)
TIGHT_SAG = (0.004, 0.03)
SLACK_SAG = (0.08, 0.12)
LONG_SAG = (0.04, 0.12)  # a double span (its middle clip missing)
CLEARANCE_MIN_M = 0.005
PX_PER_CM = 20


@register_environment
class WireAdequacy(RequirementTerms, PlanarEnv):
    name = "wire_adequacy"
    version = "1"
    # "missing_clip": the run's middle clip is missing; "slack": one span sags onto the roof
    factors = CAMERA_FACTORS + EFFECT_FACTORS + ("missing_clip", "slack")
    p_clean = 0.42
    dist_good = (0.75, 1.1)
    dist_bad = (2.0, 2.8)
    view_good = (5.0, 40.0)  # from the horizontal towards the zenith: the clearance shows
    view_bad = (64.0, 82.0)
    around = (-30.0, 30.0)
    aim_good = 0.15
    cam_z = (0.06, 3.0)
    detail_ratio = 1.0
    # min_sharpness from paired Cycles frames (960x720, 4 spp): in focus 0.032-0.034, a
    # 1.2 px circle of confusion 0.030-0.031, 4-4.5 px 0.019-0.021
    thresholds = Thresholds(
        min_feature_px=5.0, max_distance_m=1.4, max_view_angle_deg=55.0, min_sharpness=0.026
    )

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        start = RUN_STARTS[int(rng.integers(len(RUN_STARTS)))]
        present = [True] * len(CLIP_XS)
        if "missing_clip" in bad:
            present[start + 1] = False
        nspans = sum(present) - 1
        sags = [u(rng, *TIGHT_SAG) for _ in range(nspans)]
        run_spans = [start] if "missing_clip" in bad else [start, start + 1]
        if "missing_clip" in bad:
            sags[start] = u(rng, *LONG_SAG)
        if "slack" in bad:
            sags[run_spans[int(rng.integers(len(run_spans)))]] = u(rng, *SLACK_SAG)
        return {
            "run_start": int(start),
            "clips_present": present,
            "sags": [round(s, 5) for s in sags],
        }

    def layout(self, params: Mapping[str, Any]) -> _roof.Layout:
        s = params["scene"]
        wire = _roof.Wire(0, CLIP_XS, tuple(s["clips_present"]), tuple(s["sags"]))
        atts = tuple(
            _roof.Attachment(x, r, side=1)
            for r in range(len(RAILS_Y))
            for x in _roof.rafter_xs(RAIL_X[0] + 0.1, RAIL_X[1] - 0.1)[::3]
        )
        return _roof.Layout(
            x_range=(-2.8, 2.2),
            y_range=(-1.0, 1.9),
            rails_y=RAILS_Y,
            rail_x=RAIL_X,
            modules=MODULES,
            attachments=atts,
            wire=wire,
            mid_clamps=((MODULES[0].x1, MODULES[1].x0),),
        )

    def run_x(self, params: Mapping[str, Any]) -> tuple[float, float]:
        s = params["scene"]["run_start"]
        return CLIP_XS[s], CLIP_XS[s + 2]

    def target(self, params: Mapping[str, Any]) -> Plane:
        """The run seen from downslope: a vertical patch through the wire, from the shingles
        to just above the clips."""
        lay = self.layout(params)
        assert lay.wire is not None
        x0, x1 = self.run_x(params)
        z0 = _roof.SHINGLE_HI + 0.001  # clear of the shingle butts in front of the wire
        z1 = _roof.CLIP_Z + 0.012
        return plane(
            ((x0 + x1) / 2, _roof.wire_y(lay, lay.wire) - _roof.WIRE_R, (z0 + z1) / 2),
            (0, -1, 0),
            (1, 0, 0),
            (x1 - x0) / 2,
            (z1 - z0) / 2,
            0.01,
            (0, 0, 1),
        )

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        lay = self.layout(params)
        w = lay.wire
        assert w is not None
        x0, x1 = self.run_x(params)
        xs = np.linspace(x0, x1, 2001)
        z = _roof.wire_z(lay, w, xs)
        i = int(np.argmin(z))
        floor = _roof.wire_floor_z(lay, w)
        spans = [sp for sp in _roof.wire_spans(w) if x0 - 1e-9 <= sp[0] and sp[1] <= x1 + 1e-9]
        free_low = min(_roof.CLIP_Z - s for _, _, s in spans)
        clips = [
            p
            for x, p in zip(w.clip_xs, w.clips_present, strict=True)
            if x0 - 1e-9 <= x <= x1 + 1e-9
        ]
        return {
            "wire": {
                "y": round(_roof.wire_y(lay, w), 6),
                "clip_z": _roof.CLIP_Z,
                "radius_m": _roof.WIRE_R,
                "floor_z": round(floor, 6),
                "roof_z": round(floor - _roof.WIRE_R, 6),
                "run_x": [x0, x1],
                "spans": [[round(a, 6), round(b, 6), s] for a, b, s in spans],
                "lowest": [round(float(xs[i]), 6), round(float(z[i]), 6)],
                "clearance_m": round(max(0.0, free_low - floor), 6),
                "clips_in_run": clips,
            },
            "wire_touches_roof": bool(free_low <= floor),
            "wire_secured": bool(all(clips)),
        }

    def requirement_terms(self, gt: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        w = gt["wire"]
        return {
            "wire_secured": env_term(1.0 if gt["wire_secured"] else 0.0, 1.0, ">="),
            "wire_clearance": env_term(
                w["clearance_m"], CLEARANCE_MIN_M, ">=", (0.0, 2 * CLEARANCE_MIN_M)
            ),
        }

    def texture(self, params: Mapping[str, Any]) -> Texture:
        return _roof.cell_texture()

    def target_image(self, params: Mapping[str, Any]) -> np.ndarray:
        """A front drawing of the patch: the rail's face at the top, the wire's curve and
        clips, the shingles' butt at the bottom (the proxy render's stand-in)."""
        gt = self.env_gt(params)["wire"]
        t = self.target(params)
        k = PX_PER_CM * 100
        w, h = round(2 * t.half_u * k), round(2 * t.half_v * k)
        rng = np.random.default_rng(0)
        grain = rng.normal(0, 12, (h, w, 1)) + np.array([44.0, 42, 40])
        img = Image.fromarray(np.clip(grain, 0, 255).astype(np.uint8))
        d = ImageDraw.Draw(img)
        ztop = t.centre[2] + t.half_v
        x0 = t.centre[0] - t.half_u

        def py(z: float) -> float:
            return (ztop - z) * k

        d.rectangle([0, 0, w, py(_roof.RAIL_Z0)], fill=(165, 167, 172))
        lay = self.layout(params)
        assert lay.wire is not None
        xs = np.linspace(x0, x0 + 2 * t.half_u, w)
        zs = _roof.wire_z(lay, lay.wire, xs)
        pts = [((x - x0) * k, py(z)) for x, z in zip(xs, zs, strict=True)]
        d.line(pts, fill=(8, 8, 8), width=max(1, round(2 * _roof.WIRE_R * k)))
        for x, p in zip(CLIP_XS, params["scene"]["clips_present"], strict=True):
            if p and gt["run_x"][0] - 1e-9 <= x <= gt["run_x"][1] + 1e-9:
                cx = (x - x0) * k
                d.rectangle([cx - 0.006 * k, py(_roof.CLIP_Z + 0.004), cx + 0.006 * k,
                             py(_roof.CLIP_Z - 0.004)], fill=(160, 160, 165))  # fmt: skip
        return np.asarray(img)

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        return {"roof": _roof.build_roof(self.layout(params), texture_dir(ctx))}

    def build(self, ctx: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        """As :class:`PlanarEnv`, with the visible mask showing the wire."""
        h = super().build(ctx, params)
        if hasattr(ctx, "mask_objects"):
            ctx.mask_objects = ["wire"]
        return h

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [
            q(
                "wire_touches_roof",
                "Does the wire touch the roof surface anywhere in this run?",
                gt["wire_touches_roof"],
                "boolean",
            ),
            q(
                "wire_secured",
                "Is the wire clipped at every clip point along this run (no clip missing)?",
                gt["wire_secured"],
                "boolean",
            ),
        ]
