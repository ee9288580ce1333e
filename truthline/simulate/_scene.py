"""A SIMULATED SteelBench-like dataset: OpenCV-drawn CCTV clips with known truth.

Figures (workers) walk, stand or carry across a plant floor seen from above; each has a
helmet colour; visibility effects (dust, glare, low light, steam) degrade frames. The
known truth goes into each item's ``sim_truth`` for simulated models and annotators only.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

VISIBILITY = ["clear", "dust", "glare", "low_light", "steam"]
SITES = {"BF": ["BF-1", "BF-2"], "CRM": ["CRM-1", "CRM-2"]}
ACTIONS = {
    "walk": "A1",
    "stand": "F1",
    "operate": "B1",
    "inspect": "B7",
    "carry": "D1",
    "ground": "B5",
}


@dataclass
class ClipSpec:
    key: str
    site: str
    camera: str
    video: str
    visibility: str
    scene_type: str
    workers: list[dict]


def _degrade(img: np.ndarray, vis: str, rng: np.random.Generator) -> np.ndarray:
    import cv2

    out: np.ndarray = img.astype(np.float32)
    if vis == "dust":
        out = out * 0.6 + 90 + rng.normal(0, 12, out.shape)
    elif vis == "glare":
        h, w = out.shape[:2]
        yy, xx = np.mgrid[0:h, 0:w]
        cx, cy = rng.uniform(0.2, 0.8) * w, rng.uniform(0.2, 0.5) * h
        out += 160 * np.exp(-(((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * (0.18 * w) ** 2)))[..., None]
    elif vis == "low_light":
        out = out * 0.25 + rng.normal(0, 6, out.shape)
    elif vis == "steam":
        fog = cv2.GaussianBlur(rng.uniform(0, 255, out.shape[:2]).astype(np.float32), (0, 0), 25)
        out = out * 0.5 + fog[..., None] * 0.7
    return np.clip(out, 0, 255).astype(np.uint8)


def draw_frame(
    spec: ClipSpec, t: float, size: tuple[int, int], rng: np.random.Generator
) -> np.ndarray:
    """One frame at clip time fraction ``t`` in [0, 1]."""
    import cv2

    w, h = size
    img = np.full((h, w, 3), (70, 72, 75), np.uint8)
    cv2.rectangle(
        img, (int(0.05 * w), int(0.6 * h)), (int(0.6 * w), int(0.75 * h)), (40, 40, 110), -1
    )  # conveyor
    cv2.rectangle(
        img, (int(0.7 * w), int(0.1 * h)), (int(0.95 * w), int(0.4 * h)), (90, 60, 40), -1
    )  # machine
    for wk in spec.workers:
        x0, y0 = wk["x"], wk["y"]
        dx = wk["vx"] * t if wk["motion"] in ("walk", "carry") else 0.01 * np.sin(6 * t)
        cx, cy = int((x0 + dx) * w), int(y0 * h)
        r = max(4, int(0.025 * w))
        cv2.ellipse(img, (cx, cy + 2 * r), (r, int(1.6 * r)), 0, 0, 360, (150, 120, 90), -1)  # body
        helmet = (0, 215, 255) if wk["helmet"] == "worn" else (160, 140, 120)
        cv2.circle(img, (cx, cy), r, helmet, -1)
        if wk["motion"] == "carry":
            cv2.rectangle(img, (cx + r, cy + r), (cx + 3 * r, cy + 3 * r), (30, 90, 160), -1)
    return _degrade(img, spec.visibility, rng)


def worker_boxes(spec: ClipSpec, t: float, size: tuple[int, int]) -> list[list[float]]:
    """Each worker's box at clip time fraction ``t`` as ``draw_frame`` draws it, in percent
    of the frame (``[x, y, width, height]``): what a perfect person detector reports."""
    w, h = size
    out = []
    for wk in spec.workers:
        dx = wk["vx"] * t if wk["motion"] in ("walk", "carry") else 0.01 * np.sin(6 * t)
        cx, cy = int((wk["x"] + dx) * w), int(wk["y"] * h)
        r = max(4, int(0.025 * w))
        right = cx + (3 * r if wk["motion"] == "carry" else r)
        x0, y0, y1 = cx - r, cy - r, cy + int(3.6 * r)
        out.append(
            [
                round(100 * x0 / w, 2),
                round(100 * y0 / h, 2),
                round(100 * (right - x0) / w, 2),
                round(100 * (y1 - y0) / h, 2),
            ]
        )
    return out


def make_specs(n_clips: int, seed: int = 0) -> list[ClipSpec]:
    rng = np.random.default_rng(seed)
    specs = []
    for i in range(n_clips):
        site = list(SITES)[i % len(SITES)]
        camera = SITES[site][i % len(SITES[site])]
        vis = VISIBILITY[int(rng.integers(len(VISIBILITY)))] if rng.random() < 0.6 else "clear"
        n_workers = int(rng.integers(1, 4))
        workers = []
        for j in range(n_workers):
            motion = list(ACTIONS)[int(rng.integers(len(ACTIONS)))]
            helmet = "worn" if rng.random() < 0.85 else "not_worn"
            elevated = bool(rng.random() < 0.2)
            harness = ("worn" if rng.random() < 0.8 else "not_worn") if elevated else "not_required"
            workers.append(
                {
                    "worker_id": f"P{j + 1}",
                    "x": float(rng.uniform(0.1, 0.6)),
                    "y": float(rng.uniform(0.2, 0.8)),
                    "vx": float(rng.uniform(0.1, 0.3)),
                    "motion": motion,
                    "action": ACTIONS[motion],
                    "helmet": helmet,
                    "harness": harness,
                    "spatial_context": ["elevated"] if elevated else ["ground_level"],
                    "safety_violation": helmet == "not_worn" or harness == "not_worn",
                }
            )
        specs.append(
            ClipSpec(
                key=f"{camera}/clip_{i:04d}",
                site=site,
                camera=camera,
                video=f"{camera}_video_{i // 4:03d}",
                visibility=vis,
                scene_type="production" if site == "BF" else "logistics",
                workers=workers,
            )
        )
    return specs


def truth_of(spec: ClipSpec) -> dict:
    """Known truth in the project's field names (for simulations only)."""
    workers = [
        {
            "worker_id": w["worker_id"],
            "action": w["action"],
            "helmet": w["helmet"],
            "harness": w["harness"],
            "spatial_context": w["spatial_context"],
            "safety_violation": w["safety_violation"],
            "violation_rule": ("UA-G-01" if w["helmet"] == "not_worn" else "UA-G-35")
            if w["safety_violation"]
            else None,
        }
        for w in spec.workers
    ]
    return {
        "worker_count": len(spec.workers),
        "visibility": [spec.visibility],
        "scene_type": spec.scene_type,
        "scene_violation": any(w["safety_violation"] for w in spec.workers),
        "workers": workers,
    }


def write_dataset(
    out: Path, n_clips: int = 12, seed: int = 0, size: tuple[int, int] = (320, 180)
) -> Path:
    """Write clip folders of 8 JPEG frames and ``metadata.csv``; returns the CSV path."""
    import cv2

    rng = np.random.default_rng(seed + 1)
    out.mkdir(parents=True, exist_ok=True)
    specs = make_specs(n_clips, seed)
    positions = [0, 0.14, 0.28, 0.43, 0.57, 0.71, 0.86, 1.0]
    rows = []
    for spec in specs:
        folder = out / spec.key
        folder.mkdir(parents=True, exist_ok=True)
        for k, t in enumerate(positions):
            cv2.imwrite(
                str(folder / f"frame_{k}.jpg"),
                draw_frame(spec, t, size, rng),
                [cv2.IMWRITE_JPEG_QUALITY, 85],
            )
        rows.append(
            {
                "key": spec.key,
                "site": spec.site,
                "camera": spec.camera,
                "video": spec.video,
                "visibility": spec.visibility,
                "scene_type": spec.scene_type,
                "sim_truth": json.dumps(truth_of(spec)),
            }
        )
    csv_path = out / "metadata.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return csv_path
