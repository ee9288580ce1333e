"""Render sanity checks (RealityBench App. D: frames failing them are excluded) and the reason
a frame is withdrawn.

A render can be wrong in ways no acceptability term is about: a blank or non-finite image,
Blender's projection disagreeing with the analytic ground truth, a target whose texture never
reached the frame (the paper withdrew 29 ro_board frames for a board-texture defect). Those
frames are withdrawn from the benchmark with the reason recorded, not scored; an environment
may add checks of its own with ``sanity(gt, image) -> list[str]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

MIN_STD = 0.004
"""A delivered frame whose grey standard deviation is below this is blank (sRGB in [0, 1])."""
MAX_PROJECTION_PX = 1.0
"""Blender's projection of the target corners may differ from the analytic one by this much."""
MIN_MASK_COVER = 0.5
"""An unoccluded target fully inside the frame must cover this share of its polygon in the
visible mask; less means the target was not rendered where its ground truth says."""


def _fully_in_frame(poly: np.ndarray, w: int, h: int) -> bool:
    return bool(
        np.isfinite(poly).all()
        and (poly[:, 0] >= 0).all()
        and (poly[:, 0] <= w).all()
        and (poly[:, 1] >= 0).all()
        and (poly[:, 1] <= h).all()
    )


def render_problems(
    gt: Mapping[str, Any], image: np.ndarray, mask: np.ndarray | None = None
) -> list[str]:
    """What is wrong with a rendered frame (empty: nothing). ``image`` is the delivered frame
    (float sRGB or 8-bit), ``mask`` the visible-target mask when the frame has one."""
    from truthline.scenes._accept import target_mask

    out: list[str] = []
    raw = np.asarray(image)
    a = raw.astype(np.float32) / 255.0 if raw.dtype == np.uint8 else raw.astype(np.float32)
    if not np.isfinite(a).all():
        return ["render: non-finite pixel values"]
    grey = a[..., :3].mean(axis=-1) if a.ndim == 3 else a
    if float(grey.std()) < MIN_STD:
        out.append(f"render: blank frame (grey std {float(grey.std()):.4f} < {MIN_STD})")
    dev = gt.get("projection_check_px")
    if dev is not None and float(dev) > MAX_PROJECTION_PX:
        out.append(f"render: Blender projection off the ground truth by {float(dev):.2f} px")
    target = gt.get("target") or {}
    poly = np.asarray(target.get("polygon_px") or [], dtype=float)
    occ = gt.get("occlusion") or {}
    if mask is not None and poly.ndim == 2 and len(poly) and not occ.get("blocked"):
        h, w = mask.shape[:2]
        if _fully_in_frame(poly, w, h):
            inside = target_mask(poly, w, h)
            if inside.sum() >= 20:
                cover = float((mask & inside).sum() / inside.sum())
                if cover < MIN_MASK_COVER:
                    out.append(
                        f"render: target covers {cover:.0%} of its projected polygon in the "
                        f"visible mask (< {MIN_MASK_COVER:.0%})"
                    )
    return out


def withdrawal_reason(
    env: Any, gt: Mapping[str, Any], image: Any, mask: Any = None, render: Any = None
) -> str:
    """The reason a frame is withdrawn ('' when it passes): the generic checks on the
    delivered ``image``, then the environment's own ``sanity(gt, render)`` when it has one;
    ``render`` is the stored render before post effects (the environments apply those
    themselves where they matter), ``image`` when not given."""
    problems = render_problems(gt, np.asarray(image), mask)
    own = getattr(env, "sanity", None)
    if callable(own):
        problems += [str(p) for p in own(gt, image if render is None else render)]
    return "; ".join(problems)
