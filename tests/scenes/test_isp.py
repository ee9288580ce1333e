"""Camera/ISP post effects on synthetic arrays with known statistics."""

from __future__ import annotations

import numpy as np
import pytest

from truthline.scenes import _isp as isp


def test_sensor_noise_mean_and_variance_follow_poisson_plus_read_noise():
    rng = np.random.default_rng(0)
    level, fw, rn = 0.2, 5000.0, 4.0
    img = np.full((256, 256, 3), level, dtype=np.float32)
    out = isp.sensor_noise(img, rng, full_well=fw, read_noise_e=rn, bits=16)
    assert out.dtype == np.float32
    assert out.mean() == pytest.approx(level, rel=2e-3)
    # var in linear units: (shot electrons + read^2) / fw^2 (+ 1/12 LSB^2, negligible at 16 bit)
    expected_var = (level * fw + rn**2) / fw**2
    assert out.var() == pytest.approx(expected_var, rel=0.03)


def test_sensor_noise_gain_scales_and_adc_clips_and_quantises():
    rng = np.random.default_rng(1)
    img = np.full((64, 64, 3), 0.3, dtype=np.float32)
    out = isp.sensor_noise(img, rng, gain=4.0, bits=8)
    assert out.max() == pytest.approx(1.0)  # 1.2 before the ADC: clipped
    dn = out * 255
    assert np.allclose(dn, np.rint(dn), atol=1e-3)  # 8-bit levels only
    low = isp.sensor_noise(np.full((64, 64, 3), 0.01, np.float32), rng, gain=2.0)
    assert low.mean() == pytest.approx(0.02, rel=0.02)


def test_sensor_noise_is_reproducible_from_the_seed():
    img = np.random.default_rng(5).random((16, 16, 3), dtype=np.float32) * 0.1
    a = isp.sensor_noise(img, np.random.default_rng(7))
    b = isp.sensor_noise(img, np.random.default_rng(7))
    c = isp.sensor_noise(img, np.random.default_rng(8))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_srgb_round_trip_and_reference_points():
    x = np.linspace(0, 1, 1001, dtype=np.float32)
    assert np.allclose(isp.srgb_decode(isp.srgb_encode(x)), x, atol=1e-6)
    # IEC 61966-2-1: linear 0.18 -> 0.4613, 0.0031308 is the knee, 1 -> 1
    assert isp.srgb_encode(np.float32(0.18)) == pytest.approx(0.46135, abs=1e-4)
    assert isp.srgb_encode(np.float32(0.0031308)) == pytest.approx(0.04045, abs=1e-5)
    assert isp.srgb_encode(np.float32(1.0)) == pytest.approx(1.0)


def test_gray_world_balances_channel_means_and_is_idempotent():
    rng = np.random.default_rng(2)
    img = rng.random((32, 32, 3), dtype=np.float32) * np.array([0.9, 0.5, 0.2], np.float32)
    once = isp.gray_world(img)
    means = once.reshape(-1, 3).mean(axis=0)
    assert np.allclose(means, means.mean(), rtol=1e-5)
    assert np.allclose(isp.gray_world(once), once, rtol=1e-5)
    assert np.allclose(isp.gray_world_gains(once), (1.0, 1.0, 1.0), rtol=1e-5)


def test_white_balance_multiplies_channels():
    img = np.ones((2, 2, 3), np.float32)
    assert np.allclose(isp.white_balance(img, (2.0, 1.0, 0.5))[0, 0], [2.0, 1.0, 0.5])


def test_auto_gain_hits_the_percentile_target():
    rng = np.random.default_rng(3)
    img = rng.random((100, 100, 3), dtype=np.float32) * 7e-4
    out = isp.auto_gain(img, percentile=99.5, target=0.85)
    lum = out @ np.array([0.2126, 0.7152, 0.0722], np.float32)
    assert np.percentile(lum, 99.5) == pytest.approx(0.85, rel=1e-4)
    assert isp.auto_gain_factor(np.zeros((4, 4, 3), np.float32)) == 1.0


