"""Mask-conditioned discernibility features (SynDORBench §3.2).

The paper's annotation model sees, per frame and per image variant (the raw render and its
night-vision output), statistics that compare the visual evidence inside the person's visible
mask with the evidence around it:

1. ``area_ratio`` - unblocked (visible) person pixels / image pixels;
2. ``lum_ks`` - two-sample Kolmogorov-Smirnov statistic between the L* (CIE Lab)
   distributions of the person and of its surrounding context;
3. ``chroma_swd`` - sliced Wasserstein distance between the (a*, b*) distributions of the
   person and of the context (hue/saturation difference, in Lab units);
4. ``edge_iou`` - IoU between the Sobel edges found near the person and a dilated band
   around its contour (an outline that is visible lines up with the band).

"Surrounding context" is the person's bounding box scaled by ``context_scale`` about its
centre (clipped to the image) minus the mask; a whole-image background would let a tiny figure
be compared with sky on one side of the frame and ground on the other. Two extra features
(``delta_l``: |mean L* person - mean L* context|, ``bbox_h_frac``: bbox height / image
height) are computed too; :data:`PAPER_FEATURES` lists the four the paper names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import cv2
import numpy as np
from scipy import stats

__all__ = [
    "ALL_FEATURES",
    "PAPER_FEATURES",
    "bbox_from_mask",
    "discernibility_features",
    "frame_features",
    "mask_from_image",
    "sliced_wasserstein",
    "to_lab",
]

PAPER_FEATURES = ("area_ratio", "lum_ks", "chroma_swd", "edge_iou")
"""The four features SynDORBench §3.2 names, in its order."""
ALL_FEATURES = (*PAPER_FEATURES, "delta_l", "bbox_h_frac")
"""Paper features plus two cheap extras (mean-L* contrast, apparent size)."""

BBox = tuple[float, float, float, float]


def to_lab(img_srgb: np.ndarray) -> np.ndarray:
    """sRGB (uint8, or float in [0, 1]) -> CIE L*a*b* float32 (L* 0-100, D65)."""
    a = np.asarray(img_srgb)
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, axis=2)
    f = a.astype(np.float32) / 255.0 if a.dtype == np.uint8 else a.astype(np.float32)
    # COLOR_RGB2Lab applies the sRGB transfer function to float input in [0, 1]
    return cv2.cvtColor(np.ascontiguousarray(np.clip(f, 0.0, 1.0)), cv2.COLOR_RGB2Lab)


def mask_from_image(mask_img: np.ndarray) -> np.ndarray:
    """The worker's mask PNG (subject white, rest black; no alpha) -> bool array."""
    m = np.asarray(mask_img)
    if m.ndim == 3:
        m = m[..., :3].max(axis=2)
    if m.dtype == bool:
        return m
    return m > (127 if m.dtype == np.uint8 else 0.5)


def bbox_from_mask(mask: np.ndarray) -> BBox | None:
    """[x0, y0, x1, y1) pixel bbox of the True pixels, None when the mask is empty."""
    ys, xs = np.nonzero(mask)
    if ys.size == 0:
        return None
    return (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))


