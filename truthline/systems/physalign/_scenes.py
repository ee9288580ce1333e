"""Generated physics problems with known answers: four diagram domains built from a seed.

A scene is drawn in pixel coordinates (origin top-left, y down) so that every primitive's
box is known exactly: the renderer measures each text label after drawing. Each domain puts
entities (objects, connectors, supports, forces, points) and literal labels (values with
units, signs, subscripts, primes) into the picture, and writes a problem text whose
mentions and quantities are recorded as character spans. Label positions are jittered so
that a label is sometimes nearer a region it does not belong to: those probes make the
nearest-region rule's hard subset, which a benchmark needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

WIDTH, HEIGHT = 640, 480
DOMAINS = ("pulley", "incline", "circuit", "optics")


def poly_bbox(pts: list[list[float]]) -> list[float]:
    """The box ``[x, y, w, h]`` of a polyline's (rounded) points: one formula for the
    generator and for regions pulled from Label Studio, so both give the same numbers."""
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return [min(xs), min(ys), round(max(xs) - min(xs), 2), round(max(ys) - min(ys), 2)]


@dataclass
class Shape:
    """One drawn primitive of an entity: ``rect`` (x, y, w, h), ``poly`` / ``line`` points,
    ``arrow`` (two points), ``circle`` (cx, cy, r) or ``zigzag`` (two points)."""

    kind: str
    pts: list[tuple[float, float]]
    r: float = 0.0

    def bbox(self) -> list[float]:
        xs = [p[0] for p in self.pts]
        ys = [p[1] for p in self.pts]
        if self.kind == "circle":
            (cx, cy), r = self.pts[0], self.r
            return [cx - r, cy - r, 2 * r, 2 * r]
        # a line's box is its points' extent (a region drawn along it has the same box)
        x0, y0 = min(xs), min(ys)
        return [x0, y0, max(xs) - x0, max(ys) - y0]

    def polyline(self) -> list[list[float]] | None:
        if self.kind in ("arrow", "line", "zigzag"):
            return [[round(x, 2), round(y, 2)] for x, y in self.pts]
        return None


@dataclass
class Entity:
    key: str  # the annotator's entity key: never a word of the problem text
    kind: str  # object | connector | support | force | field | point
    subkind: str
    shapes: list[Shape]


@dataclass
class Label:
    text: str  # literal, as printed (transcription target)
    math: str  # what matplotlib draws (mathtext for subscripts)
    xy: tuple[float, float]
    entity: str  # entity key it names or quantifies
    relation: str  # names | quantity_of
    quantity_kind: str | None = None
    ha: str = "center"
    va: str = "center"


@dataclass
class Mention:
    start: int
    end: int
    text: str
    kind: str  # entity_mention | quantity | query_target
    entity: str
    quantity_kind: str | None = None


@dataclass
class Scene:
    domain: str
    entities: list[Entity]
    labels: list[Label]
    text: str
    mentions: list[Mention]
    question: str
    answer: dict[str, Any] = field(default_factory=dict)


class _Text:
    """Builds a problem text and records the spans of its mentions as it goes."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.n = 0
        self.mentions: list[Mention] = []

    def add(self, s: str, *, kind: str | None = None, entity: str = "", qk: str | None = None):
        if kind:
            self.mentions.append(Mention(self.n, self.n + len(s), s, kind, entity, qk))
        self.parts.append(s)
        self.n += len(s)
        return self

    def text(self) -> str:
        return "".join(self.parts)


def _num(rng: np.random.Generator, choices: list[float]) -> float:
    return float(choices[int(rng.integers(len(choices)))])


def _fmt(v: float) -> str:
    s = f"{v:g}"
    return s.replace("-", "−")  # printed with a true minus sign (U+2212)


def _jitter(rng: np.random.Generator, s: float = 18.0) -> tuple[float, float]:
    return float(rng.uniform(-s, s)), float(rng.uniform(-s, s))


