"""The procedural solar roof the solar environments share: 3-tab shingle courses over a dark
deck, rafters at 16 in centres, rails on L-feet lag-bolted through flashing into the
rafters, framed modules clamped to the rails, and wire clips on a rail.

A :class:`Layout` is plain data built from the params, so every GT value (where a frame's
top edge is, where the shingle surface lies under a wire, which parts an attachment has) is
computed on the host from the same numbers the worker builds geometry from. The roof is
modelled in its own frame: x along the eaves, y up the slope, z the roof normal (slope_gauge
tilts the whole build by its pitch). Shingle courses are a sawtooth: each course's surface
falls from ``SHINGLE_HI`` at its butt (its downslope edge) to ``SHINGLE_LO`` where the next
course's butt steps up over it.

Module frames: the frame's top lip has its outer edge exactly on the module edge and the
wall below it is set back (``FRAME_RECESS``), so the visible edge of a module seen from
above is the module edge itself (the tape_gap GT edges x = 0 and x = g are the pixels'
edges); the cell laminate is inset inside the lip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from truthline.scenes._textures import Texture

IN = 0.0254
COURSE_M = 5 * IN
TAB_M = 12 * IN
SLOT_M = 0.25 * IN
SHINGLE_LO, SHINGLE_HI = 0.002, 0.006
DECK_Z = 0.001
RAFTER_SPACING = 16 * IN
FLASH_W, FLASH_L, FLASH_T = 9 * IN, 9.5 * IN, 0.0006
FOOT_BASE = (2 * IN, 3 * IN, 0.25 * IN)
FOOT_LEG_T = 0.25 * IN
BOLT_HEAD_M = 0.5 * IN  # hex head across flats
BOLT_HEAD_H = 0.22 * IN
WASHER_R = 0.5 * IN
RAIL_W, RAIL_H = 1.2 * IN, 1.6 * IN
RAIL_Z0 = 0.070
MODULE_H = 0.035
MODULE_BOTTOM_Z = RAIL_Z0 + RAIL_H
MODULE_TOP_Z = MODULE_BOTTOM_Z + MODULE_H
FRAME_LIP_W, FRAME_LIP_T, FRAME_RECESS = 0.014, 0.004, 0.007
GLASS_DROP = 0.002  # the laminate sits this far below the frame's top
WIRE_R = 0.003
CLIP_Z = RAIL_Z0 + 0.012
PARTS = ("l_foot", "flashing", "lag_bolt")


def shingle_z(y: Any, y0: float = 0.0) -> Any:
    """Height of the shingle surface at ``y`` (scalar or array): a sawtooth, highest at each
    course's butt (y = y0 + k * COURSE_M) and lowest just below the next butt."""
    f = np.mod((np.asarray(y, dtype=float) - y0) / COURSE_M, 1.0)
    return SHINGLE_HI - (SHINGLE_HI - SHINGLE_LO) * f


def course_of(y: float, y0: float = 0.0) -> int:
    return math.floor((y - y0) / COURSE_M)


def slot_xs(k: int, x_lo: float, x_hi: float) -> list[float]:
    """Centres of the cut-outs between tabs in course ``k`` (3-tab: offset half a tab on
    alternate courses)."""
    off = (k % 2) * TAB_M / 2
    j0, j1 = math.floor((x_lo - off) / TAB_M), math.ceil((x_hi - off) / TAB_M)
    return [off + j * TAB_M for j in range(j0, j1 + 1) if x_lo <= off + j * TAB_M <= x_hi]


def rafter_xs(x_lo: float, x_hi: float, x0: float = 0.0) -> list[float]:
    j0, j1 = math.ceil((x_lo - x0) / RAFTER_SPACING), math.floor((x_hi - x0) / RAFTER_SPACING)
    return [x0 + j * RAFTER_SPACING for j in range(j0, j1 + 1)]


@dataclass(frozen=True)
class Module:
    x0: float
    x1: float
    y0: float
    y1: float


@dataclass(frozen=True)
class Attachment:
    """One L-foot attachment on rail ``rail`` at rafter ``x``: which parts are there, and
    whether the flashing's top slides under the next shingle course (as it must)."""

    x: float
    rail: int
    l_foot: bool = True
    flashing: bool = True
    lag_bolt: bool = True
    flashing_under_shingles: bool = True
    side: int = -1  # -1: the foot on the rail's downslope side, +1 upslope

    def missing(self) -> list[str]:
        return [p for p in PARTS if not getattr(self, p)]


