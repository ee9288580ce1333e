"""horizon_peak: the solar site survey's horizon photos, taken standing at the array.

Requirement (set-level, paper App. C: the frame is judged as one member of the set): "The
set of horizon photos taken from the array must together cover the horizon from east
through south to west (sectors E, SE, S, SW, W, 45 degrees each). Each photo is one member
of the set and must do its part: taken from the array, camera level (no visible roll,
not pitched far up or down), the horizon line and the skyline of its whole sector in
frame, unobstructed by a hand or the roof edge, sharp."

Scene (world: +X east, +Y north, Z up): a flat roof under the camera, which stands at the
array 1.4 m above it; a procedural skyline around it at known bearings and elevations —
hills on a ring 380 m out, trees (cone crowns), a neighbour's gabled house. Every mesh is
polygonal, so the skyline is exact: :func:`skyline_points` samples each silhouette edge.

Ground truth: the frame's sector and bearing, yaw error, pitch and roll; the highest
obstruction in the frame (``horizon_peak_deg``: elevation angle above the horizontal from
the camera, its bearing, which obstruction) from the skyline points that project inside
the frame. Tolerance of ``horizon_peak_deg``: 2 degrees. At these latitudes the sun climbs
about 10 degrees an hour near sunrise and sunset, so 2 degrees of obstruction shifts the
shading onset by roughly 12 minutes — the scale a shading estimate cares about — and it is
about 27 px of the 960-px frame, far above the rendering's own error (0.1 degree).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from truthline.scenes._accept import Thresholds, framing, image_terms
from truthline.scenes._accept import score as accept_score
from truthline.scenes._camera import f_px, hfov_deg, project, vfov_deg
from truthline.scenes._types import Acceptability, CameraPose, CameraSpec, register_environment
from truthline.systems.realitybench.envs._common import (
    RES,
    Box,
    PlanarEnv,
    Plane,
    blur_px,
    bpy_box,
    bpy_material,
    bpy_occlusion,
    bpy_projection_check,
    bpy_setup,
    draw_factors,
    phone,
    plane,
    post_process,
    q,
    render_res,
    u,
)
from truthline.systems.realitybench.envs.label_board import extra_term, with_terms

SECTORS = {"E": 90.0, "SE": 135.0, "S": 180.0, "SW": 225.0, "W": 270.0}
SECTOR_HALF_DEG = 22.5
CAM = (0.0, 0.0, 6.4)
ROOF = Box((0.0, 0.0, 4.9), (6.0, 5.0, 0.1))
HILL_R = 380.0
BAND_D = 60.0
"""The sector's horizon band is a virtual plane this far out (the framing target)."""
BAND_MARGIN_DEG = (2.0, 3.0)
MAX_ROLL_DEG = 3.0
MAX_PITCH_DEG = 12.0
PEAK_TOLERANCE_DEG = 2.0
KINDS = ("tree", "house", "hill")
SKY = (0.42, 0.6, 0.92)


def bearing_vec(bearing_deg: float, el_deg: float = 0.0) -> np.ndarray:
    """Unit vector of a compass bearing (0 north, 90 east) and elevation."""
    b, e = math.radians(bearing_deg), math.radians(el_deg)
    return np.array([math.sin(b) * math.cos(e), math.cos(b) * math.cos(e), math.sin(e)])