def _pulley(rng: np.random.Generator) -> Scene:
    ty = float(rng.uniform(250, 300))  # table top
    tx1 = float(rng.uniform(380, 440))  # table right edge
    ax = float(rng.uniform(90, tx1 - 200))
    aw, ah = float(rng.uniform(70, 100)), float(rng.uniform(50, 70))
    px, pr = tx1 + 20, 18.0
    bw, bh = float(rng.uniform(50, 70)), float(rng.uniform(45, 60))
    by = float(rng.uniform(ty + 60, HEIGHT - bh - 20))
    bx = px + pr - bw / 2
    m1, m2 = _num(rng, [1, 1.5, 2, 3, 4, 5]), _num(rng, [0.5, 1, 2, 2.5, 3])
    f = _num(rng, [6, 8, 10, 12, 15, 20])
    sign = -1 if rng.random() < 0.4 else 1
    mu = _num(rng, [0.1, 0.15, 0.2, 0.25, 0.3])
    ents = [
        Entity("tbl_surface", "support", "table", [Shape("rect", [(30, ty), (tx1, ty + 16)])]),
        Entity("blk_left", "object", "block", [Shape("rect", [(ax, ty - ah), (ax + aw, ty)])]),
        Entity("blk_hang", "object", "block", [Shape("rect", [(bx, by), (bx + bw, by + bh)])]),
        Entity("whl_top", "support", "pulley", [Shape("circle", [(px, ty - pr)], r=pr)]),
        Entity(
            "cbl_main",
            "connector",
            "cable",
            [
                Shape(
                    "line",
                    [(ax + aw, ty - ah / 2), (px, ty - ah / 2), (px + pr, ty - pr), (px + pr, by)],
                )
            ],
        ),
        Entity(
            "frc_pull",
            "force",
            "applied",
            [Shape("arrow", [(ax, ty - ah / 2), (ax - float(rng.uniform(60, 80)), ty - ah / 2)])],
        ),
        Entity(
            "frc_weight",
            "force",
            "weight",
            [Shape("arrow", [(bx + bw / 2, by + bh), (bx + bw / 2, by + bh + 40)])],
        ),
    ]
    jx, jy = _jitter(rng)
    # some labels are printed nearer a region they do not belong to (the rule's hard cases)
    t_xy = (
        (bx + bw + 6, by - 12)
        if rng.random() < 0.4
        else (px + pr + 16 + jx / 3, (ty + by) / 2 + jy)
    )
    f_xy = (
        (ax + 22, ty - ah - 16) if rng.random() < 0.4 else (ax - 40 + jx, ty - ah / 2 - 20 + jy / 2)
    )
    labels = [
        Label("A", "A", (ax + aw / 2, ty - ah / 2), "blk_left", "names"),
        Label("B", "B", (bx + bw / 2, by + bh / 2), "blk_hang", "names"),
        Label(
            "m_1 = " + _fmt(m1) + " kg",
            "$m_1$ = " + _fmt(m1) + " kg",
            (ax + aw / 2 + jx, ty - ah - 22 + jy / 3),
            "blk_left",
            "quantity_of",
            "mass",
        ),
        Label(
            "m_2 = " + _fmt(m2) + " kg",
            "$m_2$ = " + _fmt(m2) + " kg",
            (bx - 12 + jx / 2, by + bh / 2 + jy),
            "blk_hang",
            "quantity_of",
            "mass",
            ha="right",
        ),
        Label("T", "$T$", t_xy, "cbl_main", "quantity_of", "tension", ha="left"),
        Label(
            "F = " + _fmt(sign * f) + " N",
            "$F$ = " + _fmt(sign * f) + " N",
            f_xy,
            "frc_pull",
            "quantity_of",
            "force",
        ),
        Label(
            "W_2",
            "$W_2$",
            (bx + bw / 2 + 14, by + bh + 28 + jy / 3),
            "frc_weight",
            "quantity_of",
            "force",
            ha="left",
        ),
    ]
    t = _Text()
    t.add("Block A", kind="entity_mention", entity="blk_left")
    t.add(" rests on a horizontal table and is tied by a light cable over a pulley to ")
    t.add("the hanging block", kind="entity_mention", entity="blk_hang")
    t.add(". The coefficient of kinetic friction between block A and ")
    t.add("the table", kind="entity_mention", entity="tbl_surface")
    t.add(" is ")
    t.add(f"μ = {_fmt(mu)}", kind="quantity", entity="tbl_surface", qk="friction_coefficient")
    t.add(". A horizontal force F acts on block A as drawn.")
    return Scene(
        "pulley",
        ents,
        labels,
        t.text(),
        t.mentions,
        "Find the tension in the cable.",
        {"mu": mu, "m1": m1, "m2": m2, "F": sign * f},
    )


