"""The procedural car shared by plate, ro_board, vehicle_face and damage_view: four body
styles (sedan, hatchback, SUV, pickup) built from numbers alone, facing +Y, wheels on z=0.

Each style is a side profile (the lower body with wheel arches, and a tapered greenhouse)
extruded across the car, plus bumpers, grille, lights, glass, mirrors, door seams and
wheels (tyre and rim). Every mesh is generated here in numpy (:func:`car_parts`), so the
host computes the car's projected bounding box, its visible faces and the damage/plate
positions from the same vertices the worker hands to Blender. The worker only adds cosmetic
bevels (which move the silhouette inward by under 1.5 cm) and materials.

Each mesh face carries a face class (front/rear/left/right/top/bottom/other, from its
normal or set explicitly); ``build_car(..., id_pass=True)`` paints the classes in flat ID
colours so a test can measure which faces a frame shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

BUMPER = 0.05  # how far a bumper stands proud of the body's end (m)
BUMPER_BEVEL = 0.025
PAINT_ROUGH, PAINT_COAT = 0.3, 0.6
HANDLE_DROP = 0.12  # door handles' bottom below the cowl (m)
PATCH_HALF = 0.15  # the damage patch is 30 cm square (``_textures.damage_texture``)
PATCH_LIFT = 0.001  # how far it stands off the paint: no z-fighting, no visible step
FACES = ("front", "rear", "left", "right")
FACE_NORMALS = {"front": (0, 1, 0), "rear": (0, -1, 0), "left": (-1, 0, 0), "right": (1, 0, 0)}
ID_COLOURS: dict[str, tuple[float, float, float]] = {
    "front": (1.0, 0.0, 0.0),
    "rear": (0.0, 1.0, 0.0),
    "left": (0.0, 0.0, 1.0),
    "right": (1.0, 0.0, 1.0),
    "top": (0.0, 1.0, 1.0),
    "bottom": (0.5, 0.5, 0.5),
    "other": (0.5, 0.5, 0.5),
}
"""Flat colours of the face classes in the ID pass (hues 60 deg apart; grey = unlabelled)."""

Pt = tuple[float, float]


@dataclass(frozen=True)
class Style:
    """One body style. Profiles are (y, z) points; ``top`` runs from the front face's bottom
    up over the hood, the belt (and trunk/bed) and down the rear face; ``glass`` is the
    greenhouse from the cowl over the roof to the rear window's base (both ends on ``top``)."""

    name: str
    length: float  # overall, bumpers included
    width: float  # body, mirrors excluded
    height: float
    wheelbase: float
    front_overhang: float
    wheel_r: float
    clearance: float
    top: tuple[Pt, ...]
    glass: tuple[Pt, ...]
    pillars: tuple[float, ...]  # y of the pillars between side windows
    bumper_z: tuple[float, float]
    tail_h: float  # tail-light height
    valance: bool = False  # a dark plastic strip under each bumper (SUV, pickup)
    bed: tuple[float, float] | None = None  # pickup: bed floor z, wall top z

    @property
    def body_end(self) -> float:
        return self.length / 2 - BUMPER

    @property
    def axles(self) -> tuple[float, float]:
        yf = self.length / 2 - self.front_overhang
        return yf, yf - self.wheelbase

    @property
    def arch_r(self) -> float:
        return self.wheel_r + 0.04

    @property
    def cowl(self) -> Pt:
        return self.glass[0]

    @property
    def nose_z(self) -> float:
        return self.top[2][1]

    def dims(self) -> dict[str, float]:
        return {
            "length_m": self.length,
            "width_m": self.width,
            "height_m": self.height,
            "wheelbase_m": self.wheelbase,
            "wheel_radius_m": self.wheel_r,
            "ground_clearance_m": self.clearance,
        }


