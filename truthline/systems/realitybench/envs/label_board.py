"""The shared base of the text-documentation environments (equipment_label, ro_board,
breaker_directory): a textured board whose rows must be read, its analytic GT (the ink
boxes of every drawn string, in texture pixels), per-glyph boxes for rendered-frame
measurement, and the render sanity check that withdraws a frame whose board texture did
not come out (the paper withdrew 29 ro_board frames for a board-texture defect).

The strings are generated without ambiguous glyphs (no O/0, I/1, Q); ground truth is the
rows as drawn. The feature that must resolve is the height of the smallest value string.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from truthline.scenes._accept import Thresholds
from truthline.scenes._camera import f_px
from truthline.scenes._textures import Texture, label_texture, load_font
from truthline.scenes._types import Acceptability
from truthline.systems.realitybench.envs._common import PlanarEnv, Plane, phone, plane

MIN_CHAR_PX = 8.0
BLANK_STD = 0.02
"""A frame whose grey standard deviation is below this shows nothing (a failed render)."""
MIN_TEXTURE_NCC = 0.3
"""The board's pixels must correlate at least this well with its own warped texture."""
SANITY_MIN_PX = 400
"""The texture check needs this many board pixels (a smaller board is a framing problem,
judged by the scorer, not a render defect)."""


