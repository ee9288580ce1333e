"""Items import: idempotent, metadata errors name row and column, corrupt media skipped."""

from __future__ import annotations

import csv
from pathlib import Path

import cv2
import numpy as np
import pytest
from sqlalchemy import select

from truthline.errors import TruthlineError
from truthline.media import import_items
from truthline.project import validate_data
from truthline.store import tables


def _images(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        img = np.full((40, 60, 3), 20 * i, np.uint8)
        p = folder / f"img_{i}.png"
        cv2.imwrite(str(p), img)
        out.append(p)
    return out


@pytest.fixture
def image_project():
    return validate_data(
        {
            "name": "photos",
            "media": "image",
            "strata": ["site"],
            "cluster": "site",
            "fields": {"ok": {"type": "boolean"}},
        },
        "inline",
    )


def _write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def test_import_is_idempotent_and_updates_metadata(store, image_project, tmp_path):
    store.upsert_project(image_project)
    media = tmp_path / "media"
    _images(media / "a", 3)
    rows = [{"path": f"a/img_{i}.png", "site": "BF" if i < 2 else "CRM"} for i in range(3)]
    meta = _write_csv(tmp_path / "meta.csv", rows)
    first = import_items(store, image_project, media, metadata=meta, progress=False)
    assert (first.added, first.unchanged) == (3, 0)
    second = import_items(store, image_project, media, metadata=meta, progress=False)
    assert (second.added, second.updated, second.unchanged) == (0, 0, 3)
    items = store.items("photos")
    assert [i["key"] for i in items] == ["a/img_0", "a/img_1", "a/img_2"]
    assert items[2]["meta"] == {"site": "CRM"} and items[2]["parent"] == "CRM"
    rows[0]["site"] = "SP"
    third = import_items(
        store, image_project, media, metadata=_write_csv(tmp_path / "m2.csv", rows), progress=False
    )
    assert (third.added, third.updated) == (0, 1)
    assert len(store.items("photos")) == 3


def test_corrupt_media_is_skipped_with_reason_and_import_goes_on(store, image_project, tmp_path):
    store.upsert_project(image_project)
    media = tmp_path / "media"
    _images(media, 2)
    (media / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    rep = import_items(store, image_project, media, progress=False)
    assert rep.added == 2
    assert rep.skipped and rep.skipped[0][0] == "broken.jpg"
    assert "unreadable image" in rep.skipped[0][1]
    with store.begin() as conn:
        rows = conn.execute(select(tables.skipped_media)).all()
    assert [r.path for r in rows] == ["broken.jpg"]
    # repaired: the next import takes it and forgets the skip
    cv2.imwrite(str(media / "broken.jpg"), np.full((20, 20, 3), 128, np.uint8))
    again = import_items(store, image_project, media, progress=False)
    assert again.added == 1 and again.skipped == []
    with store.begin() as conn:
        assert conn.execute(select(tables.skipped_media)).all() == []


def test_metadata_errors_name_row_and_column_and_write_nothing(store, image_project, tmp_path):
    store.upsert_project(image_project)
    media = tmp_path / "media"
    _images(media, 2)
    bad = _write_csv(
        tmp_path / "bad.csv",
        [
            {"path": "img_0.png", "site": "BF"},
            {"path": "img_9.png", "site": "BF"},
            {"path": "img_1.png", "site": ""},
        ],
    )
    with pytest.raises(TruthlineError) as exc:
        import_items(store, image_project, media, metadata=bad, progress=False)
    msg = str(exc.value)
    assert "bad.csv: row 3, column 'path': no media item 'img_9.png'" in msg
    assert "bad.csv: row 4, column 'site': empty value for a declared stratum" in msg
    assert store.items("photos") == []


def test_missing_strata_column_is_named(store, image_project, tmp_path):
    store.upsert_project(image_project)
    media = tmp_path / "media"
    _images(media, 1)
    bad = _write_csv(tmp_path / "nosite.csv", [{"path": "img_0.png", "camera": "c1"}])
    with pytest.raises(TruthlineError, match=r"missing strata column.*site"):
        import_items(store, image_project, media, metadata=bad, progress=False)


def test_frames_project_groups_folders_and_corrupt_video(store, steel_project, tmp_path):
    from truthline.simulate import write_dataset

    store.upsert_project(steel_project)
    media = tmp_path / "clips"
    csv_path = write_dataset(media, n_clips=3)
    rep = import_items(store, steel_project, media, metadata=csv_path, progress=False)
    assert rep.added == 3
    items = store.items("steel-safety")
    assert all(len(i["media"]) == 8 for i in items)
    assert items[0]["sim_truth"]["worker_count"] >= 1
    assert items[0]["parent"] == items[0]["meta"]["video"]

    video_project = validate_data(
        {"name": "cams", "media": "video", "fields": {"x": {"type": "boolean"}}}, "inline"
    )
    store.upsert_project(video_project)
    vids = tmp_path / "vids"
    vids.mkdir()
    w = cv2.VideoWriter(str(vids / "ok.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), 5, (64, 48))
    for i in range(5):
        w.write(np.full((48, 64, 3), i * 40, np.uint8))
    w.release()
    (vids / "bad.mp4").write_bytes(b"\x00" * 2048)
    rep = import_items(store, video_project, vids, progress=False)
    assert rep.added == 1 and rep.skipped[0][0] == "bad.mp4"
