"""Frame-density ablation (seeds/001 App. E.3, Figure 11; METRICS.md §9 "Frame density").

Each clip is re-sampled at ``k`` frames from its SOURCE video, not by thinning the frames
mining stored, so ``k`` may exceed them (15 > 8). The rule generalises mining's 8 fixed
proportional positions (0, 14, ..., 100 % = i / 7): ``k`` frames at ``i / (k - 1)`` of the
clip, ``i = 0 .. k - 1``, and ``k = 1`` at 50 % (the centre frame). A position's frame is
the nearest video frame, ``round(t * fps)``, as mining picks it.

* The clip is read from the item's mining metadata: ``video`` (the video's path below the
  folder mining read, without its suffix), ``clip_start_s`` and ``clip_end_s``.
* Frames are written once as JPEG under ``<out>/<k>f/<item key>/frame_<i>.jpg``; a rerun
  whose files all exist opens no video (the cache; delete the folder after re-mining).
* A run entry at ``k`` frames is the input control ``frames:k`` (``frames_control``): it
  keys the stored results and the answer cache apart per density (the images differ too).
* ``frame_density``: accuracy per model and density (the action field's decisions when it
  has any, as the paper's Figure 11, with the project's cluster bootstrap), and the paired
  difference from the native density (``project.frames_per_item``, else 8): from its
  ``frames:native`` entry, else from the plain entry of the same run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from truthline.benchmark._gold import GoldItem
from truthline.benchmark._types import CI, EntryKey
from truthline.errors import TruthlineError
from truthline.media import VIDEO_EXTS

PREFIX = "frames:"
"""The input control of a re-sampled entry is ``frames:<k>``."""
DEFAULT_NATIVE = 8
"""The reference density when the project declares no ``frames_per_item`` (the paper's)."""
JPEG_QUALITY = 90
"""Mining's JPEG quality, so a re-sampled frame looks like a mined one."""
SEEK_GAP_S = 5.0
"""Seek (rather than decode forward) to a clip starting further into the video than this."""


def positions(k: int) -> tuple[float, ...]:
    """The ``k`` proportional positions in the clip: ``i / (k - 1)``; ``k = 1``: the centre."""
    if k < 1:
        raise TruthlineError(f"frames per clip must be at least 1, not {k}")
    if k == 1:
        return (0.5,)
    return tuple(i / (k - 1) for i in range(k))


def frames_control(k: int) -> str:
    """The input control naming a re-sampled entry: ``frames:4``."""
    return f"{PREFIX}{k}"


def density_of(control: str) -> int | None:
    """``k`` of a ``frames:k`` control; None for any other control."""
    m = re.fullmatch(rf"{PREFIX}(\d+)", control or "")
    return int(m.group(1)) if m else None


def parse_densities(text: str) -> list[int]:
    """``"1,2,4,8,15"`` -> ``[1, 2, 4, 8, 15]`` (each once, in the order given)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise TruthlineError(
                f"--frames {text!r}: give frames per clip as positive integers, e.g. 1,2,4,8,15"
            )
        if int(part) not in out:
            out.append(int(part))
    return out


# -- re-sampling ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ClipSource:
    """Where one item's clip lies: its source video and its span in seconds."""

    item: str
    video: Path
    start_s: float
    end_s: float

    def times(self, k: int) -> list[float]:
        """The ``k`` frame times (seconds into the video)."""
        return [self.start_s + p * (self.end_s - self.start_s) for p in positions(k)]


def clip_source(it: GoldItem, video_root: Path | None) -> ClipSource:
    """The item's clip from its mining metadata; the video is looked up below ``video_root``
    (any video suffix) unless the metadata names an existing absolute path."""
    meta = it.meta or {}
    video = str(meta.get("video") or it.parent or "")
    if not video or meta.get("clip_start_s") is None or meta.get("clip_end_s") is None:
        raise TruthlineError(
            f"item {it.key!r}: no source clip to re-sample (its metadata needs video, "
            "clip_start_s and clip_end_s, as mined clips have)"
        )
    start, end = float(meta["clip_start_s"]), float(meta["clip_end_s"])
    if end < start:
        raise TruthlineError(f"item {it.key!r}: clip_end_s {end} is before clip_start_s {start}")
    found = _find_video(video, video_root)
    if found is None:
        where = f" below {video_root}" if video_root else ""
        raise TruthlineError(
            f"item {it.key!r}: source video {video!r} not found{where} "
            "(give --video-root, the folder the clips were mined from)"
        )
    return ClipSource(it.key, found, start, end)


def _find_video(video: str, root: Path | None) -> Path | None:
    p = Path(video)
    if p.is_absolute():
        return p if p.is_file() else None
    if root is None:
        return None
    cands = [root / video] if p.suffix.lower() in VIDEO_EXTS else []
    cands += [root / f"{video}{ext}" for ext in sorted(VIDEO_EXTS)]
    cands += [root / f"{video}{ext.upper()}" for ext in sorted(VIDEO_EXTS)]
    return next((c for c in cands if c.is_file()), None)


def frame_paths(src: ClipSource, k: int, out: Path) -> list[Path]:
    """The deterministic JPEG names of a clip's ``k`` frames (the cache): the item key as
    folders, kept inside ``out`` (a key needing changes for that gets a hash suffix)."""
    parts = [p for p in src.item.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    safe = "/".join(re.sub(r"[^A-Za-z0-9._-]", "_", p) for p in parts) or "item"
    if safe != src.item:
        safe += "-" + hashlib.sha256(src.item.encode()).hexdigest()[:8]
    folder = out / f"{k}f" / safe
    return [folder / f"frame_{i:02d}.jpg" for i in range(k)]


def resample(src: ClipSource, k: int, out: Path) -> list[Path]:
    """The clip's ``k`` frames as JPEG files under ``out``; the video is opened only when
    some are missing."""
    paths = frame_paths(src, k, out)
    if all(p.is_file() for p in paths):
        return paths
    import cv2

    cap = cv2.VideoCapture(str(src.video))
    try:
        if not cap.isOpened():
            raise TruthlineError(f"item {src.item!r}: cannot open source video {src.video}")
        fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        if not fps or fps != fps or fps > 1000:
            raise TruthlineError(f"item {src.item!r}: {src.video} has no usable frame rate")
        indices = [round(t * fps) for t in src.times(k)]
        if count > 0 and max(indices) >= count:
            raise _too_short(src, count, fps)
        frames = _decode(cap, sorted(set(indices)), fps, src, count)
    finally:
        cap.release()
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    for fi, p in zip(indices, paths, strict=True):
        tmp = p.with_name(f".{p.stem}.part.jpg")  # renamed when whole: no torn cache file
        if not cv2.imwrite(str(tmp), frames[fi], [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY]):
            raise TruthlineError(f"{p}: a re-sampled frame could not be written as JPEG")
        tmp.replace(p)
    return paths


def _too_short(src: ClipSource, count: int, fps: float) -> TruthlineError:
    return TruthlineError(
        f"item {src.item!r}: source video {src.video} has {count} frames "
        f"({count / fps:.2f} s), shorter than the clip ({src.start_s:.2f}-{src.end_s:.2f} s)"
    )


def _decode(
    cap: Any, wanted: list[int], fps: float, src: ClipSource, count: int
) -> dict[int, np.ndarray]:
    """The frames at ``wanted`` (sorted indices): one seek near the clip, then forward
    ``grab()``s, ``retrieve()`` only where wanted (as mining samples)."""
    import cv2

    pos = 0
    if wanted[0] > SEEK_GAP_S * fps:
        cap.set(cv2.CAP_PROP_POS_FRAMES, wanted[0])
        pos = wanted[0]
    out: dict[int, np.ndarray] = {}
    for fi in wanted:
        while pos <= fi:
            if not cap.grab():
                raise _too_short(src, max(count, pos), fps)
            pos += 1
        ok, frame = cap.retrieve()
        if not ok or frame is None:
            raise TruthlineError(f"item {src.item!r}: frame {fi} of {src.video} does not decode")
        out[fi] = frame
    return out


def resample_items(
    items: Sequence[GoldItem], k: int, video_root: Path | None, out: Path | None
) -> list[GoldItem]:
    """The items with their media replaced by ``k`` re-sampled frames (relative to ``out``,
    default ``<the item's media root>/resampled``)."""
    done = []
    for it in items:
        root = Path(out) if out is not None else Path(it.media_root) / "resampled"
        paths = resample(clip_source(it, video_root), k, root)
        media = [p.relative_to(root).as_posix() for p in paths]
        done.append(dataclasses.replace(it, media=media, media_root=str(root)))
    return done


# -- the accuracy-by-frames table ----------------------------------------------------------
@dataclass(frozen=True)
class DensityRow:
    """One model (under one variant and condition) at one density: accuracy and the paired
    change from the native density on their common decisions (pp; None for the reference
    itself and where the run has no reference entry)."""

    key: EntryKey
    frames: int | None
    """``k``; None for the plain entry (the frames stored with the items)."""
    accuracy: CI | None
    decisions: int
    change_pp: CI | None
    reference: EntryKey | None
    """The entry ``change_pp`` is taken from (None: this row is it, or there is none)."""
    is_reference: bool
    simulated: bool

    @property
    def model(self) -> str:
        return self.key.model

    @property
    def density(self) -> str:
        """``"4"``, or ``"stored"`` for the plain entry."""
        return "stored" if self.frames is None else str(self.frames)

    @property
    def model_label(self) -> str:
        """The entry without its ``frames:k`` control (the density has its own column)."""
        key = self.key._replace(control="") if self.frames is not None else self.key
        return key.label(simulated=self.simulated)

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.key.as_dict(),
            "frames": self.frames,
            "accuracy": self.accuracy,
            "decisions": self.decisions,
            "change_pp": self.change_pp,
            "reference": self.reference.id if self.reference else None,
            "is_reference": self.is_reference,
            "simulated": self.simulated,
        }


@dataclass(frozen=True)
class FrameDensity:
    """``frame_density`` of one run: rows by model, then density."""

    run_id: str
    native: int
    field: str | None
    """The field whose decisions are scored (the action field), None: every target field."""
    rows: tuple[DensityRow, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "native": self.native,
            "field": self.field,
            "rows": [r.as_dict() for r in self.rows],
        }


def native_density(project: Any) -> int:
    """The density the project's clips are stored at (the reference)."""
    return int(project.frames_per_item or DEFAULT_NATIVE)


def frame_density(
    store: Any, project: Any, run_id: str, *, resamples: int | None = None
) -> FrameDensity | None:
    """Accuracy by frames per clip for the run's ``frames:k`` entries (None: it has none)."""
    from truthline.benchmark import _metrics as M
    from truthline.benchmark._results import attach_arms, load_run, scored_for

    run = load_run(store, run_id, project)
    entries = run.entries()
    if not any(density_of(e.control) is not None for e in entries):
        return None
    attach_arms(store, run)
    native = native_density(project)
    groups: dict[tuple[str, str, str], dict[int | None, EntryKey]] = {}
    for e in entries:
        k = density_of(e.control)
        if k is not None or not e.control:
            groups.setdefault((e.model, e.variant, e.condition), {})[k] = e
    rows: list[DensityRow] = []
    fields: set[str] = set()
    for g in groups.values():
        if all(k is None for k in g):
            continue  # a model without re-sampled entries is not part of the ablation
        views = {k: scored_for(run, project, e, resamples=resamples) for k, e in g.items()}
        dec = {k: v.primary_rows() for k, v in views.items()}
        fields |= {f for d in dec.values() if len(d) for f in d["field"].unique()}
        # the native density re-sampled, else the stored frames (the plain entry)
        ref_k: int | None = native if native in g else None
        has_ref = ref_k in g
        for k in sorted(g, key=lambda x: (x is not None, x or 0)):
            d, s = dec[k], views[k]
            acc = M.accuracy(d["correct"].astype(float), **s.boot_args(d)) if len(d) else None
            is_ref = has_ref and k == ref_k
            ref = g[ref_k] if has_ref and not is_ref else None
            rows.append(
                DensityRow(
                    key=g[k],
                    frames=k,
                    accuracy=acc.as_dict() if acc is not None else None,
                    decisions=len(d),
                    change_pp=_paired_pp(d, dec[ref_k], s) if ref is not None else None,
                    reference=ref,
                    is_reference=is_ref,
                    simulated=_simulated(run.manifest, g[k]),
                )
            )
    action = project.benchmark.action_field
    return FrameDensity(run_id, native, action if fields == {action} else None, tuple(rows))


def _paired_pp(a: Any, b: Any, s: Any) -> CI | None:
    """``a - b`` in pp on their common decisions (paired cluster bootstrap, ``s``'s design)."""
    from truthline.benchmark import _metrics as M

    da, db = a.set_index(["item_id", "path"]), b.set_index(["item_id", "path"])
    common = da.index.intersection(db.index)
    if not len(common):
        return None
    args = s.boot_args(da.loc[common].reset_index())
    res = M.paired_difference(
        100 * da.loc[common, "correct"].astype(float).to_numpy(),
        100 * db.loc[common, "correct"].astype(float).to_numpy(),
        **args,
    )
    return dict(res["difference"].as_dict())


def _simulated(manifest: dict[str, Any], key: EntryKey) -> bool:
    return bool(manifest.get("entries", {}).get(key.manifest_key, {}).get("simulated"))


def density_table(fd: FrameDensity) -> tuple[list[dict[str, Any]], list[int]]:
    """The rows as the report and ``benchmark show`` print them, and each row's n (its
    decisions)."""
    from truthline.stats import fmt_ci

    change = f"change from {fd.native} frames (pp) [95% CI]"
    rows = [
        {
            "model": r.model_label,
            "frames per clip": r.density,
            "accuracy [95% CI]": fmt_ci(r.accuracy),
            change: "reference" if r.is_reference else fmt_ci(r.change_pp, digits=1, sign=True),
        }
        for r in fd.rows
    ]
    return rows, [r.decisions for r in fd.rows]
