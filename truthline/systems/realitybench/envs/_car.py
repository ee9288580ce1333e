"""The car proxy shared by plate, label_board, vehicle_face and damage_view: a body box, a
cabin box and four wheels, facing +Y, with named panels whose geometry is analytic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from truthline.systems.realitybench.envs._common import Box, bpy_box, bpy_material

CAR_LENGTH = 4.4
CAR_WIDTH = 1.8
BODY_Z = (0.3, 1.0)

# body style -> (cabin length, cabin height, cabin y offset, rear bed?)
BODY_STYLES: dict[str, tuple[float, float, float]] = {
    "sedan": (2.2, 0.45, -0.1),
    "hatchback": (2.4, 0.5, -0.6),
    "suv": (3.0, 0.65, -0.4),
    "pickup": (1.4, 0.6, 0.5),
}


@dataclass(frozen=True)
class Panel:
    """A named body panel: centre, outward normal, in-plane right axis, half sizes, face."""

    name: str
    face: str
    centre: tuple[float, float, float]
    normal: tuple[float, float, float]
    u: tuple[float, float, float]
    half_u: float
    half_v: float


def panels() -> list[Panel]:
    L2, W2 = CAR_LENGTH / 2, CAR_WIDTH / 2
    z0, z1 = BODY_Z
    zl, zh = (z0 + 0.2 + z1) / 2 - 0.12, (z0 + z1) / 2 + 0.1
    out = [
        Panel("front_bumper", "front", (0, L2, z0 + 0.12), (0, 1, 0), (-1, 0, 0), W2 - 0.05, 0.12),
        Panel("rear_bumper", "rear", (0, -L2, z0 + 0.12), (0, -1, 0), (1, 0, 0), W2 - 0.05, 0.12),
        Panel("hood", "top", (0, L2 - 0.55, z1), (0, 0, 1), (1, 0, 0), W2 - 0.1, 0.5),
        Panel("trunk", "top", (0, -L2 + 0.4, z1), (0, 0, 1), (1, 0, 0), W2 - 0.1, 0.35),
    ]
    for side, sx in (("left", -1), ("right", 1)):
        n = (sx, 0, 0)
        uu = (0, 1, 0) if sx > 0 else (0, -1, 0)  # "right" as seen from outside
        out += [
            Panel(f"{side}_front_fender", side, (sx * W2, L2 - 0.55, zh), n, uu, 0.45, 0.25),
            Panel(f"{side}_front_door", side, (sx * W2, 0.45, zl + 0.12), n, uu, 0.5, 0.3),
            Panel(f"{side}_rear_door", side, (sx * W2, -0.55, zl + 0.12), n, uu, 0.45, 0.3),
            Panel(f"{side}_rear_quarter", side, (sx * W2, -L2 + 0.55, zh), n, uu, 0.45, 0.25),
        ]
    return out


FACES = ("front", "rear", "left", "right")
FACE_NORMALS = {"front": (0, 1, 0), "rear": (0, -1, 0), "left": (-1, 0, 0), "right": (1, 0, 0)}


def face_rect(face: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """(centre, normal, u, half_u, half_v) of a whole side of the body box."""
    L2, W2 = CAR_LENGTH / 2, CAR_WIDTH / 2
    zc, zh = sum(BODY_Z) / 2, (BODY_Z[1] - BODY_Z[0]) / 2
    n = np.array(FACE_NORMALS[face], dtype=float)
    if face in ("front", "rear"):
        return n * L2 + [0, 0, zc], n, np.array([-n[1], 0.0, 0.0]), W2, zh
    return n * W2 + [0, 0, zc], n, np.array([0.0, n[0], 0.0]), L2, zh


def body_corners(style: str) -> np.ndarray:
    """The 8 corners of the body box and the 8 of the cabin (the car's extent)."""
    L2, W2 = CAR_LENGTH / 2, CAR_WIDTH / 2
    cl, ch, cy = BODY_STYLES[style]
    pts = [(sx * W2, sy * L2, z) for sx in (-1, 1) for sy in (-1, 1) for z in BODY_Z]
    pts += [
        (sx * (W2 - 0.1), cy + sy * cl / 2, z)
        for sx in (-1, 1)
        for sy in (-1, 1)
        for z in (BODY_Z[1], BODY_Z[1] + ch)
    ]
    return np.array(pts, dtype=float)


def build_car(style: str, colour: Sequence[float]) -> list[Any]:
    """The car in Blender (worker side): ground, body, cabin, glass, wheels."""
    cl, ch, cy = BODY_STYLES[style]
    paint = bpy_material("paint", colour, rough=0.35)
    glass = bpy_material("glass", (0.05, 0.06, 0.07), rough=0.1)
    tyre = bpy_material("tyre", (0.03, 0.03, 0.03), rough=0.8)
    ground = bpy_material("asphalt", (0.22, 0.22, 0.23), rough=0.9)
    z0, z1 = BODY_Z
    obs = [
        bpy_box("ground", Box((0, 0, -0.01), (30, 30, 0.01)), ground),
        bpy_box(
            "body",
            Box((0, 0, (z0 + z1) / 2), (CAR_WIDTH / 2, CAR_LENGTH / 2, (z1 - z0) / 2)),
            paint,
        ),
        bpy_box("cabin", Box((0, cy, z1 + ch / 2), (CAR_WIDTH / 2 - 0.1, cl / 2, ch / 2)), glass),
    ]
    for sx in (-1, 1):
        for sy in (-1, 1):
            obs.append(
                bpy_box(
                    f"wheel_{sx}_{sy}",
                    Box(
                        (sx * (CAR_WIDTH / 2 - 0.1), sy * (CAR_LENGTH / 2 - 0.8), 0.3),
                        (0.12, 0.3, 0.3),
                    ),
                    tyre,
                )
            )
    return obs
