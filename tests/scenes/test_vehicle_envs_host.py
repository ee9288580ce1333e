"""The procedural car and the vehicle environments on the host (no Blender): per-style
dimensions and their GT, closed outward meshes whose face classes are what the ID pass
paints, damage panels that fit a patch on flat paint, plate mounts on the bumper, the car
bbox and visible faces from the built vertices, and the damage/plate GT."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from truthline.scenes import get_environment
from truthline.scenes._camera import project
from truthline.scenes._textures import DAMAGE_TYPES, SEVERITIES
from truthline.systems.realitybench.envs._car import (
    BODY_STYLES,
    CAR_LENGTH,
    CAR_WIDTH,
    PATCH_HALF,
    PATCH_LIFT,
    STYLES,
    build_car,
    car_parts,
    car_vertices,
    lower_profile,
    panels,
    patch_centre,
    plate_mount,
)

# realistic ranges (m): length, width, height, wheelbase
RANGES = {
    "sedan": ((4.5, 5.0), (1.75, 1.9), (1.4, 1.5), (2.7, 2.95)),
    "hatchback": ((3.9, 4.4), (1.7, 1.85), (1.4, 1.55), (2.45, 2.7)),
    "suv": ((4.5, 4.9), (1.85, 2.0), (1.65, 1.85), (2.7, 2.95)),
    "pickup": ((5.2, 5.9), (1.9, 2.1), (1.8, 1.95), (3.3, 3.7)),
}


def _volume(v: np.ndarray, faces: tuple[tuple[int, ...], ...]) -> float:
    """Signed volume of a closed mesh (fan-triangulated): > 0 when the faces point out."""
    vol = 0.0
    for f in faces:
        for i in range(1, len(f) - 1):
            vol += float(np.dot(v[f[0]], np.cross(v[f[i]], v[f[i + 1]]))) / 6
    return vol


@pytest.mark.parametrize("style", BODY_STYLES)
def test_style_dimensions_are_realistic_and_are_the_built_extent(style):
    st = STYLES[style]
    for value, (lo, hi) in zip(
        (st.length, st.width, st.height, st.wheelbase), RANGES[style], strict=True
    ):
        assert lo <= value <= hi, (style, value)
    v = car_vertices(style)
    assert v[:, 1].max() - v[:, 1].min() == pytest.approx(st.length, abs=1e-9)
    assert v[:, 2].min() == pytest.approx(0.0, abs=1e-9) and v[:, 2].max() == pytest.approx(
        st.height, abs=1e-9
    )
    body = next(p for p in car_parts(style) if p.name == "body").verts
    assert body[:, 0].max() - body[:, 0].min() == pytest.approx(st.width, abs=1e-9)
    yf, yr = st.axles
    assert yf - yr == pytest.approx(st.wheelbase)
    gt = get_environment("vehicle_face").host_gt(_face_params(style, 45.0))
    assert gt["dimensions"]["length_m"] == st.length and gt["body_style"] == style


def test_styles_differ_where_a_person_looks():
    s = STYLES
    assert s["pickup"].length > s["sedan"].length > s["hatchback"].length
    assert s["suv"].height > s["sedan"].height + 0.25 and s["pickup"].height > s["sedan"].height
    assert s["suv"].clearance > s["sedan"].clearance and s["suv"].wheel_r > s["sedan"].wheel_r
    # three boxes: the sedan's rear window ends well ahead of its tail (a trunk deck);
    # the hatchback's and the SUV's glass runs to the tail; the pickup has a bed
    tail = {k: st.length / 2 + st.glass[-1][0] for k, st in s.items()}
    assert tail["sedan"] > 0.8 and tail["hatchback"] < 0.2 and tail["suv"] < 0.15
    assert s["pickup"].bed is not None and tail["pickup"] > 1.8
    assert (s["sedan"].length, s["sedan"].width) == (CAR_LENGTH, CAR_WIDTH)


@pytest.mark.parametrize("style", BODY_STYLES)
def test_meshes_are_closed_and_point_outward(style):
    for p in car_parts(style):
        if len(p.faces) < 4:  # glass quads and side windows are single faces
            continue
        edges: dict[tuple[int, int], int] = {}
        for f in p.faces:
            for a, b in zip(f, f[1:] + f[:1], strict=True):
                edges[(a, b)] = edges.get((a, b), 0) + 1
        # closed and consistently wound: every directed edge is matched by its reverse once
        assert all(edges.get((b, a)) == 1 for (a, b) in edges), p.name
        assert _volume(p.verts, p.faces) > 0, p.name


def test_face_classes_label_the_body_sides_and_not_the_arches():
    body = next(p for p in car_parts("sedan") if p.name == "body")
    assert body.classes[:2] == ("right", "left")  # the two side caps
    prof, arch = lower_profile(STYLES["sedan"])
    strips = body.classes[2:]
    assert len(strips) == len(prof) and sum(arch) > 10
    assert all(c == "other" for c, a in zip(strips, arch, strict=True) if a)
    assert {"front", "rear", "top", "bottom"} <= set(strips)
    # the pickup's bed walls and tailgate face into the bed with their unlabelled side
    pick = {p.name: p for p in car_parts("pickup")}
    assert "right" not in pick["bed_wall_left"].classes
    assert "front" not in pick["tailgate"].classes


def _flank_margin(style: str, y: float, z: float) -> float:
    """Distance (m) from (y, z) to the edge of the flank's paint (lower body, or a pickup's
    bed wall above it); negative outside."""
    st = STYLES[style]
    prof, _ = lower_profile(st)
    d = cv2.pointPolygonTest(np.array(prof, np.float32), (y, z), True)
    if st.bed:
        yb, (f, t) = st.top[6][0], st.bed
        wall = np.array([(-st.body_end, f), (yb, f), (yb, t), (-st.body_end, t)], np.float32)
        # the wall stands on the lower body: inside either counts, joined along the floor
        d = max(d, cv2.pointPolygonTest(wall, (y, z), True), min(d, 0.0) if z > f else d)
    return float(d)


def _patch_corners(p) -> list[np.ndarray]:
    uu = np.array(p.u, float)
    vv = np.cross(np.array(p.normal, float), uu)
    return [
        patch_centre(p, (ox, oy)) + a * PATCH_HALF * uu + b * PATCH_HALF * vv
        for ox in (-1, 1)
        for oy in (-1, 1)
        for a in (-1, 1)
        for b in (-1, 1)
    ]


@pytest.mark.parametrize("style", BODY_STYLES)
def test_damage_panels_fit_a_patch_on_flat_paint(style):
    st = STYLES[style]
    for p in panels(style):
        if p.face == "top":
            continue
        assert p.half_u >= PATCH_HALF and p.half_v >= PATCH_HALF, p.name
        corners = _patch_corners(p)
        if p.face in ("left", "right"):
            assert all(abs(abs(k[0]) - st.width / 2 - PATCH_LIFT) < 1e-9 for k in corners)
            # 3 cm or more from every edge: clear of the arches and of the bevels
            margins = [_flank_margin(style, k[1], k[2]) for k in corners]
            assert min(margins) >= 0.03, (p.name, min(margins))
        else:  # on a bumper's face, inside its edges
            z0, z1 = st.bumper_z
            assert all(
                z0 + 0.02 <= k[2] <= z1 - 0.02 and abs(k[0]) <= st.width / 2 - 0.05 for k in corners
            )
            assert all(abs(abs(k[1]) - st.length / 2 - PATCH_LIFT) < 1e-9 for k in corners)


def test_damage_patch_avoids_handles_and_tail_lights():
    for style in BODY_STYLES:
        parts = {p.name: p for p in car_parts(style)}
        for p in panels(style):
            if p.face not in ("left", "right"):
                continue
            c = np.array(_patch_corners(p))
            a, b = c.min(axis=0), c.max(axis=0)
            for name, q in parts.items():
                if not name.startswith(("handle", "taillight", "mirror")):
                    continue
                qa, qb = q.verts.min(axis=0), q.verts.max(axis=0)
                overlap = (qa[1] < b[1]) & (qb[1] > a[1]) & (qa[2] < b[2]) & (qb[2] > a[2])
                side_ok = (qb[0] < 0) if p.face == "right" else (qa[0] > 0)
                assert not overlap or side_ok, (style, p.name, name)


@pytest.mark.parametrize("style", BODY_STYLES)
def test_plate_sits_on_the_rear_bumper(style):
    st = STYLES[style]
    y, _ = plate_mount(style)
    assert y == pytest.approx(-st.length / 2 - 0.006)
    env = get_environment("plate")
    p = env.sample(np.random.default_rng(3), {"bad": []})
    p["scene"]["body"] = style
    corners = env.target(p).corners()
    assert np.allclose(corners[:, 1], y)
    assert (corners[:, 2] > st.bumper_z[0]).all() and (corners[:, 2] < st.bumper_z[1]).all()
    assert (np.abs(corners[:, 0]) < st.width / 2 - 0.1).all()


def _face_params(style: str, around: float, view: float = 80.0, dist: float = 8.5) -> dict:
    env = get_environment("vehicle_face")
    rng = np.random.default_rng(0)
    p = env.sample(rng, {"bad": []})
    p["scene"]["body"] = style
    p["camera"].update(around_deg=around, view_deg=view, distance_m=dist, aim=[0, 0], roll_deg=0)
    return p


@pytest.mark.parametrize("style", BODY_STYLES)
def test_visible_faces_and_thirds_round_the_car(style):
    env = get_environment("vehicle_face")
    want = {0: ["front"], 45: ["front", "right"], 90: ["right"], 135: ["rear", "right"],
            180: ["rear"], 225: ["left", "rear"], 270: ["left"], 315: ["front", "left"]}  # fmt: skip
    for az, faces in want.items():
        gt = env.host_gt(_face_params(style, float(az)))
        assert sorted(gt["visible_faces"]) == faces, (style, az, gt["facing_deg"])
        sides = [f for f in faces if f in ("left", "right")]
        assert sorted({t.split("_")[0] for t in gt["visible_side_thirds"]}) == sides
        if az == 90:  # a flank seen square on shows all three thirds
            assert gt["visible_side_thirds"] == ["right_front", "right_middle", "right_rear"]
            assert gt["visible_thirds"] == ["front", "middle", "rear"]
    q = env.questions(env.host_gt(_face_params(style, 45.0)), None)
    assert q[0]["field"] == "visible_face" and sorted(q[0]["answer"]) == ["front", "right"]
    assert q[1]["answer"] == style and q[1]["options"] == sorted(BODY_STYLES)


def test_car_bbox_is_the_projection_of_every_built_vertex():
    env = get_environment("vehicle_face")
    for style in BODY_STYLES:
        p = _face_params(style, 30.0)
        gt = env.host_gt(p)
        spec, pose = env.spec_pose(p)
        pp = project(car_vertices(style), spec, pose)
        (x0, y0), _, (x1, y1), _ = gt["target"]["polygon_px"]
        assert (x0, y0, x1, y1) == pytest.approx(
            (pp[:, 0].min(), pp[:, 1].min(), pp[:, 0].max(), pp[:, 1].max()), abs=1e-3
        )
    # the same view: a pickup spans more pixels than a hatchback
    w = {s: np.ptp(np.array(env.host_gt(_face_params(s, 90.0))["target"]["polygon_px"])[:, 0])
         for s in ("pickup", "hatchback")}  # fmt: skip
    assert w["pickup"] > 1.2 * w["hatchback"]


@pytest.mark.parametrize("kind", DAMAGE_TYPES)
def test_damage_extent_lies_in_its_severity_band(kind):
    env = get_environment("damage_view")
    widths = []
    for sev in SEVERITIES:
        p = env.sample(np.random.default_rng(5), {"bad": []})
        p["scene"].update(damage_type=kind, severity=sev)
        gt = env.host_gt(p)
        lo, hi = gt["severity_band_m"]
        assert lo <= gt["damage_extent_m"] <= hi, (kind, sev, gt["damage_extent_m"])
        widths.append(gt["damage_extent_m"])
        poly = np.array(gt["damage_polygon_px"])
        patch = np.array(gt["target"]["polygon_px"])
        # the damage box projects inside the patch
        assert poly[:, 0].min() >= patch[:, 0].min() - 1e-6
        assert poly[:, 0].max() <= patch[:, 0].max() + 1e-6
    assert widths == sorted(widths)


def test_damage_view_samples_every_style_and_far_frames_are_not_gray():
    env = get_environment("damage_view")
    styles = {env.sample(np.random.default_rng(s))["scene"]["body"] for s in range(40)}
    assert styles == set(BODY_STYLES)
    for seed in range(10):
        p = env.sample(np.random.default_rng(seed), {"bad": ["distance"]})
        acc = env.score(env.host_gt(p), None)
        t = acc.terms["distance"]
        # beyond the paper's 1.5-3 m gray zone: a clear rejection the set keeps
        assert not t["ok"] and not t["gray"] and t["value"] > 3.0, t
    # a damaged part is a real panel of that style (the project's field choices)
    for s in range(20):
        p = env.sample(np.random.default_rng(s))
        gt = env.host_gt(p)
        names = {q.name for q in panels(p["scene"]["body"])}
        assert gt["damaged_part"] in names and gt["body_style"] == p["scene"]["body"]


def test_build_car_keeps_its_signature_for_other_environments():
    import inspect

    sig = inspect.signature(build_car)
    assert list(sig.parameters)[:2] == ["style", "colour"]
    assert sig.parameters["id_pass"].default is False


@pytest.mark.parametrize("style", BODY_STYLES)
def test_occlusion_rays_end_inside_the_car(style):
    # an occluder counts only when it hides the car: every ray's end lies in its footprint
    st = STYLES[style]
    grid = get_environment("vehicle_face").target(_face_params(style, 0.0)).grid()
    assert (np.abs(grid[:, 0]) < st.width / 2).all() and (np.abs(grid[:, 1]) < st.length / 2).all()
    assert np.allclose(grid[:, 2], st.height / 2)
