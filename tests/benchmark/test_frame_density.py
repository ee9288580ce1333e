"""Frame-density ablation: clips re-sampled at k frames from their source videos (frames
whose colour encodes their index, so every decoded frame names itself), the cache, the
errors, and a run with one entry per density and the accuracy-by-frames table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from truthline.benchmark._frames import (
    clip_source,
    density_of,
    frame_density,
    frames_control,
    parse_densities,
    positions,
    resample,
    resample_items,
)
from truthline.benchmark._gold import GoldItem
from truthline.errors import TruthlineError
from truthline.store import tables

FPS = 10


def _colour(k: int) -> tuple[int, int, int]:
    """Frame ``k``'s BGR colour: index digits in base 16 on two channels, 16 levels apart."""
    return 16 * (k % 16) + 8, 16 * (k // 16) + 8, 128


def _index(img: np.ndarray) -> int:
    b, g, _ = img.reshape(-1, 3).mean(axis=0)
    return int(g // 16) * 16 + int(b // 16)


def write_video(path: Path, n_frames: int) -> Path:
    import cv2

    path.parent.mkdir(parents=True, exist_ok=True)
    w = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"mp4v"), FPS, (32, 32))
    for k in range(n_frames):
        w.write(np.full((32, 32, 3), _colour(k), dtype=np.uint8))
    w.release()
    return path


def _item(key: str, video: str, start: float, end: float, root: Path) -> GoldItem:
    return GoldItem(
        item_id=1,
        key=key,
        parent=video,
        meta={"video": video, "clip_start_s": start, "clip_end_s": end},
        arm=None,
        media=["stored/frame_0.jpg"],
        media_root=str(root),
        sim_truth=None,
    )


def _indices(paths: list[Path]) -> list[int]:
    import cv2

    return [_index(cv2.imread(str(p))) for p in paths]


def test_positions_generalise_the_mining_rule():
    assert positions(1) == (0.5,)
    assert positions(2) == (0.0, 1.0)
    # mining's 8 positions (0, 14, 28, 43, 57, 71, 86, 100 %) are i/7, rounded
    assert [round(p, 2) for p in positions(8)] == [0.0, 0.14, 0.29, 0.43, 0.57, 0.71, 0.86, 1.0]
    assert frames_control(15) == "frames:15" and density_of("frames:15") == 15
    assert density_of("no-image") is None and density_of("") is None
    assert parse_densities("1, 2,4,2") == [1, 2, 4]
    with pytest.raises(TruthlineError, match="positive integers"):
        parse_densities("1,x")


def test_resampled_frames_are_the_frames_at_the_declared_positions(tmp_path):
    videos = tmp_path / "videos"
    write_video(videos / "cam1" / "v1.mp4", 60)  # 6 s
    it = _item("mined/cam1/v1/t1.0-4.6", "cam1/v1", 1.0, 4.6, tmp_path / "media")
    src = clip_source(it, videos)
    assert src.video == videos / "cam1" / "v1.mp4"
    out = tmp_path / "out"
    # nearest frame of 1.0 + p * 3.6 s at 10 fps
    assert _indices(resample(src, 1, out)) == [28]
    assert _indices(resample(src, 2, out)) == [10, 46]
    assert _indices(resample(src, 15, out)) == [
        10, 13, 15, 18, 20, 23, 25, 28, 31, 33, 36, 38, 41, 43, 46,
    ]  # fmt: skip
    # more frames than the 8 mining stored, from the video itself
    assert len(list((out / "15f" / it.key).glob("frame_*.jpg"))) == 15


def test_clip_far_into_the_video_is_reached_by_seeking(tmp_path):
    videos = tmp_path / "videos"
    write_video(videos / "long.mp4", 150)  # 15 s
    it = _item("clip-late", "long", 9.0, 13.0, tmp_path)
    assert _indices(resample(clip_source(it, videos), 5, tmp_path / "out")) == [
        90, 100, 110, 120, 130,
    ]  # fmt: skip


def test_second_call_decodes_nothing(tmp_path, monkeypatch):
    import cv2

    videos = tmp_path / "videos"
    write_video(videos / "v1.mp4", 60)
    it = _item("clip-a", "v1", 0.5, 5.0, tmp_path / "media")
    first = resample_items([it], 4, videos, tmp_path / "cache")
    opened: list[str] = []
    real = cv2.VideoCapture

    def counting(*a, **kw):
        opened.append(str(a[0]))
        return real(*a, **kw)

    monkeypatch.setattr(cv2, "VideoCapture", counting)
    again = resample_items([it], 4, videos, tmp_path / "cache")
    assert opened == []  # every frame was on disk: no video opened
    assert again[0].media == first[0].media and len(first[0].media) == 4
    assert again[0].media_root == str(tmp_path / "cache")
    assert it.media == ["stored/frame_0.jpg"]  # the gold item itself is not changed
    # a missing file is re-decoded
    (tmp_path / "cache" / first[0].media[2]).unlink()
    resample_items([it], 4, videos, tmp_path / "cache")
    assert len(opened) == 1


