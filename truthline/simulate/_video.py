"""SIMULATED CCTV videos for the demo: cameras, scenes with known truth, scripted detections.

Each camera's video is a sequence of scenes separated by empty gaps. In a scene, 1-3
OpenCV-drawn workers walk, stand, operate, inspect, carry or work at ground level, with a
helmet colour and a visibility condition (dust, glare, low light, steam). Because the
generator knows where every worker is, it also writes what a perfect person detector would
report (the ``scripted:`` detector reads it), and the truth of every scene, so the mined
clips can carry known truth for the SIMULATED models and annotators.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from truthline.simulate._scene import (
    SITES,
    ClipSpec,
    draw_frame,
    make_specs,
    truth_of,
    worker_boxes,
)


@dataclass
class Scene:
    video: str
    camera: str
    site: str
    start_s: float
    end_s: float
    spec: ClipSpec


@dataclass
class VideoSet:
    folder: Path
    detections: Path
    """JSON for the ``scripted:`` detector: {video file: [[start_s, end_s, confidence], ...]}."""
    scenes: Path
    """JSON list of scenes with their truth (SIMULATED ground truth, for simulations only)."""
    metadata: Path
    """CSV per video: video, camera, site."""
    n_scenes: int


def write_videos(
    out: Path,
    *,
    cameras: int = 4,
    scenes_per_camera: int = 8,
    scene_s: tuple[float, float] = (9.0, 14.0),
    gap_s: float = 7.0,
    fps: float = 4.0,
    size: tuple[int, int] = (480, 270),
    seed: int = 0,
) -> VideoSet:
    """Write one mp4 per camera plus the detector script, scene truth and video metadata."""
    import cv2

    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    cams = [(site, cam) for site, cs in SITES.items() for cam in cs]
    while len(cams) < cameras:
        cams.append((cams[len(cams) % 3][0], f"{cams[len(cams) % 3][0]}-{len(cams) + 1}"))
    cams = cams[:cameras]
    specs = make_specs(cameras * scenes_per_camera, seed)
    scenes: list[Scene] = []
    detections: dict[str, list[list]] = {}
    meta_rows = []
    for ci, (site, cam) in enumerate(cams):
        video = f"{cam}_20261130_0800.mp4"
        writer = cv2.VideoWriter(str(out / video), cv2.VideoWriter.fourcc(*"mp4v"), fps, size)
        t = gap_s / 2
        blank = np.full((size[1], size[0], 3), (70, 72, 75), np.uint8)
        for _ in range(round(gap_s / 2 * fps)):
            writer.write(blank)
        for si in range(scenes_per_camera):
            spec = specs[ci * scenes_per_camera + si]
            spec.site, spec.camera, spec.video = site, cam, video.removesuffix(".mp4")
            dur = float(rng.uniform(*scene_s))
            n = round(dur * fps)
            for k in range(n):
                writer.write(draw_frame(spec, k / max(1, n - 1), size, rng))
            start, end = t, t + n / fps
            scenes.append(
                Scene(video=video, camera=cam, site=site, start_s=start, end_s=end, spec=spec)
            )
            # a detector with confidence that dips in bad visibility, still above 0.25
            conf = 0.55 if spec.visibility != "clear" else 0.85
            # one interval per second, with the workers' boxes at its middle (percent)
            for a in np.arange(start, end - 1 / fps, 1.0):
                b = min(a + 1.0, end - 1 / fps)
                frac = ((a + b) / 2 - start) / max(end - start, 1e-9)
                detections.setdefault(video, []).append(
                    [round(a, 3), round(b, 3), conf, worker_boxes(spec, frac, size)]
                )
            for _ in range(round(gap_s * fps)):
                writer.write(blank)
            t = end + gap_s
        writer.release()
        meta_rows.append({"video": video, "camera": cam, "site": site})
    det_path = out / "detections.json"
    det_path.write_text(json.dumps(detections, indent=1))
    scene_path = out / "scenes.json"
    scene_path.write_text(
        json.dumps(
            [
                {
                    **{k: v for k, v in asdict(s).items() if k != "spec"},
                    "visibility": s.spec.visibility,
                    "scene_type": s.spec.scene_type,
                    "truth": truth_of(s.spec),
                }
                for s in scenes
            ],
            indent=1,
        )
    )
    meta_path = out / "videos.csv"
    with meta_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["video", "camera", "site"])
        w.writeheader()
        w.writerows(meta_rows)
    return VideoSet(out, det_path, scene_path, meta_path, len(scenes))


def scene_for(scenes: list[dict], video: str, start_s: float, end_s: float) -> dict | None:
    """The scene a mined clip overlaps most (by time), or None."""
    best, best_overlap = None, 0.0
    stem = Path(video).stem
    for s in scenes:
        if Path(s["video"]).stem != stem:
            continue
        overlap = min(end_s, s["end_s"]) - max(start_s, s["start_s"])
        if overlap > best_overlap:
            best, best_overlap = s, overlap
    return best