# fmt: off
STYLES: dict[str, Style] = {
    s.name: s
    for s in (
        Style(
            "sedan", 4.70, 1.82, 1.45, 2.80, 0.92, 0.32, 0.15,
            top=((2.30, 0.22), (2.30, 0.55), (2.25, 0.68), (1.85, 0.76), (0.95, 0.87),
                 (-1.40, 0.92), (-2.20, 0.96), (-2.30, 0.86), (-2.30, 0.22)),
            glass=((0.95, 0.87), (0.05, 1.41), (-0.35, 1.45), (-0.80, 1.41), (-1.40, 0.92)),
            pillars=(-0.33,), bumper_z=(0.16, 0.54), tail_h=0.14,
        ),
        Style(
            "hatchback", 4.30, 1.78, 1.47, 2.60, 0.87, 0.31, 0.15,
            top=((2.10, 0.22), (2.10, 0.54), (2.05, 0.66), (1.70, 0.75), (0.80, 0.90),
                 (-1.98, 0.97), (-2.10, 0.90), (-2.10, 0.22)),
            glass=((0.80, 0.90), (0.05, 1.43), (-0.45, 1.47), (-1.45, 1.43), (-1.98, 0.97)),
            pillars=(-0.45,), bumper_z=(0.16, 0.54), tail_h=0.22,
        ),
        Style(
            "suv", 4.75, 1.92, 1.76, 2.85, 0.93, 0.38, 0.21,
            top=((2.325, 0.32), (2.325, 0.74), (2.28, 0.92), (1.80, 1.00), (0.95, 1.07),
                 (-2.26, 1.12), (-2.325, 1.05), (-2.325, 0.32)),
            glass=((0.95, 1.07), (0.18, 1.70), (-0.60, 1.73), (-2.18, 1.71), (-2.26, 1.12)),
            pillars=(-0.50, -1.62), bumper_z=(0.26, 0.64), tail_h=0.34, valance=True,
        ),
        Style(
            "pickup", 5.50, 2.00, 1.88, 3.50, 0.95, 0.40, 0.24,
            top=((2.70, 0.40), (2.70, 0.86), (2.65, 1.08), (2.00, 1.17), (1.15, 1.22),
                 (-0.62, 1.23), (-0.70, 1.23), (-0.70, 0.92), (-2.70, 0.92), (-2.70, 0.40)),
            glass=((1.15, 1.22), (0.45, 1.85), (-0.10, 1.88), (-0.55, 1.86), (-0.62, 1.23)),
            pillars=(0.30,), bumper_z=(0.34, 0.72), tail_h=0.26, valance=True,
            bed=(0.92, 1.24),
        ),
    )
}
# fmt: on
BODY_STYLES = tuple(sorted(STYLES))
CAR_LENGTH = STYLES["sedan"].length  # the sedan, for environments that place things by it
CAR_WIDTH = STYLES["sedan"].width


# -- profiles and meshes (host side, numpy) -----------------------------------------------
def lower_profile(st: Style, arc_steps: int = 10) -> tuple[list[Pt], list[bool]]:
    """The lower body's closed (y, z) outline, counter-clockwise seen from +X, and for each
    edge (from point i to i+1) whether it lines a wheel arch."""
    pts: list[Pt] = list(st.top)
    arch: list[bool] = [False] * (len(pts) - 1)
    ry = st.top[-1][0]
    fy = st.top[0][0]
    pts.append((ry + 0.07, st.clearance))
    arch.append(False)
    ra, r = st.arch_r, st.wheel_r
    for yc in sorted(st.axles):
        ring = [(yc - ra, st.clearance), (yc - ra, r)]
        ring += [
            (yc + ra * math.cos(t), r + ra * math.sin(t))
            for t in np.linspace(math.pi, 0, arc_steps + 1)[1:-1]
        ]
        ring += [(yc + ra, r), (yc + ra, st.clearance)]
        arch.append(False)  # the bottom edge up to the arch
        pts += ring
        arch += [True] * (len(ring) - 1)
    pts.append((fy - 0.07, st.clearance))
    arch.append(False)
    arch.append(False)  # closing edge back to the front face's bottom
    return [(float(a), float(b)) for a, b in pts], arch


def face_class(normal: np.ndarray) -> str:
    n = normal / max(float(np.linalg.norm(normal)), 1e-12)
    if abs(n[0]) >= 0.6:
        return "right" if n[0] > 0 else "left"
    if abs(n[1]) >= 0.6:
        return "front" if n[1] > 0 else "rear"
    return "top" if n[2] > 0 else "bottom"


