"""A system's project kind through the loop's store-backed push and pull against a real
Label Studio: push twice imports once, exposures carry what a task showed, an edit keeps its
history, a deletion is marked, a task imported by hand is reported and never counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from truthline.annotate import (
    KINDS,
    ProjectKind,
    ReadBack,
    Scope,
    project_kind,
    pull_units,
    push_units,
    unit_tasks,
)
from truthline.store import Store, tables

pytestmark = pytest.mark.labelstudio

CONFIG = (
    '<View><Text name="t" value="$text"/>'
    '<Choices name="c" toName="t"><Choice value="yes"/><Choice value="no"/></Choices></View>'
)


class YesNo(ProjectKind):
    """A toy system's kind: a sentence, a yes/no answer; the task shows a hint."""

    fields = ("answer",)

    def label_config(self, context):
        return CONFIG

    def settings(self, context):
        return {"expert_instruction": "yes or no"}

    def task(self, context, unit):
        return {"data": {"text": unit}}

    def shown(self, context, key, unit):
        return [{"kind": "hint", "unit": key}]

    def read(self, context, key, annotation):
        for r in annotation.get("result") or []:
            if r.get("from_name") == "c":
                return ReadBack({"answer": (r["value"].get("choices") or [None])[0]})
        return ReadBack({"answer": None})


@pytest.fixture(scope="module")
def kind():
    project_kind("test.yes-no")(YesNo)
    try:
        yield "test.yes-no"
    finally:
        KINDS._items.pop("test.yes-no", None)


def _answer(value: str) -> dict:
    return {
        "result": [
            {"from_name": "c", "to_name": "t", "type": "choices", "value": {"choices": [value]}}
        ]
    }


def test_a_kind_pushes_and_pulls_through_the_store(ls, kind: str, tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    admin = ls.admin()
    me = admin.whoami()["email"]
    (tmp_path / "w").mkdir()
    scope = Scope.of_folder("test.toy", tmp_path / "w")
    units = {"u1": "the sky is blue", "u2": "water is dry", "u3": "fire is hot"}
    kw = {"scope": scope, "slot": "rate", "title": "toy yes/no", "annotators": ["x@toy.local"]}
    first = push_units(store, admin, kind, None, units, **kw)
    again = push_units(store, admin, kind, None, units, **kw)
    assert (first.created, again.created, again.existing) == (3, 0, 3)
    assert first.ls_project_id == again.ls_project_id
    tasks = unit_tasks(store, admin.url, first.ls_project_id)
    assert (
        sorted(tasks) == ["u1", "u2", "u3"] and len(admin.tasks_by_item(first.ls_project_id)) == 3
    )
    data = admin.get(f"/api/tasks/{tasks['u1']}")["data"]
    assert data["text"] == "the sky is blue" and isinstance(data["item_id"], int)

    a1 = admin.post(f"/api/tasks/{tasks['u1']}/annotations/", _answer("yes"))
    a2 = admin.post(f"/api/tasks/{tasks['u2']}/annotations/", _answer("yes"))
    admin.post(f"/api/projects/{first.ls_project_id}/import", [{"text": "by hand"}])
    got = pull_units(store, admin, kind, None, scope=scope, slot="rate")
    assert {(a.key, a.values["answer"], a.annotator) for a in got.annotations} == {
        ("u1", "yes", me),
        ("u2", "yes", me),
    }
    assert got.report.new == 2 and len(got.report.foreign_tasks) == 1
    assert got.changes()["foreign_tasks"][0]["ls_task_id"] not in tasks.values()
    again_pull = pull_units(store, admin, kind, None, scope=scope, slot="rate")
    assert (again_pull.report.new, again_pull.report.unchanged) == (0, 2)

    admin.patch(f"/api/annotations/{a2['id']}/", _answer("no"))
    admin.delete(f"/api/annotations/{a1['id']}/")
    got = pull_units(store, admin, kind, None, scope=scope, slot="rate")
    assert (got.report.updated, got.report.deleted) == (1, 1)
    assert [(a.key, a.values["answer"]) for a in got.annotations] == [("u2", "no")]
    a, h, e = tables.annotations, tables.annotation_history, tables.exposures
    with store.begin() as conn:
        hist = conn.execute(select(h.c.value, h.c.revision)).all()
        deleted = conn.execute(
            select(a.c.deleted_at).where(a.c.ls_annotation_id == a1["id"])
        ).scalar_one()
        exps = conn.execute(select(e).where(e.c.project == scope.name)).all()
    assert [tuple(r) for r in hist] == [("yes", 1)] and deleted is not None
    # known up front (push) and found annotating (pull): each saw the task and its hint
    assert {(x.annotator, x.shown[0]["unit"]) for x in exps} == {
        ("x@toy.local", "u1"),
        ("x@toy.local", "u2"),
        ("x@toy.local", "u3"),
        (me, "u1"),
        (me, "u2"),
    }
    assert all(x.arm == "rate" and x.prediction_id is None for x in exps)
    store.close()
