"""Push's own client-side shortcuts give what the general helpers give (no server needed):
media URLs without quoting safe paths, the placed-boxes ``shown`` entry equal to ``asdict``'s,
and the exposure upsert that reads only the batch's items."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
from sqlalchemy import select

from truthline.annotate import _push
from truthline.annotate._media import item_prefix, media_rel, media_url
from truthline.annotate._push import _upsert_exposures, _Urls
from truthline.annotate._regions import BoxMatch, shown_entry
from truthline.store import now, tables
from truthline.workspace import Workspace


@pytest.mark.parametrize("base", ["http://127.0.0.1:8090", "http://127.0.0.1:8090/"])
def test_urls_match_media_url_for_safe_and_unsafe_names(tmp_path: Path, base: str) -> None:
    root = tmp_path / "served"
    (root / "clips a").mkdir(parents=True)
    (root / "plain").mkdir()
    names = ["f_0.jpg", "sub/x-y.~1.png", "a b.jpg", "ü.jpg", "100%.jpg", "q?#.jpg", "./n.jpg"]
    urls = _Urls(base, root)
    for folder in ("clips a", "plain"):
        item = {"id": 1, "key": "k", "media_root": str(root / folder), "media": names}
        prefix = item_prefix(root.resolve(), root / folder)
        assert prefix is not None
        want = [media_url(base, media_rel(prefix, m) or "") for m in names]
        assert urls(item) == want
    assert urls({"id": 1, "key": "k", "media_root": str(root / "plain"), "media": ["a.jpg"]}) == [
        base.rstrip("/") + "/plain/a.jpg"
    ]


def test_shown_entry_equals_regions_and_copies_the_box() -> None:
    box = {"x": 1.0, "y": 2.0, "width": 3.0, "height": 4.0}
    matches = [
        BoxMatch("workers", "P1", "vlm", 0.5),
        BoxMatch("workers", "P2", "detector", None, box),
        BoxMatch("workers", "P3", "none"),
    ]
    got = shown_entry(matches)
    assert got == {"kind": "placed_boxes", "matches": [asdict(m) for m in matches]}
    got["matches"][1]["box"]["x"] = 99.0
    assert box["x"] == 1.0


def _workspace(tmp_path: Path, n: int) -> tuple[Workspace, list[int]]:
    ws = Workspace.from_env(tmp_path / "ws")
    project = ws.init_project("steel-safety")
    ts = now()
    with ws.store.begin() as conn:
        conn.execute(
            tables.items.insert(),
            [
                {
                    "project": project.name,
                    "key": f"k{i}",
                    "media_kind": "image",
                    "media": [f"k{i}.jpg"],
                    "media_root": str(tmp_path),
                    "content_hash": f"{i:064d}",
                    "created_at": ts,
                    "updated_at": ts,
                }
                for i in range(n)
            ],
        )
        ids = [int(r.id) for r in conn.execute(select(tables.items.c.id))]
    return ws, sorted(ids)


def test_upsert_exposures_reads_per_chunk_and_skips_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_push, "IN_CHUNK", 2)  # several IN (...) reads for five items
    ws, ids = _workspace(tmp_path, 5)

    def exp(i: int, who: str) -> dict:
        return {"project": "steel-safety", "item_id": i, "annotator": who, "arm": "anchored"}

    e = tables.exposures
    with ws.store.begin() as conn:
        _upsert_exposures(conn, [exp(ids[0], "a@x.org"), exp(ids[3], "a@x.org")], now())
    batch = [exp(i, w) for i in ids for w in ("a@x.org", "b@x.org")]
    with ws.store.begin() as conn:
        _upsert_exposures(conn, batch + batch[:3], now())  # duplicates within a batch too
        rows = conn.execute(select(e.c.item_id, e.c.annotator)).all()
    assert sorted(rows) == sorted((i, w) for i in ids for w in ("a@x.org", "b@x.org"))
    with ws.store.begin() as conn:
        _upsert_exposures(conn, batch, now())
        assert len(conn.execute(select(e.c.id)).all()) == len(batch)


def test_media_url_quotes_exactly_as_quote_does() -> None:
    from urllib.parse import quote

    for rel in ["f_0.jpg", "sub/x-y.~1.png", "a b.jpg", "ü.jpg", "100%.jpg", "q?#.jpg", "./n.jpg"]:
        assert media_url("http://h:1/", rel) == "http://h:1/" + quote(rel)