def _newell(v: np.ndarray, f: Sequence[int]) -> np.ndarray:
    p = v[list(f)]
    q = np.roll(p, -1, axis=0)
    return np.array(
        [
            np.sum((p[:, 1] - q[:, 1]) * (p[:, 2] + q[:, 2])),
            np.sum((p[:, 2] - q[:, 2]) * (p[:, 0] + q[:, 0])),
            np.sum((p[:, 0] - q[:, 0]) * (p[:, 1] + q[:, 1])),
        ]
    )


@dataclass(frozen=True)
class Part:
    """One mesh of the car: world vertices, faces (outward), per-face class, material key,
    and cosmetic bevel width / smooth shading for the worker."""

    name: str
    verts: np.ndarray
    faces: tuple[tuple[int, ...], ...]
    classes: tuple[str, ...]
    material: str
    bevel: float = 0.0
    smooth: bool = False


def _part(
    name: str,
    v: np.ndarray,
    faces: Sequence[Sequence[int]],
    material: str,
    classes: Sequence[str] | None = None,
    **kw: Any,
) -> Part:
    fs = tuple(tuple(int(i) for i in f) for f in faces)
    cl = tuple(classes) if classes is not None else tuple(face_class(_newell(v, f)) for f in fs)
    return Part(name, np.asarray(v, float), fs, cl, material, **kw)


def extrude(
    name: str,
    prof: Sequence[Pt],
    half_w: Callable[[float], float],
    material: str,
    edge_other: Sequence[bool] | None = None,
    **kw: Any,
) -> Part:
    """A (y, z) outline (counter-clockwise from +X) extruded to x = +-half_w(z)."""
    n = len(prof)
    hw = [float(half_w(z)) for _, z in prof]
    v = np.array([(w, y, z) for (y, z), w in zip(prof, hw, strict=True)])
    v = np.vstack([v, v * [-1, 1, 1]])
    faces: list[tuple[int, ...]] = [tuple(range(n)), tuple(range(2 * n - 1, n - 1, -1))]
    faces += [(i, n + i, n + (i + 1) % n, (i + 1) % n) for i in range(n)]
    classes = [face_class(_newell(v, f)) for f in faces]
    for i, other in enumerate(edge_other or []):
        if other:
            classes[2 + i] = "other"
    return _part(name, v, faces, material, classes, **kw)


def box(name: str, lo: Sequence[float], hi: Sequence[float], material: str, **kw: Any) -> Part:
    """An axis-aligned box from its low and high corners."""
    v = np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )
    f = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return _part(name, v, f, material, **kw)


def cylinder_x(
    name: str,
    centre: Sequence[float],
    radius: float,
    x_span: tuple[float, float],
    material: str,
    side: str,
    steps: int = 28,
    squash: float = 0.0,
    **kw: Any,
) -> Part:
    """A cylinder along X (a tyre or rim); ``squash`` (m) flattens its bottom onto
    ``centre_z - radius`` as a loaded tyre's contact patch, so the lowest edge of the
    silhouette is a line a few pixels long, not a point. Its outward cap is classed
    ``side``, the rest ``other``."""
    t = -math.pi / 2 + math.pi / steps + 2 * math.pi * np.arange(steps) / steps
    rv = radius / math.cos(math.pi / steps) + squash  # the polygon's edges touch the circle
    z = np.maximum(centre[2] + rv * np.sin(t), centre[2] - radius)
    ring = np.stack([centre[1] + rv * np.cos(t), z], axis=1)
    lo, hi = x_span
    v = np.vstack([np.c_[np.full(steps, hi), ring], np.c_[np.full(steps, lo), ring]])
    faces: list[tuple[int, ...]] = [tuple(range(steps)), tuple(range(2 * steps - 1, steps - 1, -1))]
    faces += [(i, steps + i, steps + (i + 1) % steps, (i + 1) % steps) for i in range(steps)]
    outer = 0 if side == "right" else 1
    classes = ["other"] * len(faces)
    classes[outer] = side
    return _part(name, v, faces, material, classes, **kw)


def _quad(name: str, corners: np.ndarray, material: str, lift: float = 0.004) -> Part:
    n = _newell(corners, range(4))
    n = n / np.linalg.norm(n)
    return _part(name, corners + lift * n, [(0, 1, 2, 3)], material)