@pytest.mark.parametrize("kind", ["s", "agx_like", "reinhard", "linear"])
def test_tone_curves_are_monotone_and_fix_the_ends(kind):
    x = np.linspace(0, 1, 513, dtype=np.float32)
    y = isp.tone_curve(x, kind, 0.8)
    assert np.all(np.diff(y) >= -1e-7)
    assert y[0] == pytest.approx(0.0, abs=1e-3) and y[-1] == pytest.approx(1.0, abs=1e-3)
    lut_in = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
    lut_out = isp.tone_curve(lut_in, kind, 0.8)
    assert lut_out.dtype == np.uint8
    assert np.all(np.diff(lut_out[..., 0].ravel().astype(int)) >= 0)


def test_s_curve_adds_contrast_around_mid_grey():
    y = isp.tone_curve(np.array([0.25, 0.5, 0.75], np.float32), "s", 1.0)
    assert y[0] < 0.25 and y[1] == pytest.approx(0.5) and y[2] > 0.75
    with pytest.raises(ValueError, match="unknown kind"):
        isp.tone_curve(np.zeros(3, np.float32), "nope")


@pytest.mark.parametrize(
    ("fn", "args"),
    [(isp.shake_psf, (9.0, 30.0)), (isp.shake_psf, (4.5, 90.0)), (isp.defocus_psf, (3.7,))],
)
def test_psfs_conserve_energy_and_spread_a_point(fn, args):
    img = np.zeros((41, 41, 3), np.float32)
    img[20, 20] = 1.0
    out = fn(img, *args)
    assert out.sum() == pytest.approx(3.0, rel=1e-5)
    assert out[20, 20, 0] < 0.5
    assert (out[..., 0] > 1e-4).sum() > 3


def test_shake_psf_spreads_along_its_angle():
    img = np.zeros((41, 41), np.float32)
    img[20, 20] = 1.0
    horiz = isp.shake_psf(img, 10.0, 0.0)
    assert horiz[20].sum() == pytest.approx(1.0, abs=0.02)  # stays on its row
    vert = isp.shake_psf(img, 10.0, 90.0)
    assert vert[:, 20].sum() == pytest.approx(1.0, abs=0.02)
    assert np.array_equal(isp.shake_psf(img, 0.5, 0.0), img)


def test_defocus_blur_lowers_sharpness_of_an_edge():
    img = np.zeros((40, 40), np.float32)
    img[:, 20:] = 1.0
    out = isp.defocus_psf(img, 4.0)
    assert np.abs(np.diff(out[20, 5:35])).max() < np.abs(np.diff(img[20, 5:35])).max() / 3
    u8 = isp.defocus_psf((img * 255).astype(np.uint8), 2.0)
    assert u8.dtype == np.uint8


def test_denoise_reduces_noise_and_clahe_keeps_chroma():
    rng = np.random.default_rng(4)
    base = np.full((64, 64, 3), 128, np.uint8)
    noisy = np.clip(base + rng.normal(0, 20, base.shape), 0, 255).astype(np.uint8)
    assert isp.denoise(noisy, 15).std() < noisy.std() / 2
    assert np.array_equal(isp.denoise(noisy, 0), noisy)
    grad = np.tile(np.linspace(60, 120, 64, dtype=np.uint8)[None, :, None], (64, 1, 3))
    eq = isp.clahe_l(grad, clip=4.0, tiles=4)
    assert np.ptp(eq[..., 0].astype(int)) > np.ptp(grad[..., 0].astype(int))  # more contrast
    assert np.abs(eq[..., 0].astype(int) - eq[..., 2].astype(int)).max() <= 2  # still grey


def test_night_vision_lifts_a_dim_frame_and_reports_what_it_applied():
    rng = np.random.default_rng(6)
    img = np.full((90, 160, 3), 5e-4, np.float32)
    img[30:70, 70:90] = 3e-3  # a brighter figure
    out, applied = isp.night_vision(img, rng)
    assert out.dtype == np.uint8 and out.shape == img.shape
    raw, raw_applied = isp.camera_raw(img, np.random.default_rng(6))
    assert raw.mean() < 15 < out.mean()
    assert out[35:65, 72:88].mean() > out[:, :50].mean() + 20  # the figure stands out
    assert applied["auto_gain"] > 100
    assert len(applied["wb_gains"]) == 3 and applied["denoise"] == "opencv_nlm_fast"
    assert raw_applied["pipeline"] == "camera_raw"
    again, _ = isp.night_vision(img, np.random.default_rng(6))
    assert np.array_equal(out, again)
    with pytest.raises(ValueError, match="rng"):
        isp.night_vision(img, None)
