"""Discernibility features on synthetic images with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from truthline.systems.syndorbench import _features as feat


def _scene(person_rgb, bg_rgb, shape=(100, 100), box=(40, 30, 60, 70)):
    img = np.empty((*shape, 3), np.uint8)
    img[:] = bg_rgb
    x0, y0, x1, y1 = box
    img[y0:y1, x0:x1] = person_rgb
    mask = np.zeros(shape, bool)
    mask[y0:y1, x0:x1] = True
    return img, mask


def test_lab_matches_published_srgb_reference_values():
    # CIE L*a*b* (D65) of sRGB primaries/greys, as tabulated by Lindbloom / colormine
    lab = feat.to_lab(np.array([[[255, 0, 0], [255, 255, 255], [119, 119, 119]]], np.uint8))
    assert lab[0, 0] == pytest.approx([53.24, 80.09, 67.20], abs=0.6)
    assert lab[0, 1] == pytest.approx([100.0, 0.0, 0.0], abs=0.5)
    assert lab[0, 2, 0] == pytest.approx(50.03, abs=0.3)


def test_sliced_wasserstein_of_a_shift_is_two_over_pi_times_its_length():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 2))
    v = np.array([3.0, 4.0])  # |v| = 5; mean |cos| over the half circle = 2/pi
    assert feat.sliced_wasserstein(x, x + v, n_projections=180) == pytest.approx(
        5 * 2 / np.pi, rel=1e-3
    )
    assert feat.sliced_wasserstein(x, x) == pytest.approx(0.0, abs=1e-12)
    assert feat.sliced_wasserstein(x, np.empty((0, 2))) == 0.0


def test_area_ratio_and_bbox_from_the_visible_mask():
    img, mask = _scene((200, 200, 200), (50, 50, 50))
    f = feat.discernibility_features(img, mask)
    assert f["area_ratio"] == pytest.approx(20 * 40 / 100**2)
    assert f["bbox_h_frac"] == pytest.approx(0.40)
    assert feat.bbox_from_mask(mask) == (40.0, 30.0, 60.0, 70.0)


def test_luminance_ks_is_one_for_disjoint_zero_for_equal_and_half_for_half_overlap():
    img, mask = _scene((200, 200, 200), (50, 50, 50))
    assert feat.discernibility_features(img, mask)["lum_ks"] == pytest.approx(1.0)
    same, _ = _scene((80, 80, 80), (80, 80, 80))
    assert feat.discernibility_features(same, mask)["lum_ks"] == pytest.approx(0.0)
    half = same.copy()
    half[30:50, 40:60] = 200  # upper half of the person brighter, lower half = background
    assert feat.discernibility_features(half, mask)["lum_ks"] == pytest.approx(0.5)


def test_chroma_distance_sees_hue_not_lightness():
    grey, mask = _scene((200, 200, 200), (60, 60, 60))
    red, _ = _scene((200, 40, 40), (60, 60, 60))
    g, r = feat.discernibility_features(grey, mask), feat.discernibility_features(red, mask)
    assert g["chroma_swd"] == pytest.approx(0.0, abs=0.5)
    assert r["chroma_swd"] > 30
    # a uniform chroma shift of length d gives SWD d * 2/pi
    ab = feat.to_lab(red)[35, 50, 1:]
    assert r["chroma_swd"] == pytest.approx(np.hypot(*ab) * 2 / np.pi, rel=0.02)


def test_edge_iou_high_for_a_clear_outline_zero_without_contrast_lower_with_texture():
    img, mask = _scene((255, 255, 255), (0, 0, 0))
    clear = feat.discernibility_features(img, mask)["edge_iou"]
    # a step edge gives a 2-px Sobel ridge inside a 4-px band (band_px=2): IoU ~ 1/2
    assert clear == pytest.approx(0.5, abs=0.07)
    flat, _ = _scene((90, 90, 90), (90, 90, 90))
    assert feat.discernibility_features(flat, mask)["edge_iou"] == 0.0
    rng = np.random.default_rng(1)
    textured = img.copy()
    textured[34:66, 44:56] = rng.integers(0, 256, (32, 12, 3), dtype=np.uint8)
    assert feat.discernibility_features(textured, mask)["edge_iou"] < clear - 0.1


def test_context_is_local_around_the_person():
    img, mask = _scene((200, 200, 200), (50, 50, 50))
    img[:, :5] = 200  # a bright strip far from the person: outside the context window
    assert feat.discernibility_features(img, mask)["lum_ks"] == pytest.approx(1.0)
    f_wide = feat.discernibility_features(img, mask, context_scale=5.0)
    assert f_wide["lum_ks"] < 1.0


def test_empty_mask_gives_zeros_and_bad_shapes_are_named():
    img, _ = _scene((200, 200, 200), (50, 50, 50))
    zero = feat.discernibility_features(img, np.zeros((100, 100), bool))
    assert set(zero) == set(feat.ALL_FEATURES) and not any(zero.values())
    with pytest.raises(ValueError, match="mask shape"):
        feat.discernibility_features(img, np.zeros((50, 50), bool))


def test_mask_png_colour_is_read_and_frame_features_prefix_variants():
    img, mask = _scene((200, 200, 200), (50, 50, 50))
    mask_png = np.repeat((mask * 255).astype(np.uint8)[..., None], 3, axis=2)
    assert np.array_equal(feat.mask_from_image(mask_png), mask)
    dark = (img // 20).astype(np.uint8)
    ff = feat.frame_features({"raw": dark, "nv": img}, mask_png)
    assert set(ff) == {f"{v}_{k}" for v in ("raw", "nv") for k in feat.ALL_FEATURES}
    assert ff["nv_edge_iou"] > ff["raw_edge_iou"]  # the dim raw frame has little contrast
    assert ff["raw_area_ratio"] == ff["nv_area_ratio"]