def _inset_polygon(poly: Sequence[Pt], d: float) -> list[Pt]:
    """A convex counter-clockwise polygon shrunk by ``d`` (edges moved inward)."""
    p = np.asarray(poly, float)
    n = len(p)
    lines = []
    for i in range(n):
        a, b = p[i], p[(i + 1) % n]
        t = (b - a) / np.linalg.norm(b - a)
        nrm = np.array([-t[1], t[0]])  # inward for counter-clockwise
        lines.append((a + d * nrm, t))
    out = []
    for i in range(n):
        (a1, t1), (a2, t2) = lines[i - 1], lines[i]
        m = np.array([t1, -t2]).T
        s = np.linalg.solve(m, a2 - a1)
        out.append(tuple(float(x) for x in a1 + s[0] * t1))
    return out  # type: ignore[return-value]


def _clip(poly: Sequence[Pt], y: float, keep_below: bool) -> list[Pt]:
    """Sutherland-Hodgman clip of a polygon to y <= y (or y >= y)."""
    out: list[Pt] = []
    for i, cur in enumerate(poly):
        prev = poly[i - 1]
        cin = cur[0] <= y if keep_below else cur[0] >= y
        pin = prev[0] <= y if keep_below else prev[0] >= y
        if cin != pin:
            s = (y - prev[0]) / (cur[0] - prev[0])
            out.append((y, prev[1] + s * (cur[1] - prev[1])))
        if cin:
            out.append(cur)
    return out


def glass_half_width(st: Style) -> Callable[[float], float]:
    """The greenhouse's tumblehome: half width falls linearly from the belt to the roof."""
    z0 = min(z for _, z in st.glass)
    hw0, hw1 = st.width / 2 - 0.05, st.width / 2 - 0.21

    def hw(z: float) -> float:
        return hw0 + (hw1 - hw0) * (z - z0) / (st.height - z0)

    return hw


def _windows(st: Style) -> list[Part]:
    hw = glass_half_width(st)
    g = st.glass
    out: list[Part] = []
    # windscreen and rear window: the greenhouse strips at both ends, inset
    for name, (a, b) in (("windscreen", (g[0], g[1])), ("rear_window", (g[-2], g[-1]))):
        c = []
        for s, t in ((0.07, 0.04), (0.93, 0.04), (0.93, 0.94), (0.07, 0.94)):
            y, z = a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])
            w = hw(z) * (1 - 2 * s)
            c.append((w, y, z))
        q = np.array(c)
        # counter-clockwise seen from outside (out = up and away from the car's middle)
        if _newell(q, range(4)) @ np.array([0, q[:, 1].mean(), 0.3]) < 0:
            q = q[::-1]
        out.append(_quad(name, q, "glass"))
    # side windows: the greenhouse outline (its base closing the loop) inset, cut at pillars
    side = _inset_polygon(g, 0.065)  # g runs counter-clockwise in (y, z)
    cuts = sorted(st.pillars)
    edges = [-math.inf, *cuts, math.inf]
    for k in range(len(edges) - 1):
        poly = side
        if math.isfinite(edges[k]):
            poly = _clip(poly, edges[k] + 0.045, keep_below=False)
        if math.isfinite(edges[k + 1]):
            poly = _clip(poly, edges[k + 1] - 0.045, keep_below=True)
        if len(poly) < 3:
            continue
        for sx, sname in ((1, "right"), (-1, "left")):
            pts = [(sx * (hw(z) + 0.004), y, z) for y, z in poly]
            v = np.array(pts if sx > 0 else pts[::-1])
            out.append(_part(f"window_{sname}_{k}", v, [tuple(range(len(v)))], "glass"))
    return out


def _wheels(st: Style) -> list[Part]:
    out = []
    tw = 0.24 if st.name in ("suv", "pickup") else 0.21
    x_out = st.width / 2 - 0.025
    for k, yc in enumerate(st.axles):
        for sx, side in ((1, "right"), (-1, "left")):
            # the tyre's sidewall sits 2 cm inside the body side; the rim stands proud of it
            span = (x_out - tw, x_out - 0.02) if sx > 0 else (-x_out + 0.02, -x_out + tw)
            c = (0.0, yc, st.wheel_r)
            out.append(
                cylinder_x(
                    f"tyre_{side}_{k}", c, st.wheel_r, span, "tyre", side, squash=0.015, smooth=True
                )
            )
            rim_x = (x_out - 0.05, x_out - 0.008) if sx > 0 else (-x_out + 0.008, -x_out + 0.05)
            out.append(cylinder_x(f"rim_{side}_{k}", c, 0.64 * st.wheel_r, rim_x, "rim", side))
            hub_x = (rim_x[1], rim_x[1] + 0.003) if sx > 0 else (rim_x[0] - 0.003, rim_x[0])
            out.append(cylinder_x(f"hub_{side}_{k}", c, 0.18 * st.wheel_r, hub_x, "dark", side, 12))
    return out


