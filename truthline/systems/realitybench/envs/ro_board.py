"""ro_board: the repair-order board photographed with the car it belongs to.

Requirement: "The repair-order board must be photographed with the car it identifies: the
RO number and the VIN readable — board in frame and unobstructed, characters large and
sharp enough, not viewed too obliquely — and the car visible beside the board."

Scene: a car (``_car.build_car``, any of the four body styles) and, 0.3 m ahead of and
0.35 m beside the front-right corner of the largest style, a 500 x 300 mm white board on an
easel, facing forward. Ground truth: the rows as drawn (RO number, VIN), every string's ink
box in texture pixels, the board's pixel polygon, and how much of the frame the car covers
(its projected bounding box from the builder's vertices, clipped to the frame, less what
the board in front of it hides).
The paper withdrew 29 ro_board frames for a board-texture defect: :meth:`sanity` finds
such frames (the board not showing its texture where it projects, clipped text, a blank
frame).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from truthline.scenes._accept import clip_to_frame, polygon_area
from truthline.scenes._camera import project
from truthline.scenes._textures import (
    PLATE_DIGITS,
    serial_string,
    vin_string,
)
from truthline.scenes._types import Acceptability, register_environment
from truthline.systems.realitybench.envs._car import STYLES as BODIES
from truthline.systems.realitybench.envs._car import build_car, car_vertices
from truthline.systems.realitybench.envs._common import (
    Box,
    bpy_box,
    bpy_material,
    bpy_quad,
    q,
    u,
)
from truthline.systems.realitybench.envs.label_board import LabelEnv, extra_term, with_terms

FIELDS = {"RO": "ro_number", "VIN": "vin"}
MIN_CAR_SHARE = 0.08
"""The car must cover at least this share of the frame (it is in the photo, recognisably)."""
STYLES = ("sedan", "hatchback", "suv", "pickup")


BOARD_X = max(b.width for b in BODIES.values()) / 2 + 0.35
BOARD_Y = max(b.length for b in BODIES.values()) / 2 + 0.3
"""The board stands 0.3 m ahead of and 0.35 m beside the front-right corner of the largest
body style, so it clears every car (a pickup's bumper included)."""


@lru_cache(maxsize=8)
def car_box(style: str = "sedan") -> np.ndarray:
    """The 8 corners of the car's bounding box, from the builder's own vertices."""
    v = car_vertices(style)
    lo, hi = v.min(axis=0), v.max(axis=0)
    return np.array(
        [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )


def hull_share(
    pts: np.ndarray, w: int, h: int, front: np.ndarray | None = None, scale: float = 0.25
) -> float:
    """Share of the frame covered by the convex hull of projected points (all in front of
    the camera), less what polygon ``front`` (the board, nearer than the car) hides; on a
    raster at ``scale`` of the frame."""
    import cv2

    if len(pts) == 0 or (pts[:, 2] <= 0).any():
        return 0.0
    hull = cv2.convexHull(pts[:, :2].astype(np.float32)).reshape(-1, 2)
    if front is None or not np.isfinite(front).all():
        return polygon_area(clip_to_frame(hull, w, h)) / (w * h)
    sw, sh = max(1, round(w * scale)), max(1, round(h * scale))
    car = np.zeros((sh, sw), np.uint8)
    cv2.fillPoly(car, [np.round(hull * scale).astype(np.int32)], 1)
    cv2.fillPoly(car, [np.round(np.asarray(front)[:, :2] * scale).astype(np.int32)], 0)
    return float(car.mean())


@register_environment
class RoBoard(LabelEnv):
    name = "ro_board"
    version = "2"
    size_m = (0.5, 0.3)
    tex_px = (800, 480)
    centre = (BOARD_X, BOARD_Y, 1.0)
    normal = (0.0, 1.0, 0.0)
    right = (-1.0, 0.0, 0.0)
    around = (-70.0, 20.0)  # from the board's up axis towards its right (the car's side)
    cam_z = (0.4, 2.3)

    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        return {
            "title": "REPAIR ORDER",
            "rows": [["RO", serial_string(rng, 6, PLATE_DIGITS)], ["VIN", vin_string(rng)]],
            "body": STYLES[int(rng.integers(len(STYLES)))],
            "colour": [round(u(rng, 0.05, 0.8), 3) for _ in range(3)],
        }

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {**super().env_gt(params), "body_style": params["scene"]["body"]}

    def host_gt(
        self, params: Mapping[str, Any], res: Sequence[int] | None = None
    ) -> dict[str, Any]:
        gt = super().host_gt(params, res)
        spec, pose = self.spec_pose(params, res)
        pts = project(car_box(str(params["scene"]["body"])), spec, pose, (spec.res_x, spec.res_y))
        board = np.asarray(gt["target"]["polygon_px"], dtype=float)
        gt["car_frame_share"] = round(hull_share(pts, spec.res_x, spec.res_y, board), 4)
        return gt

    def _car_term(self, gt: Mapping[str, Any], acc: Acceptability) -> Acceptability:
        return with_terms(
            acc, {"car_in_frame": extra_term(gt["car_frame_share"], MIN_CAR_SHARE, ">=")}
        )

    def score(self, gt: Mapping[str, Any], image: Any) -> Acceptability:
        return self._car_term(gt, super().score(gt, image))

    def proxy_score(self, params: Mapping[str, Any], seed: int = 0) -> Acceptability:
        return self._car_term(self.host_gt(params), super().proxy_score(params, seed))

    def build_scene(self, ctx: Any, params: Mapping[str, Any], tex_path: str) -> dict[str, Any]:
        s = params["scene"]
        t = self.target(params)
        build_car(s["body"], tuple(s["colour"]))
        wood = bpy_material("easel", (0.35, 0.25, 0.15), rough=0.8)
        back = t.centre - t.normal * 0.012
        bpy_box(
            "board_back",
            Box(tuple(back), (t.half_u + 0.015, 0.01, t.half_v + 0.015)),
            bpy_material("frame", (0.1, 0.1, 0.1)),
        )
        for sx in (-1, 1):  # two legs, behind the board
            c = back - t.normal * 0.03 + sx * t.u * (t.half_u - 0.05) - [0, 0, 0.5]
            bpy_box(f"easel_{sx}", Box(tuple(c), (0.015, 0.015, 0.5)), wood)
        bpy_quad("target", t.corners(), bpy_material("board", image=tex_path, rough=0.5))
        return {"target": "target"}

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        names = {"RO": "repair-order (RO) number", "VIN": "VIN"}
        return [
            q(FIELDS[k], f"What is the {names[k]} on the repair-order board?", v, "reading")
            for k, v in gt["rows"].items()
        ]
