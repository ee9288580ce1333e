"""The public half of a release is a hub dataset: ``datasets.load_dataset`` reads typed
features and real train/test splits; annotators are pseudonyms; private/ is a sibling."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml
from sqlalchemy import update

from truthline.benchmark._export import export_release, load_release, verify_release
from truthline.benchmark._release import assign_splits, pseudonymizer
from truthline.store import tables

PEOPLE = ("alice.annotator@example.com", "bob-labels-77")


def _name_sources(ws, snap):
    """Gold values sourced from two named annotators (as finalize records them) and one
    active exclusion naming one of them."""
    from truthline.store import now

    with ws.store.begin() as conn:
        conn.execute(
            update(tables.gold)
            .where(tables.gold.c.snapshot == snap)
            .values(sources=[PEOPLE[0], PEOPLE[1], "simulated:steel-weak"])
        )
        conn.execute(
            tables.exclusions.insert().values(
                project="steel-safety",
                annotator=PEOPLE[1],
                reason=f"{PEOPLE[1]} rubber-stamps the VLM",
                decided_by="owner@example.com",
                active=True,
                decided_at=now(),
            )
        )


def _all_text(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_public_folder_loads_with_datasets_typed_and_split(bench_ws, tmp_path):
    ws, project, items, snap = bench_ws
    _name_sources(ws, snap)
    out = tmp_path / "release"
    rel = export_release(ws.store, project, out, fmt="parquet")
    public, private = out / "public", out / "private"
    # private/ is a sibling of the upload folder, never inside it
    assert private.is_dir() and not any(p.name == "private" for p in public.rglob("*"))
    assert not private.resolve().is_relative_to(public.resolve())

    ds = datasets.load_dataset(str(public))
    assert set(ds) == {"train", "test"}
    assert len(ds["train"]) + len(ds["test"]) == 16 and len(ds["test"]) >= 1
    feats = ds["train"].features
    assert isinstance(feats["image"], datasets.Image)
    ex = ds["test"][0]
    assert ex["image"].size == (8, 8)  # decoded to a PIL image
    assert feats["gold"]["worker_count"].dtype == "int64"
    worker = feats["gold"]["workers"].feature
    assert worker["safety_violation"].dtype == "bool" and worker["action"].dtype == "string"
    assert feats["simulated"].dtype == "bool" and ex["simulated"] is True
    assert feats["provenance"].feature["sources"].feature.dtype == "string"
    # the gold travels typed and equals the store's decisions
    truth = {iid: t for iid, t in items}
    with ws.store.begin() as conn:
        by_key = {r.key: r.id for r in conn.execute(tables.items.select()).all()}
    t = truth[by_key[ex["item"]]]
    assert ex["gold"]["worker_count"] == t["worker_count"]
    got = {w["worker_id"]: w for w in ex["gold"]["workers"]}
    for w in t["workers"]:
        assert got[w["worker_id"]]["helmet"] == w["helmet"]
        assert got[w["worker_id"]]["safety_violation"] is w["safety_violation"]
    # no string column anywhere holds JSON
    for split in ds.values():
        for row in split:
            stack = [row]
            while stack:
                v = stack.pop()
                if isinstance(v, dict):
                    stack.extend(v.values())
                elif isinstance(v, list):
                    stack.extend(v)
                elif isinstance(v, str) and v.strip()[:1] in ("{", "["):
                    with pytest.raises(ValueError):
                        json.loads(v)
    # the card declares the splits and features datasets read
    card = (public / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    assert [c["split"] for c in header["configs"][0]["data_files"]] == list(rel["splits"]["items"])
    yaml_feats = datasets.Features._from_yaml_list(header["dataset_info"]["features"])
    assert yaml_feats == feats
    for section in (
        "## Features",
        "## Splits",
        "## How to evaluate",
        "## Provenance",
        "## Licence",
    ):
        assert section in card
    assert "SIMULATED" in card and "blind_consensus" in card
    # annotators are pseudonyms in every public file and in the datasheet
    blob = _all_text(public) + (out / "DATASHEET.md").read_bytes()
    for person in PEOPLE:
        assert person.encode() not in blob
    alias = json.loads((private / "annotators.json").read_text())
    assert sorted(alias.values()) == sorted(PEOPLE)
    assert all(a.encode() in _all_text(public) for a in alias)
    assert "simulated:steel-weak" in str(ex["provenance"])  # model specs are not people
    assert (private / "pseudonym.key").stat().st_mode & 0o077 == 0
    # checksums: the public folder carries its own; the whole release verifies
    assert verify_release(public) == [] and verify_release(out) == []


def test_split_keeps_clusters_together_and_is_seeded(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    a = export_release(ws.store, project, tmp_path / "a", fmt="jsonl")
    b = export_release(ws.store, project, tmp_path / "b", fmt="jsonl")
    ents = [
        json.loads(line)
        for line in (tmp_path / "a" / "private" / "entities.jsonl").read_text().splitlines()
    ]
    split_of_cluster: dict[str, set[str]] = {}
    for e in ents:
        split_of_cluster.setdefault(e["cluster"], set()).add(e["split"])
    assert len(split_of_cluster) >= 2
    assert all(len(s) == 1 for s in split_of_cluster.values())
    assert a["splits"] == b["splits"]
    # the same test items both times
    ta = pq.read_table(tmp_path / "a/public/data/test-00000-of-00001.parquet").column("item")
    tb = pq.read_table(tmp_path / "b/public/data/test-00000-of-00001.parquet").column("item")
    assert ta.to_pylist() == tb.to_pylist()


def test_assign_splits_whole_clusters_and_seeded():
    clusters = {f"i{k}": f"v{k % 5}" for k in range(20)}
    s1 = assign_splits(clusters, 3, 0.2)
    assert s1 == assign_splits(clusters, 3, 0.2)
    for c in {f"v{k}" for k in range(5)}:
        assert len({s1[k] for k, v in clusters.items() if v == c}) == 1
    assert sum(v == "test" for v in s1.values()) == 4
    assert any(assign_splits(clusters, s, 0.2) != s1 for s in range(10))
    # one cluster only: everything stays in train
    assert set(assign_splits({"a": "x", "b": "x"}, 0, 0.5).values()) == {"train"}


def test_pseudonyms_are_stable_per_secret_and_differ_across_releases():
    p1, p2 = pseudonymizer(b"k1"), pseudonymizer(b"k2")
    assert p1("alice") == p1("alice") != p1("bob")
    assert p1("alice") != p2("alice") and "alice" not in p1("alice")


def test_reload_images_from_the_parquet(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    out = tmp_path / "release"
    export_release(ws.store, project, out, fmt="parquet")
    from truthline.store import Store

    st = Store(f"sqlite:///{tmp_path / 'r.db'}")
    got = load_release(out, st, workspace_projects=tmp_path / "projects")
    with st.begin() as conn:
        rows = conn.execute(tables.items.select()).all()
    assert len(rows) == got["items"] == 16
    for r in rows:
        f = Path(r.media_root) / r.media[0]
        assert f.is_file() and f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    st.close()


def test_several_frames_per_item_load_as_a_list_of_images(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    from PIL import Image

    with ws.store.begin() as conn:
        rows = conn.execute(tables.items.select()).all()
        for r in rows:
            second = f"{Path(r.media[0]).stem}_2.png"
            Image.new("RGB", (4, 6), (9, 9, 9)).save(Path(r.media_root) / second)
            conn.execute(
                tables.items.update()
                .where(tables.items.c.id == r.id)
                .values(media=[r.media[0], second])
            )
    out = tmp_path / "release"
    rel = export_release(ws.store, project, out, fmt="jsonl")
    assert rel["media_column"] == "frames"
    ds = datasets.load_dataset(str(out / "public"))
    frames = ds["train"][0]["frames"]
    assert [f.size for f in frames] == [(8, 8), (4, 6)]
    from truthline.store import Store

    st = Store(f"sqlite:///{tmp_path / 'r.db'}")
    load_release(out, st, media_dir=tmp_path / "cache")
    with st.begin() as conn:
        back = conn.execute(tables.items.select()).all()
    assert all(len(r.media) == 2 and (Path(r.media_root) / r.media[1]).is_file() for r in back)
    st.close()


def test_video_files_travel_beside_the_parquet_by_relative_path(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    video = project.model_copy(update={"media": "video"})
    video._source = project.source  # the copy keeps its definition folder
    out = tmp_path / "release"
    rel = export_release(ws.store, video, out, fmt="jsonl")
    assert rel["media_column"] == "video"
    ds = datasets.load_dataset(str(out / "public"))
    assert ds["train"].features["video"].feature.dtype == "string"
    for split in ds.values():
        for ex in split:
            assert all((out / "public" / p).is_file() for p in ex["video"])
    from truthline.store import Store

    st = Store(f"sqlite:///{tmp_path / 'r.db'}")
    load_release(out, st)
    with st.begin() as conn:
        back = conn.execute(tables.items.select()).all()
    assert all((Path(r.media_root) / r.media[0]).is_file() for r in back)
    st.close()