def _trim(st: Style) -> list[Part]:
    """Bumpers, grille, lights, mirrors, door seams and handles, roof rails, the bed."""
    W2, Lb, L2 = st.width / 2, st.body_end, st.length / 2
    z0, z1 = st.bumper_z
    rear_top = st.bed[1] if st.bed else st.top[-2][1]
    # painted bumpers: a damage patch drawn in the body colour matches them
    bb = BUMPER_BEVEL
    out = [
        box("bumper_front", (-W2 + 0.03, Lb - 0.04, z0), (W2 - 0.03, L2, z1), "paint", bevel=bb),
        box("bumper_rear", (-W2 + 0.03, -L2, z0), (W2 - 0.03, -Lb + 0.04, z1), "paint", bevel=bb),
    ]
    if st.valance:
        va = st.clearance + 0.02
        out.append(
            box("valance_front", (-W2 + 0.08, Lb - 0.06, va), (W2 - 0.08, L2 - 0.01, z0), "plastic")
        )
        out.append(
            box(
                "valance_rear", (-W2 + 0.08, -L2 + 0.01, va), (W2 - 0.08, -Lb + 0.06, z0), "plastic"
            )
        )
    nz = st.nose_z
    gw = 0.3 if st.name in ("sedan", "hatchback") else 0.42
    out.append(box("grille", (-gw, Lb - 0.1, z1 - 0.01), (gw, Lb + 0.012, nz - 0.02), "grille"))
    for sx, side in ((1, "right"), (-1, "left")):
        xa, xb = sorted((sx * (W2 - 0.05), sx * (gw + 0.06)))
        out.append(
            box(
                f"headlight_{side}",
                (xa, Lb - 0.12, z1 + 0.02),
                (xb, Lb + 0.01, nz - 0.015),
                "headlight",
            )
        )
        # a pickup's lights are upright strips on the bed corners (nothing inside the bed)
        xa, xb = sorted((sx * (W2 + 0.004), sx * (W2 - (0.07 if st.bed else 0.34))))
        out.append(
            box(
                f"taillight_{side}",
                (xa, -Lb - 0.01, rear_top - 0.04 - st.tail_h),
                (xb, -Lb + 0.05, rear_top - 0.04),
                "taillight",
            )
        )
        cy, cz = st.cowl
        xa, xb = sorted((sx * (W2 + 0.17), sx * (W2 - 0.03)))
        out.append(
            box(
                f"mirror_{side}",
                (xa, cy - 0.18, cz + 0.04),
                (xb, cy - 0.08, cz + 0.16),
                "paint",
                bevel=0.02,
            )
        )
        yf, yr = st.axles
        front_edge = yf - st.arch_r - 0.03
        seams = [front_edge, *st.pillars]
        if not st.bed:
            seams.append(yr + st.arch_r + 0.03)
        else:
            seams.append(st.top[6][0] + 0.02)
        for j, y in enumerate(seams):
            xa, xb = sorted((sx * (W2 - 0.003), sx * (W2 + 0.0015)))
            out.append(
                box(
                    f"seam_{side}_{j}",
                    (xa, y - 0.004, st.clearance + 0.1),
                    (xb, y + 0.004, cz - 0.02),
                    "dark",
                )
            )
        for j, y in enumerate(seams[1:]):  # near each door's rear edge
            xa, xb = sorted((sx * (W2 - 0.003), sx * (W2 + 0.012)))
            out.append(
                box(
                    f"handle_{side}_{j}",
                    (xa, y + 0.06, cz - HANDLE_DROP),
                    (xb, y + 0.2, cz - HANDLE_DROP + 0.03),
                    "dark",
                )
            )
    if st.name == "suv":
        hw = glass_half_width(st)(st.height) - 0.1
        for sx, side in ((1, "right"), (-1, "left")):
            xa, xb = sorted((sx * hw, sx * (hw - 0.04)))
            out.append(box(f"roof_rail_{side}", (xa, -1.9, 1.72), (xb, 0.0, st.height), "plastic"))
    if st.bed:
        f, t = st.bed
        yb = st.top[6][0]
        for sx, side in ((1, "right"), (-1, "left")):
            xa, xb = sorted((sx * W2, sx * (W2 - 0.07)))
            wall = box(f"bed_wall_{side}", (xa, -Lb, f - 0.01), (xb, yb, t), "paint", bevel=0.015)
            out.append(_inner_other(wall, "left" if sx > 0 else "right"))
        lo, hi = (-W2 + 0.07, -Lb, f - 0.01), (W2 - 0.07, -Lb + 0.06, t)
        out.append(_inner_other(box("tailgate", lo, hi, "paint", bevel=0.015), "front"))
        out.append(
            box("bed_liner", (-W2 + 0.07, -Lb + 0.06, f), (W2 - 0.07, yb, f + 0.01), "plastic")
        )
    return out


