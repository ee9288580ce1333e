"""Rendered-frame measurements of the solar environments: what the pixels show agrees with
the GT a perfect reader is scored against. Tiny Workbench frames through the worker,
measured from the RGB (edge profiles, template readouts) or from per-part visible masks.
They fail without the scenes venv."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import cv2
import numpy as np
import pytest
from PIL import Image

from truthline.scenes import RenderSettings
from truthline.scenes._camera import project
from truthline.scenes._render import render
from truthline.scenes._store import FrameStore
from truthline.systems.realitybench.envs import _roof
from truthline.systems.realitybench.envs._common import IN
from truthline.systems.realitybench.envs._roof import PARTS
from truthline.systems.realitybench.envs.rail_attachment import RailAttachment
from truthline.systems.realitybench.envs.slope_gauge import SlopeGauge
from truthline.systems.realitybench.envs.tape_gap import MODULE_TOP_Z, TapeGap
from truthline.systems.realitybench.envs.wire_adequacy import WireAdequacy

WB = RenderSettings(engine="BLENDER_WORKBENCH", spp=1, denoise=None, mask=True)


def _render(worker: Any, tmp: Any, name: str, params: Mapping[str, Any]) -> tuple[Any, Any]:
    rep = render(name, [dict(params)], tmp, WB, client=worker)
    assert not rep.failed, rep.failed
    rec = rep.records[0]
    store = FrameStore(tmp)
    rgb = np.asarray(Image.open(store.variant_path(rec, "rgb")).convert("RGB"))
    mask = np.asarray(Image.open(store.variant_path(rec, "mask")).convert("L")) > 127
    return rec, (rgb, mask)


def _grey(rgb: np.ndarray) -> np.ndarray:
    return (rgb.astype(np.float32) / 255.0) @ np.array([0.2126, 0.7152, 0.0722], np.float32)


def _sample(img: np.ndarray, px: np.ndarray) -> np.ndarray:
    """Bilinear samples at pixel-edge coordinates (pixel (0, 0)'s centre is (0.5, 0.5))."""
    mx = (px[:, 0] - 0.5).astype(np.float32).reshape(1, -1)
    my = (px[:, 1] - 0.5).astype(np.float32).reshape(1, -1)
    return cv2.remap(img, mx, my, cv2.INTER_LINEAR).ravel()


def _crossings(t: np.ndarray, prof: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    """Sub-sample positions where the profile first falls below, then next rises above,
    the level halfway between the frame lip (``hi``) and the gap floor (``lo``)."""
    mid = (lo + hi) / 2
    i = int(np.argmax(prof < mid))
    j = i + int(np.argmax(prof[i:] >= mid))
    assert 0 < i < j, "no gap in the profile"

    def at(a: int, b: int) -> float:
        return float(t[a] + (mid - prof[a]) / (prof[b] - prof[a]) * (t[b] - t[a]))

    return at(i - 1, i), at(j - 1, j)


# -- tape_gap ---------------------------------------------------------------------------------
TAPE_CASES = ((0.31, 0.0), (0.93, 2.5), (1.42, -3.0))


def _tape_params(gap_in: float, tilt_deg: float) -> dict[str, Any]:
    env = TapeGap()
    p = env.sample(np.random.default_rng(3), {"bad": []})
    p["scene"].update(gap_in=gap_in, tilt_deg=tilt_deg, hook_in=-4.0, y_in=0.0)
    p["camera"].update(
        distance_m=0.18, view_deg=0.0, around_deg=0.0, aim=[0.0, 0.0], roll_deg=0.0, res=[320, 240]
    )
    return p


def measure_gap_edges(params: Mapping[str, Any], rgb: np.ndarray) -> tuple[float, float]:
    """(tape reading at the visible near edge, at the visible far edge), measured on the
    image: grey profiles along two lines parallel to the tape, 0.8 in either side of it,
    projected with the frame's camera; the edges are the half-way crossings between the
    module frames' lip and the gap, averaged over both lines (the centreline's crossing)."""
    env = TapeGap()
    spec, pose = env.spec_pose(params, (rgb.shape[1], rgb.shape[0]))
    s = params["scene"]
    d = env._dir(params)
    n = np.array([-d[1], d[0], 0.0])
    hook = np.array([s["hook_in"] * IN, s["y_in"] * IN, MODULE_TOP_Z])
    near = -s["hook_in"] / math.cos(math.radians(s["tilt_deg"]))
    t = np.arange(
        near - 0.45, near + s["gap_in"] / math.cos(math.radians(s["tilt_deg"])) + 0.45, 0.004
    )
    g = _grey(rgb)
    edges = []
    for side in (-1, 1):
        pts = hook + np.outer(t * IN, d) + side * 0.8 * IN * n
        px = project(pts, spec, pose, (rgb.shape[1], rgb.shape[0]))[:, :2]
        prof = _sample(g, px)
        lip = float(np.median(prof[t < near - 0.1]))
        floor = float(np.percentile(prof, 5))
        edges.append(_crossings(t, prof, floor, lip))
    return float(np.mean([e[0] for e in edges])), float(np.mean([e[1] for e in edges]))


@pytest.fixture(scope="module")
def tape_frames(worker, tmp_path_factory):
    out = tmp_path_factory.mktemp("tape")
    frames = []
    for gap, tilt in TAPE_CASES:
        p = _tape_params(gap, tilt)
        rec, (rgb, _) = _render(worker, out, "tape_gap", p)
        frames.append((p, rec, rgb))
    return frames


@pytest.mark.parametrize("case", range(len(TAPE_CASES)))
def test_tape_gap_visible_edges_are_the_gt_edges(tape_frames, case):
    p, rec, rgb = tape_frames[case]
    assert rec.acceptability["terms"]["tape_upright"]["ok"] is True
    near, far = measure_gap_edges(p, rgb)
    cos = math.cos(math.radians(rec.gt["tilt_deg"]))
    # a perfect reader reads the far edge within 1/4 of the 1/8-in tolerance ...
    assert abs(far - rec.gt["reading_at_crossing_in"]) <= 0.125 / 4, (far, rec.gt)
    assert abs(near - rec.gt["reading_at_near_edge_in"]) <= 0.125 / 4, (near, rec.gt)
    # ... and the gap within 1/4 of the 1/4-in tolerance
    assert abs((far - near) * cos - rec.gt["gap_in"]) <= 0.25 / 4, (far - near, rec.gt)


# -- rail_attachment ---------------------------------------------------------------------------
def _attachment_params(
    missing: list[str], on_top: bool = False, part: str | None = None, view: float = 20.0
) -> dict:
    env = RailAttachment()
    p = env.sample(np.random.default_rng(4), {"bad": []})
    p["scene"]["target"] = 3
    p["scene"]["missing"]["3"] = list(missing)
    p["scene"]["flashing_on_top"] = on_top
    p["camera"].update(
        distance_m=0.35, view_deg=view, around_deg=180.0, aim=[0.0, 0.0], roll_deg=0.0,
        res=[256, 192],
    )  # fmt: skip
    if part is not None:
        p["mask_part"] = part
    return p


def _px(params: Mapping[str, Any], pts: Any, shape: tuple[int, ...]) -> np.ndarray:
    spec, pose = RailAttachment().spec_pose(params, (shape[1], shape[0]))
    return project(np.asarray(pts, float), spec, pose, (shape[1], shape[0]))[:, :2]


def _hits(mask: np.ndarray, px: np.ndarray, r: int = 1) -> list[bool]:
    """Is each projected point on (or within ``r`` px of) a visible mask pixel?"""
    out = []
    for x, y in px:
        i, j = int(y), int(x)
        win = mask[max(0, i - r) : i + r + 1, max(0, j - r) : j + r + 1]
        out.append(bool(win.any()))
    return out


@pytest.fixture(scope="module")
def attachment_frames(worker, tmp_path_factory):
    out = tmp_path_factory.mktemp("attach")
    frames = {}
    for part in PARTS:
        frames[("complete", part)] = _render(
            worker, out, "rail_attachment", _attachment_params([], part=part)
        )
        frames[(part, part)] = _render(
            worker, out, "rail_attachment", _attachment_params([part], part=part)
        )
    for on_top in (False, True):  # top-down: the rail hides less of the flashing's top
        p = _attachment_params([], on_top=on_top, part="flashing", view=0.0)
        frames[("top", on_top)] = _render(worker, out, "rail_attachment", p)
    return frames


@pytest.mark.parametrize("part", PARTS)
def test_attachment_part_shows_where_projected_only_when_present(attachment_frames, part):
    rec, (rgb, mask) = attachment_frames[("complete", part)]
    assert rec.gt["attachment"]["parts"][part] is True
    pts = _px(rec.params, rec.gt["attachment"]["part_points"][part], mask.shape)
    assert mask.sum() > 20 and all(_hits(mask, pts)), (part, mask.sum(), pts)
    rec2, (rgb2, mask2) = attachment_frames[(part, part)]
    assert rec2.gt["attachment"]["parts"][part] is False
    assert rec2.gt["missing_parts"] == [part]
    assert mask2.sum() == 0  # no object of that part in the scene
    # where the part projects, the frame without it shows something else (the hole in the
    # foot, the shingles), and the two frames differ only near the attachment
    g1, g2 = _grey(rgb), _grey(rgb2)
    at = _sample(g1, pts) - _sample(g2, pts)
    assert np.all(np.abs(at) > 0.05), (part, at)
    diff = np.abs(g1 - g2) > 0.05
    poly = np.asarray(rec.gt["target"]["polygon_px"])
    ys, xs = np.nonzero(diff)
    # the foot's leg stands 7 cm above the patch: allow its projection above the polygon
    assert xs.min() >= poly[:, 0].min() - 4 and xs.max() <= poly[:, 0].max() + 4
    assert ys.max() <= poly[:, 1].max() + 4


def test_flashing_exposed_part_matches_gt(attachment_frames):
    """Under the shingles, the visible flashing stops at the next course's butt; laid on
    top, it shows above that butt too."""
    for key, under in ((("top", False), True), (("top", True), False)):
        rec, (_, mask) = attachment_frames[key]
        assert rec.gt["flashing_under_shingles"] is under
        a = rec.gt["attachment"]
        lo, butt = a["part_points"]["flashing_exposed_y"]
        x = a["x"]
        # above the butt, clear of the rail (it hides the roof just upslope of it)
        ya, yb = butt + 0.08, lo + 0.01
        za = float(_roof.shingle_z(ya)) + _roof.FLASH_T
        zb = float(_roof.shingle_z(yb)) + _roof.FLASH_T
        above = _px(rec.params, [[x + dx, ya, za] for dx in (-0.05, 0.0, 0.05)], mask.shape)
        below = _px(rec.params, [[x + dx, yb, zb] for dx in (-0.09, 0.09)], mask.shape)
        assert all(_hits(mask, below, 0))
        assert not any(_hits(mask, above, 0)) if under else all(_hits(mask, above, 0))


# -- wire_adequacy -----------------------------------------------------------------------------
def _wire_params(bad: list[str], seed: int) -> dict:
    p = WireAdequacy().sample(np.random.default_rng(seed), {"bad": bad})
    p["camera"].update(
        distance_m=0.9, view_deg=12.0, around_deg=0.0, aim=[0.0, 0.0], roll_deg=0.0,
        res=[320, 240],
    )  # fmt: skip
    return p


WIRE_CASES: tuple[tuple[list[str], int], ...] = ((["slack"], 0), (["missing_clip"], 2), ([], 1))


@pytest.fixture(scope="module")
def wire_frames(worker, tmp_path_factory):
    out = tmp_path_factory.mktemp("wire")
    return [_render(worker, out, "wire_adequacy", _wire_params(b, s)) for b, s in WIRE_CASES]


@pytest.mark.parametrize("case", range(len(WIRE_CASES)))
def test_wire_lowest_point_vs_roof_line(wire_frames, case):
    """The wire's lowest visible pixel (its mask) against the roof surface under it: on the
    roof line when the GT says it touches, above it by the GT clearance otherwise."""
    rec, (_, mask) = wire_frames[case]
    w = rec.gt["wire"]
    spec, pose = WireAdequacy().spec_pose(rec.params, (mask.shape[1], mask.shape[0]))
    res = (mask.shape[1], mask.shape[0])
    run = project(np.array([[x, w["y"], w["clip_z"]] for x in w["run_x"]]), spec, pose, res)
    c0, c1 = sorted(run[:, 0])
    cols = [c for c in range(int(c0) + 2, int(c1) - 1) if mask[:, c].any()]
    bottoms = {c: np.nonzero(mask[:, c])[0].max() + 1.0 for c in cols}
    measured = max(bottoms.values())  # pixel-edge row of the lowest visible wire pixel
    x_low, z_low = w["lowest"]
    ring = [[x_low, w["y"] + w["radius_m"] * math.cos(a), z_low + w["radius_m"] * math.sin(a)]
            for a in np.linspace(0, 2 * math.pi, 73)]  # fmt: skip
    gt_bottom = project(np.array(ring), spec, pose, res)[:, 1].max()
    roof_row = project(np.array([[x_low, w["y"], w["roof_z"]]]), spec, pose, res)[0, 1]
    assert abs(measured - gt_bottom) <= 1.0, (measured, gt_bottom)
    gap_px = roof_row - measured
    if rec.gt["wire_touches_roof"]:
        assert gap_px <= 1.0, gap_px
    else:
        assert gap_px >= 3.0, gap_px
        assert abs(gap_px - (roof_row - gt_bottom)) <= 1.0


# -- slope_gauge --------------------------------------------------------------------------------
def _gauge_params(style: str, slope: float) -> dict:
    env = SlopeGauge()
    p = env.sample(np.random.default_rng(5), {"bad": []})
    p["scene"].update(style=style, slope_deg=slope, on="module")
    p["camera"].update(
        distance_m=0.2 if style == "digital" else 0.14, view_deg=0.0, around_deg=0.0,
        aim=[0.0, 0.0], roll_deg=0.0, res=[320, 240],
    )  # fmt: skip
    return p


def _to_frame(tex: np.ndarray, poly: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A texture warped onto the target's projected quad (TL, TR, BR, BL)."""
    h, w = tex.shape[:2]
    src = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    m = cv2.getPerspectiveTransform(src, np.asarray(poly, np.float32) - 0.5)
    return cv2.warpPerspective(tex, m, (shape[1], shape[0]), flags=cv2.INTER_AREA)


def read_lcd(rec: Any, rgb: np.ndarray) -> float:
    """The LCD's value, read by template matching: the frame's LCD window against the
    digital face drawn for each of 31 readings 0.1 deg apart, each warped into the frame
    with the projection; the best normalised correlation wins."""
    from truthline.scenes._textures import digital_level_texture

    poly = rec.gt["target"]["polygon_px"]
    g = _grey(rgb)
    face = digital_level_texture(rec.gt["slope_deg"])
    x0, y0, x1, y1 = face.gt["lcd_px"]
    win = np.zeros(face.image.size[::-1], np.float32)
    win[int(y0) : int(y1), int(x0) : int(x1)] = 1
    m = _to_frame(win, poly, g.shape) > 0.5
    best, score = float("nan"), -2.0
    centre = round(rec.gt["slope_deg"])  # candidates: the whole degree around it +/- 1.5
    for k in range(-15, 16):
        cand = round(centre + 0.1 * k, 1)
        tpl = _grey(np.asarray(digital_level_texture(cand).image))
        a, b = g[m], _to_frame(tpl, poly, g.shape)[m]
        ncc = float(np.corrcoef(a, b)[0, 1])
        if ncc > score:
            best, score = cand, ncc
    return best


def read_dial(rec: Any, rgb: np.ndarray) -> float:
    """The needle's slope: the frame rectified onto the dial face with the projection, the
    red needle's pixels beyond the hub fitted by a line through the centre, its angle from
    the downward vertical divided by the dial's gain (the face is drawn at -slope)."""
    from truthline.systems.realitybench.envs.slope_gauge import DIAL_GAIN

    s = 512
    poly = np.asarray(rec.gt["target"]["polygon_px"], np.float32) - 0.5
    dst = np.array([[0, 0], [s, 0], [s, s], [0, s]], np.float32)
    face = cv2.warpPerspective(
        rgb.astype(np.float32) / 255, cv2.getPerspectiveTransform(poly, dst), (s, s),
        flags=cv2.INTER_LINEAR,
    )  # fmt: skip
    # redness: the needle is the only saturated red (thin, so blended with the face)
    red = np.clip(face[..., 0] - np.maximum(face[..., 1], face[..., 2]) - 0.04, 0, None)
    ys, xs = np.nonzero(red)
    dx, dy = xs + 0.5 - s / 2, ys + 0.5 - s / 2
    keep = (np.hypot(dx, dy) > 0.08 * s) & (np.hypot(dx, dy) < 0.44 * s)
    wt = red[ys[keep], xs[keep]]
    v = np.stack([dx[keep], dy[keep]])
    _, vec = np.linalg.eigh((v * wt) @ v.T)
    ux, uy = vec[:, -1] * np.sign(vec[:, -1] @ (v * wt).sum(axis=1))
    return -math.degrees(math.atan2(ux, uy)) / DIAL_GAIN


GAUGE_CASES = (("digital", 12.34), ("digital", 23.97), ("dial", 8.6), ("dial", 21.15))


@pytest.fixture(scope="module")
def gauge_frames(worker, tmp_path_factory):
    out = tmp_path_factory.mktemp("gauge")
    return [_render(worker, out, "slope_gauge", _gauge_params(st, a)) for st, a in GAUGE_CASES]


@pytest.mark.parametrize("case", range(len(GAUGE_CASES)))
def test_gauge_reads_the_gt_slope(gauge_frames, case):
    rec, (rgb, _) = gauge_frames[case]
    slope = rec.gt["slope_deg"]
    if rec.gt["style"] == "digital":
        # the display, read off the pixels, is the GT's display (rounded to 0.1 deg)
        assert read_lcd(rec, rgb) == pytest.approx(rec.gt["shown_deg"], abs=1e-9)
        assert abs(rec.gt["shown_deg"] - slope) <= 0.05 + 1e-9
    else:
        # the needle, measured off the pixels, within half the 0.2-deg tolerance
        assert abs(read_dial(rec, rgb) - slope) <= 0.1, (read_dial(rec, rgb), slope)


# -- occlusion by ray casts in the new environments ----------------------------------------------
@pytest.mark.parametrize("name", ["rail_attachment", "wire_adequacy"])
def test_ray_cast_occlusion_sees_the_glove_not_the_attachment(worker, tmp_path, name):
    """Clean: no ray to the target is blocked (the attachment's own parts, the rail, the
    clips do not count); with the glove: every ray is, and the frame is rejected for it."""
    env = {"rail_attachment": RailAttachment, "wire_adequacy": WireAdequacy}[name]()
    for bad, blocked in (([], 0), (["occluded"], 15)):
        p = env.sample(np.random.default_rng(1), {"bad": bad})
        p["camera"]["res"] = [192, 144]
        rec, _ = _render(worker, tmp_path, name, p)
        occ = rec.gt["occlusion"]
        assert (occ["method"], occ["rays"], occ["blocked"]) == ("ray_cast", 15, blocked), occ
        assert rec.acceptability["terms"]["occlusion"]["ok"] is (blocked == 0)
