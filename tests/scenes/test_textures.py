"""Textures carry exact ground truth: ticks where the reading says, glyphs that are never
ambiguous, the needle on its angle, fonts that resolve the same way on host and worker."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from truthline.scenes import _textures as T


def _dark(img, x: int, y0: int, y1: int) -> np.ndarray:
    a = np.asarray(img.convert("L"))
    return a[y0:y1, x] < 80


def test_tape_ticks_sit_at_exact_readings_and_grade_by_fraction():
    tex = T.tape_texture(length_in=6, px_per_in=128, height_px=128)
    a = np.asarray(tex.image.convert("L"))
    assert tex.image.size == (6 * 128, 128)
    heights = {}
    for k in range(1, 6 * 16):
        x = k * 8  # 1/16 in = 8 px at 128 px/in
        col = a[:, x] < 80
        assert col[0], f"tick {k} missing at x={x}"
        assert not (a[0, x + 4] < 80), f"space between ticks {k} and {k + 1} is dark"
        heights.setdefault(T.tick_denominator(k), set()).add(int(np.argmin(col)))
    # an inch tick is longer than a half, a half than a quarter, ... down to 1/16
    h = {d: min(v) for d, v in heights.items()}
    assert h[1] > h[2] > h[4] > h[8] > h[16]
    assert T.reading_u(7.5, 30) == pytest.approx(0.25)
    assert tex.gt["px_per_in"] == 128 and tex.gt["ticks_per_in"] == 16


def test_tape_numbers_never_cover_a_tick_and_are_deterministic():
    a, b = T.tape_texture(length_in=4), T.tape_texture(length_in=4)
    assert a.sha256() == b.sha256()
    for n in a.gt["numbers"]:
        _x0, _y0, x1, _y1 = n["ink_px"]
        assert x1 < n["inch"] * 128 - 2  # left of its inch line
    assert [n["inch"] for n in a.gt["numbers"]] == [1, 2, 3]


def test_bad_tape_density_is_refused():
    with pytest.raises(T.TextureError, match="px_per_in"):
        T.tape_texture(px_per_in=100)


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (6.5, "6 1/2"),
        (0.125, "1/8"),
        (7.9375, "8"),
        (3.0, "3"),
        (12.375, "12 3/8"),
        (5.25, "5 1/4"),
    ],
)
def test_frac8(x, text):
    assert T.frac8(x) == text


def test_plate_strings_avoid_ambiguous_glyphs_and_texture_refuses_them():
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(500):
        s = T.plate_string(rng)
        assert len(s) == 7 and not set(s) & set(T.AMBIGUOUS)
        seen |= set(s)
    assert len(seen) > 25
    with pytest.raises(T.TextureError, match="ambiguous"):
        T.plate_texture("ABC1234")
    tex = T.plate_texture("8RMG422")
    assert tex.gt["text"] == "8RMG422" and tex.image.size == (610, 304)
    x0, y0, x1, y1 = tex.gt["main"]["ink_px"]
    assert 0 < x0 < x1 < 610 and 0 < y0 < y1 < 304
    assert 20 < tex.gt["char_height_mm"] <= 70
    assert T.fold_confusions("8rmg-4 22") == "8RMG422"
    assert T.fold_confusions("OQI") == T.fold_confusions("001") == "001"


def test_vin_has_no_i_o_q():
    v = T.vin_string(np.random.default_rng(3))
    assert len(v) == 17 and not set(v) & set("IOQ")


def test_dial_needle_lies_on_its_angle():
    for angle in (-12.5, 0.0, 7.3, 25.0):
        tex = T.dial_gauge_texture(angle)
        a = np.asarray(tex.image).astype(int)
        c, R, g = tex.gt["centre_px"][0], tex.gt["radius_px"], tex.gt["gain"]
        t = np.radians(g * angle)
        x, y = c + np.sin(t) * R * 0.5, c + np.cos(t) * R * 0.5
        r, gg, b = a[round(y), round(x)]
        assert r > 150 and gg < 90 and b < 90, (angle, (r, gg, b))
    with pytest.raises(T.TextureError, match="outside"):
        T.dial_gauge_texture(40.0)


def test_digital_level_shows_rounded_value():
    tex = T.digital_level_texture(-3.46)
    assert tex.gt["shown_deg"] == -3.5 and tex.gt["display"] == "3.5°"


def test_label_rows_are_recorded_inside_the_image():
    tex = T.label_texture([("RO", "447182"), ("VIN", "5YJ3E7EB2KF234567")], title="REPAIR ORDER")
    w, h = tex.image.size
    assert [r["value"] for r in tex.gt["rows"]] == ["447182", "5YJ3E7EB2KF234567"]
    for r in tex.gt["rows"]:
        x0, y0, x1, y1 = r["value_ink"]["ink_px"]
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
    with pytest.raises(T.TextureError):
        T.label_texture([])


def test_font_strategy_default_env_and_bpy(tmp_path: Path, monkeypatch):
    monkeypatch.delenv(T.FONT_ENV, raising=False)
    _f, src = T.load_font(20)
    assert src.startswith("pillow:")
    # no bpy on this side: "bpy" falls back to the embedded font
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert T.load_font(20, "bpy")[1].startswith("pillow:")
    monkeypatch.undo()
    # a bpy wheel layout: <pkg>/<ver>/datafiles/fonts/DejaVuSansMono*.{ttf,woff2}
    ttf = Path("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf")
    src_font = ttf if ttf.exists() else None
    if src_font is not None:
        fonts = tmp_path / "bpy" / "5.0" / "datafiles" / "fonts"
        fonts.mkdir(parents=True)
        shutil.copy(src_font, fonts / "DejaVuSansMono.ttf")

        class Spec:
            submodule_search_locations = [str(tmp_path / "bpy")]

        monkeypatch.setattr(importlib.util, "find_spec", lambda name: Spec())
        assert T.load_font(20, "bpy")[1] == "bpy:DejaVuSansMono.ttf"
        monkeypatch.undo()
    monkeypatch.setenv(T.FONT_ENV, str(tmp_path / "missing.ttf"))
    with pytest.raises(T.TextureError, match=r"missing\.ttf"):
        T.load_font(21)


def test_texture_save_is_content_addressed(tmp_path: Path):
    tex = T.digital_level_texture(1.0)
    p1, p2 = tex.save(tmp_path), tex.save(tmp_path)
    assert p1 == p2 and p1.name == tex.sha256()[:16] + ".png"