def test_missing_or_short_video_is_a_clear_error(tmp_path):
    videos = tmp_path / "videos"
    write_video(videos / "short.mp4", 60)  # 6 s
    gone = _item("clip-gone", "cam9/nope", 0.0, 2.0, tmp_path)
    with pytest.raises(
        TruthlineError, match=r"item 'clip-gone'.*'cam9/nope' not found.*--video-root"
    ):
        clip_source(gone, videos)
    short = _item("clip-long", "short", 2.0, 9.0, tmp_path)
    with pytest.raises(
        TruthlineError, match=r"item 'clip-long'.*short\.mp4 has 60 frames.*shorter"
    ):
        resample(clip_source(short, videos), 4, tmp_path / "out")
    bare = GoldItem(1, "img-1", None, {}, None, ["a.png"], str(tmp_path), None)
    with pytest.raises(TruthlineError, match=r"item 'img-1': no source clip"):
        clip_source(bare, videos)


# -- a run ---------------------------------------------------------------------------------
def _clip_workspace(bench_ws, videos: Path):
    """The benchmark fixture's items made clips of SIMULATED source videos (one per video)."""
    ws, project, _items, _snap = bench_ws
    t = tables.items
    with ws.store.begin() as conn:
        rows = conn.execute(select(t.c.id, t.c.meta).where(t.c.project == project.name)).all()
        for k, (iid, meta) in enumerate(rows):
            start = 0.5 + 0.1 * (k % 5)
            meta = {**meta, "clip_start_s": start, "clip_end_s": start + 4.0}
            conn.execute(t.update().where(t.c.id == iid).values(meta=meta))
            if not (videos / f"{meta['video']}.mp4").exists():
                write_video(videos / f"{meta['video']}.mp4", 60)
    return ws, project


def test_run_has_one_entry_per_density_and_the_table(bench_ws, tmp_path, monkeypatch):
    from truthline.benchmark._report import write_report
    from truthline.cli import app

    videos = tmp_path / "videos"
    ws, project = _clip_workspace(bench_ws, videos)
    base = ["--workspace", str(ws.root), "benchmark", "run", "-m", "simulated:steel-strong"]
    cmd = [*base, "--frames", "1,2,8", "--video-root", str(videos), "--json"]
    runner = CliRunner()
    r = runner.invoke(app, cmd)
    assert r.exit_code == 0, r.output
    man = json.loads(r.stdout)
    rid = man["run_id"]
    controls = {e["control"]: e for e in man["entries"].values()}
    assert set(controls) == {"frames:1", "frames:2", "frames:8"}
    assert controls["frames:2"]["control_spec"]["frames"] == 2
    assert all(e["status_counts"] == {"parsed": 16} for e in controls.values())

    # every density's answers were asked with its own images: own cache keys, k images each
    rr, resp = tables.run_results, tables.responses
    with ws.store.begin() as conn:
        got = conn.execute(
            select(rr.c.control, resp.c.cache_key, resp.c.image_hashes)
            .join(resp, resp.c.id == rr.c.response_id)
            .where(rr.c.run_id == rid)
        ).all()
    by: dict[str, set[str]] = {}
    for control, key, hashes in got:
        assert len(hashes) == density_of(control)
        by.setdefault(control, set()).add(key)
    assert {c: len(v) for c, v in by.items()} == {"frames:1": 16, "frames:2": 16, "frames:8": 16}
    assert not (by["frames:1"] & by["frames:2"]) and not (by["frames:2"] & by["frames:8"])
    cache = ws.media_dir / project.name / "resampled"
    assert len(list((cache / "8f").rglob("frame_*.jpg"))) == 16 * 8

    # rerunning the command resumes: no video opened, no new answer
    import cv2

    opened: list[str] = []
    real = cv2.VideoCapture
    monkeypatch.setattr(cv2, "VideoCapture", lambda *a, **kw: opened.append(a[0]) or real(*a))
    r = runner.invoke(app, cmd)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["run_id"] == rid and opened == []
    with ws.store.begin() as conn:
        assert conn.execute(select(resp.c.id)).all().__len__() == 48

    # the table: one row per density, the native 8 frames the reference
    fd = frame_density(ws.store, project, rid, resamples=50)
    assert fd is not None and fd.native == 8
    assert [(r.model, r.frames, r.is_reference) for r in fd.rows] == [
        ("simulated:steel-strong", 1, False),
        ("simulated:steel-strong", 2, False),
        ("simulated:steel-strong", 8, True),
    ]
    ref = fd.rows[2]
    assert ref.change_pp is None and ref.reference is None
    for row in fd.rows[:2]:
        assert row.reference == ref.key and row.decisions == ref.decisions > 0
        # the change is the accuracy difference on the same decisions, in pp
        want = 100 * (row.accuracy["point"] - ref.accuracy["point"])
        assert row.change_pp["point"] == pytest.approx(want)
        assert row.change_pp["low"] <= row.change_pp["point"] <= row.change_pp["high"]
    assert fd.as_dict()["rows"][0]["reference"] == ref.key.id

    # in the report and in `benchmark show`
    out = tmp_path / "rep" / "report.md"
    write_report(ws.store, project, [rid], out, resamples=50)
    text = out.read_text()
    assert f"Accuracy by frames per clip ({rid})" in text
    assert "change from 8 frames" in text and "reference" in text
    rep = json.loads((tmp_path / "rep" / "report_files" / "report.json").read_text())
    assert [r["frames"] for r in rep["frame_density"][0]["rows"]] == [1, 2, 8]
    r = runner.invoke(
        app, ["--workspace", str(ws.root), "benchmark", "show", rid, "--resamples", "50"]
    )
    assert r.exit_code == 0, r.output
    assert "accuracy by frames per clip" in r.output


