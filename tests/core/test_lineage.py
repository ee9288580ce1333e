"""One value's lineage (``truthline.store.lineage`` and ``truthline items show``) on a
SIMULATED loop with planted Label Studio rows: an annotation pulled, edited once, a rater's
annotation deleted at the source, an older gold snapshot, tasks with known ids."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, update
from typer.testing import CliRunner

from truthline.errors import TruthlineError
from truthline.store import last_pull, lineage, tables, task_url
from truthline.workspace import Workspace

SERVER = "http://ls.test:8080"
PULLED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
EDITED_VALUE = 7
OLD_GOLD = 99


def _task(pid: int, item: int) -> int:
    return 1000 * pid + item


def planted_lineage_ws(root: Path) -> tuple[Workspace, dict[str, Any]]:
    """A SIMULATED loop of 8 items, then Label Studio rows planted on one anchored
    annotation of ``worker_count``: pulled (task links), edited once (its first value in
    the history), the item's rubber-stamp annotation deleted at the source, and an older gold
    snapshot with a different value. Returns the workspace and the planted facts."""
    from truthline.demo import build_simulated_loop

    ws = build_simulated_loop(root, n_items=8, seed=1)
    name = ws.project().name
    a, h = tables.annotations, tables.annotation_history
    with ws.store.begin() as conn:
        ann = conn.execute(
            select(a)
            .where(a.c.project == name, a.c.arm == "anchored", a.c.field_path == "worker_count")
            .order_by(a.c.id)
        ).first()
        assert ann is not None
        item = int(ann.item_id)
        key = conn.execute(select(tables.items.c.key).where(tables.items.c.id == item)).scalar_one()
        for pid, arm in ((11, "blind"), (12, "anchored")):
            conn.execute(
                insert(tables.ls_projects).values(
                    project=name,
                    arm=arm,
                    cohort="",
                    server_url=SERVER,
                    ls_project_id=pid,
                    title=f"{name} [{arm}]",
                    created_at=PULLED,
                )
            )
            for iid in ws.store.item_ids_by_key(name).values():
                conn.execute(
                    insert(tables.ls_tasks).values(
                        ls_project_id=pid,
                        server_url=SERVER,
                        item_id=iid,
                        ls_task_id=_task(pid, iid),
                        created_at=PULLED,
                    )
                )
        conn.execute(
            update(a)
            .where(a.c.id == ann.id)
            .values(
                source="label_studio",
                source_id=f"ls:12:{ann.id}",
                ls_project_id=12,
                ls_task_id=_task(12, item),
                value=EDITED_VALUE,
                revision=2,
                stored_at=PULLED,
            )
        )
        conn.execute(
            insert(h).values(
                annotation_id=ann.id,
                revision=1,
                value=ann.value,
                skipped=False,
                replaced_at=PULLED,
            )
        )
        gone = conn.execute(
            update(a)
            .where(
                a.c.project == name,
                a.c.item_id == item,
                a.c.field_path == "worker_count",
                a.c.id != ann.id,
                a.c.tier == 1,
            )
            .values(deleted_at=PULLED - timedelta(hours=1))
            .returning(a.c.annotator)
        ).all()
        e = tables.exposures
        conn.execute(
            update(e)
            .where(e.c.project == name, e.c.item_id == item, e.c.annotator == ann.annotator)
            .values(ls_project_id=12)
        )
        conn.execute(
            insert(tables.gold_snapshots).values(
                hash="0" * 64,
                project=name,
                policy={},
                counts={},
                created_at=datetime(2020, 1, 1, tzinfo=UTC),
            )
        )
        conn.execute(
            insert(tables.gold).values(
                snapshot="0" * 64,
                project=name,
                item_id=item,
                field_path="worker_count",
                value=OLD_GOLD,
                provenance="expert",
                sources=["old-expert"],
            )
        )
    facts = {
        "key": key,
        "item": item,
        "annotator": str(ann.annotator),
        "first_value": ann.value,
        "prediction_id": ann.shown_prediction_id,
        "deleted": sorted(r[0] for r in gone),
    }
    return ws, facts


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, dict[str, Any]]:
    return planted_lineage_ws(tmp_path_factory.mktemp("lineage") / "ws")


def test_lineage_follows_one_value_through_every_table(planted):
    ws, f = planted
    name = ws.project().name
    lin = lineage(ws.store, name, f["key"], "worker_count")
    assert (lin.item_id, lin.key, lin.field) == (f["item"], f["key"], "worker_count")
    with ws.store.begin() as conn:
        pred = conn.execute(
            select(tables.predictions).where(tables.predictions.c.id == f["prediction_id"])
        ).one()
    assert [(p.prediction_id, p.value, p.response_id) for p in lin.predictions] == [
        (pred.id, pred.values["worker_count"], pred.response_id)
    ]
    exp = next(e for e in lin.exposures if e.annotator == f["annotator"])
    assert exp.arm == "anchored" and exp.prediction_id == f["prediction_id"]
    assert exp.task_url == f"{SERVER}/projects/12/data?task={_task(12, f['item'])}"
    edited = next(a for a in lin.annotations if a.annotator == f["annotator"] and a.tier == 1)
    assert (edited.value, edited.revision, edited.source) == (EDITED_VALUE, 2, "label_studio")
    assert [(e.revision, e.value) for e in edited.edits] == [(1, f["first_value"])]
    assert edited.task_url == exp.task_url
    deleted = sorted(a.annotator for a in lin.annotations if a.deleted_at is not None)
    assert deleted == f["deleted"] and deleted
    assert {a.field_path for a in lin.annotations} == {"worker_count"}
    assert any(a.tier == 2 for a in lin.annotations)  # the expert review of this item
    # gold: newest snapshot first, flagged latest; the planted old one with its provenance
    assert lin.gold[0].latest and not lin.gold[-1].latest
    old = lin.gold[-1]
    assert (old.snapshot, old.value, old.provenance, old.sources) == (
        "0" * 64,
        OLD_GOLD,
        "expert",
        ("old-expert",),
    )
    with ws.store.begin() as conn:
        want = [
            (r.run_id, r.model, d["pred"], d["credit"])
            for r in conn.execute(
                select(tables.run_results)
                .where(tables.run_results.c.item_id == f["item"])
                .order_by(tables.run_results.c.model)
            )
            for d in r.scores["decisions"]
            if d["path"] == "worker_count"
        ]
    assert want and [(s.run_id, s.model, s.pred, s.credit) for s in lin.scores] == want


def test_entity_paths_pick_one_entity_and_every_entity(planted):
    ws, f = planted
    name = ws.project().name
    whole = lineage(ws.store, name, f["key"], "workers")
    ents = whole.predictions[0].value
    first = ents[0]
    eid = first["worker_id"]
    one = lineage(ws.store, name, f["key"], f"workers[{eid}].action")
    assert one.predictions[0].value == first["action"]
    assert {g.field_path for g in one.gold} <= {f"workers[{eid}].action"}
    every = lineage(ws.store, name, f["key"], "workers.action")
    assert every.predictions[0].value == [e["action"] for e in ents]
    assert {s.path for s in every.scores} == {
        s.path for s in whole.scores if s.path.endswith(".action")
    }


def test_unknown_key_names_close_matches(planted):
    ws, f = planted
    with pytest.raises(TruthlineError) as err:
        lineage(ws.store, ws.project().name, f["key"][:-1])
    assert "close matches" in str(err.value) and f["key"] in str(err.value)


def test_last_pull_is_the_latest_change_pulled(planted):
    ws, _ = planted
    got = last_pull(ws.store, ws.project().name)
    assert got is not None and got.replace(tzinfo=None) == PULLED.replace(tzinfo=None)
    assert task_url(SERVER + "/", 3, 4) == f"{SERVER}/projects/3/data?task=4"


def test_items_show_cli(planted, monkeypatch):
    from truthline.cli import app

    ws, f = planted
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(ws.root))
    monkeypatch.delenv("TRUTHLINE_DB", raising=False)
    runner = CliRunner()
    res = runner.invoke(app, ["items", "show", f["key"], "--field", "worker_count", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    want = lineage(ws.store, ws.project().name, f["key"], "worker_count").as_dict()
    assert data == json.loads(json.dumps(want))
    from truthline._cli_common import console

    # the CLI's console reads COLUMNS once, at import: set its width, not the environment
    monkeypatch.setattr(console, "width", 250)
    res = runner.invoke(app, ["items", "show", f["key"], "--field", "worker_count"])
    assert res.exit_code == 0, res.output
    for text in ("Prefill predictions", "Exposure", "earlier", "deleted", "old-expert"):
        assert text in res.output
    assert f"task={_task(12, f['item'])}" in res.output


def test_items_show_errors_name_what_exists(planted):
    from tests.core.test_cli import tl

    ws, f = planted
    bad = tl("items", "show", f["key"][:-1], ws=ws.root, check=1)
    assert "close matches" in bad.stderr and f["key"] in bad.stderr
    bad = tl("items", "show", f["key"], "--field", "no_such_field", ws=ws.root, check=1)
    assert "no field 'no_such_field'" in bad.stderr and "worker_count" in bad.stderr


def test_value_at_reads_one_entity_by_its_id():
    from truthline.store._lineage import path_matches, value_at

    ents = [{"worker_id": "P2", "action": "A1", "near": "P1"}, {"worker_id": "P1", "action": "B2"}]
    assert value_at(ents, "workers[P1].action") == "B2"  # the id, not another field's value
    assert value_at(ents, "workers.action") == ["A1", "B2"]
    assert value_at(ents, "workers[P9].action") is None
    assert value_at(3, "worker_count") == 3
    assert path_matches("workers.action", "workers[P1].action")
    assert path_matches("workers", "workers[P1].helmet")
    assert not path_matches("workers.action", "workers[P1].helmet")
    assert not path_matches("worker", "worker_count")
