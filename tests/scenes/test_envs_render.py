"""Tiny Workbench renders of every RealityBench environment: the GT computed from the params
lands on the pixels Blender draws (visible mask vs projected target polygon), Blender's own
projection agrees with ours, and ray-cast occlusion agrees with the analytic one. They fail
without the scenes venv."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from truthline.scenes import RenderSettings, get_environment
from truthline.scenes._accept import target_mask
from truthline.scenes._render import render
from truthline.scenes._store import FrameStore
from truthline.systems.realitybench._pow import ENVIRONMENTS as ENVS

# (environment, scene key, value): variants rendered on their own as well
VARIANTS = (("slope_gauge", "style", "digital"), ("slope_gauge", "style", "dial"))
FRAMES = (*ENVS, *(f"{e}:{v}" for e, _, v in VARIANTS), "plate:settings-res")
RES = [192, 144]
PATCH_TARGETS = ("horizon_peak", "rail_attachment", "wire_adequacy")
"""Targets that are a patch of scene (the horizon band; the attachment with the shingles
around it; the wire run over the roof), measured on their renders by test_measure_solar and
test_measure_labels; the mask-covers-polygon check does not apply."""
WB = RenderSettings(engine="BLENDER_WORKBENCH", spp=1, denoise=None, mask=True)


def _frame(name: str, bad: list[str], seed: int = 0, want: tuple[str, str] | None = None) -> dict:
    rng = np.random.default_rng(seed)
    while True:
        p = get_environment(name).sample(rng, {"bad": bad})
        if want is None or p["scene"][want[0]] == want[1]:
            break
    p["camera"]["res"] = RES
    return p


@pytest.fixture(scope="module")
def frames(worker, tmp_path_factory):
    out = tmp_path_factory.mktemp("pow")
    recs = {}
    for name in ENVS:
        rep = render(name, [_frame(name, [])], out, WB, client=worker)
        assert not rep.failed, rep.failed
        recs[name] = rep.records[0]
    for name, key, value in VARIANTS:
        rep = render(name, [_frame(name, [], 5, (key, value))], out, WB, client=worker)
        assert not rep.failed, rep.failed
        recs[f"{name}:{value}"] = rep.records[0]
    # the render settings override the camera's resolution (`truthline scenes render --res`):
    # the GT must come out in the pixels actually rendered
    big = get_environment("plate").sample(np.random.default_rng(2), {"bad": []})
    big["camera"].update(distance_m=big["camera"]["distance_m"] * 0.4, aim=[0.0, 0.0])
    small = RenderSettings(
        engine="BLENDER_WORKBENCH", spp=1, denoise=None, mask=True, res_x=RES[0], res_y=RES[1]
    )
    rep = render("plate", [big], out, small, client=worker)
    assert not rep.failed, rep.failed
    recs["plate:settings-res"] = rep.records[0]
    rep = render("tape_gap", [_frame("tape_gap", ["occluded"], 1)], out, WB, client=worker)
    assert not rep.failed, rep.failed
    recs["occluded"] = rep.records[0]
    return FrameStore(out), recs


@pytest.mark.parametrize("name", FRAMES)
def test_visible_mask_lands_on_the_projected_target(frames, name):
    store, recs = frames
    rec = recs[name]
    mask = np.asarray(Image.open(store.variant_path(rec, "mask")).convert("L")) > 127
    assert mask.shape == (RES[1], RES[0]) and mask.sum() > 20
    poly = target_mask(rec.gt["target"]["polygon_px"], *RES)
    if name in PATCH_TARGETS:  # the target is a patch of scene, not one object's surface
        assert rec.gt["projection_check_px"] < 0.01
        return
    if name == "vehicle_face":  # the polygon is the car's projected bounding box
        ys, xs = np.nonzero(mask)
        x0, y0, x1, y1 = np.array(rec.gt["target"]["polygon_px"])[[0, 0, 2, 2], [0, 1, 0, 1]]
        assert xs.min() >= x0 - 1.5 and xs.max() <= x1 + 0.5
        assert ys.min() >= y0 - 1.5 and ys.max() <= y1 + 0.5
        return
    # the target's pixels are visible (the tape is a 1-in blade: a few px wide at 192 px)
    assert (mask & poly).sum() / poly.sum() > (0.8 if name == "tape_gap" else 0.9)
    if name != "tape_gap":  # the tape's target is 3 in of a 30-in blade; others are whole
        iou = (mask & poly).sum() / (mask | poly).sum()
        assert iou > 0.8, iou
    assert rec.gt["projection_check_px"] < 0.01


@pytest.mark.parametrize("name", FRAMES)
def test_ray_cast_occlusion_agrees_with_the_analytic_one(frames, name):
    _, recs = frames
    gt = recs[name].gt
    assert gt["occlusion"]["method"] == "ray_cast"
    assert gt["occlusion"]["blocked"] == gt["occlusion_analytic"]["blocked"] == 0


def test_occluder_blocks_the_rays_and_the_frame_is_rejected(frames):
    _, recs = frames
    rec = recs["occluded"]
    assert rec.gt["occlusion"]["blocked"] >= 8 and rec.gt["occlusion_analytic"]["blocked"] >= 8
    assert rec.acceptability is not None and not rec.acceptability["acceptable"]
    assert "occlusion" in [k for k, t in rec.acceptability["terms"].items() if not t["ok"]]


def test_tape_texture_shows_where_the_gt_says(frames):
    store, recs = frames
    rec = recs["tape_gap"]
    rgb = np.asarray(Image.open(store.variant_path(rec, "rgb")).convert("RGB")).astype(int)
    poly = target_mask(rec.gt["target"]["polygon_px"], *RES)
    inner = rgb[poly]
    # the tape blade is yellow: red and green well above blue inside the target polygon
    assert (inner[:, 0] - inner[:, 2]).mean() > 40 and (inner[:, 1] - inner[:, 2]).mean() > 30
    assert rec.questions and rec.questions[0]["field"] == "tape_reading"
    last = rec.questions[-1]  # "acceptable?" with the scorer's verdict and what failed
    assert last["field"] == "acceptable" and last["answer"] == rec.acceptability["acceptable"]