def _incline(rng: np.random.Generator) -> Scene:
    x0, y0 = float(rng.uniform(60, 110)), float(rng.uniform(380, 420))
    base = float(rng.uniform(380, 460))
    theta = _num(rng, [20, 25, 30, 35, 40])
    h = base * float(np.tan(np.radians(theta)))
    h = min(h, y0 - 60)
    apex = (x0 + base, y0 - h)
    u = np.array([base, -h]) / float(np.hypot(base, h))  # up the slope
    nrm = np.array([u[1], -u[0]])  # outward normal (up-left)
    s = float(rng.uniform(0.35, 0.6)) * float(np.hypot(base, h))
    foot = np.array([x0, y0]) + s * u
    size = float(rng.uniform(50, 65))
    c = foot + nrm * size / 2  # the block's centre: half a side above the slope
    corners = [
        tuple(c + a * u * size / 2 + b * nrm * size / 2)
        for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))
    ]
    m = _num(rng, [1, 2, 2.5, 4, 5])
    f = _num(rng, [3, 5, 7.5, 9])
    sign = -1 if rng.random() < 0.5 else 1
    wtip = (float(c[0]), float(c[1]) + 70)
    cx0 = min(x0 + base + 25, WIDTH - 70)
    ftip = tuple(c + u * 75)
    ntip = tuple(c + nrm * 75)
    ents = [
        Entity(
            "ramp_wedge", "support", "incline", [Shape("poly", [(x0, y0), (x0 + base, y0), apex])]
        ),
        Entity(
            "blk_slope",
            "object",
            "block",
            [Shape("poly", [(float(a), float(b)) for a, b in corners])],
        ),
        Entity("frc_grav", "force", "weight", [Shape("arrow", [(float(c[0]), float(c[1])), wtip])]),
        Entity(
            "frc_push",
            "force",
            "applied",
            [Shape("arrow", [(float(c[0]), float(c[1])), (float(ftip[0]), float(ftip[1]))])],
        ),
        Entity(
            "frc_norm",
            "force",
            "normal",
            [Shape("arrow", [(float(c[0]), float(c[1])), (float(ntip[0]), float(ntip[1]))])],
        ),
        Entity("flr_ground", "support", "floor", [Shape("line", [(20, y0), (WIDTH - 20, y0)])]),
        Entity("box_floor", "object", "crate", [Shape("rect", [(cx0, y0 - 40), (cx0 + 50, y0)])]),
    ]
    jx, jy = _jitter(rng, 14)
    labels = [
        Label(
            "θ = " + _fmt(theta) + "°",
            "θ = " + _fmt(theta) + "°",
            (x0 + 70 + jx, y0 - 16),
            "ramp_wedge",
            "quantity_of",
            "angle",
            ha="left",
        ),
        Label(
            "m = " + _fmt(m) + " kg",
            "$m$ = " + _fmt(m) + " kg",
            (float(c[0] - nrm[0] * 0) + 40 + jx, float(c[1]) + 28 + jy),
            "blk_slope",
            "quantity_of",
            "mass",
            ha="left",
        ),
        Label(
            "F_1 = " + _fmt(sign * f) + " N",
            "$F_1$ = " + _fmt(sign * f) + " N",
            (float(ftip[0]) + 8 + jx / 2, float(ftip[1]) - 8 + jy / 2),
            "frc_push",
            "quantity_of",
            "force",
            ha="left",
        ),
        Label(
            "N",
            "$N$",
            (float(ntip[0]) - 10, float(ntip[1]) - 6 + jy / 3),
            "frc_norm",
            "quantity_of",
            "force",
            ha="right",
        ),
        Label(
            "mg",
            "$mg$",
            (wtip[0] + 10 + jx / 3, wtip[1] - 6),
            "frc_grav",
            "quantity_of",
            "force",
            ha="left",
        ),
        Label("M = 10 kg", "$M$ = 10 kg", (cx0 + 25, y0 - 58), "box_floor", "quantity_of", "mass"),
    ]
    t = _Text()
    t.add("A block", kind="entity_mention", entity="blk_slope")
    t.add(" sits on ")
    t.add("a fixed wedge", kind="entity_mention", entity="ramp_wedge")
    t.add(
        " resting on the floor. A force is applied along the slope as drawn; the block stays at rest. "
        "The surface is rough with "
    )
    t.add("μ_s = 0.4", kind="quantity", entity="ramp_wedge", qk="friction_coefficient")
    t.add(".")
    return Scene(
        "incline",
        ents,
        labels,
        t.text(),
        t.mentions,
        "Find the friction force on the block.",
        {"theta": theta, "m": m, "F1": sign * f},
    )


