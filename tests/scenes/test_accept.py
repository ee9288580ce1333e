"""The acceptability scorer: every term reported, AND semantics, gray zone, image terms that
noise cannot fake (SCENES.md pitfall 8)."""

from __future__ import annotations

import numpy as np
import pytest

from truthline.scenes import SceneError, _isp
from truthline.scenes import _accept as A
from truthline.scenes._textures import tape_texture


def test_framing_inside_half_and_outside():
    sq = [[100, 100], [200, 100], [200, 200], [100, 200]]
    inside, ext = A.framing(sq, 400, 300)
    assert inside == pytest.approx(1.0) and ext == pytest.approx(100 / 300)
    half = [[-50, 100], [50, 100], [50, 200], [-50, 200]]
    assert A.framing(half, 400, 300)[0] == pytest.approx(0.5)
    corner = [[350, 250], [450, 250], [450, 350], [350, 350]]  # a quarter inside
    assert A.framing(corner, 400, 300)[0] == pytest.approx(0.25)
    assert A.framing([[500, 500], [600, 500], [600, 600]], 400, 300) == (0.0, 0.0)
    assert A.framing([[np.nan, 0]] * 4, 400, 300) == (0.0, 0.0)


def test_contrast_is_michelson_of_p2_p98():
    img = np.full((100, 100), 0.2)
    img[:, 50:] = 0.8
    assert A.contrast(img) == pytest.approx(0.6)
    assert A.contrast(np.full((10, 10), 0.5)) == 0.0


def _tape_patch() -> np.ndarray:
    a = np.asarray(tape_texture(4).image).astype(np.float32) / 255
    return a[:, ::8][:, :64]  # 16 px per inch: 1/8 in = 2 px


def test_sharpness_drops_with_blur_and_noise_does_not_fake_it():
    sharp = _tape_patch()
    blurred = _isp.defocus_psf(sharp, 3.0)
    noisy_blurred = np.clip(
        blurred + np.random.default_rng(0).normal(0, 0.03, blurred.shape), 0, 1
    ).astype(np.float32)
    s, b, nb = A.sharpness(sharp), A.sharpness(blurred), A.sharpness(noisy_blurred)
    assert s > 3 * b
    assert nb < s / 2  # the sigma=1 pre-blur keeps noise from passing for detail


def test_image_terms_measure_large_detail_at_its_own_scale():
    # 40-px text is sharp even though its pixel-level Laplacian is small
    big = np.kron(_tape_patch(), np.ones((10, 10, 1), dtype=np.float32))
    poly = [[0, 0], [big.shape[1], 0], [big.shape[1], big.shape[0]], [0, big.shape[0]]]
    raw = A.image_terms(big, poly)
    scaled = A.image_terms(big, poly, feature_px=20.0)
    assert scaled["sharpness_scale"] == pytest.approx(0.2)
    assert scaled["sharpness"] > 3 * raw["sharpness"]


def _gt(**t):
    target = {
        "polygon_px": [[100, 100], [300, 100], [300, 200], [100, 200]],
        "distance_m": 0.5,
        "view_angle_deg": 20.0,
        "feature_px": 5.0,
    }
    target.update(t)
    return {"res": [640, 480], "target": target, "occlusion": {"rays": 15, "blocked": 0}}


def test_score_reports_every_term_and_is_an_and():
    th = A.Thresholds()
    img = np.zeros((480, 640, 3), np.float32)
    img[100:200, 100:300] = 0.5
    img[100:200, 100:300:4] = 0.05
    acc = A.score(_gt(), img, th)
    assert set(acc.terms) == set(A.TERMS)
    for t in acc.terms.values():
        assert set(t) == {"value", "threshold", "op", "ok", "kind", "gray"}
    assert acc.acceptable, acc.failed
    far = A.score(_gt(distance_m=1.4), img, th)
    assert not far.acceptable and far.failed == ["distance"]
    occ = A.score({**_gt(), "occlusion": {"rays": 15, "blocked": 2}}, img, th)
    assert occ.failed == ["occlusion"] and occ.terms["occlusion"]["value"] == pytest.approx(
        2 / 15, abs=1e-6
    )
    scene_only = A.score(_gt(), None, th)
    assert set(scene_only.terms) == set(A.SCENE_TERMS)
    flat = A.score(_gt(), np.full((480, 640, 3), 0.5, np.float32), th)
    assert set(flat.failed) == {"sharpness", "contrast"}


def test_unused_terms_are_left_out_and_gray_zone_is_flagged():
    th = A.Thresholds(max_view_angle_deg=None, gray={"distance": (1.5, 3.0), "feature_px": 0.15})
    acc = A.score(_gt(distance_m=2.0, feature_px=3.2), None, th.with_(max_distance_m=1.5))
    assert "view_angle" not in acc.terms
    assert A.gray_terms(acc) == ["distance", "feature_px"] and A.is_gray(acc)
    assert not A.is_gray(A.score(_gt(), None, A.Thresholds()))


def test_gt_without_target_is_one_clear_error():
    with pytest.raises(SceneError, match="no 'target'"):
        A.score({"res": [10, 10]}, None, A.Thresholds())