@dataclass(frozen=True)
class Wire:
    """A module lead clipped to rail ``rail`` on its downslope face: the clips' x positions
    (planned spacing; ``clips_present`` says which are there) and each span's sag (metres,
    between consecutive present clips)."""

    rail: int
    clip_xs: tuple[float, ...]
    clips_present: tuple[bool, ...]
    sags: tuple[float, ...]


@dataclass(frozen=True)
class Layout:
    """Everything the builder makes, as data (the scene state GT is read from)."""

    x_range: tuple[float, float]
    y_range: tuple[float, float]
    rails_y: tuple[float, ...] = ()
    rail_x: tuple[float, float] = (0.0, 0.0)
    modules: tuple[Module, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    wire: Wire | None = None
    mid_clamps: tuple[tuple[float, float], ...] = ()
    """(x0, x1) of the gaps between modules where mid-clamps sit on every rail."""


# -- attachment geometry (host and worker) ------------------------------------------------
def foot_y(lay: Layout, a: Attachment) -> float:
    """Centre y of an attachment's foot base (its leg end against the rail's face)."""
    ry = lay.rails_y[a.rail]
    return ry + a.side * (RAIL_W / 2 + FOOT_BASE[1] / 2)


def rail_y_for_feet(course: int, side: int = -1) -> float:
    """A rail y that puts its feet mid-course, so the flashing's exposed part holds the
    whole foot and its top slides under the next course."""
    return course * COURSE_M + COURSE_M / 2 - side * (RAIL_W / 2 + FOOT_BASE[1] / 2)


def bolt_xy(lay: Layout, a: Attachment) -> tuple[float, float]:
    """Where the lag bolt goes (into the rafter under the foot base's outer half)."""
    return a.x, foot_y(lay, a) + a.side * 0.3 * FOOT_BASE[1]


def flashing_y(lay: Layout, a: Attachment) -> tuple[float, float]:
    """(y of the flashing's lower edge, y of the butt of the course it slides under)."""
    k = course_of(foot_y(lay, a))
    lo = k * COURSE_M + 0.25 * IN
    return lo, (k + 1) * COURSE_M


def base_z(lay: Layout, a: Attachment) -> float:
    """Underside of the foot base: on the flashing, or on the shingles without it."""
    y = foot_y(lay, a)
    ys = np.linspace(y - FOOT_BASE[1] / 2, y + FOOT_BASE[1] / 2, 7)
    return float(np.max(shingle_z(ys))) + (FLASH_T if a.flashing else 0.0)


def part_points(lay: Layout, a: Attachment) -> dict[str, np.ndarray]:
    """Sample points on each part's visible top (for projections in tests and GT)."""
    fy, z = foot_y(lay, a), base_z(lay, a) + FOOT_BASE[2]
    bx, by = bolt_xy(lay, a)
    lo, butt = flashing_y(lay, a)
    return {
        "l_foot": np.array([[a.x + dx, fy + dy, z] for dx in (-0.015, 0.015) for dy in (-0.02,)]),
        "lag_bolt": np.array([[bx, by, z + BOLT_HEAD_H + 0.0015]]),
        "flashing": np.array(
            [[a.x + s * 0.09, lo + 0.01, float(shingle_z(lo + 0.01)) + FLASH_T] for s in (-1, 1)]
        ),
        "flashing_exposed_y": np.array([lo, butt]),
    }


# -- wire geometry -----------------------------------------------------------------------------
def wire_y(lay: Layout, w: Wire) -> float:
    return lay.rails_y[w.rail] - RAIL_W / 2 - 0.012


def wire_floor_z(lay: Layout, w: Wire) -> float:
    """The lowest the wire's centre can go: resting on the shingles under it."""
    return float(shingle_z(wire_y(lay, w))) + WIRE_R


def wire_spans(w: Wire) -> list[tuple[float, float, float]]:
    """(x_a, x_b, sag) of each span between consecutive present clips."""
    xs = [x for x, p in zip(w.clip_xs, w.clips_present, strict=True) if p]
    return [(a, b, s) for (a, b), s in zip(pairwise(xs), w.sags, strict=False)]


def wire_z(lay: Layout, w: Wire, x: Any) -> Any:
    """Height of the wire's centre at ``x``: a parabola of depth ``sag`` below the clips in
    each span, resting on the shingles where it would go lower."""
    x = np.asarray(x, dtype=float)
    z = np.full(x.shape, CLIP_Z)
    for a, b, s in wire_spans(w):
        t = (x - a) / (b - a)
        inside = (t >= 0) & (t <= 1)
        z = np.where(inside, CLIP_Z - 4 * s * t * (1 - t), z)
    return np.maximum(z, wire_floor_z(lay, w))


# -- textures ------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def cell_texture() -> Texture:
    """A 6 x 10 monocrystalline cell laminate: dark cells, white gaps, silver busbars."""
    cols, rows, px = 6, 10, 120
    w, h = cols * px, rows * px
    img = Image.new("RGB", (w, h), (200, 205, 214))
    d = ImageDraw.Draw(img)
    gap, cut = 2, 14
    for i in range(cols):
        for j in range(rows):
            x0, y0, x1, y1 = i * px + gap, j * px + gap, (i + 1) * px - gap, (j + 1) * px - gap
            # pseudo-square monocrystalline cells: the wafer's corners are cut off
            d.polygon([(x0 + cut, y0), (x1 - cut, y0), (x1, y0 + cut), (x1, y1 - cut),
                       (x1 - cut, y1), (x0 + cut, y1), (x0, y1 - cut), (x0, y0 + cut)],
                      fill=(16, 22, 44))  # fmt: skip
            for k in (0.2, 0.4, 0.6, 0.8):
                xb = x0 + k * (x1 - x0)
                d.line([xb, y0, xb, y1], fill=(120, 126, 138), width=1)
    return Texture(img, {"kind": "cells", "cells": [cols, rows]})


# -- bpy builder (worker side) ---------------------------------------------------------------
def _mesh(
    name: str, verts: Sequence[Sequence[float]], faces: Sequence[Sequence[int]], mat: Any
) -> Any:
    import bpy

    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(map(float, v)) for v in verts], [], [tuple(f) for f in faces])
    me.materials.append(mat)
    ob = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(ob)
    return ob