def test_plain_entry_is_the_reference_without_a_native_density(bench_ws, tmp_path):
    from truthline.benchmark import RunConfig, run_benchmark

    videos = tmp_path / "videos"
    ws, project = _clip_workspace(bench_ws, videos)
    spec = ["simulated:steel-strong"]
    rid = run_benchmark(ws.store, project, RunConfig(spec, run_id="fd"), progress=False)["run_id"]
    cfg = RunConfig(spec, run_id=rid, frames=4, video_root=videos, frames_dir=tmp_path / "c")
    run_benchmark(ws.store, project, cfg, progress=False)
    fd = frame_density(ws.store, project, rid, resamples=0)
    assert fd is not None
    assert [(r.density, r.is_reference) for r in fd.rows] == [("stored", True), ("4", False)]
    assert fd.rows[1].reference == fd.rows[0].key
    with pytest.raises(TruthlineError, match="no --control no-image"):
        run_benchmark(
            ws.store, project, RunConfig(spec, frames=2, control="no-image"), progress=False
        )
    # a run without --frames entries has no table
    plain = run_benchmark(ws.store, project, RunConfig(spec, run_id="plain"), progress=False)
    assert frame_density(ws.store, project, plain["run_id"]) is None


def test_mined_clips_resample_to_their_mined_frames(tmp_path):
    """On items mining stored: the video is found from the item's metadata below the mining
    folder, and at 8 frames each re-sampled frame at one of mining's frame indices is the
    very frame mining wrote (the positions agree up to mining's rounding to 1 %)."""
    import cv2

    from truthline.prefill import mine_videos
    from truthline.simulate._video import write_videos
    from truthline.workspace import Workspace

    raw = tmp_path / "raw" / "videos"
    vs = write_videos(raw, cameras=1, scenes_per_camera=2, size=(96, 64))
    ws = Workspace.from_env(tmp_path / "ws")
    project = ws.init_project("steel-safety")
    mine_videos(
        ws,
        project,
        raw,
        detector=f"scripted:{vs.detections}",
        metadata=vs.metadata,
        progress=False,
    )
    rows = ws.store.items(project.name)
    assert len(rows) == 2
    for row in rows:
        it = GoldItem(
            row["id"], row["key"], row["parent"], row["meta"], None, row["media"],
            row["media_root"], None,
        )  # fmt: skip
        src = clip_source(it, raw)
        assert src.video.parent == raw
        (got,) = resample_items([it], 8, raw, None)
        assert Path(got.media_root) == Path(row["media_root"]) / "resampled"
        fps = cv2.VideoCapture(str(src.video)).get(cv2.CAP_PROP_FPS)
        mine_idx = row["meta"]["frame_indices"]
        ours = [round(t * fps) for t in src.times(8)]
        same = [i for i in range(8) if ours[i] == mine_idx[i]]
        assert {0, 7} <= set(same)
        for i in same:
            a = cv2.imread(str(Path(row["media_root"]) / row["media"][i]))
            b = cv2.imread(str(Path(got.media_root) / got.media[i]))
            assert np.array_equal(a, b), (row["key"], i)
    ws.store.close()


def test_cache_names_stay_inside_the_cache_folder(tmp_path):
    from truthline.benchmark._frames import ClipSource, frame_paths

    out = tmp_path / "c"
    plain = frame_paths(ClipSource("mined/cam1/v1/t0001.0-0005.0", Path("v.mp4"), 1, 5), 2, out)
    assert plain[1] == out / "2f" / "mined/cam1/v1/t0001.0-0005.0" / "frame_01.jpg"
    odd = frame_paths(ClipSource("../../etc/a b", Path("v.mp4"), 1, 5), 1, out)[0]
    assert odd.resolve().is_relative_to(out.resolve()) and odd.parent.name.startswith("a_b-")
