"""Gold-standard items (issue 26): known answers recorded in the store, mixed into tier-1
queues at the declared ``[audit] gold_standard_rate`` (as CVAT does), nothing in a task
saying which they are."""

from __future__ import annotations

import json

import pytest

from truthline.annotate._gold_standard import known_answers, mix_in, set_known_answers
from truthline.errors import TruthlineError
from truthline.store import tables

from .conftest import LS
from .test_annotate_ls import _push, _rows


def test_mix_in_reaches_the_declared_rate():
    regular = list(range(1, 20))  # 19 regular items
    gold = {100, 101, 102, 103}
    out = mix_in(regular, gold, 0.05, seed=1)  # 1 of 20 = 5%
    assert len(out) == 20 and len(set(out) & gold) == 1 and set(regular) <= set(out)
    assert mix_in(regular, gold, 0.05, seed=1) == out  # reproducible
    assert len(set(mix_in(regular, gold, 0.2, seed=1)) & gold) == 4  # 0.2*19/0.8 = 4.75 -> 5 capped
    # gold items already in the queue count towards the rate
    assert mix_in([*regular, 100], gold, 0.05, seed=2) == sorted([*regular, 100])
    assert (
        mix_in(regular, gold, 0.0, seed=1) == regular and mix_in(regular, set(), 0.3, 1) == regular
    )


def test_known_answers_are_checked_and_replaced(steel_ws):
    ws, project, _ = steel_ws
    item = ws.store.items(project.name)[0]["id"]
    with pytest.raises(TruthlineError, match="no such field"):
        set_known_answers(ws.store, project, {item: {"nope": 1}}, "table")
    assert set_known_answers(ws.store, project, {item: {"scene_type": "yard"}}, "table") == 1
    set_known_answers(ws.store, project, {item: {"scene_type": "production"}}, "table")
    assert known_answers(ws.store, project.name) == {item: {"scene_type": "production"}}


@pytest.mark.labelstudio
def test_push_mixes_gold_items_into_the_blind_queue(ls: LS, steel_ws, media_server):
    ws, project, _ = steel_ws
    project = project.model_copy(
        update={"audit": project.audit.model_copy(update={"gold_standard_rate": 0.2})}
    )
    from truthline.annotate._assign import assign_arms

    arms = assign_arms(ws.store, project, split=0.5, seed=3)
    anchored = sorted(i for i, a in arms.items() if a == "anchored")
    blind_items = sorted(i for i, a in arms.items() if a == "blind")
    # known answers for two items of the anchored arm: the blind queue gets one of them
    set_known_answers(ws.store, project, {i: {"scene_type": "yard"} for i in anchored[:2]}, "table")
    rep = _push(ws, project, ls, media_server, "blind", split=0.5, seed=3)
    pushed = sorted(
        r["item_id"] for r in _rows(ws, tables.ls_tasks) if r["ls_project_id"] == rep.ls_project_id
    )
    extra = set(pushed) - set(blind_items)
    assert rep.created == len(blind_items) + 1 and len(extra) == 1 and extra <= set(anchored[:2])
    # nothing in the task marks it: same keys as any other task, no known answer in it
    with ls.admin() as c:
        tasks = {
            t["data"]["item_id"]: t
            for t in (c.get(f"/api/tasks/{x['ls_task_id']}") for x in _rows(ws, tables.ls_tasks))
        }
    g = tasks[next(iter(extra))]
    other = tasks[blind_items[0]]
    assert set(g["data"]) == set(other["data"]) and not g["predictions"]
    assert "gold" not in json.dumps(g).lower()


def test_cli_records_known_answers_from_a_table(steel_ws, tmp_path):
    from typer.testing import CliRunner

    from truthline.cli import app

    ws, project, _ = steel_ws
    items = ws.store.items(project.name)
    table = tmp_path / "known.csv"
    table.write_text(
        "item,field,value\n"
        f"{items[0]['key']},scene_type,yard\n"
        f"{items[0]['key']},worker_count,2\n"
        f"{items[1]['key']},scene_violation,true\n"
    )
    res = CliRunner().invoke(
        app, ["-w", str(ws.root), "annotate", "gold-standard", "--table", str(table), "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out == {"recorded": 3, "items": 2, "rate": 0.0}
    assert known_answers(ws.store, project.name) == {
        items[0]["id"]: {"scene_type": "yard", "worker_count": 2},
        items[1]["id"]: {"scene_violation": True},
    }
    table.write_text("item,field,value\nno-such-clip,scene_type,yard\n")
    res = CliRunner().invoke(
        app, ["-w", str(ws.root), "annotate", "gold-standard", "--table", str(table)]
    )
    assert res.exit_code != 0 and "not an item" in str(res.exception)
    assert len(known_answers(ws.store, project.name)) == 2  # nothing written