def _box_verts(
    x0: float, x1: float, y0: float, y1: float, z0: float, z1: float
) -> list[tuple[float, float, float]]:
    return [(x, y, z) for x in (x0, x1) for y in (y0, y1) for z in (z0, z1)]


BOX_FACES = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]


def _boxes(name: str, boxes: Sequence[Sequence[float]], mat: Any) -> Any:
    """One mesh of several axis-aligned boxes ``(x0, x1, y0, y1, z0, z1)``."""
    verts: list[tuple[float, float, float]] = []
    faces: list[tuple[int, ...]] = []
    for b in boxes:
        n = len(verts)
        verts += _box_verts(*b)
        faces += [tuple(n + i for i in f) for f in BOX_FACES]
    return _mesh(name, verts, faces, mat)


def _shingle_material(name: str, colour: Sequence[float]) -> Any:
    """Granular asphalt: a fine noise texture between two shades (Cycles); flat colour in
    Workbench."""
    from truthline.systems.realitybench.envs._common import bpy_material

    m = bpy_material(name, colour, rough=0.95)
    nt = m.node_tree
    bsdf = nt.nodes.get("Principled BSDF")
    noise = nt.nodes.new("ShaderNodeTexNoise")
    noise.inputs["Scale"].default_value = 350.0
    noise.inputs["Detail"].default_value = 2.0
    ramp = nt.nodes.new("ShaderNodeValToRGB")
    lo = [c * 0.4 for c in colour]
    hi = [min(1.0, c * 2.2) for c in colour]
    ramp.color_ramp.elements[0].color = (*lo, 1.0)
    ramp.color_ramp.elements[1].color = (*hi, 1.0)
    coord = nt.nodes.new("ShaderNodeTexCoord")
    nt.links.new(coord.outputs["Object"], noise.inputs["Vector"])
    nt.links.new(noise.outputs["Fac"], ramp.inputs["Fac"])
    nt.links.new(ramp.outputs["Color"], bsdf.inputs["Base Color"])
    return m


SHINGLE_SHADES = ((0.06, 0.057, 0.054), (0.08, 0.072, 0.066), (0.045, 0.045, 0.048))