def _zigzag(p: tuple[float, float], q: tuple[float, float]) -> list[tuple[float, float]]:
    (x1, y1), (x2, y2) = p, q
    pts = [p]
    n = 6
    dx, dy = (x2 - x1) / n, (y2 - y1) / n
    if abs(dx) >= abs(dy):
        ox, oy = 0.0, 10.0
    else:
        ox, oy = 10.0, 0.0
    for k in range(1, n):
        sgn = 1 if k % 2 else -1
        pts.append((x1 + dx * k + sgn * ox, y1 + dy * k + sgn * oy))
    pts.append(q)
    return pts


def _circuit(rng: np.random.Generator) -> Scene:
    lx, r = float(rng.uniform(90, 150)), float(rng.uniform(460, 560))
    top, bot = float(rng.uniform(80, 130)), float(rng.uniform(340, 400))
    mx, my = (lx + r) / 2, (top + bot) / 2
    r1 = ((mx - 50, top), (mx + 50, top))
    r2 = ((r, my - 50), (r, my + 50))
    r3 = ((mx - 50, bot), (mx + 50, bot))
    vals = {
        "res_top": _num(rng, [100, 220, 330, 470]),
        "res_right": _num(rng, [1, 1.5, 2.2, 4.7]),
        "res_bottom": _num(rng, [10, 47, 68, 82]),
    }
    volt = _num(rng, [1.5, 3, 6, 9, 12])
    cur = _num(rng, [0.2, 0.3, 0.5, 1.2])
    csign = -1 if rng.random() < 0.5 else 1
    ents = [
        Entity(
            "src_cell",
            "object",
            "battery",
            [Shape("rect", [(lx - 14, my - 22), (lx + 14, my + 22)])],
        ),
        Entity("res_top", "object", "resistor", [Shape("zigzag", list(_zigzag(*r1)))]),
        Entity("res_right", "object", "resistor", [Shape("zigzag", list(_zigzag(*r2)))]),
        Entity("res_bottom", "object", "resistor", [Shape("zigzag", list(_zigzag(*r3)))]),
        Entity(
            "wre_upper", "connector", "wire", [Shape("line", [(lx, my - 22), (lx, top), r1[0]])]
        ),
        Entity("wre_corner", "connector", "wire", [Shape("line", [r1[1], (r, top), r2[0]])]),
        Entity("wre_lower", "connector", "wire", [Shape("line", [r2[1], (r, bot), r3[1]])]),
        Entity(
            "wre_return", "connector", "wire", [Shape("line", [r3[0], (lx, bot), (lx, my + 22)])]
        ),
    ]
    jx, jy = _jitter(rng, 22)
    labels = [
        Label(
            f"R_1 = {_fmt(vals['res_top'])} Ω",
            f"$R_1$ = {_fmt(vals['res_top'])} Ω",
            (mx + jx, top - 24 + jy / 3),
            "res_top",
            "quantity_of",
            "resistance",
        ),
        Label(
            f"R_2 = {_fmt(vals['res_right'])} kΩ",
            f"$R_2$ = {_fmt(vals['res_right'])} kΩ",
            (r - 18, my + jy),
            "res_right",
            "quantity_of",
            "resistance",
            ha="right",
        ),
        Label(
            f"R_3 = {_fmt(vals['res_bottom'])} Ω",
            f"$R_3$ = {_fmt(vals['res_bottom'])} Ω",
            (mx + jx, bot + 26 + jy / 3),
            "res_bottom",
            "quantity_of",
            "resistance",
        ),
        Label(
            f"ε = {_fmt(volt)} V",
            f"ε = {_fmt(volt)} V",
            (lx + 22, my + jy / 2),
            "src_cell",
            "quantity_of",
            "voltage",
            ha="left",
        ),
        Label(
            f"I = {_fmt(csign * cur)} A",
            f"$I$ = {_fmt(csign * cur)} A",
            (r + 14, my + 58) if rng.random() < 0.4 else (r + 10, bot - 40 + jy / 2),
            "wre_lower",
            "quantity_of",
            "current",
            ha="left",
        ),
    ]
    t = _Text()
    t.add("In the circuit shown, ")
    t.add("the cell", kind="entity_mention", entity="src_cell")
    t.add(" has internal resistance ")
    t.add("r = 0.5 Ω", kind="quantity", entity="src_cell", qk="resistance")
    t.add(" and drives three resistors in series; ")
    t.add("the top resistor", kind="entity_mention", entity="res_top")
    t.add(" is rated at ")
    t.add("0.25 W", kind="quantity", entity="res_top", qk="power")
    t.add(".")
    return Scene(
        "circuit",
        ents,
        labels,
        t.text(),
        t.mentions,
        "Is the top resistor within its power rating?",
        {"emf": volt, **vals},
    )


