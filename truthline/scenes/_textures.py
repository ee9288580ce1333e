"""PIL textures with exact ground truth: tape blade, level gauges, licence plate, label board.

Every texture is drawn from numbers (px per inch, tick lengths, glyph boxes), so what it
shows is known exactly: a tape reading maps to ``u = reading / length_in``; a plate's
string and character boxes are returned with the image. The module is pure PIL + numpy so
the host (numpy 2) and the Blender worker (numpy < 2) both import it.

Fonts (SCENES.md pitfall 13): system fonts may be missing on another machine, so the
default is Pillow's embedded FreeType font (``ImageFont.load_default(size)``, Aileron),
which is byte-identical wherever the same Pillow runs. ``TRUTHLINE_SCENE_FONT`` names a
TTF/OTF/WOFF2 file to use instead, and ``font="bpy"`` takes the DejaVu Sans Mono the bpy
wheel ships (found by ``importlib.util.find_spec`` without importing bpy), falling back to
the embedded font. The font actually used is recorded in every texture's ``gt``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import string
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from truthline.errors import TruthlineError

FONT_ENV = "TRUTHLINE_SCENE_FONT"

# Glyphs a reader cannot tell apart on a plate or a serial number: never generated, and
# folded together when answers are compared (a reader's "O" for a "0" is not a misread
# of the scene).
AMBIGUOUS = "0O1IQ"
CONFUSION_CLASSES: dict[str, str] = {"O": "0", "Q": "0", "I": "1"}
PLATE_LETTERS = "".join(c for c in string.ascii_uppercase if c not in AMBIGUOUS)
PLATE_DIGITS = "".join(c for c in string.digits if c not in AMBIGUOUS)
VIN_CHARS = "".join(c for c in string.ascii_uppercase + string.digits if c not in AMBIGUOUS)


class TextureError(TruthlineError):
    """A texture cannot be drawn as asked (bad size, font file unreadable)."""


@dataclass
class Texture:
    """An RGB image and what it shows, in texture pixels (origin top-left)."""

    image: Image.Image
    gt: dict[str, Any] = field(default_factory=dict)

    def png_bytes(self) -> bytes:
        buf = io.BytesIO()
        self.image.save(buf, format="PNG", optimize=False)
        return buf.getvalue()

    def sha256(self) -> str:
        return hashlib.sha256(self.png_bytes()).hexdigest()

    def save(self, folder: str | Path) -> Path:
        """Write ``<sha256[:16]>.png`` into ``folder`` (content-addressed; kept if present)."""
        data = self.png_bytes()
        path = Path(folder) / f"{hashlib.sha256(data).hexdigest()[:16]}.png"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return path


# -- fonts ----------------------------------------------------------------------------------
def bpy_font_dir() -> Path | None:
    """The fonts folder inside an installed bpy wheel, located without importing bpy."""
    try:
        spec = importlib.util.find_spec("bpy")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        for d in sorted(Path(root).glob("*/datafiles/fonts")):
            if d.is_dir():
                return d
    return None


@lru_cache(maxsize=64)
def _truetype(path: str, size: int) -> ImageFont.FreeTypeFont:
    try:
        return ImageFont.truetype(path, size)
    except OSError as exc:
        raise TextureError(
            f"{path}: cannot open this font ({exc}); set {FONT_ENV} to a TTF/OTF/WOFF2 file "
            "or unset it to use Pillow's embedded font"
        ) from exc


def load_font(size: int, font: str | None = None) -> tuple[ImageFont.FreeTypeFont, str]:
    """A FreeType font of ``size`` px and the name of its source (recorded in the GT).

    ``font``: a file path, ``"bpy"`` (the bpy wheel's DejaVu Sans Mono, else the embedded
    font) or ``None``/``"default"`` (``TRUTHLINE_SCENE_FONT`` if set, else Pillow's embedded
    font)."""
    size = max(1, int(size))
    if font in (None, "default"):
        env = os.environ.get(FONT_ENV)
        if env:
            return _truetype(env, size), f"file:{Path(env).name}"
    elif font == "bpy":
        d = bpy_font_dir()
        cand = sorted(d.glob("DejaVuSansMono*")) if d else []
        if cand:
            return _truetype(str(cand[0]), size), f"bpy:{cand[0].name}"
    else:
        return _truetype(font, size), f"file:{Path(font).name}"
    f = ImageFont.load_default(size)
    if not isinstance(f, ImageFont.FreeTypeFont):  # Pillow without FreeType: bitmap only
        raise TextureError(
            "Pillow was built without FreeType, so no scalable font is available; "
            f"install a Pillow wheel from PyPI or set {FONT_ENV}"
        )
    return f, "pillow:" + " ".join(n for n in f.getname() if n)


def fit_font(
    text: str, max_w: float, max_h: float, font: str | None = None
) -> tuple[ImageFont.FreeTypeFont, str, tuple[float, float, float, float]]:
    """The largest font whose ink box of ``text`` fits ``max_w`` x ``max_h`` px."""
    lo, hi = 1, max(2, int(max_h * 2))
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        f, src = load_font(mid, font)
        box = f.getbbox(text)
        if box[2] - box[0] <= max_w and box[3] - box[1] <= max_h:
            best, lo = (f, src, box), mid + 1
        else:
            hi = mid - 1
    if best is None:
        raise TextureError(f"text {text!r} does not fit {max_w:.0f}x{max_h:.0f} px at any size")
    return best


def _draw_text_box(
    draw: ImageDraw.ImageDraw,
    text: str,
    box: tuple[float, float, float, float],
    fill: Any,
    font: str | None,
) -> dict[str, Any]:
    """Draw ``text`` fitted and centred in ``box``; return its ink box and font source."""
    x0, y0, x1, y1 = box
    f, src, bb = fit_font(text, x1 - x0, y1 - y0, font)
    w, h = bb[2] - bb[0], bb[3] - bb[1]
    ox = x0 + (x1 - x0 - w) / 2 - bb[0]
    oy = y0 + (y1 - y0 - h) / 2 - bb[1]
    draw.text((ox, oy), text, font=f, fill=fill)
    ink = (ox + bb[0], oy + bb[1], ox + bb[2], oy + bb[3])
    return {"text": text, "ink_px": [round(v, 2) for v in ink], "font": src, "size": f.size}


# -- tape measure ----------------------------------------------------------------------------
TAPE_YELLOW = (236, 190, 30)
TICK_LEVELS = {1: 1.0, 2: 0.62, 4: 0.46, 8: 0.34, 16: 0.24}  # denominator -> height share


def tick_denominator(k: int, per_inch: int = 16) -> int:
    """The coarsest fraction of an inch that tick ``k`` (in 1/per_inch steps) marks."""
    for d in (1, 2, 4, 8, 16):
        if k % (per_inch // d) == 0:
            return d
    return per_inch


def tape_texture(
    length_in: int = 30, px_per_in: int = 128, height_px: int = 128, font: str | None = None
) -> Texture:
    """A tape blade: 1/16-in ticks from the top edge, inch numbers, red every 12 in.

    The hook end is at u = 0 (x = 0). Tick ``k`` is centred on x = k * px_per_in / 16, so a
    reading r in inches is at u = r / length_in exactly; ticks are 2 px wide (1/64 in at
    128 px/in), i.e. the 1/16-in ticks are 8 texture px apart (pitfall 14 asks >= 5)."""
    if px_per_in % 16 or px_per_in < 80:
        raise TextureError(f"px_per_in must be a multiple of 16 and >= 80, got {px_per_in}")
    if length_in < 1:
        raise TextureError(f"length_in must be >= 1, got {length_in}")
    w = length_in * px_per_in
    img = Image.new("RGB", (w, height_px), TAPE_YELLOW)
    d = ImageDraw.Draw(img)
    step = px_per_in / 16
    tick_w = max(2, px_per_in // 64)
    for k in range(length_in * 16 + 1):
        x = k * step
        h = TICK_LEVELS[tick_denominator(k)] * height_px * 0.55
        d.rectangle([x - tick_w / 2, 0, x + tick_w / 2 - 1, h], fill=(10, 10, 10))
        d.rectangle(
            [x - tick_w / 2, height_px - h * 0.5, x + tick_w / 2 - 1, height_px], fill=(10, 10, 10)
        )
    numbers = []
    for inch in range(1, length_in):
        x = inch * px_per_in
        red = inch % 12 == 0
        box = (x - px_per_in * 0.42, height_px * 0.58, x + px_per_in * 0.42, height_px * 0.86)
        # the number sits left of its inch line, as on real tapes, but never over a tick
        box = (x - px_per_in * 0.45, box[1], x - px_per_in * 0.05, box[3])
        info = _draw_text_box(d, str(inch), box, (200, 20, 20) if red else (10, 10, 10), font)
        numbers.append({"inch": inch, **info})
    return Texture(
        img,
        {
            "kind": "tape",
            "length_in": length_in,
            "px_per_in": px_per_in,
            "ticks_per_in": 16,
            "tick_width_px": tick_w,
            "size_px": [w, height_px],
            "numbers": numbers,
            "font": numbers[0]["font"] if numbers else None,
            "u_of_reading": f"reading_in / {length_in}",
        },
    )


def reading_u(reading_in: float, length_in: int = 30) -> float:
    """Texture u (0 at the hook, 1 at the far end) of a tape reading in inches."""
    return reading_in / length_in


def frac8(x: float) -> str:
    """Inches to the nearest 1/8 as a tape reader writes it: 6.5 -> "6 1/2", 0.125 -> "1/8"."""
    eighths = round(x * 8)
    whole, rem = divmod(eighths, 8)
    if rem == 0:
        return str(whole)
    g = np.gcd(rem, 8)
    frac = f"{rem // g}/{8 // g}"
    return f"{whole} {frac}" if whole else frac


# -- level / slope gauges --------------------------------------------------------------------
def digital_level_texture(
    angle_deg: float, size_px: tuple[int, int] = (640, 240), font: str | None = None
) -> Texture:
    """A digital angle gauge face: LCD showing the slope to 0.1 degree, and a bubble vial.

    The shown value is ``round(angle_deg, 1)``; its string is in ``gt["display"]``."""
    w, h = size_px
    img = Image.new("RGB", (w, h), (40, 40, 44))
    d = ImageDraw.Draw(img)
    lcd = (w * 0.06, h * 0.12, w * 0.64, h * 0.88)
    d.rectangle(lcd, fill=(168, 190, 150))
    shown = round(float(angle_deg), 1)
    text = f"{abs(shown):.1f}°"
    info = _draw_text_box(
        d, text, (lcd[0] + 8, lcd[1] + 8, lcd[2] - 8, lcd[3] - 8), (20, 24, 20), font
    )
    vial = (w * 0.70, h * 0.35, w * 0.96, h * 0.65)
    d.rounded_rectangle(vial, radius=int(h * 0.15), fill=(190, 220, 120), outline=(20, 20, 20))
    cx = (vial[0] + vial[2]) / 2 + np.clip(shown / 10.0, -1, 1) * (vial[2] - vial[0]) * 0.35
    r = (vial[3] - vial[1]) * 0.32
    d.ellipse([cx - r, h / 2 - r, cx + r, h / 2 + r], fill=(235, 245, 210), outline=(60, 60, 60))
    for dx in (-r * 1.2, r * 1.2):
        mx = (vial[0] + vial[2]) / 2 + dx
        d.line([mx, vial[1], mx, vial[3]], fill=(20, 20, 20), width=2)
    return Texture(
        img,
        {
            "kind": "digital_level",
            "angle_deg": float(angle_deg),
            "shown_deg": shown,
            "display": text,
            "lcd_px": [round(v, 2) for v in lcd],
            "text": info,
            "font": info["font"],
            "size_px": [w, h],
        },
    )


def dial_gauge_texture(
    angle_deg: float,
    size_px: int = 512,
    span_deg: float = 30.0,
    minor_deg: float = 0.5,
    gain: float = 3.0,
    font: str | None = None,
) -> Texture:
    """A magnifying inclinometer dial: ticks every ``minor_deg`` over +/- ``span_deg``,
    labels every 5 degrees, the needle at ``angle_deg`` (0 = straight down = level).

    A slope ``a`` is drawn on the ray ``gain * a`` degrees from the downward vertical
    (counter-clockwise positive) around the dial centre, so 0.5-degree ticks are
    ``gain * 0.5`` degrees of arc apart and the reading is exact by construction."""
    if abs(angle_deg) > span_deg:
        raise TextureError(f"angle {angle_deg} outside the dial's +/-{span_deg} degrees")
    if gain * span_deg > 135:
        raise TextureError(f"gain * span_deg must be <= 135, got {gain * span_deg}")
    s = size_px
    img = Image.new("RGB", (s, s), (245, 245, 240))
    d = ImageDraw.Draw(img)
    c = s / 2
    R = s * 0.46
    d.ellipse([c - R, c - R, c + R, c + R], outline=(20, 20, 20), width=max(2, s // 128))
    labels = []
    n = round(span_deg / minor_deg)
    for k in range(-n, n + 1):
        a = k * minor_deg
        major = abs(a - round(a / 5) * 5) < 1e-9
        mid = abs(a - round(a)) < 1e-9 and not major
        ln = R * (0.16 if major else 0.10 if mid else 0.06)
        t = np.radians(gain * a)
        ux, uy = np.sin(t), np.cos(t)  # 0 deg: straight down (+y in image)
        d.line(
            [c + ux * (R - ln), c + uy * (R - ln), c + ux * R, c + uy * R],
            fill=(20, 20, 20),
            width=3 if major else 1,
        )
        if major:
            lx, ly = c + ux * (R - ln - s * 0.07), c + uy * (R - ln - s * 0.07)
            info = _draw_text_box(
                d,
                f"{abs(round(a)):d}",
                (lx - s * 0.045, ly - s * 0.03, lx + s * 0.045, ly + s * 0.03),
                (20, 20, 20),
                font,
            )
            labels.append({"deg": round(a), **info})
    t = np.radians(gain * angle_deg)
    d.line([c, c, c + np.sin(t) * R * 0.95, c + np.cos(t) * R * 0.95], fill=(200, 30, 30), width=3)
    d.ellipse([c - s * 0.02, c - s * 0.02, c + s * 0.02, c + s * 0.02], fill=(30, 30, 30))
    return Texture(
        img,
        {
            "kind": "dial_gauge",
            "angle_deg": float(angle_deg),
            "minor_deg": minor_deg,
            "span_deg": span_deg,
            "gain": gain,
            "centre_px": [c, c],
            "radius_px": R,
            "labels": labels,
            "font": labels[0]["font"] if labels else None,
            "size_px": [s, s],
        },
    )


# -- licence plate ---------------------------------------------------------------------------
PLATE_MM = (305.0, 152.0)


def plate_string(rng: np.random.Generator, pattern: str = "DLLLDDD") -> str:
    """A plate string from ``pattern`` (L letter, D digit) with no ambiguous glyph."""
    out = []
    for p in pattern:
        pool = PLATE_LETTERS if p == "L" else PLATE_DIGITS if p == "D" else p
        out.append(pool[int(rng.integers(len(pool)))])
    return "".join(out)


def fold_confusions(text: str) -> str:
    """Upper-case, drop spaces/dashes, fold the confusion classes (O/Q->0, I->1)."""
    t = "".join(ch for ch in str(text).upper() if ch.isalnum())
    return "".join(CONFUSION_CLASSES.get(ch, ch) for ch in t)


def plate_texture(
    text: str,
    state: str = "OHIO",
    px_per_mm: float = 2.0,
    char_height_mm: float = 70.0,
    font: str | None = None,
) -> Texture:
    """A 305 x 152 mm plate: a state band on top, ``text`` fitted to the plate's width with
    characters at most ``char_height_mm`` tall; exact glyph boxes in ``gt``."""
    bad = sorted({c for c in text if c in AMBIGUOUS})
    if bad:
        raise TextureError(f"plate text {text!r} uses ambiguous glyphs {bad}; use {PLATE_LETTERS}")
    w, h = round(PLATE_MM[0] * px_per_mm), round(PLATE_MM[1] * px_per_mm)
    img = Image.new("RGB", (w, h), (250, 250, 250))
    d = ImageDraw.Draw(img)
    border = max(2, round(4 * px_per_mm))
    d.rectangle([0, 0, w - 1, h - 1], outline=(20, 40, 120), width=border)
    st = _draw_text_box(
        d,
        state.upper(),
        (w * 0.25, h * 0.05, w * 0.75, h * 0.22),
        (20, 40, 120),
        font,
    )
    main = _draw_text_box(
        d,
        text,
        (w * 0.06, h * 0.30, w * 0.94, h * 0.30 + char_height_mm * px_per_mm),
        (20, 20, 20),
        font,
    )
    ink_h_mm = (main["ink_px"][3] - main["ink_px"][1]) / px_per_mm
    return Texture(
        img,
        {
            "kind": "plate",
            "text": text,
            "state": state.upper(),
            "size_mm": list(PLATE_MM),
            "px_per_mm": px_per_mm,
            "char_height_mm": round(ink_h_mm, 3),
            "main": main,
            "state_text": st,
            "font": main["font"],
            "size_px": [w, h],
        },
    )


# -- label / serial-number board ---------------------------------------------------------------
def serial_string(rng: np.random.Generator, n: int = 10, pool: str = VIN_CHARS) -> str:
    return "".join(pool[int(rng.integers(len(pool)))] for _ in range(n))


def vin_string(rng: np.random.Generator) -> str:
    """A 17-character VIN-shaped string (VINs never use I, O or Q; we also drop 0 and 1)."""
    return serial_string(rng, 17)


def label_texture(
    rows: list[tuple[str, str]],
    title: str = "",
    size_px: tuple[int, int] = (800, 480),
    font: str | None = None,
) -> Texture:
    """A label board: optional title, then ``KEY: VALUE`` rows; each row's ink box in gt."""
    if not rows:
        raise TextureError("a label needs at least one row")
    w, h = size_px
    img = Image.new("RGB", (w, h), (235, 235, 228))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, w - 1, h - 1], outline=(30, 30, 30), width=max(2, w // 200))
    n = len(rows) + (1 if title else 0)
    row_h = (h * 0.9) / n
    y = h * 0.05
    out = []
    t_info = None
    if title:
        t_info = _draw_text_box(d, title, (w * 0.05, y, w * 0.95, y + row_h * 0.8), (0, 0, 0), font)
        y += row_h
    for key, value in rows:
        k = _draw_text_box(
            d,
            f"{key}:",
            (w * 0.04, y + row_h * 0.15, w * 0.34, y + row_h * 0.8),
            (60, 60, 60),
            font,
        )
        v = _draw_text_box(
            d, value, (w * 0.37, y + row_h * 0.1, w * 0.96, y + row_h * 0.85), (0, 0, 0), font
        )
        out.append({"key": key, "value": value, "key_ink": k, "value_ink": v})
        fonts = v["font"]
        y += row_h
    return Texture(
        img,
        {
            "kind": "label",
            "title": title,
            "rows": out,
            "title_ink": t_info,
            "font": fonts,
            "size_px": [w, h],
        },
    )


# -- vehicle damage ------------------------------------------------------------------------------
DAMAGE_TYPES = ("dent", "scratch", "crack")
SEVERITIES = ("minor", "moderate", "severe")


def damage_texture(
    kind: str,
    severity: str,
    colour: tuple[int, int, int] = (150, 20, 25),
    size_px: int = 512,
    seed: int = 0,
) -> Texture:
    """A square patch (30 cm) of painted panel with a dent (shaded hollow), scratches (bright
    lines through the paint) or a crack (a dark jagged line), and a centimetre scale along its
    bottom edge; severity scales the damage's extent and depth.
    ``gt["damage_px"]`` is the damaged area's bounding box in texture pixels."""
    if kind not in DAMAGE_TYPES or severity not in SEVERITIES:
        raise TextureError(f"damage {kind!r}/{severity!r}: use {DAMAGE_TYPES} x {SEVERITIES}")
    rng = np.random.default_rng(seed)
    s = size_px
    k = SEVERITIES.index(severity)
    extent = (0.25, 0.45, 0.7)[k] * s
    img = Image.new("RGB", (s, s), colour)
    d = ImageDraw.Draw(img)
    c = s / 2
    box = [c - extent / 2, c - extent / 2, c + extent / 2, c + extent / 2]
    if kind == "dent":
        depth = (0.25, 0.45, 0.7)[k]
        for i in range(24, 0, -1):
            r = extent / 2 * i / 24
            f = 1 - depth * (1 - i / 24) ** 0.7
            shade = tuple(int(v * f) for v in colour)
            off = (1 - i / 24) * extent * 0.08
            d.ellipse([c - r + off, c - r * 0.8 + off, c + r + off, c + r * 0.8 + off], fill=shade)
        box = [c - extent / 2, c - extent * 0.4, c + extent / 2 + extent * 0.08, c + extent * 0.48]
    elif kind == "scratch":
        n = (3, 7, 14)[k]
        for _ in range(n):
            y0 = c + rng.uniform(-extent / 2, extent / 2)
            d.line(
                [c - extent / 2, y0, c + extent / 2, y0 + rng.uniform(-extent * 0.2, extent * 0.2)],
                fill=(225, 225, 220),
                width=int(1 + k * 1.5),
            )
    else:
        pts = []
        x = c - extent / 2
        y = c
        while x < c + extent / 2:
            pts.append((x, y))
            x += rng.uniform(s * 0.02, s * 0.05)
            y += rng.uniform(-s * 0.03, s * 0.03)
        d.line(pts, fill=(15, 10, 10), width=int(2 + k * 2))
    # the adjuster's scale along the bottom edge: black/white centimetre blocks (the patch is
    # 30 cm wide), the sharp reference a close-up damage photo is judged by
    cm = s / 30.0
    for k in range(30):
        d.rectangle(
            [k * cm, s - 0.06 * s, (k + 1) * cm - 1, s - 1],
            fill=(15, 15, 15) if k % 2 else (240, 240, 235),
        )
    return Texture(
        img,
        {
            "kind": "damage",
            "scale_cm_px": round(cm, 4),
            "damage_type": kind,
            "severity": severity,
            "damage_px": [round(float(v), 2) for v in box],
            "size_px": [s, s],
            "seed": seed,
        },
    )


# -- load center: breaker directory card and dead-front -------------------------------------------
def _draw_at_size(
    draw: ImageDraw.ImageDraw,
    text: str,
    f: ImageFont.FreeTypeFont,
    src: str,
    x0: float,
    yc: float,
    fill: Any,
    align: str = "left",
    x1: float | None = None,
) -> dict[str, Any]:
    """Draw ``text`` at font ``f``, its ink box left-aligned at ``x0`` (or right-aligned at
    ``x1``) and vertically centred on ``yc``; returns the same record as
    ``_draw_text_box`` (text, ink box, font source, size)."""
    bb = f.getbbox(text)
    w, h = bb[2] - bb[0], bb[3] - bb[1]
    left = (x1 - w) if align == "right" and x1 is not None else x0
    ox, oy = left - bb[0], yc - h / 2 - bb[1]
    draw.text((ox, oy), text, font=f, fill=fill)
    ink = (ox + bb[0], oy + bb[1], ox + bb[2], oy + bb[3])
    return {"text": text, "ink_px": [round(v, 2) for v in ink], "font": src, "size": f.size}


def breaker_directory_texture(
    rows: list[tuple[str, int]],
    title: str = "CIRCUIT DIRECTORY",
    size_px: tuple[int, int] = (720, 960),
    font: str | None = None,
) -> Texture:
    """A load center's directory card: a title, then one ruled line per circuit with its
    number, name and amperage ("20A"). Names share one font size (the largest at which the
    longest fits), amperages another, so the smallest characters are known exactly; every
    string's ink box is in ``gt["rows"]`` (``num_ink``, ``name_ink``, ``amps_ink``)."""
    if not rows:
        raise TextureError("a breaker directory needs at least one row")
    w, h = size_px
    img = Image.new("RGB", (w, h), (244, 240, 226))
    d = ImageDraw.Draw(img)
    d.rectangle([0, 0, w - 1, h - 1], outline=(30, 30, 30), width=max(2, w // 150))
    top = h * 0.04
    t_info = _draw_text_box(d, title, (w * 0.08, top, w * 0.92, top + h * 0.07), (0, 0, 0), font)
    y0 = h * 0.14
    row_h = (h * 0.96 - y0) / max(len(rows), 8)
    cols = (w * 0.05, w * 0.15, w * 0.18, w * 0.76, w * 0.80, w * 0.95)  # num | name | amps
    names = [n for n, _ in rows]
    widest = max(names, key=lambda n: load_font(100, font)[0].getlength(n))
    nf, nsrc, _ = fit_font(widest, cols[3] - cols[2], row_h * 0.62, font)
    af, asrc, _ = fit_font("100A", cols[5] - cols[4], row_h * 0.62, font)
    out = []
    for i, (name, amps) in enumerate(rows):
        y = y0 + i * row_h
        d.line([w * 0.04, y + row_h, w * 0.96, y + row_h], fill=(150, 150, 150), width=2)
        yc = y + row_h / 2
        num = _draw_at_size(d, str(i + 1), af, asrc, cols[0], yc, (90, 90, 90), "right", cols[1])
        nm = _draw_at_size(d, name, nf, nsrc, cols[2], yc, (10, 10, 10))
        am = _draw_at_size(d, f"{amps}A", af, asrc, cols[4], yc, (10, 10, 10), "right", cols[5])
        out.append(
            {
                "circuit": i + 1,
                "name": name,
                "amperage": int(amps),
                "num_ink": num,
                "name_ink": nm,
                "amps_ink": am,
            }
        )
    return Texture(
        img,
        {
            "kind": "breaker_directory",
            "title": title,
            "title_ink": t_info,
            "rows": out,
            "font": nsrc,
            "size_px": [w, h],
        },
    )


def breaker_panel_texture(
    amps: list[int], size_px: tuple[int, int] = (360, 640), font: str | None = None
) -> Texture:
    """The load center's dead-front behind the door (0.34 x 0.72 m at the default size): a
    main breaker on top and the branch breakers in two columns of 1-inch spaces (odd
    circuits left, even right, as panels number them), each a dark body with a black
    handle printed with its amperage; ``gt["handles"]`` has each circuit's handle box and
    label ink box in texture pixels."""
    w, h = size_px
    img = Image.new("RGB", (w, h), (200, 202, 205))
    d = ImageDraw.Draw(img)
    d.rectangle([w * 0.34, h * 0.06, w * 0.66, h * 0.16], fill=(40, 40, 44))
    d.rectangle([w * 0.42, h * 0.08, w * 0.58, h * 0.14], fill=(15, 15, 17))
    main = _draw_text_box(d, "200", (w * 0.44, h * 0.09, w * 0.56, h * 0.13), (235, 235, 235), font)
    n = (len(amps) + 1) // 2
    slot_h = h * 0.036
    y0 = h * 0.22
    d.rectangle([w * 0.47, y0 - 4, w * 0.53, y0 + slot_h * n + 4], fill=(120, 110, 90))  # bus
    handles = []
    for i, a in enumerate(amps):
        col, row = i % 2, i // 2
        y = y0 + row * slot_h
        x0, x1 = (w * 0.16, w * 0.47) if col == 0 else (w * 0.53, w * 0.84)
        d.rectangle([x0, y + 1, x1, y + slot_h - 1], fill=(45, 45, 48))
        hx0, hx1 = (x1 - w * 0.13, x1 - w * 0.03) if col == 0 else (x0 + w * 0.03, x0 + w * 0.13)
        box = (hx0, y + slot_h * 0.18, hx1, y + slot_h * 0.82)
        d.rectangle(box, fill=(12, 12, 13))
        ink = _draw_text_box(
            d, str(a), (box[0] + 2, box[1] + 1, box[2] - 2, box[3] - 1), (235, 235, 235), font
        )
        handles.append({"circuit": i + 1, "amperage": int(a), "box_px": list(box), "ink": ink})
        num = (
            (x0 - w * 0.07, y + slot_h * 0.3, x0 - w * 0.02, y + slot_h * 0.7)
            if col == 0
            else (x1 + w * 0.02, y + slot_h * 0.3, x1 + w * 0.07, y + slot_h * 0.7)
        )
        _draw_text_box(d, str(i + 1), num, (40, 40, 40), font)
    return Texture(
        img,
        {"kind": "breaker_panel", "main": main, "handles": handles, "size_px": [w, h]},
    )
