"""Late clip frames held by the sampling pass while a run of detections is open.

Why: a clip's frames sit at fixed fractions of its span, and the span is known only when
the run ends. Frames for the late positions (>= ``hold_from`` of the span) lie near the
run's current end whatever that end turns out to be, so the sampling pass, which decodes
every frame anyway, retrieves the few that could be one of them and keeps them in memory;
when the run ends, those the clip uses are written as JPEG and extraction decodes the
clip only up to its last frame not held. At most ``cap`` frames are held: past that, the
lowest position is given up (it needs the most frames), so memory stays bounded on long
runs. Frames decoded before the detection batch that shows the run (``MineConfig.batch``)
cannot be held: extraction decodes those as before. Candidates are computed exactly as
``Clip.frame_indices`` computes a clip's frames, and a kept frame is the same decoded
frame, so the JPEGs are byte for byte those extraction would write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def clip_frame(start_s: float, end_s: float, p: float, fps: float) -> int:
    """The video frame at fraction ``p`` of a clip (``Clip.frame_indices``'s arithmetic)."""
    return round((start_s + p * (end_s - start_s)) * fps)


class TailHolder:
    """Frames at the late positions of the open run's possible clips, by frame index."""

    def __init__(
        self, positions: Sequence[float], hold_from: float, fps: float, sample_fps: float, cap: int
    ) -> None:
        self.positions = sorted({p for p in positions if p >= hold_from and 0.0 < p < 1.0})
        self.fps, self.sample_fps, self.cap = fps, sample_fps, cap
        self.held: dict[int, Any] = {}
        self.want: set[int] = set()
        self.active: list[float] = []
        self.start_s = 0.0
        self.k0 = 0
        self.length, self.limit = 1, 0  # as of the last update

    def open(self, start_s: float) -> None:
        """A run starts at sample time ``start_s`` (``k / sample_fps``)."""
        self.close()
        self.start_s, self.k0 = start_s, round(start_s * self.sample_fps)
        self.length, self.limit = 1, 0
        self.active = list(self.positions) if self.cap > 0 else []

    def close(self) -> None:
        """The run ended: nothing more is wanted or held."""
        self.held, self.want, self.active = {}, set(), []

    def wants(self, index: int) -> bool:
        return index in self.want

    def keep(self, index: int, frame: Any) -> None:
        self.held[index] = frame
        self.want.discard(index)
        if len(self.held) > self.cap:
            self._prune(index)

    def update(self, length: int, pos: int, horizon: int) -> None:
        """The open run has ``length`` samples; the decoder is at frame ``pos`` and gets at
        most ``horizon`` frames further before the next update."""
        self.length, self.limit = length, pos + horizon
        self._prune(pos)

    def _prune(self, pos: int) -> None:
        """Drop what no possible clip uses; over ``cap``, give up the lowest position."""
        while True:
            possible = self._possible(self.length, self.limit)
            self.held = {i: f for i, f in self.held.items() if i in possible}
            if len(self.held) <= self.cap or not self.active:
                break
            self.active.pop(0)
        self.want = {i for i in possible if i > pos and i not in self.held}

    def final(self, length: int) -> dict[int, Any]:
        """The held frames the clip of the run of ``length`` samples uses."""
        end_s = (self.k0 + length - 1) / self.sample_fps
        used = {clip_frame(self.start_s, end_s, p, self.fps) for p in self.active}
        return {i: f for i, f in self.held.items() if i in used}

    def _possible(self, length: int, limit: int) -> set[int]:
        """Frames up to ``limit`` at an active position of a clip ending at any sample from
        the run's current last one on (``Sample.t`` is ``k / sample_fps``)."""
        out: set[int] = set()
        for p in self.active:
            j = length - 1
            while True:
                i = clip_frame(self.start_s, (self.k0 + j) / self.sample_fps, p, self.fps)
                if i > limit:
                    break
                out.add(i)
                j += 1
        return out


class RunStills:
    """The open run's first and last sampled frames and its held late frames: once the run
    ends long enough to be a clip, those its clip uses are written (``write``) and listed
    on its last sample as ``stills`` (frame index -> JPEG), so extraction skips them."""

    def __init__(
        self, tails: TailHolder | None, min_frames: int, write: Callable[[int, Any], Path]
    ) -> None:
        self.tails, self.min_frames, self.write = tails, min_frames, write
        self.length = 0
        self.first: tuple[Any, Any] | None = None  # (sample, frame)
        self.last: tuple[Any, Any] | None = None

    def wants(self, index: int) -> bool:
        """Whether the decoded frame ``index`` should be retrieved and given to ``keep``."""
        return self.tails is not None and self.tails.wants(index)

    def keep(self, index: int, frame: Any) -> None:
        if self.tails is not None:
            self.tails.keep(index, frame)

    def positive(self, sample: Any, frame: Any) -> None:
        """A sample with a person extends (or starts) the run."""
        if not self.length:
            self.first = (sample, frame)
            if self.tails is not None:
                self.tails.open(sample.t)
        self.length += 1
        self.last = (sample, frame)

    def end(self) -> None:
        """The run ended (a sample without a person, or the video's end)."""
        if self.length >= self.min_frames and self.first and self.last:
            frames = {s.index: f for s, f in (self.first, self.last)}
            if self.tails is not None:
                frames |= self.tails.final(self.length)
            self.last[0].stills = {i: self.write(i, f) for i, f in sorted(frames.items())}
        self.length, self.first, self.last = 0, None, None
        if self.tails is not None:
            self.tails.close()

    def update(self, pos: int, horizon: int) -> None:
        """After a detection batch: what to hold until the next one (decoder at ``pos``)."""
        if self.length and self.tails is not None:
            self.tails.update(self.length, pos, horizon)
