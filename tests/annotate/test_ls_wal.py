"""Label Studio's SQLite database runs in WAL mode (issue 27: 306 annotations in Label Studio
for 300 posted while pulls ran).

In SQLite's default rollback-journal mode a pull's export (a long read) blocks every write:
an annotation POST then waits 5 s and fails with "database is locked", and Label Studio's
``DatabaseIsLockedRetryMiddleware`` re-runs the whole request, so a POST whose annotation was
committed before a later write of the same request was locked out is stored twice and
answered 201 once. With WAL a reader never blocks the writer. The test holds a read
transaction open, as an export does, while an annotation is posted (in rollback-journal mode
the POST fails with HTTP 500 after ~11 s and stores nothing)."""

from __future__ import annotations

import contextlib
import sqlite3
import time

import pytest

from .conftest import LS

pytestmark = pytest.mark.labelstudio
CONFIG = (
    '<View><Text name="t" value="$text"/>'
    '<Choices name="c" toName="t"><Choice value="a"/></Choices></View>'
)


def test_a_long_read_blocks_no_annotation(ls: LS):
    db = ls.server.data_dir / "label_studio.sqlite3"
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    admin = ls.admin()
    pid = admin.post("/api/projects/", {"title": "wal check", "label_config": CONFIG})["id"]
    admin.post(f"/api/projects/{pid}/import", [{"text": "x"}])
    tid = admin.get("/api/tasks/", project=pid)["tasks"][0]["id"]
    result = [{"from_name": "c", "to_name": "t", "type": "choices", "value": {"choices": ["a"]}}]
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as reader:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM task").fetchone()  # a read transaction, held
        t0 = time.monotonic()
        admin.post(f"/api/tasks/{tid}/annotations/", {"result": result})
        took = time.monotonic() - t0
        reader.execute("ROLLBACK")
    assert took < 4, f"the annotation waited {took:.1f} s for a reader"
    assert len(admin.get(f"/api/tasks/{tid}/annotations/")) == 1
