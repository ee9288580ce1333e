"""The night-vision ISP's fast denoiser gives the image the old one gave: PSNR/SSIM of the
new output against the old on the bench's midnight frames, measured against how much the
old output itself moves between two noise draws; the old method stays reproducible; and
the SSIM/PSNR code is checked against closed forms. (Its cost is measured by
bench/night_vision.py, not here.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import cv2
import numpy as np
import pytest

from truthline.scenes import _isp as isp
from truthline.scenes._iq import psnr, ssim

CAM = {"exposure": 4.0, "sensor_gain": 1.0}


def _bench() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "night_vision.py"
    spec = importlib.util.spec_from_file_location("bench_night_vision", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def frames() -> list[np.ndarray]:
    return [_bench().synthetic_night(seed, 216, 384) for seed in range(3)]


def _nv(img: np.ndarray, seed: int, method: str) -> np.ndarray:
    return isp.night_vision(img, np.random.default_rng(seed), denoise_method=method, **CAM)[0]


def test_the_fast_denoiser_matches_the_old_output_within_its_own_noise(frames):
    for i, f in enumerate(frames):
        old, new = _nv(f, i, "nlm"), _nv(f, i, "nlm_fast")
        other_draw = _nv(f, 1000 + i, "nlm")  # the same scene, another exposure's noise
        clean = isp.night_vision(f, None, noise=False, denoise_strength=0.0, **CAM)[0]
        s_new, s_draw = ssim(new, old), ssim(other_draw, old)
        assert s_new >= 0.90 and psnr(new, old) >= 31.0, (i, s_new, psnr(new, old))
        # closer to the old output than the old output is to itself under new noise
        assert s_new > s_draw and psnr(new, old) > psnr(other_draw, old) - 0.5
        # and no further from the noise-free image than the old method was
        assert ssim(new, clean) >= ssim(old, clean) - 0.01
        # not a no-op: the noise is still removed
        undenoised = isp.night_vision(f, np.random.default_rng(i), denoise_strength=0.0, **CAM)[0]
        assert ssim(undenoised, old) < 0.6 < s_new


def test_the_old_denoiser_stays_reproducible_and_each_run_says_which_ran(frames):
    u8 = isp.to_u8(isp.srgb_encode(isp.auto_gain(frames[0])))
    want = cv2.fastNlMeansDenoisingColored(u8, None, 10.0, 10.0, 7, 21)
    assert np.array_equal(isp.denoise(u8, 10.0, "nlm"), want)
    fast = isp.denoise(u8, 10.0)
    assert fast.shape == u8.shape and fast.dtype == np.uint8 and not np.array_equal(fast, want)
    assert np.array_equal(isp.denoise(u8, 0.0), u8)
    _, applied = isp.night_vision(frames[0], np.random.default_rng(0), **CAM)
    _, old = isp.night_vision(frames[0], np.random.default_rng(0), denoise_method="nlm", **CAM)
    assert (applied["denoise"], old["denoise"]) == ("opencv_nlm_fast", "opencv_nlm")
    with pytest.raises(ValueError, match="unknown denoise_method 'bm3d'"):
        isp.night_vision(frames[0], np.random.default_rng(0), denoise_method="bm3d")
    with pytest.raises(ValueError, match="unknown method"):
        isp.denoise(u8, 10.0, "bm3d")
    odd = isp.denoise(u8[:51, :77], 10.0)  # odd sizes: chroma is halved and restored
    assert odd.shape == (51, 77, 3)


def test_ssim_and_psnr_agree_with_their_closed_forms():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    assert ssim(a, a) == pytest.approx(1.0) and psnr(a, a) == float("inf")
    # constant images: the structure term is C2/C2, SSIM = (2xy + C1) / (x^2 + y^2 + C1)
    x, y, c1 = 100.0, 140.0, (0.01 * 255) ** 2
    const = ssim(np.full((30, 30), x, np.uint8), np.full((30, 30), y, np.uint8))
    assert const == pytest.approx((2 * x * y + c1) / (x * x + y * y + c1), rel=1e-9)
    # a uniform offset of d grey levels: PSNR = 20 log10(255 / d)
    g = np.full((20, 20), 50, np.uint8)
    assert psnr(g, g + 5) == pytest.approx(20 * np.log10(255 / 5))
    # more noise, less similar
    base = cv2.GaussianBlur(a, (0, 0), 3)
    scores = [
        ssim(base, np.clip(base + rng.normal(0, s, base.shape), 0, 255).astype(np.uint8))
        for s in (2, 10, 40)
    ]
    assert scores[0] > scores[1] > scores[2]
    with pytest.raises(ValueError, match="shapes differ"):
        ssim(a, a[:-1])
    with pytest.raises(ValueError, match="smaller than the 11x11 window"):
        ssim(a[:8, :8], a[:8, :8])
