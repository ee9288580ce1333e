"""Camera and image-signal-processing (ISP) post effects as pure functions on arrays.

Renders come out of the worker as linear RGB (float32, [0, inf)); everything a camera does
after the lens lives here so one render yields several variants (raw, noisy, night vision,
shaken, defocused) without another Blender call. No function keeps state; randomness only
comes from the ``rng`` a caller passes, so a variant is reproducible from its seed.

The night-vision pipeline follows SynDORBench A.1.5 (gain control, colour normalisation,
denoising, CLAHE, tone mapping) with OpenCV's non-local means in place of BM3D (no
maintained BM3D wheel), as measured in shared/SCENES.md; a lighter NLM (``nlm_fast``) keeps
it within 3x the plain camera's cost (bench/night_vision.py).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np

__all__ = [
    "auto_gain",
    "auto_gain_factor",
    "camera_raw",
    "clahe_l",
    "defocus_psf",
    "denoise",
    "gray_world",
    "gray_world_gains",
    "night_vision",
    "read_exr",
    "sensor_noise",
    "shake_psf",
    "srgb_decode",
    "srgb_encode",
    "to_u8",
    "tone_curve",
    "white_balance",
]

ToneKind = Literal["s", "agx_like", "reinhard", "linear"]

# Rec. 709 / sRGB luminance weights (linear RGB).
_LUMA = np.array([0.2126, 0.7152, 0.0722], dtype=np.float32)


def _f32(img: np.ndarray) -> np.ndarray:
    return np.asarray(img, dtype=np.float32)


def sensor_noise(
    img_linear: np.ndarray,
    rng: np.random.Generator,
    *,
    full_well: float = 20000.0,
    read_noise_e: float = 3.0,
    bits: int = 12,
    gain: float = 1.0,
) -> np.ndarray:
    """Shot (Poisson) + read (Gaussian) noise, analogue gain and ADC quantisation.

    Linear 1.0 is a full well of electrons; ``gain`` amplifies signal and noise alike
    before the ADC, which clips to [0, 1] in ``2**bits`` levels. The result is linear RGB
    float32 in [0, 1], the digital numbers a sensor would read out.
    """
    x = np.clip(_f32(img_linear), 0.0, None)
    electrons = rng.poisson(x.astype(np.float64) * full_well).astype(np.float64)
    electrons += rng.normal(0.0, read_noise_e, size=x.shape)
    levels = float(2**bits - 1)
    dn = np.rint(np.clip(electrons / full_well * gain, 0.0, 1.0) * levels)
    return (dn / levels).astype(np.float32)


def white_balance(img: np.ndarray, gains: tuple[float, float, float] | np.ndarray) -> np.ndarray:
    """Per-channel gains on an RGB image (last axis)."""
    g = np.asarray(gains, dtype=np.float32).reshape(1, 1, 3)
    return _f32(img) * g


def gray_world_gains(img: np.ndarray) -> tuple[float, float, float]:
    """Buchsbaum's grey-world gains: scale each channel mean to the mean of the three."""
    means = _f32(img).reshape(-1, 3).mean(axis=0).astype(np.float64)
    if np.any(means <= 0):
        return (1.0, 1.0, 1.0)
    target = float(means.mean())
    return (target / means[0], target / means[1], target / means[2])


def gray_world(img: np.ndarray) -> np.ndarray:
    """Grey-world white balance (idempotent: balanced means stay balanced)."""
    return white_balance(img, gray_world_gains(img))


def auto_gain_factor(img: np.ndarray, percentile: float = 99.5, target: float = 0.85) -> float:
    """Gain that puts the ``percentile`` of luminance at ``target`` (1.0 for a black frame)."""
    lum = _f32(img) @ _LUMA if _f32(img).ndim == 3 else _f32(img)
    p = float(np.percentile(lum, percentile))
    return target / p if p > 0 else 1.0


def auto_gain(img: np.ndarray, percentile: float = 99.5, target: float = 0.85) -> np.ndarray:
    """Automatic gain control: linear scaling to a luminance percentile target."""
    return _f32(img) * np.float32(auto_gain_factor(img, percentile, target))


def srgb_encode(img_linear: np.ndarray) -> np.ndarray:
    """IEC 61966-2-1 transfer function, linear [0, 1] -> display [0, 1] (clipped)."""
    x = np.clip(_f32(img_linear), 0.0, 1.0)
    return np.where(x <= 0.0031308, 12.92 * x, 1.055 * np.power(x, 1 / 2.4) - 0.055).astype(
        np.float32
    )


