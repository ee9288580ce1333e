"""Rendered-frame measurements of the vehicle environments (tiny Workbench frames): what the
image shows must be what the GT says.

vehicle_face: each face's pixels in the face-class ID pass (``params["id_pass"]``) against
the GT visible faces; the car's mask bbox against the GT bbox; the side-view silhouette
(height/length, roofline) names the body style. damage_view: the damage's pixels land on
the GT damage polygon and their measured size lies in the GT severity band. plate: the
plate rectified from the GT corners reads the GT string by glyph correlation, and the
measured character height matches the GT pixels. They fail without the scenes venv.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import pytest
from PIL import Image

from truthline.scenes import RenderSettings, get_environment
from truthline.scenes._render import render
from truthline.scenes._store import FrameStore
from truthline.systems.realitybench.envs._car import BODY_STYLES, ID_COLOURS
from truthline.systems.realitybench.envs.vehicle import FACING_MAX_DEG

WB = RenderSettings(engine="BLENDER_WORKBENCH", spp=1, denoise=None, mask=True)
AZIMUTHS = (0.0, 45.0, 90.0, 135.0, 180.0, 225.0, 270.0, 315.0)
HUES = {k: cv2.cvtColor(np.array([[[255 * c for c in v]]], np.uint8), cv2.COLOR_RGB2HSV)[0, 0, 0]
        for k, v in ID_COLOURS.items() if k in ("front", "rear", "left", "right", "top")}  # fmt: skip
# a face counts as shown when its ID pixels are at least this share of the car's pixels
SHOWN_SHARE = 0.01


def _quad(w: float, h: float) -> np.ndarray:
    """Corners TL, TR, BR, BL of a ``w`` x ``h`` canonical image (the GT polygons' order)."""
    return np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)


def _params(env: str, seed: int, res: list[int], **scene: Any) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    e = get_environment(env)
    while True:
        p = e.sample(rng, {"bad": []})
        if all(p["scene"][k] == v for k, v in scene.items()):
            break
    p["camera"]["res"] = res
    return p


def _place(p: dict[str, Any], **cam: Any) -> dict[str, Any]:
    p["camera"].update(aim=[0.0, 0.0], roll_deg=0.0, **cam)
    return p


def _render(
    worker: Any, tmp: Any, env: str, p: dict[str, Any]
) -> tuple[Any, np.ndarray, np.ndarray]:
    rep = render(env, [p], tmp, WB, client=worker)
    assert not rep.failed, rep.failed
    rec = rep.records[0]
    store = FrameStore(tmp)
    rgb = np.asarray(Image.open(store.variant_path(rec, "rgb")).convert("RGB"))
    mask = np.asarray(Image.open(store.variant_path(rec, "mask")).convert("L")) > 127
    return rec, rgb, mask


