"""The acceptability scorer as RealityBench defines it: an AND of scene terms and image terms.

Scene terms come from the placed scene (the environment's GT): framing (how much of the
target polygon lies inside the frame, and how large it is), occlusion (the share of
camera-to-target rays that hit something else, cast with ``scene.ray_cast`` in the worker),
distance, view angle to the target's normal, and feature pixels (how many pixels the
smallest detail that must resolve covers: 1/8 in of tape, a character's height). Image
terms come from the rendered frame at the target: sharpness (Laplacian variance after a
sigma=1 pre-blur, divided by the grey variance, so sensor noise does not pass for detail,
SCENES.md pitfall 8) and Michelson contrast from the 2nd/98th grey percentiles.

Every term is reported with its value, threshold, comparison and verdict, and whether the
value lies in the gray band near the threshold (a frame with a gray term is excluded from
scorer-vs-rater agreement and counted, as the paper does). Thresholds are per environment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from truthline.scenes._types import Acceptability, SceneError

SCENE_TERMS = ("in_frame", "size", "occlusion", "distance", "view_angle", "feature_px")
IMAGE_TERMS = ("sharpness", "contrast")
TERMS = SCENE_TERMS + IMAGE_TERMS
Points = Sequence[Sequence[float]] | np.ndarray


@dataclass(frozen=True)
class Thresholds:
    """One environment's acceptability thresholds (a term with ``None`` is not used).

    ``gray`` gives, per term, the half-width of the band around the threshold inside which a
    value is "near threshold" (relative to the threshold, e.g. 0.1 = +/-10 %), or an
    explicit ``(low, high)`` range for terms such as damage_view's 1.5-3 m distance."""

    min_in_frame: float | None = 0.95
    min_size_frac: float | None = 0.05
    max_occluded: float | None = 0.05
    max_distance_m: float | None = 1.0
    max_view_angle_deg: float | None = 55.0
    min_feature_px: float | None = 3.0
    min_sharpness: float | None = 0.15
    min_contrast: float | None = 0.22
    gray: Mapping[str, float | tuple[float, float]] = field(
        default_factory=lambda: {
            "distance": 0.1,
            "view_angle": 0.08,
            "feature_px": 0.15,
            "sharpness": 0.15,
            "contrast": 0.1,
        }
    )

    def with_(self, **kw: Any) -> Thresholds:
        return replace(self, **kw)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gray"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.gray.items()}
        return d

    def spec(self, term: str) -> tuple[float | None, str]:
        """(threshold, op) of a term; op ">=" or "<="."""
        return {
            "in_frame": (self.min_in_frame, ">="),
            "size": (self.min_size_frac, ">="),
            "occlusion": (self.max_occluded, "<="),
            "distance": (self.max_distance_m, "<="),
            "view_angle": (self.max_view_angle_deg, "<="),
            "feature_px": (self.min_feature_px, ">="),
            "sharpness": (self.min_sharpness, ">="),
            "contrast": (self.min_contrast, ">="),
        }[term]


# -- geometry ------------------------------------------------------------------------------
def polygon_area(poly: np.ndarray) -> float:
    """Shoelace area of a simple polygon (N x 2)."""
    p = np.asarray(poly, dtype=float)
    if len(p) < 3:
        return 0.0
    x, y = p[:, 0], p[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def clip_to_frame(poly: np.ndarray, w: float, h: float) -> np.ndarray:
    """Sutherland-Hodgman clip of a polygon to the frame [0, w] x [0, h]."""
    out: list[tuple[float, float]] = [
        (float(p[0]), float(p[1])) for p in np.asarray(poly, dtype=float)
    ]
    for axis, bound, keep_low in ((0, 0.0, False), (0, w, True), (1, 0.0, False), (1, h, True)):
        if not out:
            break
        src, out = out, []

        def inside(
            p: tuple[float, float], axis: int = axis, bound: float = bound, lo: bool = keep_low
        ) -> bool:
            return p[axis] <= bound if lo else p[axis] >= bound

        for i, cur in enumerate(src):
            prev = src[i - 1]
            if inside(cur):
                if not inside(prev):
                    out.append(_cross(prev, cur, axis, bound))
                out.append(cur)
            elif inside(prev):
                out.append(_cross(prev, cur, axis, bound))
    return np.array(out, dtype=float).reshape(-1, 2)


def _cross(
    a: tuple[float, float], b: tuple[float, float], axis: int, bound: float
) -> tuple[float, float]:
    t = (bound - a[axis]) / (b[axis] - a[axis])
    return (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))