def _inner_other(p: Part, inner: str) -> Part:
    """The same part with its faces of class ``inner`` unlabelled (they face into the bed)."""
    classes = tuple("other" if c == inner else c for c in p.classes)
    return Part(p.name, p.verts, p.faces, classes, p.material, p.bevel, p.smooth)


@lru_cache(maxsize=8)
def car_parts(style: str) -> tuple[Part, ...]:
    """Every mesh of the car (world coordinates), the same on host and worker."""
    st = STYLES[style]
    prof, arch = lower_profile(st)
    W2 = st.width / 2
    parts = [
        extrude("body", prof, lambda z: W2, "paint", arch, bevel=0.045, smooth=True),
        extrude("cabin", st.glass, glass_half_width(st), "paint", bevel=0.04, smooth=True),
        box(
            "underbody",
            (-W2 + 0.26, -st.body_end + 0.15, st.clearance + 0.02),
            (W2 - 0.26, st.body_end - 0.15, st.wheel_r + st.arch_r + 0.02),
            "dark",
            classes=["other"] * 6,
        ),
    ]
    return tuple(parts + _windows(st) + _wheels(st) + _trim(st))


def car_part_names(style: str) -> tuple[str, ...]:
    return tuple(p.name for p in car_parts(style))


def car_vertices(style: str) -> np.ndarray:
    """All the car's vertices (N x 3): its exact extent before cosmetic bevels."""
    return np.vstack([p.verts for p in car_parts(style)])


