"""equipment_label, ro_board, breaker_directory and horizon_peak on the host (no Blender):
exact GT from the params, glyph boxes that match the drawn texture, the render sanity
check, the sampler's acceptable rate and its clean stratum, and horizon_peak's skyline GT
measured on the host's own sky/ground proxy render."""

from __future__ import annotations

import json

import numpy as np
import pytest

from truthline.scenes._camera import camera_to_world
from truthline.scenes._textures import Texture, breaker_panel_texture
from truthline.systems.realitybench.envs._common import estimate_rates, proxy_frame
from truthline.systems.realitybench.envs.breaker_directory import CIRCUITS, BreakerDirectory
from truthline.systems.realitybench.envs.equipment_label import EquipmentLabel
from truthline.systems.realitybench.envs.horizon_peak import (
    PEAK_TOLERANCE_DEG,
    SKY,
    HorizonPeak,
)
from truthline.systems.realitybench.envs.label_board import glyph_boxes, ink_boxes, text_sanity
from truthline.systems.realitybench.envs.ro_board import RoBoard

TEXT_ENVS = (EquipmentLabel(), RoBoard(), BreakerDirectory())
ALL_ENVS = (*TEXT_ENVS, HorizonPeak())


@pytest.mark.parametrize("env", ALL_ENVS, ids=lambda e: e.name)
def test_params_json_deterministic_and_questions_answered(env):
    a, b = env.sample(np.random.default_rng(3)), env.sample(np.random.default_rng(3))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    gt = env.host_gt(a)
    json.dumps(gt)
    qs = env.questions(gt, env.proxy_score(a))
    assert qs[-1]["field"] == "acceptable"
    assert all(q["answer"] is not None for q in qs)


@pytest.mark.parametrize("env", ALL_ENVS, ids=lambda e: e.name)
def test_clean_stratum_is_clean_and_mostly_acceptable(env):
    rng = np.random.default_rng(11)
    ok = 0
    for _ in range(10):
        p = env.sample(rng, {"bad": []})
        assert p["bad_factors"] == [] and p["occluder"] is None
        ok += env.proxy_score(p).acceptable
    assert ok >= 8


@pytest.mark.parametrize("env", ALL_ENVS, ids=lambda e: e.name)
def test_random_frames_reach_a_useful_acceptable_rate(env):
    r = estimate_rates(env, n=40 if env.name == "horizon_peak" else 80, seed=5)
    assert 0.2 <= r["acceptable"] <= 0.65, r
    assert r["clean_acceptable"] >= 0.8, r


def test_label_gt_is_the_rows_as_drawn():
    for env in (EquipmentLabel(), RoBoard()):
        p = env.sample(np.random.default_rng(2))
        gt = env.host_gt(p)
        assert gt["rows"] == {k: v for k, v in p["scene"]["rows"]}
        assert gt["texture"]["values"] == [v for _, v in p["scene"]["rows"]]
        fields = {q["field"]: q["answer"] for q in env.questions(gt, None)}
        want = {
            "equipment_label": {"equipment_model", "serial_number"},
            "ro_board": {"ro_number", "vin"},
        }
        assert set(fields) == want[env.name]
        assert set(fields.values()) == set(gt["rows"].values())


def test_breaker_gt_rows_are_unique_names_with_plausible_amperages():
    env = BreakerDirectory()
    for seed in range(10):
        p = env.sample(np.random.default_rng(seed))
        gt = env.host_gt(p)
        names = [b["name"] for b in gt["breakers"]]
        assert len(set(names)) == len(names) >= 8
        assert all(b["amperage"] in CIRCUITS[b["name"]] for b in gt["breakers"])
        (qb,) = [q for q in env.questions(gt, None) if q["field"] == "breakers"]
        assert (
            qb["kind"] == "entity_list" and qb["key"] == "name" and qb["answer"] == gt["breakers"]
        )
        tex = env.texture(p).gt["rows"]
        assert [(r["name"], r["amperage"]) for r in tex] == [(n, a) for n, a in p["scene"]["rows"]]
        assert all(r["amps_ink"]["text"] == f"{r['amperage']}A" for r in tex)


def test_breaker_handles_carry_the_directory_amperages():
    amps = [20, 15, 50, 30, 20]
    hs = breaker_panel_texture(amps).gt["handles"]
    assert [h["ink"]["text"] for h in hs] == [str(a) for a in amps]
    assert [h["box_px"][0] < 180 for h in hs] == [True, False, True, False, True]  # odd left


@pytest.mark.parametrize("env", TEXT_ENVS, ids=lambda e: e.name)
def test_glyph_boxes_hold_the_drawn_ink(env):
    p = env.sample(np.random.default_rng(4))
    tex = env.texture(p)
    grey = np.asarray(tex.image.convert("L"), dtype=float)
    for info in ink_boxes(tex.gt):
        x0, y0, x1, y1 = (round(v) for v in info["ink_px"])
        ink = np.zeros_like(grey, bool)
        ink[y0:y1, x0:x1] = grey[y0:y1, x0:x1] < 128
        inside = np.zeros_like(ink)
        glyphs = glyph_boxes(info)
        assert len(glyphs) == len(info["text"].replace(" ", ""))
        for _, (a, b, c, d) in glyphs:
            inside[int(b) - 1 : int(np.ceil(d)) + 1, int(a) - 1 : int(np.ceil(c)) + 1] = True
        assert ink.sum() > 0 and (ink & inside).sum() / ink.sum() > 0.99, info["text"]