def build_shingles(lay: Layout) -> list[str]:
    """The deck and every tab of every course (three shades, as one mesh per shade)."""
    from truthline.systems.realitybench.envs._common import bpy_material

    (xa, xb), (ya, yb) = lay.x_range, lay.y_range
    deck = _boxes(
        "deck",
        [(xa, xb, ya, yb, -0.02, DECK_Z)],
        bpy_material("deck", (0.05, 0.05, 0.05), rough=0.9),
    )
    tabs: list[list[tuple[float, ...]]] = [[] for _ in SHINGLE_SHADES]
    for k in range(course_of(ya), course_of(yb) + 1):
        y0, y1 = max(ya, k * COURSE_M), min(yb, (k + 1) * COURSE_M)
        if y1 <= y0:
            continue
        edges = (
            [xa] + [e for s in slot_xs(k, xa, xb) for e in (s - SLOT_M / 2, s + SLOT_M / 2)] + [xb]
        )
        for j in range(0, len(edges) - 1, 2):
            x0, x1 = edges[j], edges[j + 1]
            if x1 - x0 > 1e-4:
                tone = (k * 7 + j * 3 + int(x0 * 97)) % len(SHINGLE_SHADES)
                tabs[tone].append((x0, x1, y0, y1))
    names = [deck.name]
    for i, (shade, quads) in enumerate(zip(SHINGLE_SHADES, tabs, strict=True)):
        verts: list[tuple[float, float, float]] = []
        faces: list[tuple[int, ...]] = []
        for x0, x1, y0, y1 in quads:
            z0, z1 = float(shingle_z(y0 + 1e-9)), float(shingle_z(y1 - 1e-9))
            n = len(verts)
            verts += [(x0, y0, z0), (x1, y0, z0), (x1, y1, z1), (x0, y1, z1),
                      (x0, y0, DECK_Z), (x1, y0, DECK_Z)]  # fmt: skip
            faces += [(n, n + 1, n + 2, n + 3), (n + 4, n + 5, n + 1, n)]
        if verts:
            names.append(
                _mesh(f"shingles_{i}", verts, faces, _shingle_material(f"shingle_{i}", shade)).name
            )
    return names


def build_rails(lay: Layout, alu: Any) -> list[str]:
    if not lay.rails_y:
        return []
    x0, x1 = lay.rail_x
    boxes = [
        (x0, x1, y - RAIL_W / 2, y + RAIL_W / 2, RAIL_Z0, RAIL_Z0 + RAIL_H) for y in lay.rails_y
    ]
    names = [_boxes("rails", boxes, alu).name]
    from truthline.systems.realitybench.envs._common import bpy_material

    slot = bpy_material("rail_slot", (0.08, 0.08, 0.09), rough=0.5)
    top = RAIL_Z0 + RAIL_H
    names.append(
        _boxes(
            "rail_slots",
            [(x0, x1, y - 0.003, y + 0.003, top, top + 0.0005) for y in lay.rails_y],
            slot,
        ).name
    )
    return names


def build_modules(lay: Layout, alu: Any, cell_tex: str) -> list[str]:
    """Each module: the frame (top lip flush with the module edge, wall set back under it)
    and the cell laminate inset inside the lip; mid-clamps in the gaps on every rail."""
    from truthline.systems.realitybench.envs._common import bpy_material, bpy_quad

    cells = bpy_material("cells", (0.03, 0.04, 0.09), image=cell_tex, rough=0.15)
    names = []
    zt, zb = MODULE_TOP_Z, MODULE_BOTTOM_Z
    lw, lt, r = FRAME_LIP_W, FRAME_LIP_T, FRAME_RECESS
    for i, m in enumerate(lay.modules):
        lips = [(m.x0, m.x0 + lw, m.y0, m.y1, zt - lt, zt),
                (m.x1 - lw, m.x1, m.y0, m.y1, zt - lt, zt),
                (m.x0 + lw, m.x1 - lw, m.y0, m.y0 + lw, zt - lt, zt),
                (m.x0 + lw, m.x1 - lw, m.y1 - lw, m.y1, zt - lt, zt)]  # fmt: skip
        walls = [(m.x0 + r, m.x0 + r + 0.003, m.y0 + r, m.y1 - r, zb, zt - lt),
                 (m.x1 - r - 0.003, m.x1 - r, m.y0 + r, m.y1 - r, zb, zt - lt),
                 (m.x0 + r, m.x1 - r, m.y0 + r, m.y0 + r + 0.003, zb, zt - lt),
                 (m.x0 + r, m.x1 - r, m.y1 - r - 0.003, m.y1 - r, zb, zt - lt)]  # fmt: skip
        names.append(_boxes(f"module_{i}_frame", lips + walls, alu).name)
        zg = zt - GLASS_DROP
        quad = np.array([[m.x0 + lw, m.y1 - lw, zg], [m.x1 - lw, m.y1 - lw, zg],
                         [m.x1 - lw, m.y0 + lw, zg], [m.x0 + lw, m.y0 + lw, zg]])  # fmt: skip
        names.append(bpy_quad(f"module_{i}_cells", quad, cells).name)
    clamps = []
    for gx0, gx1 in lay.mid_clamps:
        for y in lay.rails_y:
            clamps += [(gx0 - 0.006, gx1 + 0.006, y - 0.02, y + 0.02, zt, zt + 0.005),
                       (gx0 + 0.0005, gx1 - 0.0005, y - 0.012, y + 0.012, zb, zt)]  # fmt: skip
    if clamps:
        names.append(_boxes("mid_clamps", clamps, bpy_material("clamp", (0.1, 0.1, 0.11))).name)
    return names


