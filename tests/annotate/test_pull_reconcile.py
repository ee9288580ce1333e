"""Pull against a real Label Studio when others change things behind truthline's back
(issue 12): annotations deleted in Label Studio are marked ``deleted_at`` (kept, counted,
cleared if they come back); tasks imported by hand are skipped and listed; a deleted
project is one warning line and the other projects are still pulled."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select, update
from typer.testing import CliRunner

from truthline.annotate import add_users, pull, submit_annotation, user_client, values_to_results
from truthline.annotate._users import USERS_FILE
from truthline.cli import app
from truthline.store import tables

from .conftest import LS
from .test_annotate_ls import _push, _rows

pytestmark = pytest.mark.labelstudio


def _by_annotation(ws) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in _rows(ws, tables.annotations):
        out.setdefault(r["ls_annotation_id"], []).append(r)
    return out


def test_pull_reconciles_deletions_foreign_tasks_and_deleted_projects(
    ls: LS, steel_ws, media_server, monkeypatch
):
    ws, project, _preds = steel_ws
    people = ["dora@example.com", "eli@example.com"]
    blind = _push(ws, project, ls, media_server, "blind", annotators=people, split=0.5, seed=3)
    anch = _push(ws, project, ls, media_server, "anchored", annotators=people, split=0.5, seed=3)
    admin = ls.admin()
    secrets = ws.secrets_dir / USERS_FILE
    add_users(admin, people, secrets)
    dora, eli = (user_client(ls.url, e, secrets) for e in people)
    tasks = {
        (r["ls_project_id"], r["item_id"]): r["ls_task_id"] for r in _rows(ws, tables.ls_tasks)
    }
    blind_tasks = sorted(t for (p, _), t in tasks.items() if p == blind.ls_project_id)
    anch_tasks = sorted(t for (p, _), t in tasks.items() if p == anch.ls_project_id)
    vals = {"scene_type": "yard", "worker_count": 1}
    a1 = submit_annotation(dora, project, blind_tasks[0], vals, 5.0)
    a2 = submit_annotation(dora, project, blind_tasks[1], vals, 6.0)
    a3 = submit_annotation(eli, project, blind_tasks[0], vals, 7.0)
    a4 = submit_annotation(eli, project, anch_tasks[0], vals, 8.0)
    rep = pull(ws.store, project, admin, progress=False)
    assert (rep.new, rep.deleted, rep.foreign_tasks, rep.missing_projects) == (4, 0, [], [])
    nfields = len(project.field_types)

    # Community (README "What any Label Studio Community account can do"): an annotator reads
    # the anchored arm's prediction and other annotators' work, and may delete it — eli
    # deletes dora's annotation
    assert eli.get(f"/api/tasks/{anch_tasks[0]}")["predictions"]
    assert {a["id"] for a in eli.get(f"/api/tasks/{blind_tasks[0]}/annotations/")} == {
        a1["id"],
        a3["id"],
    }
    eli.delete(f"/api/annotations/{a1['id']}/")
    rep = pull(ws.store, project, admin, progress=False)
    assert rep.deleted == 1 and rep.new == 0 and rep.unchanged == 3
    assert {p["ls_project_id"]: p["deleted"] for p in rep.projects} == {
        blind.ls_project_id: 1,
        anch.ls_project_id: 0,
    }
    rows = _by_annotation(ws)
    assert len(rows[a1["id"]]) == nfields  # kept as history
    stamps = {r["deleted_at"] for r in rows[a1["id"]]}
    assert len(stamps) == 1 and None not in stamps  # every field row, one time
    for other in (a2, a3, a4):
        assert all(r["deleted_at"] is None for r in rows[other["id"]])
    # pulling again changes nothing: still deleted, same time, not counted again
    before = _rows(ws, tables.annotations)
    rep = pull(ws.store, project, admin, progress=False)
    assert rep.deleted == 0 and rep.restored == 0 and _rows(ws, tables.annotations) == before

    # an annotation marked deleted that is in Label Studio again (e.g. its database restored)
    with ws.store.begin() as conn:
        conn.execute(
            update(tables.annotations)
            .where(tables.annotations.c.ls_annotation_id == a2["id"])
            .values(deleted_at=before[0]["annotated_at"])
        )
    rep = pull(ws.store, project, admin, progress=False)
    assert rep.restored == 1 and rep.deleted == 0
    assert all(r["deleted_at"] is None for r in _by_annotation(ws)[a2["id"]])

    # tasks imported into our project by hand: unknown, non-numeric and missing item ids
    data = admin.get(f"/api/tasks/{blind_tasks[0]}")["data"]
    foreign = [data | {"item_id": 999_999}, data | {"item_id": "abc"}]
    foreign.append({k: v for k, v in data.items() if k != "item_id"})
    made = admin.post(f"/api/projects/{blind.ls_project_id}/import", foreign)
    assert made["task_count"] == 3
    again = _push(ws, project, ls, media_server, "blind", annotators=people)  # no traceback
    assert again.created == 0 and again.recovered == 0
    ids = sorted(
        t
        for t in admin.tasks_by_item(blind.ls_project_id).values()
        if t not in blind_tasks  # tasks_by_item skips the one without an item id
    )
    all_ids = [
        t["id"]
        for t in admin.get("/api/tasks/", project=blind.ls_project_id, page_size=100)["tasks"]
    ]
    foreign_ids = sorted(set(all_ids) - set(blind_tasks))
    assert len(foreign_ids) == 3 and set(ids) <= set(foreign_ids)
    admin.post(
        f"/api/tasks/{foreign_ids[0]}/annotations/",
        {"result": values_to_results(project, vals), "lead_time": 1.0},
    )
    n_rows = len(_rows(ws, tables.annotations))
    rep = pull(ws.store, project, admin, progress=False)
    assert sorted(t["ls_task_id"] for t in rep.foreign_tasks) == foreign_ids
    assert {str(t["item_id"]) for t in rep.foreign_tasks} == {"999999", "abc", "None"}
    assert rep.new == 0 and rep.deleted == 0 and len(_rows(ws, tables.annotations)) == n_rows

    # the anchored project deleted in Label Studio — by an annotator: Community has no roles —
    # is one warning; the blind one is still pulled
    eli.delete(f"/api/projects/{anch.ls_project_id}/")
    a5 = submit_annotation(eli, project, blind_tasks[2], vals, 9.0)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls.creds.token)
    res = CliRunner().invoke(
        app, ["-w", str(ws.root), "annotate", "pull", "--url", ls.url, "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["new"] == 1 and out["deleted"] == 0
    assert out["missing_projects"] == [
        {"ls_project_id": anch.ls_project_id, "arm": "anchored", "title": anch.title}
    ]
    assert len(out["foreign_tasks"]) == 3
    warning = [p for p in out["problems"] if str(anch.ls_project_id) in p]
    assert len(warning) == 1 and "no longer exists" in warning[0]
    with ws.store.begin() as conn:
        got = conn.execute(
            select(tables.annotations.c.deleted_at).where(
                tables.annotations.c.ls_annotation_id.in_([a4["id"], a5["id"]])
            )
        ).all()
    # the deleted project's annotations stay as pulled; the new blind one arrived
    assert len(got) == 2 * nfields and all(d is None for (d,) in got)
    res = CliRunner().invoke(app, ["-w", str(ws.root), "annotate", "pull", "--url", ls.url])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())  # the console wraps long lines
    assert "no longer exists" in text and "3 tasks truthline did not push" in text
    assert ls.creds.token not in res.output
