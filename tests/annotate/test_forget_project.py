"""`annotate forget-project` against a real Label Studio (issue 27): a project deleted on the
server leaves records that pull reports on every run and that make push refuse its arm;
forgetting it removes them, says what it removed, never removes annotations without being
told to, refuses a project that still exists (unless --force), and --dry-run changes nothing."""

from __future__ import annotations

import json
import sys

import pytest
from sqlalchemy import select

from truthline.annotate import (
    add_users,
    pull,
    submit_annotation,
    user_client,
    values_to_results,
)
from truthline.annotate._users import USERS_FILE
from truthline.cli import main
from truthline.store import tables

from .conftest import LS
from .test_annotate_ls import _push, _rows
from .test_bad_input import _snapshot

pytestmark = pytest.mark.labelstudio
PEOPLE = ["fay-forget@example.com", "gus-forget@example.com"]  # new on the shared server
VALS = {"scene_type": "yard", "worker_count": 1}


def cli(monkeypatch, capsys, ws, ls: LS, *args: str) -> tuple[int, str]:
    """``truthline annotate ARGS --url LS`` through the real entry point: exit code, output."""
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", ls.creds.token)
    argv = ["truthline", "-w", str(ws.root), "annotate", *args, "--url", ls.url]
    monkeypatch.setattr(sys, "argv", argv)
    code = 0
    try:
        main()
    except SystemExit as ended:
        code = int(ended.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def labelled(ws, project, ls: LS, media_server, people: list[str]):
    """Both arms pushed, four annotations by ``people`` (new accounts on the session's server)
    pulled, one of them edited (a history row)."""
    blind = _push(ws, project, ls, media_server, "blind", annotators=people, split=0.5, seed=4)
    anch = _push(ws, project, ls, media_server, "anchored", annotators=people, split=0.5, seed=4)
    secrets = ws.secrets_dir / USERS_FILE
    add_users(ls.admin(), people, secrets)
    fay, gus = (user_client(ls.url, e, secrets) for e in people)
    tasks = {
        (r["ls_project_id"], r["item_id"]): r["ls_task_id"] for r in _rows(ws, tables.ls_tasks)
    }
    b_tasks = sorted(t for (p, _), t in tasks.items() if p == blind.ls_project_id)
    a_tasks = sorted(t for (p, _), t in tasks.items() if p == anch.ls_project_id)
    submit_annotation(fay, project, b_tasks[0], VALS, 5.0)
    first = submit_annotation(fay, project, a_tasks[0], VALS, 6.0)
    submit_annotation(gus, project, a_tasks[0], VALS, 7.0)
    submit_annotation(gus, project, a_tasks[1], VALS, 8.0)
    pull(ws.store, project, ls.admin(), progress=False)
    changed = values_to_results(project, VALS | {"worker_count": 2})
    fay.patch(f"/api/annotations/{first['id']}/", {"result": changed})
    pull(ws.store, project, ls.admin(), progress=False)
    return blind, anch


def of_project(ws, table, ls_project_id: int) -> list[dict]:
    return [r for r in _rows(ws, table) if r.get("ls_project_id") == ls_project_id]


def test_forget_a_deleted_project_and_its_annotations(
    ls: LS, steel_ws, media_server, monkeypatch, capsys
):
    ws, project, _ = steel_ws
    blind, anch = labelled(ws, project, ls, media_server, PEOPLE)
    pid = str(anch.ls_project_id)
    nfields = len(project.field_types)
    anns = of_project(ws, tables.annotations, anch.ls_project_id)
    assert len(anns) == 3 * nfields and len(_rows(ws, tables.annotation_history)) >= 1
    blind_rows = of_project(ws, tables.annotations, blind.ls_project_id)
    exposures = _rows(ws, tables.exposures)

    # still on the server: refused, nothing changed
    before = _snapshot(ws)
    code, out = cli(monkeypatch, capsys, ws, ls, "forget-project", pid, "--delete-annotations")
    flat = " ".join(out.split())
    assert code == 1 and flat.startswith("error: ") and "still exists" in flat, flat
    assert "--force" in flat and _snapshot(ws) == before

    ls.admin().delete(f"/api/projects/{anch.ls_project_id}/")
    # annotations and no choice made: refused, naming the count and both choices
    code, out = cli(monkeypatch, capsys, ws, ls, "forget-project", pid)
    flat = " ".join(out.split())
    assert code == 1 and "has 3 pulled annotations (2 annotators)" in flat, flat
    assert "--keep-annotations" in flat and "--delete-annotations" in flat
    assert len(out.strip().splitlines()) <= 2 and _snapshot(ws) == before
    # a dry run counts and changes nothing
    code, out = cli(
        monkeypatch,
        capsys,
        ws,
        ls,
        "forget-project",
        pid,
        "--delete-annotations",
        "--dry-run",
        "--json",
    )
    assert code == 0, out
    dry = json.loads(out)
    assert dry["dry_run"] is True and _snapshot(ws) == before
    assert (dry["tasks"], dry["annotations"], dry["annotation_rows"]) == (4, 3, 3 * nfields)
    assert dry["history_rows"] >= 1 and dry["annotators"] == PEOPLE
    assert dry["exists_on_server"] is False and dry["annotations_action"] == "delete"

    code, out = cli(monkeypatch, capsys, ws, ls, "forget-project", pid, "--delete-annotations")
    assert code == 0, out
    text = " ".join(out.split())
    assert (
        f"Label Studio project {pid}" in text and "removed: its project record and 4 task" in text
    )
    assert "removed: 3 annotations" in text and "by 2 annotators" in text
    assert "kept: " in text and "exposures" in text
    assert of_project(ws, tables.ls_projects, anch.ls_project_id) == []
    assert of_project(ws, tables.ls_tasks, anch.ls_project_id) == []
    assert of_project(ws, tables.annotations, anch.ls_project_id) == []
    ids = {a["id"] for a in anns}
    assert not [h for h in _rows(ws, tables.annotation_history) if h["annotation_id"] in ids]
    # the other project untouched; what annotators were shown stays a fact
    assert of_project(ws, tables.annotations, blind.ls_project_id) == blind_rows
    assert _rows(ws, tables.exposures) == exposures

    # pull no longer reports it; push makes a fresh anchored project
    rep = pull(ws.store, project, ls.admin(), progress=False)
    assert rep.missing_projects == [] and not [p for p in rep.problems if pid in p]
    again = _push(ws, project, ls, media_server, "anchored", annotators=PEOPLE)
    assert again.ls_project_id != anch.ls_project_id and again.created == 4
    # forgotten is forgotten: one clear line
    code, out = cli(monkeypatch, capsys, ws, ls, "forget-project", pid)
    flat = " ".join(out.split())
    assert (
        code == 1 and "records no Label Studio project" in flat and str(again.ls_project_id) in flat
    )


def test_keep_annotations_and_force(ls: LS, steel_ws, media_server, monkeypatch, capsys):
    ws, project, _ = steel_ws
    blind, anch = labelled(ws, project, ls, media_server, ["hal@example.com", "ida@example.com"])
    anns = of_project(ws, tables.annotations, anch.ls_project_id)
    ls.admin().delete(f"/api/projects/{anch.ls_project_id}/")
    code, out = cli(
        monkeypatch,
        capsys,
        ws,
        ls,
        "forget-project",
        str(anch.ls_project_id),
        "--keep-annotations",
        "--json",
    )
    assert code == 0, out
    rep = json.loads(out)
    assert rep["annotations_action"] == "keep" and rep["annotations"] == 3
    assert of_project(ws, tables.ls_projects, anch.ls_project_id) == []
    assert of_project(ws, tables.annotations, anch.ls_project_id) == anns  # as they were

    # --force forgets one that still exists; both choices at once are refused
    code, out = cli(
        monkeypatch,
        capsys,
        ws,
        ls,
        "forget-project",
        str(blind.ls_project_id),
        "--keep-annotations",
        "--delete-annotations",
    )
    assert code == 1 and "not both" in out
    code, out = cli(
        monkeypatch,
        capsys,
        ws,
        ls,
        "forget-project",
        str(blind.ls_project_id),
        "--force",
        "--keep-annotations",
        "--json",
    )
    assert code == 0, out
    assert json.loads(out)["exists_on_server"] is True
    with ws.store.begin() as conn:
        assert conn.execute(select(tables.ls_projects)).all() == []
    assert ls.admin().get(f"/api/projects/{blind.ls_project_id}")["id"] == blind.ls_project_id
