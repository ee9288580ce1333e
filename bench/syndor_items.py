"""SynDORBench post-processing throughput: night camera + night-vision ISP + features per
render, in one process vs fanned out over Ray with 1 and 2 workers (one Ray session, started
before the clock), and the ISP stages' share of a frame.

Frames are synthetic midnight renders (a figure on a textured ground, no Blender needed) at
the demo's 384x216 or --res. Every run writes the same items (checked by image hashes).

    .venv/bin/python bench/syndor_items.py [--renders 16] [--res 384x216] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from truthline.scenes import _isp
from truthline.systems.syndorbench import _syndor as sd


def renders(root: Path, n: int, w: int, h: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        img = np.clip(rng.normal(90, 12, (h, w, 3)), 0, 255).astype(np.uint8)
        fh = [h // 2, h // 4, h // 9][i % 3]
        x0, y0 = w // 2, h - h // 5 - fh
        mask = np.zeros((h, w), bool)
        mask[y0 : y0 + fh, x0 : x0 + max(2, fh // 3)] = True
        img[mask] = (170, 150, 140)
        Image.fromarray(img).save(root / f"{i}.png")
        Image.fromarray((mask * 255).astype(np.uint8)).convert("RGB").save(root / f"{i}-m.png")
        rows.append({"render": f"r{i}", "scene": "field", "pose": "walking",
                     "lighting": "midnight", "distance_m": [5.4, 10.8, 23.0][i % 3],
                     "dori": "x", "azimuth": 0, "elevation": 0, "present": True,
                     "rgb": str(root / f"{i}.png"), "mask": str(root / f"{i}-m.png")})  # fmt: skip
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--renders", type=int, default=16)
    ap.add_argument("--res", default="384x216")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    w, h = (int(v) for v in a.res.split("x"))
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        df = renders(root, a.renders, w, h)
        # stage costs on one frame
        lin = _isp.srgb_decode(np.asarray(Image.open(df.loc[0, "rgb"])) / 255.0) * 0.01
        rng = np.random.default_rng(0)
        for name, fn in (
            ("camera_raw", lambda: _isp.camera_raw(lin, rng)),
            ("night_vision", lambda: _isp.night_vision(lin, rng)),
        ):
            t0 = time.perf_counter()
            for _ in range(5):
                fn()
            print(f"{name:>14}: {1000 * (time.perf_counter() - t0) / 5:.1f} ms/frame at {a.res}")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            sd.make_items(df.iloc[:2], root / "warm", workers=2)  # ship the code once
            times: dict[str, list[float]] = {"in-process": [], "ray x1": [], "ray x2": []}
            hashes = set()
            for _ in range(a.repeat):
                for label, workers in (("in-process", 0), ("ray x1", 1), ("ray x2", 2)):
                    t0 = time.perf_counter()
                    if workers == 0:
                        items = sd.make_items(df, root / label)
                    else:
                        items = sd.make_items(df, root / label, workers=workers, use_ray=True)
                    times[label].append(time.perf_counter() - t0)
                    hashes.add(tuple(items["image_sha256"]))
            assert len(hashes) == 1, "the runs wrote different items"
        finally:
            ray.shutdown()
    base = statistics.median(times["in-process"])
    for label, ts in times.items():
        m = statistics.median(ts)
        print(
            f"{label:>10}: {a.renders / m:6.2f} renders/s  ({m:.2f} s, x{base / m:.2f} vs in-process)"
        )


if __name__ == "__main__":
    main()
