"""Annotations deleted at the source (``deleted_at`` set, migration 2) are not ratings."""

from __future__ import annotations

from sqlalchemy import update

from tests.stats.test_cli_store import _seed_store
from truthline.stats._store import ratings_from_store
from truthline.store import now, tables
from truthline.workspace import Workspace


def test_deleted_annotations_are_excluded(tmp_path):
    ws = Workspace.from_env(tmp_path / "ws")
    _seed_store(ws)
    proj = ws.registered("steel-safety")
    before, _ = ratings_from_store(ws.store, proj, "workers.helmet")
    assert dict(zip(before.units, before.m.tolist(), strict=True))["clip2[P1]"] == 2
    a = tables.annotations
    with ws.store.begin() as conn:
        conn.execute(
            update(a)
            .where(a.c.source_id == "sim:clip2:ann2", a.c.field_path == "workers")
            .values(deleted_at=now())
        )
    r, _ = ratings_from_store(ws.store, proj, "workers.helmet")
    by_unit = dict(zip(r.units, r.m.tolist(), strict=True))
    assert by_unit == {"clip1[P1]": 2, "clip1[P2]": 2, "clip2[P1]": 1, "clip3[P7]": 2}
    clip2 = r.codes[r.units.index("clip2[P1]")]
    assert [r.values[c] for c in clip2 if c >= 0] == ["worn"]  # ann1's; ann2's was deleted