# -- faces, panels and mounts (analytic GT) ---------------------------------------------------
def face_rect(
    face: str, style: str = "sedan"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """(centre, normal, u, half_u, half_v) of a whole side of the lower body: the front or
    rear fascia up to the nose / rear deck, or a flank from the sill to the belt."""
    st = STYLES[style]
    n = np.array(FACE_NORMALS[face], dtype=float)
    L2, W2 = st.length / 2, st.width / 2
    if face == "front":
        z0, z1 = st.bumper_z[0], st.nose_z
        return np.array([0, L2, (z0 + z1) / 2]), n, np.array([-1.0, 0, 0]), W2, (z1 - z0) / 2
    if face == "rear":
        z0, z1 = st.bumper_z[0], st.bed[1] if st.bed else st.top[-2][1]
        return np.array([0, -L2, (z0 + z1) / 2]), n, np.array([1.0, 0, 0]), W2, (z1 - z0) / 2
    z0, z1 = st.clearance, st.cowl[1]
    return np.array([n[0] * W2, 0, (z0 + z1) / 2]), n, np.array([0, n[0], 0.0]), L2, (z1 - z0) / 2


@dataclass(frozen=True)
class Panel:
    """A named body panel: centre, outward normal, in-plane right axis, half sizes of its
    flat region (a damage patch fits inside it), face."""

    name: str
    face: str
    centre: tuple[float, float, float]
    normal: tuple[float, float, float]
    u: tuple[float, float, float]
    half_u: float
    half_v: float


def top_z(style: str, y: float) -> float:
    """The lower body's top edge height at ``y`` (the side's upper limit there)."""
    top = STYLES[style].top[1:-1][::-1]  # the upper edge, rear to front
    return float(np.interp(y, [p[0] for p in top], [p[1] for p in top]))


def _min_top(style: str, y0: float, y1: float) -> float:
    return min(top_z(style, y) for y in np.linspace(y0, y1, 25))


def panels(style: str = "sedan") -> list[Panel]:
    """The style's named panels; side panels are flat regions of the flank clear of the
    arches, seams' bevels and the belt, so a 30 cm patch on them lies on the paint."""
    st = STYLES[style]
    L2, W2, Lb = st.length / 2, st.width / 2, st.body_end
    z0, z1 = st.bumper_z
    bz, bh = (z0 + z1) / 2, (z1 - z0) / 2 - BUMPER_BEVEL  # the flat of the bumper's face
    yf, yr = st.axles
    ra, m = st.arch_r, 0.05
    cy, cz = st.cowl
    out = [
        Panel("front_bumper", "front", (0, L2, bz), (0, 1, 0), (-1, 0, 0), W2 - 0.1, bh),
        Panel("rear_bumper", "rear", (0, -L2, bz), (0, -1, 0), (1, 0, 0), W2 - 0.1, bh),
        Panel(
            "hood",
            "top",
            (0, (st.top[2][0] + cy) / 2, (st.nose_z + cz) / 2),
            (0, 0, 1),
            (1, 0, 0),
            W2 - 0.1,
            (st.top[2][0] - cy) / 2,
        ),
    ]
    if style == "sedan":
        ty = (st.glass[-1][0] + st.top[-3][0]) / 2
        out.append(
            Panel(
                "trunk",
                "top",
                (0, ty, top_z(style, ty)),
                (0, 0, 1),
                (1, 0, 0),
                W2 - 0.1,
                (st.glass[-1][0] - st.top[-3][0]) / 2,
            )
        )
    rear_lo = yr + ra + m
    if st.bed:
        rear_lo = max(rear_lo, st.top[6][0] + m)
    pillar = st.pillars[0]
    regions = {
        "front_fender": (yf + ra + 0.04, Lb - 0.1),  # behind the nose's slope
        "front_door": (pillar + m, yf - ra - m),
        "rear_door": (rear_lo, pillar - m),
        "rear_quarter": (-Lb + 0.07, yr - ra - m),  # clear of the tail lights' wrap
    }
    for side, sx in (("left", -1), ("right", 1)):
        n = (sx, 0, 0)
        uu = (0, 1, 0) if sx > 0 else (0, -1, 0)  # "right" as seen from outside
        for name, (ya, yb) in regions.items():
            za = st.clearance + 0.08
            zb = (
                _min_top(style, ya - m, yb + m)
                if st.bed is None or name != "rear_quarter"
                else st.bed[1]
            )
            zb -= m
            if name.endswith("door"):  # below the handles
                zb = min(zb, cz - HANDLE_DROP - 0.02)
            out.append(
                Panel(
                    f"{side}_{name}",
                    side,
                    (sx * W2, (ya + yb) / 2, (za + zb) / 2),
                    n,
                    uu,
                    (yb - ya) / 2,
                    (zb - za) / 2,
                )
            )
    return out


def patch_centre(p: Panel, offset: Sequence[float], half: float = PATCH_HALF) -> np.ndarray:
    """Where a ``2 half`` square patch sits on a panel for offsets in [-1, 1] of the slack
    (the panel's half size less the patch's), ``PATCH_LIFT`` proud of the paint."""
    n, uu = np.array(p.normal, float), np.array(p.u, float)
    vv = np.cross(n, uu)
    su, sv = max(p.half_u - half, 0.0), max(p.half_v - half, 0.0)
    return np.array(p.centre) + n * PATCH_LIFT + offset[0] * su * uu + offset[1] * sv * vv


def plate_mount(style: str) -> tuple[float, float]:
    """(y, z) of the rear plate's centre: on the rear bumper's face, 6 mm proud."""
    st = STYLES[style]
    return -st.length / 2 - 0.006, sum(st.bumper_z) / 2


# -- the worker side (bpy) --------------------------------------------------------------------
_MATERIALS: dict[str, tuple[tuple[float, float, float], float, float, float]] = {
    # key: (colour, roughness, metallic, emission strength)
    "glass": ((0.012, 0.014, 0.018), 0.05, 0.0, 0.0),
    "tyre": ((0.025, 0.025, 0.025), 0.85, 0.0, 0.0),
    "rim": ((0.62, 0.63, 0.65), 0.25, 1.0, 0.0),
    "chrome": ((0.75, 0.75, 0.78), 0.15, 1.0, 0.0),
    "plastic": ((0.04, 0.04, 0.045), 0.7, 0.0, 0.0),
    "dark": ((0.01, 0.01, 0.01), 0.8, 0.0, 0.0),
    "grille": ((0.02, 0.02, 0.022), 0.5, 0.0, 0.0),
    "headlight": ((0.85, 0.86, 0.88), 0.1, 0.0, 0.6),
    "taillight": ((0.55, 0.01, 0.01), 0.2, 0.0, 0.4),
}


def _bpy_mat(name: str, colour: Sequence[float], rough: float, metal: float, emit: float) -> Any:
    from truthline.systems.realitybench.envs._common import bpy_material

    m = bpy_material(name, colour, rough=rough)
    bsdf = m.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Metallic"].default_value = metal
    if emit:
        bsdf.inputs["Emission Color"].default_value = (*colour[:3], 1.0)
        bsdf.inputs["Emission Strength"].default_value = emit
    if name == "paint":
        bsdf.inputs["Coat Weight"].default_value = PAINT_COAT
    return m


def bpy_paint_texture(name: str, image: str) -> Any:
    """A material showing ``image`` with the paint's finish (a damage patch on a panel must
    not read as a sticker: same roughness and clear coat as the paint around it)."""
    from truthline.systems.realitybench.envs._common import bpy_material

    m = bpy_material(name, image=image, rough=PAINT_ROUGH)
    m.node_tree.nodes.get("Principled BSDF").inputs["Coat Weight"].default_value = PAINT_COAT
    for node in m.node_tree.nodes:
        if node.type == "TEX_IMAGE":  # CLIP would blend the border texels with black
            node.extension = "EXTEND"
    return m


def build_car(style: str, colour: Sequence[float], *, id_pass: bool = False) -> list[Any]:
    """The car in Blender (worker side): ground and every part of :func:`car_parts`.

    ``id_pass`` paints each face with its class's flat colour (``ID_COLOURS``) instead of
    its material, for measuring which faces a Workbench frame shows."""
    import bpy

    from truthline.systems.realitybench.envs._common import Box, bpy_box, bpy_material

    mats: dict[str, Any] = {"paint": _bpy_mat("paint", colour, PAINT_ROUGH, 0.0, 0.0)}
    for k, (c, r, mt, e) in _MATERIALS.items():
        mats[k] = _bpy_mat(k, c, r, mt, e)
    ids = {k: bpy_material(f"id_{k}", c, rough=1.0) for k, c in ID_COLOURS.items()}
    ground = bpy_material("asphalt", (0.22, 0.22, 0.23), rough=0.9)
    obs = [bpy_box("ground", Box((0, 0, -0.01), (30, 30, 0.01)), ground)]
    for p in car_parts(style):
        me = bpy.data.meshes.new(p.name)
        me.from_pydata([tuple(map(float, v)) for v in p.verts], [], [list(f) for f in p.faces])
        if id_pass:
            keys = sorted(set(p.classes))
            for k in keys:
                me.materials.append(ids[k])
            for poly, k in zip(me.polygons, p.classes, strict=True):
                poly.material_index = keys.index(k)
        else:
            me.materials.append(mats[p.material])
        me.update()
        if p.smooth:
            me.shade_smooth()
            me.set_sharp_from_angle(angle=math.radians(40))
        ob = bpy.data.objects.new(p.name, me)
        if p.bevel:
            mod = ob.modifiers.new("bevel", "BEVEL")
            mod.width = p.bevel
            mod.segments = 3
            mod.limit_method = "ANGLE"
            mod.angle_limit = math.radians(35)
            mod.harden_normals = False
        bpy.context.scene.collection.objects.link(ob)
        obs.append(ob)
    return obs