def _hexagon(name: str, cx: float, cy: float, z0: float, z1: float, r: float, mat: Any) -> Any:
    n = 6
    ring = [
        (cx + r * math.cos(2 * math.pi * i / n), cy + r * math.sin(2 * math.pi * i / n))
        for i in range(n)
    ]
    verts = [(x, y, z0) for x, y in ring] + [(x, y, z1) for x, y in ring]
    faces = [tuple(range(n - 1, -1, -1)), tuple(range(n, 2 * n))]
    faces += [(i, (i + 1) % n, n + (i + 1) % n, n + i) for i in range(n)]
    return _mesh(name, verts, faces, mat)


def _flashing_mesh(lay: Layout, a: Attachment, i: int, mat: Any) -> Any:
    """The flashing sheet: on the shingles up to the next course's butt, then (when it is
    installed right) under that course; laid on top of it otherwise."""
    lo, butt = flashing_y(lay, a)
    hi = lo + FLASH_L
    ys = [lo, butt - 1e-4]
    zs = [float(shingle_z(lo)) + FLASH_T, float(shingle_z(butt - 1e-4)) + FLASH_T]
    if a.flashing_under_shingles:
        ys += [butt + 1e-4, hi]
        zs += [SHINGLE_LO - 0.0004] * 2
    else:
        for y in np.arange(butt, hi, COURSE_M):
            ys += [y + 1e-4, min(hi, y + COURSE_M) - 1e-4]
            zs += [
                float(shingle_z(y + 1e-4)) + FLASH_T,
                float(shingle_z(min(hi, y + COURSE_M) - 1e-4)) + FLASH_T,
            ]
    x0, x1 = a.x - FLASH_W / 2, a.x + FLASH_W / 2
    verts = [(x, y, z) for y, z in zip(ys, zs, strict=True) for x in (x0, x1)]
    faces = [(2 * j, 2 * j + 1, 2 * j + 3, 2 * j + 2) for j in range(len(ys) - 1)]
    return _mesh(f"att_{i}_flashing", verts, faces, mat)


def build_attachments(lay: Layout, alu: Any) -> dict[str, list[str]]:
    """Each attachment's parts, one object per part (``att_<i>_<part>``), so masks can show
    one part at a time; a missing lag bolt leaves its hole in the foot."""
    from truthline.systems.realitybench.envs._common import bpy_material

    steel = bpy_material("galvanised", (0.55, 0.56, 0.55), rough=0.35)
    flash = bpy_material("flashing", (0.42, 0.42, 0.44), rough=0.45)
    dark = bpy_material("hole", (0.01, 0.01, 0.01), rough=0.9)
    out: dict[str, list[str]] = {}
    for i, a in enumerate(lay.attachments):
        names = []
        fy, zb = foot_y(lay, a), base_z(lay, a)
        zt = zb + FOOT_BASE[2]
        bx, by = bolt_xy(lay, a)
        if a.flashing:
            names.append(_flashing_mesh(lay, a, i, flash).name)
        if a.l_foot:
            ry = lay.rails_y[a.rail]
            leg_y0 = ry + a.side * RAIL_W / 2
            leg_y1 = leg_y0 + a.side * FOOT_LEG_T
            base = (
                a.x - FOOT_BASE[0] / 2,
                a.x + FOOT_BASE[0] / 2,
                fy - FOOT_BASE[1] / 2,
                fy + FOOT_BASE[1] / 2,
                zb,
                zt,
            )
            leg = (
                a.x - FOOT_BASE[0] / 2,
                a.x + FOOT_BASE[0] / 2,
                min(leg_y0, leg_y1),
                max(leg_y0, leg_y1),
                zt,
                RAIL_Z0 + 0.7 * RAIL_H,
            )
            names.append(_boxes(f"att_{i}_l_foot", [base, leg], alu).name)
            if not a.lag_bolt:
                names.append(
                    _hexagon(f"att_{i}_hole", bx, by, zt, zt + 0.0003, 0.2 * IN, dark).name
                )
        if a.lag_bolt:
            z0 = zt if a.l_foot else zb
            names.append(_hexagon(f"att_{i}_washer", bx, by, z0, z0 + 0.0015, WASHER_R, steel).name)
            names.append(
                _hexagon(
                    f"att_{i}_lag_bolt",
                    bx,
                    by,
                    z0 + 0.0015,
                    z0 + 0.0015 + BOLT_HEAD_H,
                    BOLT_HEAD_M / math.sqrt(3),
                    steel,
                ).name
            )
        out[str(i)] = names
    return out


