"""Host-side checks of the solar environments (no Blender): the requirement terms decide
acceptability as the paper's requirements say, the GT follows from the scene state the
roof builder uses, and the samplers reach a useful acceptable rate with a clean stratum."""

from __future__ import annotations

import math

import numpy as np
import pytest

from truthline.scenes import get_environment
from truthline.systems.realitybench.envs import _roof
from truthline.systems.realitybench.envs._common import IN, estimate_rates
from truthline.systems.realitybench.envs.rail_attachment import ATTACH_XS, BARE, RailAttachment
from truthline.systems.realitybench.envs.slope_gauge import SlopeGauge
from truthline.systems.realitybench.envs.tape_gap import TapeGap
from truthline.systems.realitybench.envs.wire_adequacy import WireAdequacy

ENVS = (TapeGap(), SlopeGauge(), RailAttachment(), WireAdequacy())


def _clean(env, seed=0, **scene):
    p = env.sample(np.random.default_rng(seed), {"bad": []})
    p["scene"].update(scene)
    return p


def _scene_score(env, p):
    return env.score(env.host_gt(p), None)


@pytest.mark.parametrize("env", ENVS, ids=lambda e: e.name)
def test_registered_and_clean_stratum_passes_scene_terms(env):
    assert get_environment(env.name) is not None
    for seed in range(5):
        acc = _scene_score(env, _clean(env, seed))
        assert acc.acceptable, (seed, acc.failed)


@pytest.mark.parametrize("env", ENVS, ids=lambda e: e.name)
def test_random_frames_reach_a_useful_acceptable_rate(env):
    r = estimate_rates(env, n=160, seed=1)
    assert 0.3 <= r["acceptable"] <= 0.6, r
    assert r["clean_acceptable"] >= 0.9, r


def test_tape_leaning_more_than_5_deg_fails_acceptability():
    env = TapeGap()
    for tilt, ok, gray in ((11.0, False, False), (-6.5, False, False), (3.0, True, False),
                           (4.6, True, True), (5.4, False, True)):  # fmt: skip
        acc = _scene_score(env, _clean(env, tilt_deg=tilt))
        t = acc.terms["tape_upright"]
        assert (acc.acceptable, t["ok"], t["gray"]) == (ok, ok, gray), tilt
    lean = env.sample(np.random.default_rng(2), {"bad": ["lean"]})
    assert abs(lean["scene"]["tilt_deg"]) > 5


def test_tape_gap_edges_are_the_module_edges():
    env = TapeGap()
    p = _clean(env, gap_in=0.8)
    near, far = env.layout(p).modules
    assert near.x1 == 0.0 and far.x0 == pytest.approx(0.8 * IN)
    gt = env.host_gt(p)
    s = p["scene"]
    assert gt["reading_at_crossing_in"] == pytest.approx(
        (0.8 - s["hook_in"]) / math.cos(math.radians(s["tilt_deg"])), abs=1e-6
    )


def test_shingle_surface_is_a_sawtooth_with_butts_downslope():
    e = _roof.COURSE_M
    assert _roof.shingle_z(0.0) == pytest.approx(_roof.SHINGLE_HI)
    assert _roof.shingle_z(e - 1e-6) == pytest.approx(_roof.SHINGLE_LO, abs=1e-6)
    assert _roof.shingle_z(3 * e + e / 2) == pytest.approx(
        (_roof.SHINGLE_HI + _roof.SHINGLE_LO) / 2
    )


