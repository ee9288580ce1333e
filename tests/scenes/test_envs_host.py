"""RealityBench-style environments on the host (no Blender): exact analytic GT, JSON params,
the bad-factor sampler and its acceptable rate, questions that match the project fields."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from truthline.scenes import SceneError, get_environment
from truthline.scenes._camera import project
from truthline.scenes._textures import AMBIGUOUS
from truthline.systems.realitybench._pow import ENVIRONMENTS as ENVS
from truthline.systems.realitybench.envs._common import IN, estimate_rates


@pytest.mark.parametrize("name", ENVS)
def test_env_samples_json_deterministic_and_questions_have_answers(name):
    env = get_environment(name)
    a = env.sample(np.random.default_rng(7))
    b = env.sample(np.random.default_rng(7))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    gt = env.host_gt(a)
    json.dumps(gt)
    assert len(gt["target"]["polygon_px"]) == 4
    qs = env.questions(gt, None)
    assert qs and all(q["answer"] is not None and q["field"] for q in qs)


def test_question_fields_exist_in_the_proof_of_work_project():
    proj = tomllib.loads(Path("projects/proof-of-work/project.toml").read_text())
    fields = set(proj["fields"])
    for name in ENVS:
        env = get_environment(name)
        gt = env.host_gt(env.sample(np.random.default_rng(1)))
        missing = {q["field"] for q in env.questions(gt, None)} - fields
        assert not missing, (name, missing)


def test_tape_reading_is_where_the_centreline_meets_the_far_edge():
    env = get_environment("tape_gap")
    for seed in range(20):
        p = env.sample(np.random.default_rng(seed))
        gt = env.host_gt(p)
        s = p["scene"]
        x = gt["crossing_world"][0]
        assert x == pytest.approx(s["gap_in"] * IN, abs=1e-6)  # on the far gap edge
        hook = np.array([s["hook_in"] * IN, s["y_in"] * IN])
        along = np.linalg.norm(np.array(gt["crossing_world"][:2]) - hook) / IN
        assert along == pytest.approx(gt["reading_at_crossing_in"], abs=1e-4)
        assert gt["is_tilted"] == (abs(s["tilt_deg"]) > 5)
        assert (
            abs(eval(gt["reading_frac8"].replace(" ", "+")) - gt["reading_at_crossing_in"])
            <= 1 / 16
        )
        # the target polygon's diagonals meet at the projected crossing (projectively exact)
        spec, pose, _ = env.camera(p)
        c = project(np.array([gt["crossing_world"]]), spec, pose)[0, :2]
        q = np.asarray(gt["target"]["polygon_px"], dtype=float)
        if np.isfinite(q).all():
            d1, d2 = q[2] - q[0], q[3] - q[1]
            t = np.linalg.solve(np.column_stack([d1, -d2]), q[1] - q[0])[0]
            assert np.allclose(q[0] + t * d1, c, atol=0.01)


def test_tape_feature_px_is_one_eighth_inch_projected():
    env = get_environment("tape_gap")
    p = env.sample(np.random.default_rng(3), {"bad": []})
    p["camera"].update(view_deg=0.0, distance_m=0.4, aim=[0, 0])
    gt = env.host_gt(p)
    spec, _, _ = env.camera(p)
    f = spec.focal_mm / spec.sensor_w_mm * spec.res_x
    assert gt["target"]["feature_px"] == pytest.approx(f * IN / 8 / 0.4, rel=1e-3)


def test_slope_gauge_shows_the_pitch_within_tolerance():
    env = get_environment("slope_gauge")
    for seed in range(10):
        p = env.sample(np.random.default_rng(seed), {"bad": []})
        p["scene"]["style"] = "digital"
        gt = env.host_gt(p)
        assert abs(gt["shown_deg"] - gt["slope_deg"]) <= 0.05
        assert gt["display"] == f"{abs(round(gt['slope_deg'], 1)):.1f}°"


def test_plate_strings_are_unambiguous_and_char_px_follows_distance():
    env = get_environment("plate")
    p = env.sample(np.random.default_rng(4), {"bad": []})
    assert not set(p["scene"]["text"]) & set(AMBIGUOUS)
    p["camera"].update(view_deg=0.0, aim=[0, 0])
    p["camera"]["distance_m"] = 2.0
    near = env.host_gt(p)["target"]["feature_px"]
    p["camera"]["distance_m"] = 4.0
    assert env.host_gt(p)["target"]["feature_px"] == pytest.approx(near / 2, rel=0.01)


def test_vehicle_face_from_behind_sees_the_rear_only():
    env = get_environment("vehicle_face")
    p = env.sample(np.random.default_rng(0), {"bad": []})
    # around 180 from the top normal's v axis (+Y) puts the camera behind the car
    p["camera"].update(around_deg=180.0, view_deg=85.0, aim=[0, 0], distance_m=8.0, roll_deg=0)
    gt = env.host_gt(p)
    assert gt["visible_faces"] == ["rear"]
    p["camera"]["around_deg"] = 135.0  # behind and to the right
    assert set(env.host_gt(p)["visible_faces"]) == {"rear", "right"}


def test_damage_view_arms_length_gray_zone():
    env = get_environment("damage_view")
    p = env.sample(np.random.default_rng(0), {"bad": []})
    p["camera"].update(distance_m=2.2, aim=[0, 0], view_deg=0.0)
    acc = env.score(env.host_gt(p), None)
    assert acc.terms["distance"]["gray"] and not acc.terms["distance"]["ok"]


@pytest.mark.parametrize("name", ENVS)
def test_bad_factor_strata(name):
    env = get_environment(name)
    for seed in range(15):
        clean = env.sample(np.random.default_rng(seed), {"bad": []})
        acc = env.score(env.host_gt(clean), None)
        assert acc.acceptable, (seed, acc.failed)
        occ = env.sample(np.random.default_rng(seed), {"bad": ["occluded"]})
        assert "occlusion" in env.score(env.host_gt(occ), None).failed
    with pytest.raises(SceneError, match="unknown bad factor"):
        env.sample(np.random.default_rng(0), {"bad": ["rain"]})


@pytest.mark.parametrize("name", ["tape_gap", "plate"])
def test_sampler_reaches_about_half_acceptable(name):
    r = estimate_rates(get_environment(name), n=150, seed=0)
    assert 0.35 <= r["acceptable"] <= 0.65, r
    assert r["clean_acceptable"] >= 0.9


def test_car_panels_read_upright_from_outside():
    # a texture on a panel (damage patch) must not come out upside down: its u axis is the
    # right of a level camera looking at the panel from outside, its v axis points up
    from truthline.scenes import CameraPose
    from truthline.scenes._camera import camera_to_world
    from truthline.systems.realitybench.envs._car import panels

    for p in panels():
        if p.face == "top":
            continue
        c, n = np.array(p.centre), np.array(p.normal, float)
        m = camera_to_world(CameraPose(tuple(c + 2 * n), tuple(c)))
        assert np.allclose(m[:3, 0], p.u), p.name
        assert np.cross(n, p.u)[2] > 0.99, p.name