@pytest.mark.parametrize("env", TEXT_ENVS, ids=lambda e: e.name)
def test_sanity_passes_a_sound_frame_and_names_each_defect(env):
    rng = np.random.default_rng(6)
    p = env.sample(rng, {"bad": []})
    p["camera"].update(aim=[0.0, 0.0], view_deg=10.0)
    gt = env.host_gt(p)
    tex = env.texture(p)
    poly = gt["target"]["polygon_px"]
    img = (proxy_frame(np.asarray(tex.image), poly, gt["res"], {}, {}) * 255).astype(np.uint8)
    assert env.sanity(gt, img) == []
    assert any("blank" in s for s in env.sanity(gt, np.full_like(img, 90)))
    # the defect the paper withdrew frames for: the board shows no texture where it projects
    flat = np.full_like(np.asarray(tex.image), 200)
    bad = (proxy_frame(flat, poly, gt["res"], {}, {}) * 255).astype(np.uint8)
    assert any("texture does not show" in s for s in env.sanity(gt, bad))
    # a texture whose text runs off the board
    rows = [dict(r) for r in tex.gt["rows"]]
    k = "value_ink" if "value_ink" in rows[0] else "name_ink"
    rows[0][k] = {**rows[0][k], "ink_px": [-5.0, 10.0, 300.0, 40.0]}
    clipped = Texture(tex.image, {**tex.gt, "rows": rows})
    assert any("clipped" in s for s in text_sanity(gt, img, clipped, env.tex_px))


def test_ro_board_needs_the_car_in_frame():
    env = RoBoard()
    p = env.sample(np.random.default_rng(8), {"bad": []})
    acc = env.proxy_score(p)
    assert acc.terms["car_in_frame"]["ok"] and acc.terms["car_in_frame"]["value"] >= 0.08
    # the board alone, filling the frame from 0.3 m straight on: no car in the photo
    p["camera"].update(distance_m=0.3, view_deg=0.0, aim=[-0.5, 0.0])
    acc = env.proxy_score(p)
    assert env.host_gt(p)["car_frame_share"] < 0.08 and "car_in_frame" in acc.failed


# -- horizon_peak ------------------------------------------------------------------------------
def measured_peak_deg(env: HorizonPeak, p: dict, img: np.ndarray) -> float:
    """Highest elevation of a non-sky pixel: per column the topmost ground pixel's top edge,
    back-projected through the camera model."""
    spec, pose = env.spec_pose(p)
    h, w = img.shape[:2]
    sky = np.abs(img - np.asarray(SKY)).max(axis=2) < 0.08
    m = camera_to_world(pose)[:3, :3]
    best = -90.0
    for x in range(w):
        ground = np.flatnonzero(~sky[:, x])
        if len(ground) == 0:
            continue
        y = float(ground[0])
        d = m @ np.array([(x + 0.5 - w / 2), -(y - h / 2), -spec.focal_mm / spec.sensor_w_mm * w])
        best = max(best, float(np.degrees(np.arcsin(d[2] / np.linalg.norm(d)))))
    return best


def test_horizon_peak_gt_matches_the_skyline_measured_on_the_proxy_render():
    env = HorizonPeak()
    rng = np.random.default_rng(0)
    for _ in range(3):
        p = env.sample(rng, {"bad": []})
        gt = env.host_gt(p)
        img = env.proxy_image(p, gt)
        got = measured_peak_deg(env, p, img)
        # 960 px over 71 degrees: 0.074 degree per pixel
        assert got == pytest.approx(gt["horizon_peak_deg"], abs=0.15)
        assert gt["sector_covered"] and gt["peak"]["kind"] in ("tree", "house", "hill")
        (qp,) = [q for q in env.questions(gt, None) if q["field"] == "horizon_peak_deg"]
        assert qp["tolerance"] == PEAK_TOLERANCE_DEG and qp["answer"] == round(
            gt["horizon_peak_deg"], 1
        )


@pytest.mark.parametrize(
    ("bad", "term"), [("framing", "in_frame"), ("tilted", "roll"), ("occluded", "occlusion")]
)
def test_horizon_bad_factors_fail_their_terms(bad, term):
    env = HorizonPeak()
    rng = np.random.default_rng(1)
    for _ in range(4):
        p = env.sample(rng, {"bad": [bad]})
        acc = env.proxy_score(p)
        assert not acc.acceptable and term in acc.failed, (bad, acc.failed)


def test_horizon_frames_know_their_place_in_the_set():
    env = HorizonPeak()
    p = env.sample(np.random.default_rng(2), {"bad": []})
    gt = env.host_gt(p)
    assert gt["survey_set"] == ["E", "SE", "S", "SW", "W"] and gt["sector"] in gt["survey_set"]
    lo, hi = gt["sector_span_deg"]
    assert hi - lo == 45.0 and lo < gt["camera_bearing_deg"] < hi
    assert gt["sector_peak_deg"] <= gt["horizon_peak_deg"] + 1e-9  # the frame holds the sector
