"""The frozen nearest-region rule (``nearest-region/v1``, spec §9): public geometry only.

From the anchor box's centre, a candidate's distance is the smallest distance to any of its
image views (to the polyline's segments when the view has one, else to its box, 0 inside);
the rule picks the nearest candidate and applies only when every candidate has an image
view and the best beats the second best by at least 1 px.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
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


# -- the same rule on a benchmark item's typed public inputs ---------------------------------
# one home for the frozen geometry: the release-time rule above (H, H_hard) and the benchmark
# adapter below (``rule:nearest-region`` in the physics-diagrams template, the hard subset)
NEAREST_RULE = RULE
"""Version of the geometry; recorded in run manifests."""


@dataclass(frozen=True)
class Nearest:
    """The nearest-region decision: the predicted alias (argmin; ties: first listed),
    whether the rule is applicable (every candidate has an image view and the best
    distance beats the second by at least ``margin`` px) and every distance."""

    alias: str | None
    applicable: bool
    distances: dict[str, float]


def anchor_point(meta: Mapping[str, Any]) -> tuple[float, float] | None:
    """The anchor's bbox centre (``anchor = {kind: image_region, bbox: [x, y, w, h]}``),
    else ``label_xy`` ``[x, y]``; None for a text anchor or no anchor."""
    anchor = meta.get("anchor")
    if isinstance(anchor, Mapping):
        if anchor.get("kind", "image_region") != "image_region" or "bbox" not in anchor:
            return None
        x, y, w, h = (float(v) for v in anchor["bbox"])
        return x + w / 2, y + h / 2
    at = meta.get("label_xy")
    if at is None:
        return None
    x, y = (float(v) for v in at)
    return x, y


def candidate_views(cand: Any) -> list[dict[str, Any]]:
    """A candidate's image views: ``{bbox: [x, y, w, h]}`` or ``{polyline: [[x, y], ...]}``
    (a bare list is a bbox of 4 numbers or a point of 2; ``views`` lists several)."""
    if isinstance(cand, Mapping):
        if "views" in cand:
            return [v for c in cand["views"] for v in candidate_views(c)]
        if cand.get("kind", "image_region") != "image_region":
            return []
        out = {k: cand[k] for k in ("bbox", "polyline") if k in cand}
        return [out] if out else []
    if isinstance(cand, list | tuple):
        nums = [float(v) for v in cand]
        if len(nums) == 2:
            return [{"bbox": [nums[0], nums[1], 0.0, 0.0]}]
        if len(nums) == 4:
            return [{"bbox": nums}]
    raise ValueError(f"candidate region {cand!r} is neither a view, a box nor a point")


def nearest_region(meta: Mapping[str, Any], margin: float = MARGIN_PX) -> Nearest:
    """The frozen nearest-region rule on an item's typed public inputs (``anchor`` or
    ``label_xy``, and ``candidates`` as an id -> region map or a list of ``{alias, ...}``)."""
    at = anchor_point(meta)
    cands = meta.get("candidates")
    items: list[tuple[str, Any]]
    if isinstance(cands, Mapping):
        items = [(str(k), v) for k, v in cands.items()]
    elif isinstance(cands, list):
        items = [(str(c.get("alias", c.get("id"))), c) for c in cands if isinstance(c, Mapping)]
    else:
        raise ValueError(f"candidates must be a map or a list of objects, got {cands!r}")
    if at is None:
        return Nearest(None, False, {})
    dist: dict[str, float] = {}
    for alias, c in items:
        views = candidate_views(c)
        dist[alias] = min((view_distance(at, v) for v in views), default=math.inf)
    if not dist:
        return Nearest(None, False, {})
    order = sorted(dist, key=lambda k: dist[k])  # stable: ties keep the listed order
    best = order[0]
    applicable = all(math.isfinite(d) for d in dist.values()) and (
        len(order) < 2 or dist[order[1]] - dist[best] >= margin
    )
    return Nearest(best, applicable, dist)


def manifest_fact(project: Any) -> dict[str, Any]:
    """The run-manifest fact this rule contributes (entry point ``truthline.run_manifest``):
    a grounding run's numbers depend on the frozen geometry's version."""
    return {"nearest_rule": NEAREST_RULE}