# -- vehicle_face ------------------------------------------------------------------------------
def face_pixels(rgb: np.ndarray, mask: np.ndarray) -> dict[str, int]:
    """Pixels of each face class in an ID-pass frame: saturated pixels of the car by hue,
    kept where the whole 3x3 neighbourhood agrees (an anti-aliased edge between red and
    blue faces is magenta, the colour of another class)."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV).astype(int)
    ok = mask & (hsv[..., 1] > 128) & (hsv[..., 2] > 40)
    out = {}
    for k, h in HUES.items():
        d = np.abs(hsv[..., 0] - int(h))
        d = np.minimum(d, 180 - d)  # OpenCV hue is 0-179
        cls = (ok & (d <= 12)).astype(np.uint8)
        out[k] = int(cv2.erode(cls, np.ones((3, 3), np.uint8)).sum())
    return out


@pytest.fixture(scope="module")
def face_frames(worker, tmp_path_factory):
    out = tmp_path_factory.mktemp("faces")
    frames = []
    for i, style in enumerate(BODY_STYLES):
        for az in AZIMUTHS:
            p = _place(_params("vehicle_face", i, [192, 144], body=style),
                       around_deg=az, view_deg=80.0, distance_m=8.5)  # fmt: skip
            p["id_pass"] = True
            frames.append(_render(worker, out, "vehicle_face", p))
    # sampled clean frames as the sampler places them (any style, elevation, distance)
    for seed in range(40, 52):
        p = _params("vehicle_face", seed, [192, 144])
        p["id_pass"] = True
        frames.append(_render(worker, out, "vehicle_face", p))
    return frames


def test_face_id_pass_shows_the_gt_visible_faces(face_frames):
    checked = 0
    for rec, rgb, mask in face_frames:
        gt = rec.gt
        # a face near the 80 deg cut-off is a sliver either way: measured only off the band
        if any(FACING_MAX_DEG - 10 < a < 92 for a in gt["facing_deg"].values()):
            continue
        px = face_pixels(rgb, mask)
        shown = sorted(f for f in ("front", "rear", "left", "right")
                       if px[f] >= SHOWN_SHARE * mask.sum())  # fmt: skip
        assert shown == sorted(gt["visible_faces"]), (gt["body_style"], gt["facing_deg"], px)
        checked += 1
    assert checked >= 30  # every axial and diagonal view, plus some sampled ones


def test_axial_views_show_one_face_and_diagonals_two(face_frames):
    for rec, rgb, mask in face_frames[: 8 * len(BODY_STYLES)]:
        faces = rec.gt["visible_faces"]
        az = rec.params["camera"]["around_deg"]
        assert len(faces) == (1 if az % 90 == 0 else 2), (az, faces)
        px = face_pixels(rgb, mask)
        main = {0: "front", 90: "right", 180: "rear", 270: "left"}.get(int(az))
        if main:  # the face the camera looks at holds most of the labelled pixels
            side = sum(px[f] for f in ("front", "rear", "left", "right"))
            assert px[main] > 0.9 * side, (az, px)


def test_car_mask_bbox_matches_the_gt_bbox(face_frames):
    for rec, _, mask in face_frames:
        ys, xs = np.nonzero(mask)
        (x0, y0), _, (x1, y1), _ = rec.gt["target"]["polygon_px"]
        # a pixel is in the mask when its centre is covered: edges at k + 0.5
        meas = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], float)
        assert np.abs(meas - [x0, y0, x1, y1]).max() <= 1.0, (meas, [x0, y0, x1, y1])


# -- body style from the side silhouette ---------------------------------------------------------
def silhouette_features(mask: np.ndarray, front_right: bool) -> dict[str, float]:
    """Height/length and the roofline (top edge height per column, rear to front, as a share
    of the car's height) from a level side view's mask."""
    ys, xs = np.nonzero(mask)
    x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
    cols = mask[y0:y1, x0:x1]
    top = np.where(cols.any(axis=0), cols.argmax(axis=0), y1 - y0)
    h = (y1 - y0 - top) / (y1 - y0)
    if not front_right:
        h = h[::-1]
    t = (np.arange(len(h)) + 0.5) / len(h)
    return {
        "hl": (y1 - y0) / (x1 - x0),
        # share of the rear 40 % under three quarters of the height: trunk deck or bed
        "low_rear": float((h[t <= 0.4] < 0.75).mean()),
        "roof": float((h > 0.9).mean()),  # share of the length that is roof
    }


def style_from_silhouette(f: dict[str, float]) -> str:
    """The four styles by their profiles: a pickup's bed keeps almost all the rear low, a
    sedan's trunk keeps a good part of it low, an SUV has roof over half its length, a
    hatchback's roof ends in a sloping hatch."""
    if f["low_rear"] >= 0.75:
        return "pickup"
    if f["low_rear"] >= 0.3:
        return "sedan"
    return "suv" if f["roof"] >= 0.47 else "hatchback"


@pytest.fixture(scope="module")
def side_frames(worker, tmp_path_factory):
    out = tmp_path_factory.mktemp("sides")
    frames = []
    for i, style in enumerate(BODY_STYLES):
        for az in (90.0, 270.0):
            p = _place(_params("vehicle_face", i, [256, 192], body=style),
                       around_deg=az, view_deg=90.0, distance_m=8.0)  # fmt: skip
            frames.append(_render(worker, out, "vehicle_face", p))
    return frames


def test_side_silhouette_names_the_body_style(side_frames):
    feats = {}
    for rec, _, mask in side_frames:
        gt = rec.gt
        assert gt["visible_faces"] in (["left"], ["right"])
        f = silhouette_features(mask, gt["visible_faces"] == ["right"])
        feats[(gt["body_style"], gt["visible_faces"][0])] = f
        assert style_from_silhouette(f) == gt["body_style"], (gt["body_style"], f)
        dims = gt["dimensions"]
        # the near side is nearer than the roof: perspective shifts the ratio by a few %
        assert f["hl"] == pytest.approx(dims["height_m"] / dims["length_m"], rel=0.07), f
    hl = {s: feats[(s, "right")]["hl"] for s in BODY_STYLES}
    assert hl["suv"] > hl["sedan"] and hl["hatchback"] > hl["sedan"]


# -- damage_view -------------------------------------------------------------------------------
def _damage_pixels(rgb: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Pixels of the patch that differ from its paint, the centimetre scale (bottom 8 %)
    left out. The paint is a quadratic fit over the patch's outer ring (where no damage is
    drawn), because studio lighting shades even a flat patch in a smooth gradient."""
    q = np.asarray(poly, np.float32)
    h = cv2.getPerspectiveTransform(q, _quad(1, 1))
    m = np.zeros(rgb.shape[:2], np.uint8)
    cv2.fillConvexPoly(m, np.round(q).astype(np.int32), 1)
    ys, xs = np.nonzero(cv2.erode(m, np.ones((3, 3), np.uint8)))
    uv = cv2.perspectiveTransform(np.c_[xs + 0.5, ys + 0.5][None].astype(np.float32), h)[0]
    u, v = uv[:, 0], uv[:, 1]
    body = (u > 0.02) & (u < 0.98) & (v > 0.02) & (v < 0.9)
    ring = body & ((u < 0.12) | (u > 0.9) | (v < 0.1))
    a = np.c_[np.ones_like(u), u, v, u * u, v * v, u * v]
    col = rgb[ys, xs].astype(float)
    coef = np.linalg.lstsq(a[ring], col[ring], rcond=None)[0]
    fit = a @ coef
    # relative to the paint's brightness: a shallow dent darkens dark paint by a few levels
    rel = np.abs(col - fit).max(axis=1) / max(float(fit.max()), 40.0)
    hit = body & (rel > 0.07)
    out = np.zeros(rgb.shape[:2], bool)
    out[ys[hit], xs[hit]] = True
    return out


@pytest.fixture(scope="module")
def damage_frames(worker, tmp_path_factory):
    out = tmp_path_factory.mktemp("damage")
    frames = []
    k = 0
    for kind in ("dent", "scratch", "crack"):
        for sev in ("minor", "moderate", "severe"):
            p = _params("damage_view", 100 + k, [384, 288], damage_type=kind, severity=sev)
            p = _place(p, view_deg=15.0 + 5 * (k % 3), around_deg=40.0 * k, distance_m=0.5)
            frames.append(_render(worker, out, "damage_view", p))
            k += 1
    return frames


def test_damage_lands_on_the_gt_polygon_and_its_size_is_the_severity(damage_frames):
    for rec, rgb, _ in damage_frames:
        gt = rec.gt
        dmg = _damage_pixels(rgb, np.array(gt["target"]["polygon_px"]))
        ys, xs = np.nonzero(dmg)
        assert len(xs) > 15, gt["damage_type"]
        gp = np.array(gt["damage_polygon_px"])
        gx0, gy0 = gp.min(axis=0)
        gx1, gy1 = gp.max(axis=0)
        # nearly every damage pixel lies in the GT damage box (1.5 px of slack)
        inside = (xs + 0.5 >= gx0 - 1.5) & (xs + 0.5 <= gx1 + 1.5)
        inside &= (ys + 0.5 >= gy0 - 1.5) & (ys + 0.5 <= gy1 + 1.5)
        assert inside.mean() > 0.97, (gt["damage_type"], gt["severity"], inside.mean())
        # size in metres from the patch's own scale: rectify to 300 px = 30 cm
        patch = np.array(gt["target"]["polygon_px"], np.float32)
        h = cv2.getPerspectiveTransform(patch, _quad(300, 300))
        pts = cv2.perspectiveTransform(np.c_[xs + 0.5, ys + 0.5][None].astype(np.float32), h)[0]
        lo, hi = np.percentile(pts, 1, axis=0), np.percentile(pts, 99, axis=0)
        extent_m = float(hi[0] - lo[0]) / 1000  # along the panel, as the GT measures it
        band = gt["severity_band_m"]
        assert band[0] <= extent_m <= band[1], (gt["damage_type"], gt["severity"], extent_m)
        assert extent_m == pytest.approx(gt["damage_extent_m"], rel=0.3)


# -- plate -------------------------------------------------------------------------------------
def _cells(ink: np.ndarray, n: int) -> list[tuple[int, int]]:
    """Column ranges of the ``n`` glyphs in a binary text band (gaps between glyphs)."""
    cols = ink.any(axis=0)
    runs, start = [], None
    for x, c in enumerate(np.r_[cols, False]):
        if c and start is None:
            start = x
        elif not c and start is not None:
            runs.append((start, x))
            start = None
    assert len(runs) == n, runs
    return runs


def _ncc(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a - a.mean(), b - b.mean()
    return float((a * b).sum() / (np.sqrt((a * a).sum() * (b * b).sum()) + 1e-9))


@pytest.fixture(scope="module")
def plate_frames(worker, tmp_path_factory):
    out = tmp_path_factory.mktemp("plate")
    frames = []
    for i, style in enumerate(BODY_STYLES):
        p = _params("plate", 200 + i, [320, 240], body=style)
        p["camera"]["zoom"] = 1.0
        p = _place(p, view_deg=10.0 + 8 * i, around_deg=90.0 * i + 20, distance_m=0.55)
        frames.append(_render(worker, out, "plate", p))
    return frames


def test_plate_reads_the_gt_string_and_char_height(plate_frames):
    env = get_environment("plate")
    for rec, rgb, _ in plate_frames:
        gt = rec.gt
        tex = env.texture(rec.params)
        tw, th = tex.gt["size_px"]
        corners = np.array(gt["target"]["polygon_px"], np.float32)
        hm = cv2.getPerspectiveTransform(corners, _quad(tw, th))
        grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
        rect = cv2.warpPerspective(grey, hm, (tw, th), flags=cv2.INTER_LINEAR)
        ref = np.asarray(tex.image.convert("L"), np.float32)
        x0, y0, x1, y1 = (round(v) for v in tex.gt["main"]["ink_px"])
        y0, y1 = y0 - 4, y1 + 4
        cells = _cells(ref[y0:y1, x0 - 2 : x1 + 2] < 128, len(gt["plate"]))
        read = ""
        for a, b in cells:
            cell = rect[y0:y1, x0 - 2 + a : x0 - 2 + b]
            scores = [_ncc(cell, cv2.resize(ref[y0:y1, x0 - 2 + c : x0 - 2 + d], cell.shape[::-1]))
                      for c, d in cells]  # fmt: skip
            assert max(scores) > 0.6, scores
            read += gt["plate"][int(np.argmax(scores))]
        assert read == gt["plate"]
        # character height: the ink rows of the rectified band, mapped back into the frame
        band = rect[y0:y1, x0:x1]
        lo, hi = np.percentile(band, 5), np.percentile(band, 95)
        rows = np.nonzero((band < (lo + hi) / 2).mean(axis=1) > 0.02)[0]
        top, bot = y0 + rows.min(), y0 + rows.max() + 1
        cx = (x0 + x1) / 2
        back = cv2.perspectiveTransform(
            np.array([[[cx, top], [cx, bot]]], np.float32), np.linalg.inv(hm)
        )[0]
        char_px = float(np.linalg.norm(back[1] - back[0]))
        assert char_px == pytest.approx(gt["target"]["feature_px"], rel=0.06), (char_px, gt)
