"""The frozen nearest-region rule (``nearest-region/v1``, spec §9): public geometry only.

From the anchor box's centre, a candidate's distance is the smallest distance to any of its
image views (to the polyline's segments when the view has one, else to its box, 0 inside);
the rule picks the nearest candidate and applies only when every candidate has an image
view and the best beats the second best by at least 1 px.
"""

from __future__ import annotations

import math
from typing import Any

RULE = "nearest-region/v1"
MARGIN_PX = 1.0


def _seg_dist(p: tuple[float, float], a: list[float], b: list[float]) -> float:
    (px, py), (ax, ay), (bx, by) = p, a, b
    dx, dy = bx - ax, by - ay
    L2 = dx * dx + dy * dy
    t = 0.0 if L2 == 0 else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / L2))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def view_distance(p: tuple[float, float], view: dict[str, Any]) -> float:
    poly = view.get("polyline")
    if poly and len(poly) >= 2:
        return min(_seg_dist(p, poly[i], poly[i + 1]) for i in range(len(poly) - 1))
    x, y, w, h = (float(v) for v in view["bbox"])
    dx = max(x - p[0], 0.0, p[0] - (x + w))
    dy = max(y - p[1], 0.0, p[1] - (y + h))
    return math.hypot(dx, dy)


def nearest(public: dict[str, Any]) -> tuple[bool, str | None]:
    """``(applicable, predicted alias)`` for a public probe record."""
    anchor = public["evidence"][0]
    if anchor["kind"] != "image_region":
        return False, None
    x, y, w, h = (float(v) for v in anchor["bbox"])
    centre = (x + w / 2, y + h / 2)
    dists: list[tuple[float, str]] = []
    for cand in public["candidates"]:
        views = [v for v in cand["views"] if v.get("kind") == "image_region" and v.get("bbox")]
        if not views:
            return False, None
        dists.append((min(view_distance(centre, v) for v in views), cand["alias"]))
    dists.sort()
    if len(dists) < 2 or dists[1][0] - dists[0][0] < MARGIN_PX:
        return False, None
    return True, dists[0][1]