def framing(poly_px: Points, w: int, h: int) -> tuple[float, float]:
    """(share of the target polygon's area inside the frame, its extent / min(w, h)).

    The extent is the larger side of the clipped polygon's bounding box: a target must be
    big enough in the frame to be proof of anything (5 % of the short side by default)."""
    p = np.asarray(poly_px, dtype=float)
    if p.size == 0 or not np.isfinite(p).all():
        return 0.0, 0.0
    area = polygon_area(p)
    c = clip_to_frame(p, w, h)
    if area <= 0 or len(c) < 3:
        return 0.0, 0.0
    ext = max(float(np.ptp(c[:, 0])), float(np.ptp(c[:, 1])))
    return polygon_area(c) / area, ext / min(w, h)


# -- image terms ----------------------------------------------------------------------------
def _grey(image: np.ndarray) -> np.ndarray:
    a = np.asarray(image)
    g = a.astype(np.float64)
    if np.issubdtype(a.dtype, np.integer):
        g = g / float(np.iinfo(a.dtype).max)
    if g.ndim == 3:
        g = g[..., :3] @ np.array([0.2126, 0.7152, 0.0722])[: g.shape[2]]
    return g


def target_mask(poly_px: Points, w: int, h: int) -> np.ndarray:
    """Boolean mask of the pixels inside the target polygon (pixel centres)."""
    import cv2

    m = np.zeros((h, w), dtype=np.uint8)
    p = np.asarray(poly_px, dtype=float)
    if p.size and np.isfinite(p).all():
        # cv2 fills polygons on integer coordinates; 4 bits of sub-pixel shift keep edges exact
        pts = np.round((p - 0.5) * 16).astype(np.int32)
        cv2.fillPoly(m, [pts], 1, lineType=cv2.LINE_8, shift=4)
    return m.astype(bool)