def ink_boxes(tex_gt: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every drawn string's ``{"text", "ink_px", "size", "font"}`` from a label-style
    texture's GT (title, keys, values; breaker rows and handle labels)."""
    out = []
    for k in ("title_ink",):
        if tex_gt.get(k):
            out.append(tex_gt[k])
    for r in tex_gt.get("rows", []):
        for k in ("key_ink", "value_ink", "name_ink", "amps_ink"):
            if r.get(k):
                out.append(r[k])
    return out


def glyph_boxes(info: Mapping[str, Any]) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Per-character ink boxes (texture px) of one string drawn by ``_draw_text_box``: the
    same font at the same size, advanced by the prefix lengths (spaces skipped)."""
    font, _ = load_font(int(info["size"]))
    text = str(info["text"])
    bb = font.getbbox(text)
    ox, oy = info["ink_px"][0] - bb[0], info["ink_px"][1] - bb[1]
    out = []
    for i, ch in enumerate(text):
        if ch.isspace():
            continue
        x = font.getlength(text[:i])
        cb = font.getbbox(ch)
        out.append((ch, (ox + x + cb[0], oy + cb[1], ox + x + cb[2], oy + cb[3])))
    return out


def text_sanity(
    gt: Mapping[str, Any], image: Any, texture: Texture, size_px: Sequence[int]
) -> list[str]:
    """Render sanity problems of one text-board frame (empty: the frame is sound).

    - the frame is blank (grey std below :data:`BLANK_STD`);
    - a drawn string leaves the board or runs into its border (a texture defect);
    - the board's texture does not show where the GT projects it: on an unoccluded board of
      at least :data:`SANITY_MIN_PX` pixels inside the frame, the normalised correlation of
      the frame with the texture warped onto the GT polygon (both low-passed to the frame's
      predicted blur, so a blurred frame is not a defect) is below :data:`MIN_TEXTURE_NCC`.
    """
    import cv2

    from truthline.scenes._accept import _grey, framing, target_mask

    problems = []
    g = _grey(np.asarray(image))
    if float(g.std()) < BLANK_STD:
        problems.append(f"blank frame (grey std {g.std():.4f} < {BLANK_STD})")
    w_t, h_t = int(size_px[0]), int(size_px[1])
    margin = 0.01 * min(w_t, h_t)
    for info in ink_boxes(texture.gt):
        x0, y0, x1, y1 = info["ink_px"]
        if x0 < margin or y0 < margin or x1 > w_t - margin or y1 > h_t - margin:
            problems.append(f"text {info['text']!r} clipped by the board edge ({info['ink_px']})")
    poly = np.asarray(gt["target"]["polygon_px"], dtype=float)
    h, w = g.shape
    occ = gt.get("occlusion") or {}
    if not np.isfinite(poly).all() or occ.get("blocked", 0):
        return problems
    share, _ = framing(poly, w, h)
    m = target_mask(poly, w, h)
    if share < 0.95 or m.sum() < SANITY_MIN_PX:
        return problems
    tex = _grey(np.asarray(texture.image)).astype(np.float32)
    src = np.array([[0, 0], [w_t, 0], [w_t, h_t], [0, h_t]], dtype=np.float32)
    hm = cv2.getPerspectiveTransform(src, poly.astype(np.float32))
    warped = cv2.warpPerspective(tex, hm, (w, h), flags=cv2.INTER_AREA)
    blur = gt.get("blur_px") or {}
    sigma = 1.0 + 0.5 * float(blur.get("defocus_px", 0)) + 0.5 * float(blur.get("shake_px", 0))
    # the board's own edge (against whatever is behind it) is not its texture: erode it
    k = 2 * int(np.ceil(2 * sigma)) + 3
    m = cv2.erode(m.astype(np.uint8), np.ones((k, k), np.uint8)).astype(bool)
    if m.sum() < SANITY_MIN_PX // 2:
        return problems
    a = cv2.GaussianBlur(g.astype(np.float32), (0, 0), sigma)[m]
    b = cv2.GaussianBlur(warped, (0, 0), sigma)[m]
    ncc = float(np.corrcoef(a, b)[0, 1]) if a.std() > 1e-6 and b.std() > 1e-6 else 0.0
    if ncc < MIN_TEXTURE_NCC:
        problems.append(f"board texture does not show where projected (ncc {ncc:.2f})")
    return problems


@lru_cache(maxsize=128)
def row_label(rows: tuple[tuple[str, str], ...], title: str, size: tuple[int, int]) -> Texture:
    """A titled board of (key, value) rows at ``size`` pixels (cached: a frame's texture is
    drawn for its GT, its proxy and its sanity check)."""
    return label_texture(list(rows), title, size)


class LabelEnv(PlanarEnv):
    """A board of ``size_m`` (width, height) at ``centre`` facing ``normal`` with in-plane
    right axis ``right``, textured with ``tex_px`` pixels; the feature is the height of its
    smallest value string. Subclasses give the rows, the texture and the scene."""

    size_m: tuple[float, float] = (0.5, 0.3)
    tex_px: tuple[int, int] = (800, 480)
    centre: tuple[float, float, float] = (0.0, 0.0, 1.0)
    normal: tuple[float, float, float] = (0.0, -1.0, 0.0)
    right: tuple[float, float, float] = (1.0, 0.0, 0.0)
    detail_ratio = 0.2
    p_clean = 0.4
    dist_good = (0.35, 0.8)  # x the distance at which the smallest value is MIN_CHAR_PX tall
    dist_bad = (1.3, 2.2)
    view_good = (0.0, 40.0)
    view_bad = (62.0, 78.0)
    thresholds = Thresholds(
        min_feature_px=MIN_CHAR_PX,
        max_distance_m=4.0,
        max_view_angle_deg=55.0,
        min_size_frac=0.05,
        min_sharpness=0.085,
    )

    def texture(self, params: Mapping[str, Any]) -> Texture:
        """The board of the scene's ``title`` and ``rows`` (the breaker directory draws its own)."""
        s = params["scene"]
        rows = tuple((str(k), str(v)) for k, v in s["rows"])
        return row_label(rows, str(s["title"]), tuple(self.tex_px))

    def env_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        s = params["scene"]
        return {
            "scene": dict(s),
            "title": s["title"],
            "rows": {k: v for k, v in s["rows"]},
            "texture": self.texture_gt(params),
        }

    def value_inks(self, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The ink boxes of the strings that must be read (their smallest is the feature)."""
        return [r["value_ink"] for r in self.texture(params).gt["rows"]]

    def _char_m(self, params: Mapping[str, Any]) -> float:
        hs = [i["ink_px"][3] - i["ink_px"][1] for i in self.value_inks(params)]
        return min(hs) / self.tex_px[1] * self.size_m[1]

    def distance_scale(self, params: Mapping[str, Any]) -> float:
        spec = phone(params["camera"]["zoom"], params["camera"]["res"])
        return f_px(spec) * self._char_m(params) / MIN_CHAR_PX

    def target(self, params: Mapping[str, Any]) -> Plane:
        return plane(
            self.centre,
            self.normal,
            self.right,
            self.size_m[0] / 2,
            self.size_m[1] / 2,
            self._char_m(params),
            (0, 0, 1),
        )

    def texture_gt(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The texture's exact GT a measurement needs: its size and every string's ink box."""
        tex = self.texture(params)
        return {
            "size_px": list(self.tex_px),
            "strings": [
                {"text": i["text"], "ink_px": i["ink_px"], "size": i["size"]}
                for i in ink_boxes(tex.gt)
            ],
            "values": [i["text"] for i in self.value_inks(params)],
            "font": tex.gt["font"],
        }

    def sanity(self, gt: Mapping[str, Any], image: Any) -> list[str]:
        """Render sanity problems of a rendered frame (see :func:`text_sanity`), on the render
        as it came out: post effects (glare, under-exposure, noise) are deliberate camera
        conditions the scorer rejects, not render defects. The texture is redrawn from
        ``gt["scene"]`` (the scene params the GT carries)."""
        tex = self.texture({"scene": gt["scene"]})
        return text_sanity(gt, np.asarray(image), tex, self.tex_px)


def extra_term(value: float | None, threshold: float, op: str, gray: float = 0.1) -> dict[str, Any]:
    """An environment-specific scene term in the scorer's own layout (``_accept.term``
    knows only the shared terms): value, threshold, op, verdict, gray band (+/- ``gray``
    relative to the threshold, or absolute when the threshold is 0)."""
    v = float("nan") if value is None else float(value)
    ok = bool(np.isfinite(v) and (v >= threshold if op == ">=" else v <= threshold))
    band = abs(threshold) * gray if threshold else gray
    return {
        "value": None if not np.isfinite(v) else round(v, 6),
        "threshold": threshold,
        "op": op,
        "ok": ok,
        "kind": "scene",
        "gray": bool(np.isfinite(v) and abs(v - threshold) <= band),
    }


def with_terms(acc: Acceptability, terms: Mapping[str, Mapping[str, Any]]) -> Acceptability:
    """``acc`` with more terms ANDed in."""
    allt = {**acc.terms, **terms}
    return Acceptability(acceptable=all(t["ok"] for t in allt.values()), terms=allt)
