"""Pull refuses an annotation whose annotator id cannot be one (issue 27): a Label Studio
account whose email is longer than ``MAX_ANNOTATOR`` is reported with its project, task and
annotation and not stored; the other annotations of the same pull are."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from truthline._names import MAX_ANNOTATOR
from truthline.annotate import pull, values_to_results
from truthline.store import tables

from .conftest import LS
from .test_annotate_ls import _push, _rows

pytestmark = pytest.mark.labelstudio
VALS = {"scene_type": "yard", "worker_count": 1}


def test_pull_refuses_an_annotator_id_that_is_too_long(ls: LS, steel_ws, media_server):
    ws, project, _ = steel_ws
    blind = _push(ws, project, ls, media_server, "blind", split=0.5, seed=7)
    admin = ls.admin()
    long_email = "l" * 230 + "@example.com"
    user = admin.post("/api/users/", {"email": long_email, "username": "long-one"})
    assert user["email"] == long_email and len(long_email) > MAX_ANNOTATOR
    tasks = sorted(
        r["ls_task_id"]
        for r in _rows(ws, tables.ls_tasks)
        if r["ls_project_id"] == blind.ls_project_id
    )
    result = values_to_results(project, VALS)
    bad = admin.post(
        f"/api/tasks/{tasks[0]}/annotations/", {"result": result, "completed_by": user["id"]}
    )
    good = admin.post(f"/api/tasks/{tasks[1]}/annotations/", {"result": result})
    rep = pull(ws.store, project, admin, progress=False)
    assert [r["ls_annotation_id"] for r in rep.refused] == [bad["id"]]
    assert "242 characters long (at most 200)" in rep.refused[0]["reason"]
    line = [p for p in rep.problems if f"annotation {bad['id']}" in p]
    assert len(line) == 1 and f"task {tasks[0]}" in line[0] and "not stored" in line[0]
    with ws.store.begin() as conn:
        stored = {
            r.ls_annotation_id: r.annotator
            for r in conn.execute(
                select(tables.annotations.c.ls_annotation_id, tables.annotations.c.annotator)
            )
        }
    assert bad["id"] not in stored and good["id"] in stored
    assert all(len(who) <= MAX_ANNOTATOR for who in stored.values())
