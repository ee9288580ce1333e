"""Night-vision ISP cost against the plain camera step, and its quality against the old one.

The raw camera step (``_isp.camera_raw``: sensor noise, sRGB, 8 bit) is the baseline; the
night-vision step (``_isp.night_vision``) runs the same sensor model and then gain, white
balance, denoise, CLAHE and a tone curve. Its denoiser was OpenCV's colour NLM with a 21 px
search (``denoise_method="nlm"``, kept as the reference); the default is now ``nlm_fast``.
Per frame, in one process, alternating so load hits all alike:

- wall and CPU ms of raw, NV (nlm_fast) and NV (nlm, the reference), and NV / raw;
- PSNR and SSIM of the new output against the reference on the same frame and noise, beside
  the reference against itself on another noise draw (how much the old output moves between
  two exposures of the same scene: differences below that are not visible as a change of
  method), and both against the noise-free pipeline.

Frames are synthetic midnight scenes at the demo's 384x216 (ground texture, a sodium lamp's
pool, a figure, a sign; mean linear 7e-4 as SCENES.md measured), or the linear EXRs of a
frame store (``--store``, e.g. made by ``truthline scenes render dori --exr``).

    .venv/bin/python bench/night_vision.py [--frames 8] [--res 384x216] [--repeat 3] [--store DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from truthline.scenes import _isp
from truthline.scenes._iq import psnr, ssim

CAMERA = {"exposure": 4.0, "sensor_gain": 1.0}  # SynDORBench's night camera (_syndor.NIGHT_CAMERA)


def synthetic_night(seed: int, h: int, w: int, mean: float = 7e-4) -> np.ndarray:
    """A dim linear RGB scene with texture, edges and a bright lamp pool."""
    r = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    horizon = h * r.uniform(0.35, 0.55)
    sky = np.clip(1 - y / horizon, 0, 1)[..., None] * np.array([0.2, 0.25, 0.4], np.float32)
    tex = cv2.GaussianBlur(r.random((h, w)).astype(np.float32), (0, 0), 2.0)
    tex = (tex - tex.min()) / (np.ptp(tex) + 1e-6)
    ground = (y > horizon)[..., None] * (0.15 + 0.35 * tex[..., None])
    img = sky + ground * np.array([0.6, 0.55, 0.4], np.float32)
    lx, ly = r.uniform(0.2, 0.8) * w, r.uniform(0.6, 0.9) * h
    pool = np.exp(-(((x - lx) / (0.25 * w)) ** 2 + ((y - ly) / (0.12 * h)) ** 2))
    img = img * (0.3 + 2.5 * pool[..., None] * np.array([1.0, 0.75, 0.35], np.float32))
    fx, fh = r.uniform(0.3, 0.7) * w, r.uniform(0.15, 0.5) * h
    body = ((x - fx) / (fh * 0.14)) ** 2 + ((y - (ly - fh * 0.45)) / (fh * 0.4)) ** 2 < 1
    head = (x - fx) ** 2 + (y - (ly - fh * 0.95)) ** 2 < (fh * 0.08) ** 2
    fig = body | head
    img[fig] = np.array([0.55, 0.5, 0.45], np.float32) * (0.5 + pool[fig, None])
    sx, sy = int(r.uniform(0.05, 0.6) * w), int(r.uniform(0.5, 0.7) * h)
    img[sy : sy + h // 11, sx : sx + w // 6] = 0.8  # a sign with dark bars (text-like)
    for k in range(6):
        x0 = sx + w // 70 + k * w // 42
        img[sy + h // 40 : sy + h // 15, x0 : x0 + max(1, w // 100)] = 0.05
    img = img.astype(np.float32)
    return img / float(img.mean()) * np.float32(mean)


def store_frames(root: Path, n: int) -> list[np.ndarray]:
    """Linear renders from a frame store's records that kept their EXR."""
    from truthline.scenes._store import FrameStore

    st = FrameStore(root)
    out = [
        _isp.read_exr(st.variant_path(r, "linear")) for r in st.records() if "linear" in r.images
    ]
    if not out:
        sys.exit(f"{root}: no frame with a linear EXR (render with --exr)")
    return out[:n]


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--res", default="384x216")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--store", type=Path, help="read linear EXRs from this frame store")
    ap.add_argument("--threads", type=int, default=0, help="OpenCV threads (0 = its default)")
    a = ap.parse_args()
    if a.threads:
        cv2.setNumThreads(a.threads)
    w, h = (int(v) for v in a.res.lower().split("x"))
    frames = (
        store_frames(a.store, a.frames)
        if a.store
        else [synthetic_night(i, h, w) for i in range(a.frames)]
    )
    src = f"{a.store} (EXR)" if a.store else "synthetic midnight"
    print(f"{len(frames)} frames {frames[0].shape[1]}x{frames[0].shape[0]} ({src}), "
          f"{os.cpu_count()} cores, OpenCV {cv2.__version__} threads {cv2.getNumThreads()}")  # fmt: skip

    def raw(f: np.ndarray, s: int) -> np.ndarray:
        rng = np.random.default_rng(s)
        return _isp.camera_raw(f, rng, exposure=CAMERA["exposure"], gain=CAMERA["sensor_gain"])[0]

    def nv(f: np.ndarray, s: int, method: str) -> np.ndarray:
        return _isp.night_vision(f, np.random.default_rng(s), denoise_method=method, **CAMERA)[0]

    steps = {
        "raw": lambda f, s: raw(f, s),
        "nv_fast": lambda f, s: nv(f, s, "nlm_fast"),
        "nv_nlm": lambda f, s: nv(f, s, "nlm"),
    }
    wall: dict[str, list[float]] = {k: [] for k in steps}
    cpu: dict[str, list[float]] = {k: [] for k in steps}
    for i, f in enumerate(frames):
        for fn in steps.values():
            fn(f, i)  # warm caches and OpenCV's thread pool
        for _ in range(a.repeat):
            for k, fn in steps.items():
                tw, tc = _timed(lambda fn=fn, f=f, i=i: fn(f, i))  # type: ignore[misc]
                wall[k].append(tw)
                cpu[k].append(tc)
    load = os.getloadavg()[0]
    med = statistics.median
    print(
        f"\nper frame, median of {a.repeat} alternating runs x {len(frames)} frames (load {load:.1f})"
    )
    print(f"{'step':<26}{'wall ms':>9}{'CPU ms':>9}{'wall/raw':>10}{'CPU/raw':>9}")
    names = {"raw": "camera raw (baseline)", "nv_fast": "night vision, nlm_fast",
             "nv_nlm": "night vision, nlm (old)"}  # fmt: skip
    for k in steps:
        print(f"{names[k]:<26}{med(wall[k]):9.1f}{med(cpu[k]):9.1f}"
              f"{med(wall[k]) / med(wall['raw']):9.2f}x{med(cpu[k]) / med(cpu['raw']):8.2f}x")  # fmt: skip

    q: dict[str, list[float]] = {k: [] for k in ("p_new", "s_new", "p_self", "s_self",
                                                 "p_new_clean", "s_new_clean", "p_old_clean", "s_old_clean")}  # fmt: skip
    for i, f in enumerate(frames):
        old, new, old2 = nv(f, i, "nlm"), nv(f, i, "nlm_fast"), nv(f, 10_000 + i, "nlm")
        clean = _isp.night_vision(f, None, noise=False, denoise_strength=0.0, **CAMERA)[0]
        for key, x, y in (("new", new, old), ("self", old2, old), ("new_clean", new, clean),
                          ("old_clean", old, clean)):  # fmt: skip
            q[f"p_{key}"].append(psnr(x, y))
            q[f"s_{key}"].append(ssim(x, y))
    mean = statistics.fmean
    print("\nquality (mean over frames; SSIM on luma, 11x11 Gaussian window sigma 1.5)")
    print(f"{'comparison':<48}{'PSNR dB':>9}{'SSIM':>8}{'min SSIM':>10}")
    rows = (
        ("nlm_fast vs nlm, same frame and noise", "new"),
        ("nlm vs nlm, another noise draw (yardstick)", "self"),
        ("nlm_fast vs the noise-free pipeline", "new_clean"),
        ("nlm vs the noise-free pipeline", "old_clean"),
    )
    for label, key in rows:
        print(
            f"{label:<48}{mean(q[f'p_{key}']):9.2f}{mean(q[f's_{key}']):8.4f}{min(q[f's_{key}']):10.4f}"
        )

    try:  # bench/_scale.py rewrites this script's section of bench/SCALE.md
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _scale import record, row  # type: ignore[import-not-found]
    except ImportError:
        return
    what = "Cycles EXR frames" if a.store else "synthetic frames"
    nf, wr, cr = med(wall["nv_fast"]), med(wall["raw"]), med(cpu["raw"])
    record(
        f"night vision {frames[0].shape[1]}x{frames[0].shape[0]} {what}",
        [
            row(
                "NV step nlm_fast, wall ms/frame",
                f"{nf:.1f}",
                f"raw {wr:.1f}",
                ratio=nf / wr,
                n=len(frames),
            ),
            row(
                "NV step nlm_fast, CPU ms/frame",
                f"{med(cpu['nv_fast']):.1f}",
                f"raw {cr:.1f}",
                ratio=med(cpu["nv_fast"]) / cr,
                n=len(frames),
            ),
            row(
                "NV step nlm (old), wall ms/frame",
                f"{med(wall['nv_nlm']):.1f}",
                f"raw {wr:.1f}",
                ratio=med(wall["nv_nlm"]) / wr,
                n=len(frames),
            ),
            row(
                "nlm_fast vs nlm: PSNR dB / SSIM",
                f"{mean(q['p_new']):.2f} / {mean(q['s_new']):.4f}",
                f"nlm vs nlm, other noise: {mean(q['p_self']):.2f} / {mean(q['s_self']):.4f}",
                n=len(frames),
            ),
        ],
        note="Old = OpenCV colour NLM, 21 px search (denoise_method='nlm'); the "
        "yardstick is the old output against itself under another noise draw.",
    )


if __name__ == "__main__":
    main()