def sliced_wasserstein(
    x: np.ndarray, y: np.ndarray, n_projections: int = 64, max_points: int = 4096, seed: int = 0
) -> float:
    """Sliced 1-Wasserstein distance between two point clouds in R^d (Bonneel et al. 2015).

    Mean over ``n_projections`` directions of the 1-D Wasserstein distance of the projected
    samples. In 2-D the directions are evenly spaced on the half circle (deterministic); in
    higher dimensions they are drawn from ``seed``. Clouds larger than ``max_points`` are
    subsampled (seeded) to keep a 1080p frame cheap.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(x) == 0 or len(y) == 0:
        return 0.0
    x, y = x.reshape(len(x), -1), y.reshape(len(y), -1)
    rng = np.random.default_rng(seed)
    if len(x) > max_points:
        x = x[rng.choice(len(x), max_points, replace=False)]
    if len(y) > max_points:
        y = y[rng.choice(len(y), max_points, replace=False)]
    d = x.shape[1]
    if d == 2:
        t = (np.arange(n_projections) + 0.5) * np.pi / n_projections
        dirs = np.stack([np.cos(t), np.sin(t)], axis=1)
    else:
        dirs = rng.normal(size=(n_projections, d))
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    px, py = x @ dirs.T, y @ dirs.T
    return float(
        np.mean([stats.wasserstein_distance(px[:, i], py[:, i]) for i in range(n_projections)])
    )


def _context(mask: np.ndarray, bbox: BBox, scale: float) -> np.ndarray:
    h, w = mask.shape
    x0, y0, x1, y1 = bbox
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    hw, hh = max(x1 - x0, 1.0) * scale / 2, max(y1 - y0, 1.0) * scale / 2
    cx0, cx1 = int(max(0, np.floor(cx - hw))), int(min(w, np.ceil(cx + hw)))
    cy0, cy1 = int(max(0, np.floor(cy - hh))), int(min(h, np.ceil(cy + hh)))
    ctx = np.zeros_like(mask)
    ctx[cy0:cy1, cx0:cx1] = True
    return ctx & ~mask


def edge_iou(lum: np.ndarray, mask: np.ndarray, band_px: int = 2, threshold: float = 4.0) -> float:
    """IoU of Sobel edges near the person with the dilated contour band of its mask.

    Edges are pixels whose L* gradient (Sobel, per pixel) is at least ``threshold``; only
    those inside the mask dilated by ``band_px`` count (the person's own evidence). The band
    is the mask dilated minus the mask eroded by ``band_px``. A clear outline gives a high
    IoU; no contrast gives 0; texture or noise inside the body lowers it.
    """
    m = mask.astype(np.uint8)
    if m.sum() == 0:
        return 0.0
    k = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * band_px + 1, 2 * band_px + 1))
    dil = cv2.dilate(m, k).astype(bool)
    band = dil & ~cv2.erode(m, k, borderType=cv2.BORDER_CONSTANT, borderValue=0).astype(bool)
    gx = cv2.Sobel(lum, cv2.CV_32F, 1, 0, ksize=3) / 8.0
    gy = cv2.Sobel(lum, cv2.CV_32F, 0, 1, ksize=3) / 8.0
    edges = (np.hypot(gx, gy) >= threshold) & dil
    union = int((edges | band).sum())
    return float((edges & band).sum() / union) if union else 0.0


def discernibility_features(
    image: np.ndarray,
    mask: np.ndarray,
    bbox: Sequence[float] | None = None,
    *,
    context_scale: float = 2.0,
    band_px: int = 2,
    edge_threshold: float = 4.0,
) -> dict[str, float]:
    """The discernibility features of one image variant (see the module docstring).

    ``image`` is display sRGB (uint8 or float [0, 1]); ``mask`` the visible-person mask
    (bool, or the worker's mask image); ``bbox`` [x0, y0, x1, y1] in pixels (from the mask
    when None). An empty mask (no visible person) gives all zeros: nothing to discern.
    """
    m = mask_from_image(mask)
    img = np.asarray(image)
    if m.shape != img.shape[:2]:
        raise ValueError(f"mask shape {m.shape} does not match image shape {img.shape[:2]}")
    bb = bbox_from_mask(m) if bbox is None else tuple(float(v) for v in bbox)
    if bb is None or not m.any():
        return dict.fromkeys(ALL_FEATURES, 0.0)
    lab = to_lab(img)
    ctx = _context(m, bb, context_scale)  # type: ignore[arg-type]
    fg, bg = lab[m], lab[ctx]
    if len(bg) == 0:  # the person fills the context window: compare with the whole rest
        bg = lab[~m]
    out: dict[str, float] = {"area_ratio": float(m.mean())}
    if len(bg):
        out["lum_ks"] = float(stats.ks_2samp(fg[:, 0], bg[:, 0]).statistic)
        out["chroma_swd"] = sliced_wasserstein(fg[:, 1:], bg[:, 1:])
        out["delta_l"] = float(abs(fg[:, 0].mean() - bg[:, 0].mean()))
    else:
        out.update(lum_ks=0.0, chroma_swd=0.0, delta_l=0.0)
    out["edge_iou"] = edge_iou(lab[..., 0], m, band_px, edge_threshold)
    out["bbox_h_frac"] = float((bb[3] - bb[1]) / m.shape[0])
    return {k: out[k] for k in ALL_FEATURES}


def frame_features(
    variants: Mapping[str, np.ndarray],
    mask: np.ndarray,
    bbox: Sequence[float] | None = None,
    **kw: Any,
) -> dict[str, float]:
    """Features of every variant of a frame, prefixed ``<variant>_`` (``raw_lum_ks``,
    ``nv_edge_iou``...): the annotation model reasons over raw and enhanced evidence at once."""
    out: dict[str, float] = {}
    for name, img in variants.items():
        for k, v in discernibility_features(img, mask, bbox, **kw).items():
            out[f"{name}_{k}"] = v
    return out
