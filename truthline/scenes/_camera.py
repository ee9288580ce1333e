"""Camera and DORI math, pure numpy (host-tested; the worker uses the same functions).

Conventions (Blender's): world Z up; a camera looks down its local −Z with local +Y up;
the sensor is fitted horizontally (``sensor_fit='HORIZONTAL'``, square pixels), so
``f_px = focal_mm / sensor_w_mm · res_x``. Pixel coordinates are x right, y down, origin at
the image's top-left corner, in pixel-edge units (the centre of pixel (0, 0) is (0.5, 0.5)),
the same as ``bpy_extras.object_utils.world_to_camera_view`` scaled by the resolution with
its y flipped.

DORI (IEC 62676-4 / BS EN 62676-4:2015): Identification 250, Recognition 125, Observation
62.5, Detection 25 px/m. Pixel density at distance D is ``PPM = f_px / D`` (the paper's
eq. 3, ``h_res / (2 D tan(VFOV/2))``, is the same quantity).

Which PPM table the SynDORBench distances assume: the IEC table above. The paper samples
"midpoint pixel-density regimes between adjacent DORI zones: 43.8, 93.8 and 187.5 px/m",
which are exactly (25+62.5)/2, (62.5+125)/2 and (125+250)/2, and converts them with its
eq. 4 to 23 m, 10.8 m and 5.4 m. Those three distances follow, to the stated precision,
from a vertical sensor-to-focal ratio of 15/14 (a 3.0 mm sensor height at f = 2.8 mm:
5.376 → 5.4, 10.752 → 10.8, 23.04 → 23.0), not from the 2.80 mm height of a nominal
1/2.8-inch 16:9 sensor (that gives 5.76/11.52/24.7 m). :data:`PAPER_CAMERA` therefore uses
a 5.333 × 3.0 mm sensor, so the formula PPM at the paper's distances is the paper's
187.5/93.75/43.8; either way the three distances fall in Recognition, Observation and
Detection.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from truthline.scenes._types import CameraPose, CameraSpec

DORI_PPM: dict[str, float] = {
    "identification": 250.0,
    "recognition": 125.0,
    "observation": 62.5,
    "detection": 25.0,
}
"""IEC 62676-4 minimum pixel densities (px/m) per DORI level, strictest first."""

PAPER_REGIME_PPM: tuple[float, float, float] = (187.5, 93.75, 43.75)
"""SynDORBench's midpoint densities between adjacent DORI zones (R/I, O/R, D/O)."""

PAPER_DISTANCES_M: tuple[float, float, float] = (5.4, 10.8, 23.0)
"""SynDORBench's calibrated distances for :data:`PAPER_REGIME_PPM`, as printed."""

PAPER_CAMERA = CameraSpec(
    sensor_w_mm=3.0 * 16 / 9,
    sensor_h_mm=3.0,
    focal_mm=2.8,
    res_x=1920,
    res_y=1080,
    fstop=1.4,
)
"""SynDORBench's camera: 1080p, f = 2.8 mm, f/1.4, and the 3.0 mm effective sensor height
that reproduces the paper's distances (see the module docstring)."""

NOMINAL_1_2_8_CAMERA = CameraSpec(
    sensor_w_mm=4.98, sensor_h_mm=2.80, focal_mm=2.8, res_x=1920, res_y=1080, fstop=1.4
)
"""A nominal 1/2.8-inch 16:9 sensor (4.98 × 2.80 mm) with the same lens, for comparison."""


def f_px(spec: CameraSpec, res_x: int | None = None) -> float:
    """Focal length in pixels at horizontal resolution ``res_x`` (default: the native one)."""
    return spec.focal_mm / spec.sensor_w_mm * (res_x or spec.res_x)


def hfov_deg(spec: CameraSpec) -> float:
    return math.degrees(2 * math.atan(spec.sensor_w_mm / (2 * spec.focal_mm)))


def vfov_deg(spec: CameraSpec) -> float:
    """Vertical FOV of the rendered frame (sensor height = width · res_y / res_x)."""
    h = spec.sensor_w_mm * spec.res_y / spec.res_x
    return math.degrees(2 * math.atan(h / (2 * spec.focal_mm)))


def ppm_at(spec: CameraSpec, distance_m: float, res_x: int | None = None) -> float:
    """Pixel density (px/m) of a plane facing the camera at ``distance_m`` (depth)."""
    if distance_m <= 0:
        raise ValueError(f"distance must be > 0, got {distance_m}")
    return f_px(spec, res_x) / distance_m


def distance_for_ppm(spec: CameraSpec, ppm: float) -> float:
    """The depth (m) at which the native image has ``ppm`` px/m (the paper's eq. 4)."""
    if ppm <= 0:
        raise ValueError(f"ppm must be > 0, got {ppm}")
    return f_px(spec) / ppm


def dori_distances(spec: CameraSpec) -> dict[str, float]:
    """The farthest distance (m) at which each DORI level is still met."""
    return {level: distance_for_ppm(spec, ppm) for level, ppm in DORI_PPM.items()}