def test_attachments_sit_mid_course_with_flashing_clear_of_slots():
    """The exposed flashing holds the whole foot, and the course it slides under has no
    cut-out over it (else the hidden part would show through the slot)."""
    env = RailAttachment()
    lay = env.layout(_clean(env))
    for a in lay.attachments:
        lo, butt = _roof.flashing_y(lay, a)
        fy = _roof.foot_y(lay, a)
        assert lo <= fy - _roof.FOOT_BASE[1] / 2 and fy + _roof.FOOT_BASE[1] / 2 <= butt
        k = _roof.course_of(butt + 1e-6)
        slots = _roof.slot_xs(k, a.x - 0.5, a.x + 0.5)
        assert all(abs(x - a.x) > _roof.FLASH_W / 2 + _roof.SLOT_M for x in slots)
        assert lo + _roof.FLASH_L < butt + _roof.COURSE_M  # under one course only
    assert all(ATTACH_XS[i] > -0.5 for i in BARE)


@pytest.mark.parametrize("part", _roof.PARTS)
def test_missing_part_is_in_gt_and_fails_acceptability(part):
    env = RailAttachment()
    p = env.sample(np.random.default_rng(7), {"bad": []})
    p["scene"]["missing"][str(p["scene"]["target"])] = [part]
    gt = env.host_gt(p)
    assert gt["missing_parts"] == [part]
    assert gt["attachment"]["parts"][part] is False
    assert gt["lag_bolt"] is (part != "lag_bolt")
    acc = env.score(gt, None)
    assert not acc.acceptable and acc.failed == ["parts_complete"]
    qs = {x["field"]: x for x in env.doc_questions(gt)}
    assert qs["missing_parts"]["answer"] == [part]
    assert qs["missing_parts"]["choices"] == list(_roof.PARTS)


def test_missing_part_stratum_and_flashing_on_top():
    env = RailAttachment()
    rng = np.random.default_rng(3)
    p = env.sample(rng, {"bad": ["missing_part"]})
    assert len(env.host_gt(p)["missing_parts"]) == 1
    p = env.sample(rng, {"bad": ["flashing_on_top"]})
    gt = env.host_gt(p)
    assert gt["flashing_under_shingles"] is False
    assert env.score(gt, None).failed == ["flashing_under_shingles"]


def test_wire_touch_follows_the_curve():
    env = WireAdequacy()
    touched = set()
    for bad, seed in (([], 0), (["slack"], 1), (["missing_clip"], 2), (["missing_clip"], 5)):
        p = env.sample(np.random.default_rng(seed), {"bad": bad})
        gt = env.host_gt(p)
        w = gt["wire"]
        deepest = max(s for _, _, s in w["spans"])
        assert gt["wire_touches_roof"] is (deepest >= _roof.CLIP_Z - w["floor_z"])
        touched.add(gt["wire_touches_roof"])
        assert w["lowest"][1] == pytest.approx(max(_roof.CLIP_Z - deepest, w["floor_z"]), abs=2e-5)
        assert gt["wire_secured"] is ("missing_clip" not in bad)
        acc = env.score(gt, None)
        expect = set()
        if "missing_clip" in bad:
            expect.add("wire_secured")
        if w["clearance_m"] < 0.005:
            expect.add("wire_clearance")
        assert set(acc.failed) == expect, (bad, acc.failed)
    assert touched == {True, False}


def test_gauge_off_the_module_fails_and_reads_the_same():
    env = SlopeGauge()
    p = env.sample(np.random.default_rng(4), {"bad": ["off_module"]})
    gt = env.host_gt(p)
    assert gt["gauge_on"] == "shingles"
    assert env.score(gt, None).failed == ["gauge_on_module"]
    q = env.doc_questions(gt)[0]
    assert q["answer"] == p["scene"]["slope_deg"] and q["tolerance"] == 0.2


def test_gauge_legibility_term():
    """LCD digits >= 8 px; dial 1-deg ticks >= 5 px: the dial fails further away."""
    env = SlopeGauge()
    for style, dist, ok in (("digital", 0.9, True), ("dial", 0.2, True), ("dial", 0.3, False)):
        p = _clean(env, style=style)
        p["camera"]["distance_m"] = dist
        assert env.score(env.host_gt(p), None).terms["feature_px"]["ok"] is ok, (style, dist)
