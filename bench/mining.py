"""Mining cost: mine a generated 1080p video with a zero-cost scripted detector vs the fair
floor, ONE sequential grab()/retrieve() pass that samples at 1 fps AND writes the same clip
frames as JPEG (the frame indices mining chose, same quality), i.e. what any miner must pay.

    .venv/bin/python bench/mining.py [--minutes 10] [--fps 10] [--repeats 3] [--no-record]

Each round runs floor and mining back to back (the order swapped every round, so drift in
the load from elsewhere hits both alike) and gives a ratio; the median of the per-round
ratios is printed for process CPU time (user + sys of every thread: what a loaded machine
can still compare) and for wall time, and written to bench/SCALE.md (section "mining")
with the machine load. The bare 1 fps decode without JPEGs (the old baseline) is shown for
reference. The video is generated once (mp4v, OpenCV has no H.264 writer) and cached in
``bench/.cache/``. Goal: mining <= 1.3x the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from _scale import record, row  # noqa: E402


def make_video(path: Path, minutes: float, fps: int) -> None:
    import cv2

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part.mp4")
    w, h = 1920, 1080
    rng = np.random.default_rng(0)
    base = cv2.GaussianBlur(rng.integers(0, 255, (h, w, 3), dtype=np.uint8), (0, 0), 3)
    vw = cv2.VideoWriter(str(tmp), cv2.VideoWriter.fourcc(*"mp4v"), fps, (w, h))
    n = int(minutes * 60 * fps)
    for i in range(n):
        img = base.copy()
        x = int((i * 7) % (w - 120))
        cv2.rectangle(img, (x, 500), (x + 120, 900), (40, 160, 220), -1)
        vw.write(img)
    vw.release()
    tmp.rename(path)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def floor_pass(path: Path, clip_frames: list[int], out: Path | None, quality: int) -> int:
    """One sequential pass: retrieve every 1 fps sample and every clip frame; write the clip
    frames as JPEG (none when ``out`` is None: the bare decode). Frames retrieved."""
    import cv2

    want = sorted(clip_frames) if out is not None else []
    cap = cv2.VideoCapture(str(path))
    fps = cap.get(cv2.CAP_PROP_FPS)
    idx, k, got, j = 0, 0, 0, 0
    target = 0
    while cap.grab():
        clip = j < len(want) and want[j] == idx
        if idx == target or clip:
            ok, frame = cap.retrieve()
            got += ok
            if idx == target:
                k += 1
                target = round(k * fps)
            while out is not None and j < len(want) and want[j] == idx:  # one per clip frame
                cv2.imwrite(str(out / f"{j}.jpg"), frame, [cv2.IMWRITE_JPEG_QUALITY, quality])
                j += 1
        idx += 1
    cap.release()
    return got


def timed(fn: Callable[[], T]) -> tuple[T, float, float]:
    c0, t0 = _cpu(), time.perf_counter()
    out = fn()
    return out, _cpu() - c0, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--fps", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3, help="alternating floor/mining rounds")
    ap.add_argument("--no-record", action="store_true", help="do not rewrite bench/SCALE.md")
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
    cfg = MineConfig()

    def mine(r: int) -> tuple[Any, float, float]:
        ws = Workspace.from_env(tmp / f"ws{r}")
        project = ws.init_project("steel-safety")  # the store exists before mining: untimed
        return timed(
            lambda: mine_videos(
                ws, project, video, detector=f"scripted:{det}", config=cfg, progress=False
            )
        )

    _, bare_cpu, bare_wall = timed(lambda: floor_pass(video, [], None, cfg.jpeg_quality))
    rows = []
    rep = None
    # the clip frames mining chooses (the same every round): the floor writes them too
    frames = [f for c in mine(-1)[0].clips for f in c["frame_indices"]]
    for r in range(args.repeats):
        out = tmp / f"floor{r}"
        out.mkdir()

        def floor(o: Path = out) -> tuple[int, float, float]:
            return timed(lambda: floor_pass(video, frames, o, cfg.jpeg_quality))

        if r % 2:  # odd rounds: floor first
            n, f_cpu, f_wall = floor()
            rep, m_cpu, m_wall = mine(r)
        else:
            rep, m_cpu, m_wall = mine(r)
            n, f_cpu, f_wall = floor()
        assert [f for c in rep.clips for f in c["frame_indices"]] == frames
        rows.append((f_cpu, f_wall, m_cpu, m_wall))
        print(
            f"round {r + 1}: floor {f_cpu:6.2f} s CPU {f_wall:6.2f} s wall ({n} frames retrieved, "
            f"{len(frames)} JPEGs) | mining {m_cpu:6.2f} s CPU {m_wall:6.2f} s wall "
            f"({rep.candidates} clips, {rep.items_added} items x 8 JPEG frames)"
        )
    cpu_ratio = statistics.median(m / f for f, _, m, _ in rows)
    wall_ratio = statistics.median(m / f for _, f, _, m in rows)
    load = os.getloadavg()[0]
    print(
        f"bare 1 fps decode, no JPEGs (old baseline): {bare_cpu:.2f} s CPU {bare_wall:.2f} s wall"
    )
    print(
        f"ratio mining / floor, median of {len(rows)} rounds: CPU {cpu_ratio:.2f}x, "
        f"wall {wall_ratio:.2f}x  (goal <= 1.3x); load average {load:.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    if not args.no_record:
        assert rep is not None
        what = f"{args.minutes:g} min 1080p {args.fps} fps, {rep.items_added} clips x 8 JPEGs"
        frames_total = int(args.minutes * 60 * args.fps)
        out_rows = scale_rows(rows, what, frames_total, (bare_cpu, bare_wall))
        print(f"wrote {record('mining', out_rows, NOTE)}")


NOTE = (
    "bench/mining.py; baseline: the fair floor, one sequential 1 fps grab/retrieve pass "
    "writing the same JPEGs; ratio: median of per-round ratios. Goal: <= 1.3x."
)


def scale_rows(
    rows: list[tuple[float, float, float, float]],
    what: str,
    frames: int,
    bare: tuple[float, float],
) -> list[dict[str, Any]]:
    """SCALE.md rows: mining vs the floor (CPU, wall) and the bare decode vs the floor."""
    med = statistics.median
    f_cpu, f_wall, m_cpu, m_wall = (med(r[i] for r in rows) for i in range(4))
    return [
        row(
            f"mining CPU ({what})",
            f"{m_cpu:.2f} s",
            f"{f_cpu:.2f} s floor",
            ratio=med(m / f for f, _, m, _ in rows),
            n=frames,
        ),
        row(
            f"mining wall ({what})",
            f"{m_wall:.2f} s",
            f"{f_wall:.2f} s floor",
            ratio=med(m / f for _, f, _, m in rows),
            n=frames,
        ),
        row(
            "bare 1 fps decode, no JPEGs (old baseline), CPU",
            f"{bare[0]:.2f} s",
            f"{f_cpu:.2f} s floor",
            ratio=bare[0] / max(f_cpu, 1e-9),
            n=frames,
        ),
    ]


if __name__ == "__main__":
    main()