def az_el(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bearing (0-360) and elevation (degrees) of world points seen from the camera."""
    d = np.atleast_2d(points) - np.asarray(CAM)
    az = np.degrees(np.arctan2(d[:, 0], d[:, 1])) % 360.0
    el = np.degrees(np.arctan2(d[:, 2], np.hypot(d[:, 0], d[:, 1])))
    return az, el


# -- the skyline's meshes (host and worker build the same vertices) ---------------------------
def hill_heights(hills: Sequence[Mapping[str, float]], n: int = 720) -> np.ndarray:
    """Ring heights (m) at ``n`` bearings: an 8 m base plus Gaussian bumps."""
    b = np.arange(n) * 360.0 / n
    h = np.full(n, 8.0)
    for hill in hills:
        d = (b - hill["bearing"] + 180.0) % 360.0 - 180.0
        h += hill["height"] * np.exp(-0.5 * (d / hill["width"]) ** 2)
    return h


def hill_ring(hills: Sequence[Mapping[str, float]]) -> np.ndarray:
    """The ring's top vertices (n x 3) at radius :data:`HILL_R` around the camera."""
    h = hill_heights(hills)
    b = np.radians(np.arange(len(h)) * 360.0 / len(h))
    return np.column_stack([HILL_R * np.sin(b), HILL_R * np.cos(b), h])


def tree_mesh(t: Mapping[str, float], n: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """(apex, base ring n x 3) of a tree's cone crown."""
    c = bearing_vec(t["bearing"]) * t["dist"]
    a = np.radians(np.arange(n) * 360.0 / n)
    ring = np.column_stack(
        [c[0] + t["radius"] * np.cos(a), c[1] + t["radius"] * np.sin(a), np.full(n, t["crown_z"])]
    )
    return np.array([c[0], c[1], t["height"]]), ring


def house_mesh(hs: Mapping[str, float]) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Vertices and faces of a gabled house: 8 wall-box corners and 2 ridge ends."""
    c = bearing_vec(hs["bearing"]) * hs["dist"]
    yaw = math.radians(hs["yaw"])
    ax, ay = np.array([math.cos(yaw), math.sin(yaw)]), np.array([-math.sin(yaw), math.cos(yaw)])
    w2, d2, wall, ridge = hs["width"] / 2, hs["depth"] / 2, hs["wall"], hs["wall"] + hs["ridge"]
    v = []
    for z in (0.0, wall):
        for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
            p = c[:2] + sx * w2 * ax + sy * d2 * ay
            v.append((p[0], p[1], z))
    for sx in (-1, 1):
        p = c[:2] + sx * w2 * ax
        v.append((p[0], p[1], ridge))
    faces: list[tuple[int, ...]] = [(0, 1, 2, 3), (0, 1, 5, 4), (2, 3, 7, 6), (1, 2, 6, 5)]
    faces += [(3, 0, 4, 7), (4, 5, 9, 8), (6, 7, 8, 9), (4, 8, 7), (5, 6, 9)]
    return np.array(v), faces


HOUSE_SLOTS = (0, 0, 0, 0, 0, 1, 1, 0, 0)
"""Material of each face of :func:`house_mesh`: siding, the two roof slopes roofing."""


def _edges(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    t = np.linspace(0.0, 1.0, k)[:, None, None]
    return (a[None] + t * (b - a)[None]).reshape(-1, 3)


def skyline_points(scene: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Points densely sampled on every silhouette edge of the skyline's meshes, and which
    obstruction each belongs to (index into :data:`KINDS`). Every mesh is polygonal and
    stands on the ground, so the sky/ground boundary seen from the camera is the upper
    envelope of these points."""
    pts, kind = [], []
    ring = hill_ring(scene["hills"])
    p = _edges(ring, np.roll(ring, -1, axis=0), 12)
    pts.append(p)
    kind.append(np.full(len(p), 2))
    for t in scene["trees"]:
        apex, base = tree_mesh(t)
        p = np.vstack([_edges(np.repeat(apex[None], len(base), 0), base, 40), base])
        pts.append(p)
        kind.append(np.zeros(len(p), int))
    for hs in scene["houses"]:
        v, faces = house_mesh(hs)
        segs = {tuple(sorted((f[i], f[(i + 1) % len(f)]))) for f in faces for i in range(len(f))}
        a = np.array([v[i] for i, _ in sorted(segs)])
        b = np.array([v[j] for _, j in sorted(segs)])
        p = _edges(a, b, 40)
        pts.append(p)
        kind.append(np.ones(len(p), int))
    return np.vstack(pts), np.concatenate(kind)


def skyline_profile(scene: Mapping[str, Any], step: float = 0.1) -> np.ndarray:
    """The skyline's elevation (degrees) per bearing bin of ``step`` degrees."""
    pts, _ = skyline_points(scene)
    az, el = az_el(pts)
    n = round(360.0 / step)
    prof = np.full(n, -90.0)
    np.maximum.at(prof, (az / step).astype(int) % n, el)
    return prof


@register_environment
class HorizonPeak(PlanarEnv):
    name = "horizon_peak"
    version = "1"
    factors = ("framing", "tilted", "pitched", "occluded", "defocus", "shake", "glare")
    p_clean = 0.4
    yaw_good = 6.0
    roll_good = 1.5
    pitch_good = (-5.0, 10.0)
    thresholds = Thresholds(
        min_size_frac=0.2,
        max_distance_m=None,
        max_view_angle_deg=None,
        min_feature_px=None,
        min_sharpness=0.003,
        min_contrast=0.15,
    )

    # -- scene --
    def scene_params(self, rng: np.random.Generator, bad: Sequence[str]) -> dict[str, Any]:
        hills = [
            {"bearing": u(rng, 40, 320), "height": u(rng, 15, 55), "width": u(rng, 8, 25)}
            for _ in range(int(rng.integers(2, 5)))
        ]
        trees = []
        for _ in range(int(rng.integers(3, 8))):
            h = u(rng, 9, 22)
            trees.append(
                {
                    "bearing": u(rng, 60, 300),
                    # no crown above 28 degrees: the band must fit one frame
                    "dist": max(u(rng, 16, 60), (h - CAM[2]) / math.tan(math.radians(28)) + 1),
                    "height": h,
                    "crown_z": 0.25 * h,
                    "radius": u(rng, 0.18, 0.3) * h,
                }
            )
        houses = [
            {
                "bearing": u(rng, 70, 290),
                "dist": u(rng, 20, 40),
                "yaw": u(rng, 0, 180),
                "width": u(rng, 8, 12),
                "depth": u(rng, 7, 10),
                "wall": u(rng, 3, 6.5),
                "ridge": u(rng, 2.5, 4),
                "colour": [round(u(rng, 0.45, 0.8), 3), round(u(rng, 0.35, 0.6), 3), 0.3],
            }
            for _ in range(int(rng.integers(1, 3)))
        ]
        groups: dict[str, list[dict[str, Any]]] = {"hills": hills, "trees": trees, "houses": houses}
        return {
            k: [{a: round(b, 3) if isinstance(b, float) else b for a, b in x.items()} for x in v]
            for k, v in groups.items()
        }

    def sample(self, rng: Any, strata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        bad = draw_factors(rng, self.factors, strata, self.p_clean)
        sector = list(SECTORS)[int(rng.integers(len(SECTORS)))]

        def sym(lo: float, hi: float) -> float:
            return (1 if rng.random() < 0.5 else -1) * u(rng, lo, hi)

        yaw = sym(18, 35) if "framing" in bad else u(rng, -self.yaw_good, self.yaw_good)
        roll = sym(5, 15) if "tilted" in bad else u(rng, -self.roll_good, self.roll_good)
        scene = self.scene_params(rng, bad)
        if "pitched" in bad:
            pitch = u(rng, 20, 35) if rng.random() < 0.5 else u(rng, -40, -25)
        else:  # aimed at the middle of the sector's skyline band
            mid = (self.sector_peak({"scene": scene, "sector": sector}) + 1.0) / 2
            pitch = float(np.clip(mid + u(rng, -4.0, 4.0), *self.pitch_good))
        p: dict[str, Any] = {
            "bad_factors": bad,
            "scene": scene,
            "sector": sector,
            "camera": {
                "zoom": 1.0,
                "res": list(RES),
                "yaw_err_deg": round(yaw, 3),
                "pitch_deg": round(pitch, 3),
                "roll_deg": round(roll, 3),
                "distance_m": BAND_D,
            },
        }
        e: dict[str, Any] = {
            "focus": "near" if "defocus" in bad else "on",
            "focus_distance_m": u(rng, 0.2, 0.35) if "defocus" in bad else BAND_D,
            "fstop": 1.8,
            "shake_deg": u(rng, 0.4, 1.2) if "shake" in bad else u(rng, 0.0, 0.04),
        }
        glare = "glare" in bad
        e.update(
            exposure=u(rng, 0.15, 0.3) if glare else u(rng, 0.8, 1.1),
            wb_gains=[u(rng, 0.6, 0.75), 1.0, u(rng, 1.3, 1.6)]
            if glare
            else [u(rng, 0.95, 1.05), 1.0, u(rng, 0.95, 1.05)],
            haze=u(rng, 0.6, 0.8) if glare else u(rng, 0.0, 0.08),
            view_transform="AgX" if glare else "Standard",
        )
        p["effects"] = e
        p["occluder"] = self.occluder(p).to_dict() if "occluded" in bad else None
        return p

    def bearing(self, params: Mapping[str, Any]) -> float:
        return SECTORS[params["sector"]] + float(params["camera"]["yaw_err_deg"])

    def spec_pose(
        self, params: Mapping[str, Any], res: Sequence[int] | None = None
    ) -> tuple[CameraSpec, CameraPose]:
        c = params["camera"]
        spec = phone(c["zoom"], res if res is not None else c["res"])
        look = np.asarray(CAM) + bearing_vec(self.bearing(params), c["pitch_deg"])
        return spec, CameraPose(CAM, tuple(float(x) for x in look), float(c["roll_deg"]))

    def sector_peak(self, params: Mapping[str, Any]) -> float:
        pts, _ = skyline_points(params["scene"])
        az, el = az_el(pts)
        d = (az - SECTORS[params["sector"]] + 180.0) % 360.0 - 180.0
        return float(el[np.abs(d) <= SECTOR_HALF_DEG].max())

    def target(self, params: Mapping[str, Any]) -> Plane:
        """The sector's horizon band: a plane :data:`BAND_D` out across the sector, from
        2 degrees below the horizontal to 3 above the sector's highest obstruction."""
        b = SECTORS[params["sector"]]
        fwd = bearing_vec(b)
        lo = BAND_D * math.tan(math.radians(-BAND_MARGIN_DEG[0]))
        hi = BAND_D * math.tan(math.radians(self.sector_peak(params) + BAND_MARGIN_DEG[1]))
        c = np.asarray(CAM) + BAND_D * fwd + [0, 0, (lo + hi) / 2]
        feature = BAND_D * math.tan(math.radians(0.25))
        return plane(
            c,
            -fwd,
            np.cross(fwd, [0.0, 0.0, 1.0]),
            BAND_D * math.tan(math.radians(SECTOR_HALF_DEG)),
            (hi - lo) / 2,
            feature,
            (0, 0, 1),
        )

    def occluder(self, params: Mapping[str, Any]) -> Box:
        """A hand/thumb 12 cm in front of the lens, over the horizon line."""
        _, pose = self.spec_pose(params)
        fwd = np.asarray(pose.look_at) - np.asarray(pose.position)
        c = np.asarray(CAM) + 0.12 * fwd / np.linalg.norm(fwd) - [0, 0, 0.01]
        return Box((float(c[0]), float(c[1]), float(c[2])), (0.05, 0.05, 0.05), 0.0)

    def occluders(self, params: Mapping[str, Any]) -> list[Box]:
        return [*super().occluders(params), ROOF]

    def object_names(self, params: Mapping[str, Any]) -> list[str]:
        """The skyline's objects (ray hits on them are the view, not an obstruction)."""
        s = params["scene"]
        names = ["ground", "hills"]
        names += [f"tree_{i}" for i in range(len(s["trees"]))]
        names += [f"trunk_{i}" for i in range(len(s["trees"]))]
        names += [f"house_{i}" for i in range(len(s["houses"]))]
        return names

    # -- GT --
    def host_gt(
        self, params: Mapping[str, Any], res: Sequence[int] | None = None
    ) -> dict[str, Any]:
        gt = super().host_gt(params, res)
        spec, pose = self.spec_pose(params, res)
        w, h = spec.res_x, spec.res_y
        pts, kind = skyline_points(params["scene"])
        pr = project(pts, spec, pose, (w, h))
        inside = (pr[:, 2] > 0) & (pr[:, 0] >= 0) & (pr[:, 0] <= w) & (pr[:, 1] >= 0)
        inside &= pr[:, 1] <= h
        az, el = az_el(pts)
        c = params["camera"]
        peak: dict[str, Any] = {"deg": None, "bearing_deg": None, "kind": None, "px": None}
        if inside.any():
            i = int(np.flatnonzero(inside)[np.argmax(el[inside])])
            edge = min(pr[i, 0], w - pr[i, 0], pr[i, 1], h - pr[i, 1]) < 0.03 * w
            peak = {
                "deg": round(float(el[i]), 3),
                "bearing_deg": round(float(az[i]), 2),
                "kind": KINDS[int(kind[i])],
                "px": [round(float(pr[i, 0]), 2), round(float(pr[i, 1]), 2)],
                "at_frame_edge": bool(edge),
            }
        share, _ = framing(gt["target"]["polygon_px"], w, h)
        gt.update(
            sector=params["sector"],
            sector_bearing_deg=SECTORS[params["sector"]],
            sector_span_deg=[
                SECTORS[params["sector"]] - SECTOR_HALF_DEG,
                SECTORS[params["sector"]] + SECTOR_HALF_DEG,
            ],
            survey_set=list(SECTORS),
            camera_bearing_deg=round(self.bearing(params), 3),
            yaw_err_deg=c["yaw_err_deg"],
            pitch_deg=c["pitch_deg"],
            roll_deg=c["roll_deg"],
            hfov_deg=round(hfov_deg(spec), 3),
            vfov_deg=round(vfov_deg(spec), 3),
            f_px=round(f_px(spec), 4),
            camera_position=list(CAM),
            scene=dict(params["scene"]),
            camera_params=dict(c),
            sector_covered=bool(share >= (self.thresholds.min_in_frame or 0.95)),
            sector_peak_deg=round(self.sector_peak(params), 3),
            horizon_peak_deg=peak["deg"],
            peak=peak,
        )
        return gt

    # -- scoring --
    def level_terms(self, gt: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        return {
            "roll": extra_term(abs(float(gt["roll_deg"])), MAX_ROLL_DEG, "<="),
            "pitch": extra_term(abs(float(gt["pitch_deg"])), MAX_PITCH_DEG, "<="),
        }

    def score(self, gt: Mapping[str, Any], image: Any) -> Acceptability:
        return with_terms(super().score(gt, image), self.level_terms(gt))

    def scene_masks(
        self, params: Mapping[str, Any], res: Sequence[int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(skyline-object, roof) pixel masks of the frame from the geometry alone: a pixel
        is an obstruction when its ray's elevation is below the skyline profile at its
        bearing, roof when its ray meets the roof slab under the camera."""
        from truthline.scenes._camera import camera_to_world

        spec, pose = self.spec_pose(params, res)
        w, h = spec.res_x, spec.res_y
        m = camera_to_world(pose)[:3, :3]
        fp = f_px(spec)
        xs, ys = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
        d = np.stack([(xs - w / 2) / fp, -(ys - h / 2) / fp, -np.ones_like(xs)], -1) @ m.T
        az = np.degrees(np.arctan2(d[..., 0], d[..., 1])) % 360
        el = np.degrees(np.arctan2(d[..., 2], np.hypot(d[..., 0], d[..., 1])))
        prof = skyline_profile(params["scene"])
        ground = el < prof[(az / 0.1).astype(int) % len(prof)]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (ROOF.centre[2] + ROOF.half[2] - CAM[2]) / d[..., 2]
        roof = (
            (t > 0)
            & (np.abs(t * d[..., 0]) <= ROOF.half[0])
            & (np.abs(t * d[..., 1]) <= ROOF.half[1])
        )
        return ground, roof

    def proxy_image(self, params: Mapping[str, Any], gt: Mapping[str, Any]) -> np.ndarray:
        """A host stand-in for the render (linear RGB, before post effects): sky, the
        skyline's objects and the roof from :meth:`scene_masks`, then the predicted defocus
        and shake PSFs."""
        from truthline.scenes import _isp

        spec, _ = self.spec_pose(params)
        ground, roof = self.scene_masks(params)
        img = np.empty((*ground.shape, 3), np.float32)
        img[:] = SKY
        img[ground] = (0.12, 0.2, 0.07)
        img[roof] = (0.3, 0.28, 0.27)
        b = blur_px(spec, params, BAND_D)
        if b["defocus_px"] > 0.5:
            img = _isp.defocus_psf(img, b["defocus_px"] / 2)
        if b["shake_px"] > 0.5:
            img = _isp.shake_psf(img, b["shake_px"], 30.0)
        return img

    def sanity(self, gt: Mapping[str, Any], image: Any) -> list[str]:
        """Render sanity problems of a rendered frame (empty: sound), on the render as it
        came out (before post effects): the frame is blank; the sky and the scenery do not
        differ (the world or the objects missing); pixels the geometry puts on the skyline's
        objects or the roof come out sky (brighter and bluer than the midpoint of the two
        regions' medians), or pixels it puts in the sky do not. Pixels within the predicted
        blur of the skyline are not judged, nor is anything but blankness on frames with a
        hand in front of the lens (it covers sky and ground alike)."""
        import cv2

        from truthline.scenes._accept import _grey

        a = np.asarray(image)[..., :3]
        x = a.astype(np.float32) / 255.0 if a.dtype == np.uint8 else a.astype(np.float32)
        g = _grey(x)
        if float(g.std()) < 0.02:
            return [f"blank frame (grey std {g.std():.4f} < 0.02)"]
        if "occluded" in gt.get("bad_factors", []):
            return []
        p = {"scene": gt["scene"], "sector": gt["sector"], "camera": gt["camera_params"]}
        h, w = g.shape
        ground, roof = self.scene_masks(p, (w, h))
        blur = gt.get("blur_px") or {}
        k = 2 * int(np.ceil(1 + sum(blur.values()) * h / gt["res"][1])) + 1
        kern = np.ones((k, k), np.uint8)
        solid = cv2.erode((ground | roof).astype(np.uint8), kern).astype(bool)
        open_sky = cv2.erode((~(ground | roof)).astype(np.uint8), kern).astype(bool)
        if solid.sum() < 50 or open_sky.sum() < 50:
            return []
        blue = x[..., 2] - x[..., 0]
        sb, gb = float(np.median(blue[open_sky])), float(np.median(blue[solid]))
        sg, gg = float(np.median(g[open_sky])), float(np.median(g[solid]))
        if sb - gb < 0.05 or sg - gg < 0.05:
            return [
                f"sky and scenery do not differ (blue {sb:.2f}/{gb:.2f}, grey {sg:.2f}/{gg:.2f})"
            ]
        sky = (blue > (sb + gb) / 2) & (g > (sg + gg) / 2)
        problems = []
        if sky[solid].mean() > 0.05:
            problems.append("scenery missing: sky where the skyline's objects or the roof are")
        if (~sky[open_sky]).mean() > 0.05:
            problems.append("the sky does not render where the geometry puts it")
        return problems

    def proxy_score(self, params: Mapping[str, Any], seed: int = 0) -> Acceptability:
        gt = self.host_gt(params)
        img = post_process(self.proxy_image(params, gt), params["effects"], seed)
        t = gt["target"]
        values = image_terms(img, t["polygon_px"], t["detail_px"])
        acc = accept_score(gt, None, self.thresholds, image_values=values)
        return with_terms(acc, self.level_terms(gt))

    # -- worker --
    def build(self, ctx: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        import bpy

        s = params["scene"]
        bpy_box(
            "ground",
            Box((0, 0, -0.01), (450.0, 450.0, 0.01)),
            bpy_material("grass", (0.1, 0.2, 0.05), rough=0.95),
        )
        bpy_box("roof", ROOF, bpy_material("shingles", (0.16, 0.15, 0.15), rough=0.9))
        for i, sx in enumerate((-1, 1)):  # the array's modules beside the surveyor
            bpy_box(
                f"module_{i}",
                Box((sx * 1.6, -1.5, 5.08), (0.5, 0.85, 0.03)),
                bpy_material("pv", (0.02, 0.03, 0.08), rough=0.2),
            )
        ring = hill_ring(s["hills"])
        n = len(ring)
        verts = [tuple(p) for p in ring] + [(p[0], p[1], -1.0) for p in ring]
        faces = [(i, (i + 1) % n, n + (i + 1) % n, n + i) for i in range(n)]
        _mesh("hills", verts, faces, bpy_material("hills", (0.16, 0.22, 0.1), rough=0.95))
        leaf = bpy_material("leaf", (0.03, 0.1, 0.03), rough=0.9)
        bark = bpy_material("bark", (0.15, 0.09, 0.05), rough=0.9)
        for i, t in enumerate(s["trees"]):
            apex, base = tree_mesh(t)
            k = len(base)
            v = [tuple(apex)] + [tuple(p) for p in base]
            f = [(0, 1 + j, 1 + (j + 1) % k) for j in range(k)] + [tuple(range(k, 0, -1))]
            _mesh(f"tree_{i}", v, f, leaf)
            c = bearing_vec(t["bearing"]) * t["dist"]
            bpy_box(
                f"trunk_{i}",
                Box((c[0], c[1], t["crown_z"] / 2), (0.2, 0.2, t["crown_z"] / 2)),
                bark,
            )
        for i, hs in enumerate(s["houses"]):
            hv, hf = house_mesh(hs)
            _mesh(
                f"house_{i}",
                [tuple(p) for p in hv],
                hf,
                bpy_material(f"siding_{i}", hs["colour"], rough=0.8),
                bpy_material(f"roof_{i}", (0.12, 0.06, 0.05), rough=0.9),
                slots=HOUSE_SLOTS,
            )
        for i, b in enumerate(super().occluders(params)):
            bpy_box(f"glove_{i}", b, bpy_material("glove", (0.55, 0.38, 0.3)))
        bpy_setup(ctx, self.object_names(params))
        if hasattr(ctx, "world"):
            ctx.world(SKY, 1.0)
        bpy.context.view_layer.update()
        return {"target": "band"}

    def extract(self, ctx: Any, params: Mapping[str, Any], handles: Any) -> dict[str, Any]:
        res = render_res(ctx)
        gt = self.host_gt(params, res)
        spec, pose = self.spec_pose(params, res)
        t = self.target(params)
        gt["occlusion_analytic"] = gt["occlusion"]
        gt["occlusion"] = bpy_occlusion(pose.position, t.grid(), self.object_names(params))
        gt["projection_check_px"] = bpy_projection_check(
            spec, t.corners(), gt["target"]["polygon_px"]
        )
        return gt

    def prompt_context(self, gt: Mapping[str, Any]) -> str:
        """The set this frame belongs to and its place in it (the requirement is set-level:
        the frame is judged as one member, App. C)."""
        lo, hi = gt["sector_span_deg"]
        return (
            f"The survey set is {', '.join(gt['survey_set'])}; this photo is its "
            f"{gt['sector']} member (bearings {lo:.0f} to {hi:.0f} degrees)."
        )

    def doc_questions(self, gt: Mapping[str, Any]) -> list[dict[str, Any]]:
        peak = gt["peak"]
        if peak["deg"] is None:
            return []
        return [
            q(
                "horizon_peak_deg",
                "This photo is one of the site survey's horizon photos, taken level from the "
                f"array; the camera's vertical field of view is {gt['vfov_deg']:.1f} degrees. "
                "What is the elevation angle (degrees above the horizontal) of the highest "
                "obstruction on the skyline in this photo?",
                round(float(peak["deg"]), 1),
                "number",
                tolerance=PEAK_TOLERANCE_DEG,
            ),
            q(
                "peak_obstruction",
                "What is the highest obstruction on the skyline in this photo?",
                peak["kind"],
                "choice",
                options=list(KINDS),
            ),
        ]


def _mesh(
    name: str, verts: Sequence[Any], faces: Sequence[Any], *mats: Any, slots: Sequence[int] = ()
) -> Any:
    """A mesh object; face ``i`` gets material ``slots[i]`` (default the first)."""
    import bpy

    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(map(float, v)) for v in verts], [], [tuple(f) for f in faces])
    for m in mats:
        me.materials.append(m)
    for poly, k in zip(me.polygons, slots, strict=False):
        poly.material_index = int(k)
    ob = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(ob)
    return ob
