"""Video mining on videos generated here (a figure entering and leaving, two cameras with
overlapping clocks) with a scripted detector: exact clips, frame positions, dedup groups,
sample counts; a corrupt video is reported and skipped."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from typer.testing import CliRunner

from truthline.cli import app
from truthline.prefill._mine import POSITIONS, stratified_sample

FPS = 5
W, H = 160, 96


def encode_index(img: np.ndarray, idx: int) -> None:
    """Write a frame index as three base-8 gray blocks (robust to compression)."""
    for b in range(3):
        digit = (idx // 8**b) % 8
        img[0:16, 16 * b : 16 * b + 16] = digit * 32 + 16


def decode_index(img: np.ndarray) -> int:
    out = 0
    for b in range(3):
        v = float(img[4:12, 16 * b + 4 : 16 * b + 12].mean())
        out += round((v - 16) / 32) * 8**b
    return out


def write_video(
    path: Path,
    seconds: int,
    present: list[tuple[float, float]],
    striped: tuple[float, float] | None = None,
) -> None:
    import cv2

    path.parent.mkdir(parents=True, exist_ok=True)
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (W, H))
    for i in range(seconds * FPS):
        t = i / FPS
        img = np.full((H, W, 3), 70, np.uint8)
        if striped and striped[0] <= t <= striped[1]:
            img[:, ::8] = 250
            img[::8, :] = 250
        for a, b in present:
            if a <= t <= b:  # the figure walks in from the left and out to the right
                x = int(20 + (W - 40) * (t - a) / max(b - a, 1e-6))
                cv2.rectangle(img, (x - 5, 40), (x + 5, 80), (40, 160, 220), -1)
        encode_index(img, i)
        vw.write(img)
    vw.release()


def make_videos(root: Path) -> tuple[Path, Path, Path]:
    vids = root / "videos"
    write_video(vids / "camA" / "a1.mp4", 90, [(5, 14), (30, 40), (70, 80)], striped=(35.5, 45))
    write_video(vids / "camB" / "b1.mp4", 40, [(0, 9), (20, 29)])
    (vids / "camB" / "broken.mp4").write_bytes(b"\x00\x01 this is not a video" * 100)
    script = {
        "a1.mp4": [
            [5, 14, 0.9],
            [20, 22, 0.9],
            [30, 34, 0.8],
            [35, 35, 0.2],
            [36, 40, 0.7],
            [50, 58, 0.25],
            [70, 80, 0.95],
        ],
        "b1": [[0, 9, 0.6], [20, 29, 0.6]],
    }
    det = root / "detections.json"
    det.write_text(json.dumps(script))
    meta = root / "videos.csv"
    meta.write_text("video,camera,start,site\na1.mp4,camA,0,BF\nb1.mp4,camB,30,CRM\n")
    return vids, det, meta


def test_mine_exact_clips_frames_and_dedup(steel_ws, tmp_path):
    import cv2

    vids, det, meta = make_videos(tmp_path)
    r = CliRunner().invoke(
        app,
        [
            "--workspace",
            str(steel_ws.root),
            "prefill",
            "mine",
            str(vids),
            "--detector",
            f"scripted:{det}",
            "--metadata",
            str(meta),
            "--keep",
            "2",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["videos"] == 3
    assert [s["path"].endswith("broken.mp4") for s in data["skipped"]] == [True]
    assert data["candidates"] == 6  # A: 5-14, 30-34, 36-40, 70-80; B: 0-9, 20-29
    clips = {(c["camera"], c["start_s"], c["end_s"]): c for c in data["clips"]}
    # camA window 1 (clips starting at 5, 30, 36 < 65) keeps 2: the first clip and the
    # striped one, which differs most from it; 30-34 looks like 5-14 and is dropped
    assert set(clips) == {
        ("camA", 5.0, 14.0),
        ("camA", 36.0, 40.0),
        ("camA", 70.0, 80.0),
        ("camB", 0.0, 9.0),
        ("camB", 20.0, 29.0),
    }
    assert data["after_dedup"] == 5 and data["items_added"] == 5
    groups = Counter(c["group"] for c in data["clips"])
    assert sorted(groups.values()) == [1, 2, 2]
    assert clips[("camA", 5.0, 14.0)]["group"] == clips[("camA", 36.0, 40.0)]["group"]
    # frames at 0/14/28/43/57/71/86/100 % of the clip, nearest video frame
    for (_, a, b), c in clips.items():
        assert c["frame_indices"] == [round(FPS * (a + p * (b - a))) for p in POSITIONS]
    items = {i["key"]: i for i in steel_ws.store.items("steel-safety")}
    mined = [i for k, i in items.items() if k.startswith("mined/")]
    assert len(mined) == 5
    for it in mined:
        assert it["media_kind"] == "frames" and len(it["media"]) == 8
        m = it["meta"]
        assert it["parent"] == m["video"] and m["camera"] in ("camA", "camB")
        assert m["site"] == ("BF" if m["camera"] == "camA" else "CRM")
        for rel, want in zip(it["media"], m["frame_indices"], strict=True):
            img = cv2.imread(str(Path(it["media_root"]) / rel))
            assert decode_index(img) == want
    # idempotent: mining again adds nothing
    r2 = CliRunner().invoke(
        app,
        [
            "--workspace",
            str(steel_ws.root),
            "prefill",
            "mine",
            str(vids),
            "--detector",
            f"scripted:{det}",
            "--metadata",
            str(meta),
            "--keep",
            "2",
            "--json",
        ],
    )
    d2 = json.loads(r2.output)
    assert d2["items_added"] == 0 and d2["items_existing"] == 5


def test_stratified_sample_minimum_per_class_then_proportional():
    rows = [
        SimpleNamespace(meta={"cls": c, "site": s})
        for c, n in (("a", 30), ("b", 6), ("c", 3))
        for s in ("X", "Y")
        for _ in range(n)
    ]
    got = stratified_sample(rows, 30, strata=["site"], class_column="cls", min_per_class=5, seed=1)
    assert len(got) == 30
    by_cls = Counter(r.meta["cls"] for r in got)
    assert by_cls["b"] >= 5 and by_cls["c"] == 5  # c has 6 rows, the minimum takes 5
    # the 15 left are spread over sites in proportion to what remains (largest remainder)
    assert sum(by_cls.values()) == 30
    assert (
        stratified_sample(rows, 30, strata=["site"], class_column="cls", min_per_class=5, seed=1)
        == got
    )
    assert stratified_sample(rows, 100, strata=["site"]) == rows
    few = stratified_sample(rows, 4, strata=[], class_column="cls", min_per_class=5, seed=0)
    assert len(few) == 4
