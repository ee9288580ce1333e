"""Mining cost: mine a generated 1080p video with a zero-cost scripted detector vs a pure
1 fps grab()/retrieve() decode of the same file.

    .venv/bin/python bench/mining.py [--minutes 10] [--fps 10]

The video is generated once (mp4v, OpenCV has no H.264 writer) and cached in
``bench/.cache/``. Goal: mining <= 1.3x the pure decode.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def make_video(path: Path, minutes: float, fps: int) -> None:
    import cv2

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part.mp4")
    w, h = 1920, 1080
    rng = np.random.default_rng(0)
    base = cv2.GaussianBlur(rng.integers(0, 255, (h, w, 3), dtype=np.uint8), (0, 0), 3)
    vw = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    n = int(minutes * 60 * fps)
    for i in range(n):
        img = base.copy()
        x = int((i * 7) % (w - 120))
        cv2.rectangle(img, (x, 500), (x + 120, 900), (40, 160, 220), -1)
        vw.write(img)
    vw.release()
    tmp.rename(path)


def pure_decode(path: Path) -> int:
    import cv2

    cap = cv2.VideoCapture(str(path))
    fps = cap.get(cv2.CAP_PROP_FPS)
    idx, k, got = 0, 0, 0
    target = 0
    while cap.grab():
        if idx == target:
            ok, _ = cap.retrieve()
            got += ok
            k += 1
            target = round(k * fps)
        idx += 1
    cap.release()
    return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--fps", type=int, default=10)
    args = ap.parse_args()
    video = ROOT / "bench" / ".cache" / f"mining_{args.minutes:g}min_{args.fps}fps_1080p.mp4"
    t0 = time.perf_counter()
    make_video(video, args.minutes, args.fps)
    print(f"video: {video.name} (ready in {time.perf_counter() - t0:.1f} s)")

    from truthline.prefill._mine import MineConfig, mine_videos
    from truthline.workspace import Workspace

    tmp = Path(tempfile.mkdtemp(prefix="truthline-mine-bench-"))
    secs = int(args.minutes * 60)
    # a person every 45 s for 12 s: ~13 clips per 10 minutes, dedup keeps most
    script = {video.name: [[s, s + 12, 0.9] for s in range(10, secs - 15, 45)]}
    det = tmp / "det.json"
    det.write_text(json.dumps(script))
    ws = Workspace.from_env(tmp / "ws")
    project = ws.init_project("steel-safety")

    t0 = time.perf_counter()
    frames = pure_decode(video)
    decode_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rep = mine_videos(
        ws, project, video, detector=f"scripted:{det}", config=MineConfig(), progress=False
    )
    mine_s = time.perf_counter() - t0
    print(f"pure 1 fps decode (grab/retrieve): {decode_s:7.2f} s  ({frames} frames retrieved)")
    print(
        f"mining, scripted detector        : {mine_s:7.2f} s  ({rep.candidates} clips, "
        f"{rep.items_added} items x 8 JPEG frames)"
    )
    print(f"ratio mining / decode            : {mine_s / decode_s:.2f}x  (goal <= 1.3x)")


if __name__ == "__main__":
    main()
