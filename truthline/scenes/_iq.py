"""Full-reference image-quality figures: PSNR and SSIM, in numpy and OpenCV alone.

Used to show that a faster ISP step gives the same image as the one it replaces
(bench/night_vision.py, tests/scenes/test_night_vision_quality.py). scikit-image is not a
dependency, so SSIM is written out here as Wang et al. (2004) define it and as
``skimage.metrics.structural_similarity(gaussian_weights=True, sigma=1.5,
use_sample_covariance=False, data_range=255)`` computes it: an 11x11 Gaussian window of
sigma 1.5, K1 = 0.01, K2 = 0.03, the mean of the SSIM map over pixels whose window lies
inside the image.
"""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["luma_u8", "psnr", "ssim"]

_RADIUS = 5  # an 11x11 window: sigma 1.5 truncated at 3.5 sigma, as scikit-image does
_SIGMA = 1.5


def luma_u8(img: np.ndarray) -> np.ndarray:
    """Rec. 601 luma of an RGB uint8 image (grey images pass through), as float64."""
    a = np.asarray(img)
    if a.ndim == 3:
        a = cv2.cvtColor(np.ascontiguousarray(a, dtype=np.uint8), cv2.COLOR_RGB2GRAY)
    return a.astype(np.float64)


def psnr(a: np.ndarray, b: np.ndarray, data_range: float = 255.0) -> float:
    """Peak signal-to-noise ratio in dB over all pixels and channels (inf when equal)."""
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.shape != y.shape:
        raise ValueError(f"psnr: shapes differ ({x.shape} vs {y.shape})")
    mse = float(np.mean((x - y) ** 2))
    return float("inf") if mse == 0 else 10.0 * float(np.log10(data_range**2 / mse))


def ssim(a: np.ndarray, b: np.ndarray, data_range: float = 255.0) -> float:
    """Mean structural similarity of two images' luma (1.0 when equal)."""
    x, y = luma_u8(a), luma_u8(b)
    if x.shape != y.shape:
        raise ValueError(f"ssim: shapes differ ({x.shape} vs {y.shape})")
    if min(x.shape) <= 2 * _RADIUS:
        raise ValueError(f"ssim: image {x.shape} is smaller than the 11x11 window")
    k = 2 * _RADIUS + 1

    def blur(m: np.ndarray) -> np.ndarray:
        return cv2.GaussianBlur(m, (k, k), _SIGMA, borderType=cv2.BORDER_REFLECT)

    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    mx, my = blur(x), blur(y)
    vx = blur(x * x) - mx * mx
    vy = blur(y * y) - my * my
    cxy = blur(x * y) - mx * my
    num = (2 * mx * my + c1) * (2 * cxy + c2)
    den = (mx * mx + my * my + c1) * (vx + vy + c2)
    r = _RADIUS
    return float((num / den)[r:-r, r:-r].mean())