def _optics(rng: np.random.Generator) -> Scene:
    ay = float(rng.uniform(220, 280))
    lx = float(rng.uniform(280, 360))
    f = float(rng.uniform(70, 110))
    ox = lx - float(rng.uniform(1.4, 2.2)) * f
    oh = float(rng.uniform(50, 80))
    do = lx - ox
    di = do * f / (do - f)
    ix = min(lx + di, WIDTH - 30)
    ih = -oh * (ix - lx) / do
    fcm = _num(rng, [5, 8, 10, 12, 15])
    ho = _num(rng, [1, 1.5, 2, 3])
    hi = -_num(rng, [2, 3, 4.5, 6])
    ents = [
        Entity("ax_main", "support", "axis", [Shape("line", [(20, ay), (WIDTH - 20, ay)])]),
        Entity(
            "lns_conv",
            "object",
            "lens",
            [Shape("poly", [(lx, ay - 110), (lx + 10, ay), (lx, ay + 110), (lx - 10, ay)])],
        ),
        Entity("arr_obj", "object", "object_arrow", [Shape("arrow", [(ox, ay), (ox, ay - oh)])]),
        Entity("arr_img", "object", "image_arrow", [Shape("arrow", [(ix, ay), (ix, ay - ih)])]),
        Entity("pt_focus_l", "point", "focal_point", [Shape("circle", [(lx - f, ay)], r=4)]),
        Entity("pt_focus_r", "point", "focal_point", [Shape("circle", [(lx + f, ay)], r=4)]),
    ]
    jx, jy = _jitter(rng, 16)
    labels = [
        Label("F", "$F$", (lx - f + jx / 3, ay + 18), "pt_focus_l", "names"),
        Label("F'", "$F'$", (lx + f + jx / 3, ay + 18), "pt_focus_r", "names"),
        Label(
            f"f = {_fmt(fcm)} cm",
            f"$f$ = {_fmt(fcm)} cm",
            (lx + 14 + jx / 2, ay - 120 + jy / 2),
            "lns_conv",
            "quantity_of",
            "length",
            ha="left",
        ),
        Label(
            f"h_o = {_fmt(ho)} cm",
            f"$h_o$ = {_fmt(ho)} cm",
            (ox - 8 + jx / 2, ay - oh / 2 + jy),
            "arr_obj",
            "quantity_of",
            "length",
            ha="right",
        ),
        Label(
            f"h_i = {_fmt(hi)} cm",
            f"$h_i$ = {_fmt(hi)} cm",
            (ix + 8, ay - ih / 2 + jy),
            "arr_img",
            "quantity_of",
            "length",
            ha="left",
        ),
    ]
    t = _Text()
    t.add("An upright object", kind="entity_mention", entity="arr_obj")
    t.add(" stands on the principal axis of ")
    t.add("a thin converging lens", kind="entity_mention", entity="lns_conv")
    t.add("; the lens forms ")
    t.add("a real, inverted image", kind="entity_mention", entity="arr_img")
    t.add(" of magnification ")
    t.add("M = −1.5", kind="quantity", entity="arr_img", qk="magnification")
    t.add(".")
    return Scene(
        "optics",
        ents,
        labels,
        t.text(),
        t.mentions,
        "Find the object distance.",
        {"f": fcm, "ho": ho, "hi": hi},
    )


BUILDERS = {"pulley": _pulley, "incline": _incline, "circuit": _circuit, "optics": _optics}


def build_scene(domain: str, rng: np.random.Generator) -> Scene:
    return BUILDERS[domain](rng)