def build_wire(lay: Layout) -> list[str]:
    """The lead as a tube along its curve, and its clips (a strap from the rail's face)."""
    from truthline.systems.realitybench.envs._common import bpy_material

    w = lay.wire
    if w is None:
        return []
    yw = wire_y(lay, w)
    xs = np.linspace(lay.rail_x[0], lay.rail_x[1], 1200)
    zs = wire_z(lay, w, xs)
    n = 8
    verts, faces = [], []
    for x, z in zip(xs, zs, strict=True):
        for k in range(n):
            a = 2 * math.pi * k / n
            verts.append((x, yw + WIRE_R * math.cos(a), z + WIRE_R * math.sin(a)))
    for j in range(len(xs) - 1):
        for k in range(n):
            a, b = j * n + k, j * n + (k + 1) % n
            faces.append((a, b, b + n, a + n))
    names = [
        _mesh("wire", verts, faces, bpy_material("wire_jacket", (0.02, 0.02, 0.02), rough=0.4)).name
    ]
    ry = lay.rails_y[w.rail]
    zc0, zc1 = CLIP_Z - WIRE_R - 0.001, CLIP_Z + WIRE_R + 0.001
    clips = [(x - 0.006, x + 0.006, yw - WIRE_R - 0.001, ry - RAIL_W / 2, zc0, zc1)
             for x, p in zip(w.clip_xs, w.clips_present, strict=True) if p]  # fmt: skip
    if clips:
        names.append(
            _boxes("wire_clips", clips, bpy_material("clip", (0.6, 0.6, 0.62), rough=0.3)).name
        )
    return names


def build_roof(lay: Layout, tex_dir: str, pitch_deg: float = 0.0) -> dict[str, Any]:
    """Build the whole layout; returns the object names per kind (the scene as built).
    ``pitch_deg`` tilts everything about world X (the roof rising towards +y)."""
    import bpy
    from mathutils import Matrix

    from truthline.systems.realitybench.envs._common import bpy_material

    before = set(bpy.data.objects.keys())
    alu = bpy_material("alu", (0.55, 0.56, 0.58), rough=0.45)
    alu.node_tree.nodes.get("Principled BSDF").inputs["Metallic"].default_value = 0.3
    cell_tex = str(cell_texture().save(tex_dir))
    built: dict[str, Any] = {
        "shingles": build_shingles(lay),
        "rails": build_rails(lay, alu),
        "modules": build_modules(lay, alu, cell_tex),
        "attachments": build_attachments(lay, alu),
        "wire": build_wire(lay),
    }
    if pitch_deg:
        rot = Matrix.Rotation(math.radians(pitch_deg), 4, "X")
        for name in set(bpy.data.objects.keys()) - before:
            ob = bpy.data.objects[name]
            ob.matrix_world = rot @ ob.matrix_world
    return built


def pitch_matrix(pitch_deg: float) -> np.ndarray:
    """The roof frame -> world rotation :func:`build_roof` applies."""
    t = math.radians(pitch_deg)
    return np.array([[1, 0, 0], [0, math.cos(t), -math.sin(t)], [0, math.sin(t), math.cos(t)]])