def sharpness(image: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Normalised sharpness: var(Laplacian(G_sigma1 * I)) / var(G_sigma1 * I) on the mask.

    The sigma=1 pre-blur keeps sensor noise from scoring as detail; dividing by the grey
    variance makes the figure independent of exposure and contrast."""
    import cv2

    g = _grey(image).astype(np.float32)
    b = cv2.GaussianBlur(g, (0, 0), 1.0)
    lap = cv2.Laplacian(b, cv2.CV_32F, ksize=1)
    if mask is None:
        mask = np.ones(g.shape, dtype=bool)
    if mask.sum() < 9:
        return 0.0
    var = float(b[mask].var())
    if var <= 1e-12:
        return 0.0
    return float(lap[mask].var()) / var


def contrast(image: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Michelson contrast (p98 - p2) / (p98 + p2) of the grey values on the mask."""
    g = _grey(image)
    v = g[mask] if mask is not None else g.ravel()
    if v.size == 0:
        return 0.0
    lo, hi = np.percentile(v, [2, 98])
    return float((hi - lo) / (hi + lo)) if hi + lo > 0 else 0.0


FEATURE_REF_PX = 4.0
"""Sharpness is measured with the target's feature scaled to this many pixels."""


def image_terms(
    image: np.ndarray,
    poly_px: Points,
    feature_px: float | None = None,
    ref_px: float = FEATURE_REF_PX,
) -> dict[str, float]:
    """Sharpness and contrast at the target (the polygon's pixels).

    The normalised Laplacian depends on scale (pitfall 8): large text is "smooth" at pixel
    level even when perfectly sharp. When the target's feature covers more than ``ref_px``
    pixels, the window around the target is first shrunk (area averaging) so the feature
    covers ``ref_px``: sharpness then asks "is the blur small against the detail that must
    resolve", the question acceptability asks. Contrast uses the full-resolution pixels."""
    import cv2

    a = np.asarray(image)
    h, w = a.shape[:2]
    m = target_mask(poly_px, w, h)
    out = {"contrast": contrast(a, m), "target_pixels": int(m.sum()), "sharpness_scale": 1.0}
    k = 1.0 if not feature_px or feature_px <= ref_px else ref_px / float(feature_px)
    if k < 1.0 and m.any():
        ys, xs = np.nonzero(m)
        pad = 8
        y0, y1 = max(0, ys.min() - pad), min(h, ys.max() + pad + 1)
        x0, x1 = max(0, xs.min() - pad), min(w, xs.max() + pad + 1)
        sw, sh = max(3, round((x1 - x0) * k)), max(3, round((y1 - y0) * k))
        sub = cv2.resize(
            _grey(a[y0:y1, x0:x1]).astype(np.float32), (sw, sh), interpolation=cv2.INTER_AREA
        )
        sm = cv2.resize(
            m[y0:y1, x0:x1].astype(np.uint8), (sw, sh), interpolation=cv2.INTER_NEAREST
        ).astype(bool)
        out["sharpness"] = sharpness(sub, sm)
        out["sharpness_scale"] = round(k, 4)
    else:
        out["sharpness"] = sharpness(a, m)
    return out


# -- scoring --------------------------------------------------------------------------------
def _gray(term: str, value: float, thr: float, th: Thresholds) -> bool:
    band = th.gray.get(term)
    if band is None or value is None or not math.isfinite(value):
        return False
    if isinstance(band, tuple | list):
        return float(band[0]) <= value <= float(band[1])
    return abs(value - thr) <= abs(thr) * float(band)


def term(name: str, value: float | None, th: Thresholds, kind: str) -> dict[str, Any] | None:
    thr, op = th.spec(name)
    if thr is None:
        return None
    v = float("nan") if value is None else float(value)
    ok = bool(math.isfinite(v) and (v >= thr if op == ">=" else v <= thr))
    return {
        "value": None if not math.isfinite(v) else round(v, 6),
        "threshold": thr,
        "op": op,
        "ok": ok,
        "kind": kind,
        "gray": _gray(name, v, thr, th),
    }


def scene_values(gt: Mapping[str, Any]) -> dict[str, float | None]:
    """The scene-term values from an environment's GT (``gt["target"]``, ``gt["occlusion"]``)."""
    t = gt.get("target")
    if not isinstance(t, Mapping):
        raise SceneError(
            "acceptability: the frame's gt has no 'target' (polygon_px, distance_m, ...)"
        )
    w, h = gt["res"]
    inside, size = framing(t["polygon_px"], int(w), int(h))
    occ = gt.get("occlusion") or {}
    rays = int(occ.get("rays", 0))
    blocked = int(occ.get("blocked", 0))
    return {
        "in_frame": inside,
        "size": size,
        "occlusion": (blocked / rays) if rays else None,
        "distance": t.get("distance_m"),
        "view_angle": t.get("view_angle_deg"),
        "feature_px": t.get("feature_px"),
    }


def score(
    gt: Mapping[str, Any],
    image: np.ndarray | None,
    th: Thresholds,
    *,
    image_values: Mapping[str, float] | None = None,
) -> Acceptability:
    """The AND of every used term. ``image`` None (no render yet) scores the scene terms
    only and marks the result ``scene_only`` in each term's kind; ``image_values`` gives
    precomputed image terms (e.g. from a proxy render)."""
    sv = scene_values(gt)
    terms: dict[str, dict[str, Any]] = {}
    for name in SCENE_TERMS:
        t = term(name, sv[name], th, "scene")
        if t is not None:
            terms[name] = t
    iv: Mapping[str, float] | None = image_values
    if iv is None and image is not None:
        t = gt["target"]
        iv = image_terms(image, t["polygon_px"], t.get("detail_px", t.get("feature_px")))
    if iv is not None:
        for name in IMAGE_TERMS:
            t = term(name, iv.get(name), th, "image")
            if t is not None:
                terms[name] = t
    ok = all(t["ok"] for t in terms.values())
    return Acceptability(acceptable=ok, terms=terms)


def gray_terms(acc: Acceptability | Mapping[str, Any]) -> list[str]:
    """Terms whose value is near their threshold (the frame belongs to the gray zone)."""
    terms = acc.terms if isinstance(acc, Acceptability) else acc.get("terms", {})
    return [k for k, t in terms.items() if t.get("gray")]


def is_gray(acc: Acceptability | Mapping[str, Any]) -> bool:
    return bool(gray_terms(acc))


def rescore(terms: Mapping[str, Mapping[str, Any]], th: Thresholds) -> Acceptability:
    """Re-decide a scored frame with other thresholds from its stored term values (tuning
    needs no re-render): each term keeps its value and kind, gets ``th``'s threshold; a
    generic term ``th`` does not use is dropped. An environment's own terms (tape lean,
    camera roll, car in frame: not in ``TERMS``) are kept as decided: retuning the generic
    thresholds must never let a frame that fails one of them pass."""
    out: dict[str, dict[str, Any]] = {}
    for name, t in terms.items():
        if name not in TERMS:
            out[name] = dict(t)
            continue
        new = term(name, t.get("value"), th, str(t.get("kind", "scene")))
        if new is not None:
            out[name] = new
    return Acceptability(acceptable=all(t["ok"] for t in out.values()), terms=out)
