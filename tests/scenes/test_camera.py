"""Camera and DORI math against worked numbers (SCENES.md, the SynDORBench paper, IEC 62676-4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from truthline.scenes import CameraPose, CameraSpec
from truthline.scenes import _camera as cm

NOMINAL = cm.NOMINAL_1_2_8_CAMERA


def test_fov_and_focal_pixels_of_the_nominal_1_2_8_inch_camera():
    # SCENES.md: 4.98 x 2.80 mm, f = 2.8 mm -> HFOV 83.3°, VFOV 53.13°, f_px 1079.5 at 1080p
    assert cm.hfov_deg(NOMINAL) == pytest.approx(83.3, abs=0.05)
    assert cm.vfov_deg(NOMINAL) == pytest.approx(53.13, abs=0.05)
    assert cm.f_px(NOMINAL) == pytest.approx(1079.5, abs=0.1)
    # D = 1080 / PPM for this sensor: 5.4 / 10.8 / 23 m -> 200 / 100 / 47 px/m
    assert [round(cm.ppm_at(NOMINAL, d)) for d in (5.4, 10.8, 23.0)] == [200, 100, 47]
    # IEC I/R/O/D distances 4.32/8.64/17.28/43.2 m
    got = cm.dori_distances(NOMINAL)
    want = {"identification": 4.32, "recognition": 8.64, "observation": 17.28, "detection": 43.2}
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=1e-3)  # SCENES.md rounds f_px to 1080


def test_paper_distances_are_the_iec_midpoints_with_the_paper_camera():
    # The paper: midpoints 187.5 / 93.8 / 43.8 px/m "convert to" 5.4 / 10.8 / 23 m (eq. 4).
    mids = [(125 + 250) / 2, (62.5 + 125) / 2, (25 + 62.5) / 2]
    assert list(cm.PAPER_REGIME_PPM) == mids
    for ppm, d in zip(cm.PAPER_REGIME_PPM, cm.PAPER_DISTANCES_M, strict=True):
        # the distance the paper's eq. 4 gives, rounded as the paper prints it
        assert round(cm.distance_for_ppm(cm.PAPER_CAMERA, ppm), 1) == d
        assert cm.ppm_at(cm.PAPER_CAMERA, d) == pytest.approx(ppm, rel=0.01)
    # eq. 4 literally: D = h_res / (PPM * 2 tan(VFOV/2))
    v = math.radians(cm.vfov_deg(cm.PAPER_CAMERA))
    assert 1080 / (43.8 * 2 * math.tan(v / 2)) == pytest.approx(23.0, abs=0.05)
    # the three distances sit in Recognition, Observation and Detection
    assert [cm.dori_class(cm.ppm_at(cm.PAPER_CAMERA, d)) for d in cm.PAPER_DISTANCES_M] == [
        "recognition",
        "observation",
        "detection",
    ]


@pytest.mark.parametrize(
    ("ppm", "cls"),
    [(250, "identification"), (249.9, "recognition"), (125, "recognition"),
     (62.5, "observation"), (62.4, "detection"), (25, "detection"), (24.99, "none")],
)  # fmt: skip
def test_dori_class_thresholds_are_inclusive_minimums(ppm, cls):
    assert cm.dori_class(ppm) == cls


def test_hemisphere_keeps_the_distance_and_azimuth_zero_is_in_front():
    target = (0.0, 0.0, 0.9)
    views = cm.hemisphere(target, 10.8, cm.azimuths(8), (0, 15, 30, 45))
    assert len(views) == 32
    for _az, _el, p in views:
        assert np.linalg.norm(np.subtract(p, target)) == pytest.approx(10.8)
    front = cm.orbit_position(target, 5.0, 0, 0)
    assert front == pytest.approx((0.0, -5.0, 0.9))  # the subject faces -Y
    top = cm.orbit_position(target, 5.0, 90, 30)
    assert top[2] == pytest.approx(0.9 + 5 * math.sin(math.radians(30)))


def test_projection_of_known_points():
    spec = CameraSpec(sensor_w_mm=36, sensor_h_mm=24, focal_mm=36, res_x=1000, res_y=500)
    pose = CameraPose((0, -10, 0), (0, 0, 0))
    # the aim point lands in the image centre; f_px = 1000
    x, y, d = cm.project(np.array([[0.0, 0, 0]]), spec, pose)[0]
    assert (x, y, d) == pytest.approx((500, 250, 10))
    # 1 m to the right and 0.5 m up at 10 m depth: +100 px right, 50 px up
    x, y, _ = cm.project(np.array([[1.0, 0, 0.5]]), spec, pose)[0]
    assert (x, y) == pytest.approx((600, 200))
    # roll 90° (about the camera's local +Z, Blender's sense): its up turns to world -X,
    # so a point at world +X now projects straight down the image
    rolled = CameraPose((0, -10, 0), (0, 0, 0), roll_deg=90)
    x, y, _ = cm.project(np.array([[1.0, 0, 0]]), spec, rolled)[0]
    assert (x, y) == pytest.approx((500, 350))
    # behind the camera: negative depth, and bbox_px ignores it
    assert cm.project(np.array([[0.0, -20, 0]]), spec, pose)[0, 2] < 0
    assert cm.bbox_px(np.array([[0.0, -20, 0]]), spec, pose) is None


def test_camera_matrix_is_a_rotation_looking_at_the_target():
    pose = CameraPose((3, -4, 2), (0, 0, 1), roll_deg=12)
    m = cm.camera_to_world(pose)
    r = m[:3, :3]
    assert np.allclose(r.T @ r, np.eye(3), atol=1e-12)
    assert np.linalg.det(r) == pytest.approx(1.0)
    fwd = -r[:, 2]
    want = np.subtract(pose.look_at, pose.position)
    assert np.allclose(fwd, want / np.linalg.norm(want))


def test_view_angle():
    pose = CameraPose((0, -5, 0), (0, 0, 0))
    assert cm.view_angle_deg(pose, (0, 0, 0), (0, -1, 0)) == pytest.approx(0)
    assert cm.view_angle_deg(pose, (0, 0, 0), (1, 0, 0)) == pytest.approx(90)
