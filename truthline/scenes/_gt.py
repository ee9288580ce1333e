"""Ground-truth helpers shared by environments (pure numpy: the worker and host tests use them)."""

from __future__ import annotations

from typing import Any

import numpy as np


def mask_stats(mask: np.ndarray) -> dict[str, Any]:
    """Visible pixel count and the mask's bbox ``[x0, y0, x1, y1]`` in pixel edges (so it
    compares with a projected bbox directly), or None when nothing is visible."""
    m = np.asarray(mask, dtype=bool)
    ys, xs = np.nonzero(m)
    if len(xs) == 0:
        return {"visible_px": 0, "bbox_mask": None}
    return {
        "visible_px": len(xs),
        "bbox_mask": [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1],
    }


def bbox_iou(a: list[float] | None, b: list[float] | None) -> float:
    """Intersection over union of two ``[x0, y0, x1, y1]`` boxes (0 when either is None)."""
    if a is None or b is None:
        return 0.0
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0