def srgb_decode(img_srgb: np.ndarray) -> np.ndarray:
    """Inverse of :func:`srgb_encode`, display [0, 1] -> linear [0, 1]."""
    x = np.clip(_f32(img_srgb), 0.0, 1.0)
    return np.where(x <= 0.04045, x / 12.92, np.power((x + 0.055) / 1.055, 2.4)).astype(np.float32)


def to_u8(img01: np.ndarray) -> np.ndarray:
    """Display [0, 1] float -> uint8 with rounding."""
    return np.rint(np.clip(_f32(img01), 0.0, 1.0) * 255.0).astype(np.uint8)


DenoiseMethod = Literal["nlm_fast", "nlm"]
DENOISE_METHODS: dict[str, str] = {"nlm_fast": "opencv_nlm_fast", "nlm": "opencv_nlm"}
"""``method`` -> the name a frame's ISP parameters record."""


def denoise(
    img_srgb_u8: np.ndarray, strength: float = 10.0, method: DenoiseMethod | str = "nlm_fast"
) -> np.ndarray:
    """Non-local means on an sRGB uint8 image (``strength`` = h; 0 = unchanged).

    ``nlm`` is OpenCV's ``fastNlMeansDenoisingColored`` (7 px patches, 21 px search) as
    first shipped: its search window makes it ~8x the plain camera step in CPU. ``nlm_fast``
    (the default) splits the work as OpenCV does inside it (lightness and chroma of its Lab
    conversion, each denoised with h) and shrinks the search: lightness is denoised twice,
    at full resolution with a 7 px search and at half resolution with an 11 px one (the old
    reach), merged pixel by pixel; chroma is denoised at half resolution (5 px patches, 9 px
    search). bench/night_vision.py measures its cost and its PSNR/SSIM against ``nlm``.
    """
    img = np.ascontiguousarray(img_srgb_u8, dtype=np.uint8)
    if strength <= 0:
        return img.copy()
    h = float(strength)
    if method == "nlm":
        return cv2.fastNlMeansDenoisingColored(img, None, h, h, 7, 21)
    if method != "nlm_fast":
        raise ValueError(f"denoise: unknown method {method!r} (use nlm_fast or nlm)")
    # the colour conversion fastNlMeansDenoisingColored itself uses, so both methods agree
    # on what lightness is (it reads the bytes as linear BGR)
    lab = cv2.cvtColor(img, cv2.COLOR_LBGR2Lab)
    lum = np.ascontiguousarray(lab[..., 0])
    rows, cols = lum.shape
    half = (max(1, cols // 2), max(1, rows // 2))
    fine = cv2.fastNlMeansDenoising(lum, None, h, 7, 7).astype(np.float32)
    # the same 21 px reach as nlm, at a quarter of the pixels: where the two agree to within
    # the noise (flat ground, sky) take the coarse, smoother value; edges keep the fine one
    coarse = cv2.fastNlMeansDenoising(
        cv2.resize(lum, half, interpolation=cv2.INTER_AREA), None, h, 5, 11
    )
    d = cv2.resize(coarse, (cols, rows), interpolation=cv2.INTER_LINEAR).astype(np.float32) - fine
    tau = np.float32(0.4 * h)
    light = np.clip(np.rint(fine + d * np.exp(-((d / tau) ** 2))), 0, 255).astype(np.uint8)
    ab = cv2.resize(lab[..., 1:], half, interpolation=cv2.INTER_AREA)
    ab = cv2.fastNlMeansDenoising(np.ascontiguousarray(ab), None, h, 5, 9)
    ab = cv2.resize(ab, (cols, rows), interpolation=cv2.INTER_LINEAR)
    return cv2.cvtColor(cv2.merge([light, ab[..., 0], ab[..., 1]]), cv2.COLOR_Lab2LBGR)


def clahe_l(img_srgb_u8: np.ndarray, clip: float = 2.0, tiles: int = 8) -> np.ndarray:
    """CLAHE on the L* channel of CIE Lab only, so hue and chroma stay put."""
    img = np.ascontiguousarray(img_srgb_u8, dtype=np.uint8)
    lab = cv2.cvtColor(img, cv2.COLOR_RGB2LAB)
    clahe = cv2.createCLAHE(clipLimit=float(clip), tileGridSize=(int(tiles), int(tiles)))
    lab[..., 0] = clahe.apply(lab[..., 0])
    return cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)


def _tone(x: np.ndarray, kind: str, strength: float) -> np.ndarray:
    if kind == "linear":
        return x
    if kind == "s":
        # blend towards smoothstep: monotone for strength in [0, 1]
        s = x * x * (3.0 - 2.0 * x)
        return (1.0 - strength) * x + strength * s
    if kind == "reinhard":
        # Reinhard et al. 2002 global operator x/(1+x) on k-scaled input, rescaled so 1 -> 1
        k = 1.0 + 4.0 * strength
        return x * (1.0 + k) / (x * k + 1.0)
    if kind == "agx_like":
        # logistic in log2 exposure, normalised to map [0, 1] onto [0, 1]
        c = 4.0 + 8.0 * strength
        ev = np.log2(np.maximum(x, 1e-6))
        f = 1.0 / (1.0 + np.exp(-(ev + 2.47) * c / 6.0))
        lo = 1.0 / (1.0 + np.exp(-(np.log2(1e-6) + 2.47) * c / 6.0))
        hi = 1.0 / (1.0 + np.exp(-(2.47) * c / 6.0))
        return (f - lo) / (hi - lo)
    raise ValueError(f"tone_curve: unknown kind {kind!r} (use s, agx_like, reinhard, linear)")


def tone_curve(img: np.ndarray, kind: ToneKind | str = "s", strength: float = 0.5) -> np.ndarray:
    """A monotone global tone curve on display values; uint8 in -> uint8 out via a LUT."""
    if np.asarray(img).dtype == np.uint8:
        lut = to_u8(_tone(np.linspace(0.0, 1.0, 256, dtype=np.float64), kind, strength))
        return cv2.LUT(np.ascontiguousarray(img), lut)
    x = np.clip(_f32(img), 0.0, 1.0).astype(np.float64)
    return np.clip(_tone(x, kind, strength), 0.0, 1.0).astype(np.float32)


def _convolve(img: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    src = np.asarray(img)
    out = cv2.filter2D(
        src.astype(np.float32), -1, kernel.astype(np.float32), borderType=cv2.BORDER_CONSTANT
    )
    if src.dtype == np.uint8:
        return np.rint(np.clip(out, 0, 255)).astype(np.uint8)
    return out


def shake_kernel(length_px: float, angle_deg: float, oversample: int = 16) -> np.ndarray:
    """Linear motion-blur PSF of ``length_px`` at ``angle_deg`` (sums to 1, anti-aliased)."""
    if length_px <= 1.0:
        return np.ones((1, 1), dtype=np.float32)
    half = int(np.ceil(length_px / 2.0)) + 1
    size = 2 * half + 1
    k = np.zeros((size, size), dtype=np.float64)
    n = max(2, int(np.ceil(length_px * oversample)))
    t = np.linspace(-length_px / 2.0, length_px / 2.0, n)
    a = np.deg2rad(angle_deg)
    xs, ys = half + t * np.cos(a), half - t * np.sin(a)
    x0, y0 = np.floor(xs).astype(int), np.floor(ys).astype(int)
    fx, fy = xs - x0, ys - y0
    for dx, dy, w in (
        (0, 0, (1 - fx) * (1 - fy)),
        (1, 0, fx * (1 - fy)),
        (0, 1, (1 - fx) * fy),
        (1, 1, fx * fy),
    ):
        np.add.at(k, (y0 + dy, x0 + dx), w)
    return (k / k.sum()).astype(np.float32)


def defocus_kernel(radius_px: float, oversample: int = 8) -> np.ndarray:
    """Uniform disc PSF (thin-lens circle of confusion) with supersampled edges, sum 1."""
    if radius_px <= 0.5:
        return np.ones((1, 1), dtype=np.float32)
    half = int(np.ceil(radius_px)) + 1
    sub = (np.arange(oversample) + 0.5) / oversample - 0.5
    grid = np.arange(-half, half + 1, dtype=np.float64)
    xx = (grid[:, None] + sub[None, :]).ravel()
    inside = (xx[:, None] ** 2 + xx[None, :] ** 2) <= radius_px**2
    n = grid.size
    k = inside.reshape(n, oversample, n, oversample).mean(axis=(1, 3))
    return (k / k.sum()).astype(np.float32)


def shake_psf(img: np.ndarray, length_px: float, angle_deg: float = 0.0) -> np.ndarray:
    """Camera-shake blur by convolution with a line PSF (energy-preserving)."""
    return _convolve(img, shake_kernel(length_px, angle_deg))


def defocus_psf(img: np.ndarray, radius_px: float) -> np.ndarray:
    """Defocus blur by convolution with a disc PSF (energy-preserving)."""
    return _convolve(img, defocus_kernel(radius_px))


def camera_raw(
    img_linear: np.ndarray,
    rng: np.random.Generator | None = None,
    *,
    noise: bool = True,
    exposure: float = 1.0,
    full_well: float = 20000.0,
    read_noise_e: float = 3.0,
    bits: int = 12,
    gain: float = 1.0,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The un-enhanced camera output (SynDORBench's "night" variant): noise, sRGB, 8 bit.

    ``exposure`` scales the scene before the sensor (a longer shutter: more photons, so
    relatively less shot noise); ``gain`` is the analogue gain before the ADC."""
    x = _f32(img_linear) * np.float32(exposure)
    applied: dict[str, Any] = {"pipeline": "camera_raw", "noise": bool(noise), "exposure": exposure}
    if noise:
        if rng is None:
            raise ValueError("camera_raw: noise=True needs an rng")
        x = sensor_noise(
            x, rng, full_well=full_well, read_noise_e=read_noise_e, bits=bits, gain=gain
        )
        applied.update(full_well=full_well, read_noise_e=read_noise_e, bits=bits, gain=gain)
    return to_u8(srgb_encode(x)), applied


def night_vision(
    img_linear: np.ndarray,
    rng: np.random.Generator | None = None,
    *,
    noise: bool = True,
    exposure: float = 1.0,
    full_well: float = 20000.0,
    read_noise_e: float = 3.0,
    bits: int = 12,
    sensor_gain: float = 1.0,
    percentile: float = 99.5,
    target: float = 0.85,
    max_gain: float = 4096.0,
    denoise_strength: float = 10.0,
    denoise_method: DenoiseMethod | str = "nlm_fast",
    clahe_clip: float = 2.0,
    clahe_tiles: int = 8,
    tone: str = "s",
    tone_strength: float = 0.5,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Vendor-neutral night-vision ISP (SCENES.md; SynDORBench A.1.5).

    exposure -> sensor noise (analogue ``sensor_gain``) -> auto gain -> grey-world WB -> sRGB
    -> NLM denoise -> CLAHE on L* -> tone curve. Returns the uint8 sRGB image and every parameter actually applied
    (including the measured gain and WB gains) so a frame record can reproduce it.
    ``denoise_method`` ``nlm`` reproduces frames made before ``nlm_fast`` (see :func:`denoise`).
    """
    if denoise_method not in DENOISE_METHODS:
        raise ValueError(
            f"night_vision: unknown denoise_method {denoise_method!r} (use nlm_fast or nlm)"
        )
    x = _f32(img_linear) * np.float32(exposure)
    applied: dict[str, Any] = {
        "pipeline": "night_vision",
        "noise": bool(noise),
        "exposure": exposure,
    }
    if noise:
        if rng is None:
            raise ValueError("night_vision: noise=True needs an rng")
        # the sensor sees the dim scene: shot noise and ADC quantisation happen before any
        # digital gain, which is what makes night frames grainy once amplified
        x = sensor_noise(
            x, rng, full_well=full_well, read_noise_e=read_noise_e, bits=bits, gain=sensor_gain
        )
        applied.update(
            full_well=full_well, read_noise_e=read_noise_e, bits=bits, sensor_gain=sensor_gain
        )
    g = min(auto_gain_factor(x, percentile, target), max_gain)
    x = x * np.float32(g)
    wb = gray_world_gains(x)
    x = white_balance(x, wb)
    u8 = to_u8(srgb_encode(x))
    u8 = denoise(u8, denoise_strength, denoise_method)
    u8 = clahe_l(u8, clahe_clip, clahe_tiles)
    u8 = tone_curve(u8, tone, tone_strength)
    applied.update(
        auto_gain=float(g),
        percentile=percentile,
        target=target,
        wb_gains=[float(v) for v in wb],
        denoise=DENOISE_METHODS[denoise_method],
        denoise_strength=denoise_strength,
        clahe_clip=clahe_clip,
        clahe_tiles=clahe_tiles,
        tone=tone,
        tone_strength=tone_strength,
    )
    return u8, applied


# -- reading linear renders ------------------------------------------------------------------
_EXR_MAGIC = b"\x76\x2f\x31\x01"
_EXR_CODECS = {0: ("NONE", 1), 2: ("ZIPS", 1), 3: ("ZIP", 16)}
"""Compression id -> (name, scanlines per chunk): the codecs Blender's EXR writer uses for
the linear renders (``exr_codec`` ZIP; NONE and ZIPS for older or hand-made files)."""
_EXR_TYPES: dict[int, np.dtype[Any]] = {0: np.dtype("<u4"), 1: np.dtype("<f2"), 2: np.dtype("<f4")}


def _exr_header(buf: bytes) -> tuple[dict[str, tuple[str, bytes]], int]:
    if buf[:4] != _EXR_MAGIC:
        raise ValueError("not an OpenEXR file (bad magic number)")
    flags = struct.unpack_from("<I", buf, 4)[0]
    if flags & 0x200 or flags & 0x1000 or flags & 0x800:
        raise ValueError("tiled, multi-part or deep EXR: only single-part scanline files")
    attrs: dict[str, tuple[str, bytes]] = {}
    pos = 8
    while buf[pos] != 0:
        name_end = buf.index(b"\0", pos)
        type_end = buf.index(b"\0", name_end + 1)
        size = struct.unpack_from("<i", buf, type_end + 1)[0]
        start = type_end + 5
        attrs[buf[pos:name_end].decode()] = (
            buf[name_end + 1 : type_end].decode(),
            buf[start : start + size],
        )
        pos = start + size
    return attrs, pos + 1


def _exr_channels(raw: bytes) -> list[tuple[str, int]]:
    out, pos = [], 0
    while raw[pos] != 0:
        end = raw.index(b"\0", pos)
        ptype, _linear, xs, ys = struct.unpack_from("<iB3xii", raw, end + 1)
        if (xs, ys) != (1, 1):
            raise ValueError("subsampled EXR channels are not supported")
        out.append((raw[pos:end].decode(), ptype))
        pos = end + 17
    return out


def _unzip_exr(data: bytes, size: int) -> bytes:
    """Undo OpenEXR's ZIP filter: zlib, then the byte-delta predictor, then the split of even
    and odd bytes into two halves."""
    t = np.frombuffer(zlib.decompress(data), dtype=np.uint8)
    if t.size != size:
        raise ValueError(f"EXR chunk inflates to {t.size} bytes, expected {size}")
    t = np.cumsum(t.astype(np.int64) - 128, dtype=np.int64)
    t = ((t + 128) & 0xFF).astype(np.uint8)  # the predictor wraps mod 256; byte 0 is kept
    out = np.empty_like(t)
    half = (t.size + 1) // 2
    out[0::2], out[1::2] = t[:half], t[half:]
    return out.tobytes()


def read_exr(path: str | Path) -> np.ndarray:
    """A linear render from a single-part scanline OpenEXR file (NONE / ZIPS / ZIP, half or
    float channels) as float32 ``H x W x 3`` RGB in numpy alone, so reading never depends
    on whether an OpenCV wheel was built with OpenEXR (OpenCV 5 wheels are not). The values
    are the file's, bit for bit. Raises ValueError on anything else, naming what it found."""
    buf = Path(path).read_bytes()
    attrs, pos = _exr_header(buf)
    codec = attrs["compression"][1][0]
    if codec not in _EXR_CODECS:
        raise ValueError(f"EXR compression {codec} is not supported (NONE, ZIPS, ZIP are)")
    lines = _EXR_CODECS[codec][1]
    x0, y0, x1, y1 = struct.unpack("<4i", attrs["dataWindow"][1])
    w, h = x1 - x0 + 1, y1 - y0 + 1
    chans = _exr_channels(attrs["channels"][1])
    dts = [_EXR_TYPES[t] for _, t in chans]
    row_bytes = sum(dt.itemsize for dt in dts) * w
    n_chunks = -(-h // lines)
    offsets = np.frombuffer(buf, dtype="<u8", count=n_chunks, offset=pos)
    planes = {name: np.empty((h, w), np.float32) for name, _ in chans}
    for off in offsets.tolist():
        y, size = struct.unpack_from("<ii", buf, off)
        n = min(lines, y1 - y + 1)
        data = buf[off + 8 : off + 8 + size]
        if size < n * row_bytes:
            data = _unzip_exr(data, n * row_bytes)
        for r in range(n):
            at = r * row_bytes
            for (name, _), dt in zip(chans, dts, strict=True):
                planes[name][y - y0 + r] = np.frombuffer(data, dtype=dt, count=w, offset=at)
                at += dt.itemsize * w
    # Blender names the channels R, G, B (A); a layer prefix ("View Layer.Combined.R") is ignored
    by_suffix = {name.rsplit(".", 1)[-1]: img for name, img in planes.items()}
    missing = [c for c in "RGB" if c not in by_suffix]
    if missing:
        raise ValueError(f"EXR has no {', '.join(missing)} channel(s): {sorted(planes)}")
    return np.dstack([by_suffix[c] for c in "RGB"])