def dori_class(ppm: float) -> str:
    """The strictest DORI level a pixel density meets, or ``"none"`` below Detection."""
    for level, need in DORI_PPM.items():
        if ppm >= need:
            return level
    return "none"


def hemisphere(
    target: ArrayLike,
    distance_m: float,
    azimuths_deg: Sequence[float],
    elevations_deg: Sequence[float],
) -> list[tuple[float, float, tuple[float, float, float]]]:
    """Camera positions on a hemisphere around ``target``: ``(az, el, position)`` for every
    azimuth × elevation. Azimuth 0 is in front of a subject facing −Y (the Rigify metarig's
    facing), increasing counter-clockwise seen from above; elevation 0 is level."""
    out = []
    for el in elevations_deg:
        for az in azimuths_deg:
            out.append((float(az), float(el), orbit_position(target, distance_m, az, el)))
    return out


def orbit_position(
    target: ArrayLike, distance_m: float, az_deg: float, el_deg: float
) -> tuple[float, float, float]:
    """One hemisphere position (see :func:`hemisphere`)."""
    az, el = math.radians(az_deg), math.radians(el_deg)
    t = np.asarray(target, dtype=float)
    d = np.array([math.sin(az) * math.cos(el), -math.cos(az) * math.cos(el), math.sin(el)])
    p = t + distance_m * d
    return (float(p[0]), float(p[1]), float(p[2]))


def azimuths(n: int) -> tuple[float, ...]:
    """``n`` evenly spaced azimuths starting at 0° (8 → every 45°)."""
    return tuple(360.0 * i / n for i in range(n))


def camera_to_world(pose: CameraPose) -> np.ndarray:
    """4×4 camera-to-world matrix: −Z towards ``look_at``, +Y as close to world +Z as the
    view allows (Blender's ``to_track_quat('-Z', 'Y')``), then ``roll_deg`` about the camera's local +Z."""
    pos = np.asarray(pose.position, dtype=float)
    fwd = np.asarray(pose.look_at, dtype=float) - pos
    n = np.linalg.norm(fwd)
    if n < 1e-12:
        raise ValueError("camera position and look_at coincide")
    fwd /= n
    up_world = np.array([0.0, 0.0, 1.0])
    if abs(fwd @ up_world) > 1 - 1e-9:  # looking straight up/down: pick world Y as up
        up_world = np.array([0.0, 1.0, 0.0])
    right = np.cross(fwd, up_world)
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    if pose.roll_deg:
        r = math.radians(pose.roll_deg)
        right, up = (
            math.cos(r) * right + math.sin(r) * up,
            -math.sin(r) * right + math.cos(r) * up,
        )
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = right, up, -fwd, pos
    return m


def to_camera(points: np.ndarray, pose: CameraPose) -> np.ndarray:
    """World points (N×3) in camera coordinates (N×3; visible points have z < 0)."""
    m = camera_to_world(pose)
    pts = np.atleast_2d(np.asarray(points, dtype=float))
    return (pts - m[:3, 3]) @ m[:3, :3]


def project(
    points: np.ndarray, spec: CameraSpec, pose: CameraPose, res: tuple[int, int] | None = None
) -> np.ndarray:
    """Pixel coordinates (N×2, x right, y down, top-left origin) and depth (N) of world points.

    Returns an N×3 array ``[x_px, y_px, depth_m]``; depth ≤ 0 means behind the camera.
    """
    rx, ry = res or (spec.res_x, spec.res_y)
    pc = to_camera(points, pose)
    depth = -pc[:, 2]
    fp = f_px(spec, rx)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = rx / 2 + fp * pc[:, 0] / depth
        y = ry / 2 - fp * pc[:, 1] / depth
    return np.column_stack([x, y, depth])


def bbox_px(
    points: np.ndarray, spec: CameraSpec, pose: CameraPose, res: tuple[int, int] | None = None
) -> list[float] | None:
    """``[x0, y0, x1, y1]`` of the projected points in front of the camera, clipped to the
    frame; None when none of them is in front or the box misses the frame."""
    rx, ry = res or (spec.res_x, spec.res_y)
    p = project(points, spec, pose, (rx, ry))
    p = p[p[:, 2] > 1e-6]
    if len(p) == 0:
        return None
    x0, y0 = max(0.0, float(p[:, 0].min())), max(0.0, float(p[:, 1].min()))
    x1, y1 = min(float(rx), float(p[:, 0].max())), min(float(ry), float(p[:, 1].max()))
    if x1 <= x0 or y1 <= y0:
        return None
    return [x0, y0, x1, y1]


def view_angle_deg(pose: CameraPose, point: ArrayLike, normal: ArrayLike) -> float:
    """Angle between a surface normal at ``point`` and the direction to the camera."""
    to_cam = np.asarray(pose.position, dtype=float) - np.asarray(point, dtype=float)
    n = np.asarray(normal, dtype=float)
    c = float(to_cam @ n / (np.linalg.norm(to_cam) * np.linalg.norm(n)))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))
