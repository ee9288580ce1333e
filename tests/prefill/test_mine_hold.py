"""The sampling pass keeps a clip's first, last and late frames (``_mine_hold``): the frames
it keeps are exactly the clip's, memory stays under the cap, and the mined JPEGs are the
bytes that decoding them again gives."""

from __future__ import annotations

import json
from pathlib import Path

from truthline.models import get_backend
from truthline.prefill._mine import (
    POSITIONS,
    MineConfig,
    VideoInfo,
    extract_frames,
    find_clips,
    sample_video,
)
from truthline.prefill._mine_hold import TailHolder, clip_frame

from .test_prefill_mine import FPS, write_video


def _run_holder(cap: int, length: int, fps: int = 10, start_s: float = 5.0) -> tuple:
    """Decode a run of ``length`` 1 fps samples from ``start_s``, updating after each sample
    (no detection lag); the holder's final frames and the most it ever held."""
    h = TailHolder(POSITIONS, 0.5, fps, 1.0, cap)
    h.open(start_s)
    first, most = round(start_s * fps), 0
    for idx in range(first, first + (length - 1) * fps + 1):
        if h.wants(idx):
            h.keep(idx, f"frame {idx}")
        most = max(most, len(h.held))
        if (idx - first) % fps == 0:
            h.update((idx - first) // fps + 1, idx, fps + 2)
    return h.final(length), most


def test_holder_keeps_exactly_the_late_frames_of_the_clip():
    final, most = _run_holder(cap=24, length=12)
    end_s = 5.0 + 11
    want = {clip_frame(5.0, end_s, p, 10) for p in (0.57, 0.71, 0.86)}
    assert set(final) == want and all(f == f"frame {i}" for i, f in final.items())
    assert most <= 24


def test_holder_under_a_small_cap_gives_up_the_lowest_positions_first():
    late = (0.57, 0.71, 0.86)
    end_s = 5.0 + 29
    for cap in (1, 4, 8, 16):
        final, most = _run_holder(cap=cap, length=30)
        assert most <= cap
        # what is left is the clip's frames at the highest positions, none skipped between
        tops = [{clip_frame(5.0, end_s, p, 10) for p in late[k:]} for k in range(4)]
        assert set(final) in tops
    assert _run_holder(cap=1, length=30)[0] == {}
    # a 30 s run could end at 0.71 of ~13 frames and at 0.86 of ~6 already passed: over 16
    assert set(_run_holder(cap=16, length=30)[0]) == {clip_frame(5.0, end_s, 0.86, 10)}


def test_kept_frames_are_the_clips_and_the_jpegs_match_a_fresh_decode(tmp_path):
    video = tmp_path / "v" / "a.mp4"
    write_video(video, 40, [(5, 20)])
    det = tmp_path / "det.json"
    det.write_text(json.dumps({"a.mp4": [[5, 20, 0.9]]}))
    info = VideoInfo(path=video, video_id="a", camera="c")
    cfg = MineConfig(batch=1, hold_frames=24)
    stills = tmp_path / "stills"
    stills.mkdir()
    fps, n, samples = sample_video(info, get_backend(f"scripted:{det}"), cfg, stills=stills)
    [clip] = find_clips(info, fps, n, samples, cfg)
    idx = clip.frame_indices(cfg.positions)
    assert (clip.start_s, clip.end_s) == (5.0, 20.0) and fps == FPS
    # first, late (>= 0.5) and last frames kept; the early ones left to extraction
    assert set(clip.stills) == {idx[i] for i, p in enumerate(POSITIONS) if p == 0 or p >= 0.5}
    kept = extract_frames([clip], lambda c: tmp_path / "kept", cfg)[0]
    clip.stills = {}
    fresh = extract_frames([clip], lambda c: tmp_path / "fresh", cfg)[0]
    assert [Path(p).read_bytes() for p in kept] == [Path(p).read_bytes() for p in fresh]
