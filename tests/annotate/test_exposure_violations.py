"""Blind stays blind (issue 26): pull checks every blind task of a real Label Studio for what
breaks blindness — a prediction someone added to the task, an annotation made from a
prediction, an annotator who saw the item in another arm — reports each one, keeps it in
``exposure_violations`` (once, however often pulled) and names the affected labels."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from truthline.annotate import add_users, pull, submit_annotation, user_client, values_to_results
from truthline.annotate._pull import source_id
from truthline.annotate._users import USERS_FILE
from truthline.annotate._violations import (
    ANNOTATION_FROM_PREDICTION,
    ANNOTATOR_SAW_ITEM,
    PREDICTION_ON_TASK,
    task_violations,
    violated_sources,
)
from truthline.store import now, tables

from .conftest import LS
from .test_annotate_ls import _push, _rows

pytestmark = pytest.mark.labelstudio


def test_pull_reports_exposure_violations_on_blind_tasks(ls: LS, steel_ws, media_server):
    ws, project, _preds = steel_ws
    people = ["fay@example.com", "gil@example.com"]
    blind = _push(ws, project, ls, media_server, "blind", annotators=people, split=0.5, seed=3)
    _push(ws, project, ls, media_server, "anchored", annotators=people, split=0.5, seed=3)
    admin = ls.admin()
    secrets = ws.secrets_dir / USERS_FILE
    add_users(admin, people, secrets)
    fay, gil = (user_client(ls.url, e, secrets) for e in people)
    btasks = sorted(
        (r["ls_task_id"], r["item_id"])
        for r in _rows(ws, tables.ls_tasks)
        if r["ls_project_id"] == blind.ls_project_id
    )
    assert len(btasks) >= 4
    (t_pred, i_pred), (t_orig, _), (t_saw, i_saw), (t_clean, _) = btasks[:4]
    vals = {"scene_type": "yard", "worker_count": 1}

    # any account may add a prediction to a blind task over the API: gil does
    added = gil.post(
        "/api/predictions/",
        {"task": t_pred, "model_version": "leak", "result": values_to_results(project, vals)},
    )
    # fay had been shown the anchored prediction of t_saw's item (what an anchored push of
    # that item to her records)
    with ws.store.begin() as conn:
        pred_id = conn.execute(
            select(tables.predictions.c.id).where(tables.predictions.c.item_id == i_saw)
        ).scalar_one()
        conn.execute(
            tables.exposures.insert().values(
                project=project.name,
                item_id=i_saw,
                annotator="fay@example.com",
                arm="anchored",
                prediction_id=pred_id,
                created_at=now(),
            )
        )
    a_pred = submit_annotation(fay, project, t_pred, vals, 5.0)
    a_orig = submit_annotation(gil, project, t_orig, vals, 6.0, shown=vals)  # origin=prediction
    a_saw = submit_annotation(fay, project, t_saw, vals, 7.0)
    a_clean = submit_annotation(gil, project, t_clean, vals, 8.0)

    rep = pull(ws.store, project, admin, progress=False)
    assert rep.new == 4
    sid = {
        k: source_id(ls.url, blind.ls_project_id, a["id"])
        for k, a in (("pred", a_pred), ("orig", a_orig), ("saw", a_saw), ("clean", a_clean))
    }
    got = {(v["kind"], v["ls_task_id"], v["source_id"]) for v in rep.exposure_violations}
    assert got == {
        (PREDICTION_ON_TASK, t_pred, ""),
        (PREDICTION_ON_TASK, t_pred, sid["pred"]),
        (ANNOTATION_FROM_PREDICTION, t_orig, sid["orig"]),
        (ANNOTATOR_SAW_ITEM, t_saw, sid["saw"]),
    }
    task_level = next(v for v in rep.exposure_violations if v["source_id"] == "")
    assert str(added["id"]) in task_level["detail"] and task_level["item_id"] == i_pred
    saw = next(v for v in rep.exposure_violations if v["kind"] == ANNOTATOR_SAW_ITEM)
    assert saw["annotator"] == "fay@example.com" and "anchored arm" in saw["detail"]
    assert sum("exposure violation on blind task" in p for p in rep.problems) == 4
    assert violated_sources(ws.store, project.name) == {sid["pred"], sid["orig"], sid["saw"]}
    stored = _rows(ws, tables.exposure_violations)
    assert len(stored) == 4 and {r["server_url"] for r in stored} == {ls.url}

    # pulling again reports them again but stores each once; the clean label stays clean
    rep2 = pull(ws.store, project, admin, progress=False)
    assert len(rep2.exposure_violations) == 4 and rep2.new == 0
    assert len(_rows(ws, tables.exposure_violations)) == 4
    assert sid["clean"] not in violated_sources(ws.store, project.name)


def test_task_violations_reads_ids_and_dict_predictions():
    """Exports give predictions as ids or objects; a parent_prediction counts as made-from."""
    task = {
        "id": 9,
        "predictions": [{"id": 31}],
        "annotations": [
            {"id": 1, "completed_by": 4, "parent_prediction": 31, "result": []},
            {"id": 2, "completed_by": 5, "result": [{"origin": "manual"}]},
        ],
    }
    found = task_violations(
        task,
        ls_project_id=3,
        item_id=77,
        source_of=lambda a: f"s{a}",
        annotator_of=lambda a: f"u{a['completed_by']}",
        seen_elsewhere={"u5": "review"},
    )
    assert sorted((v.kind, v.source_id, v.annotator) for v in found) == [
        (ANNOTATION_FROM_PREDICTION, "s1", "u4"),
        (ANNOTATOR_SAW_ITEM, "s2", "u5"),
        (PREDICTION_ON_TASK, "", ""),
        (PREDICTION_ON_TASK, "s1", "u4"),
        (PREDICTION_ON_TASK, "s2", "u5"),
    ]
    assert "31" in found[0].detail and all(v.item_id == 77 for v in found)
    clean = {"id": 10, "predictions": [], "annotations": [{"id": 3, "completed_by": 4}]}
    assert (
        task_violations(
            clean,
            ls_project_id=3,
            item_id=78,
            source_of=str,
            annotator_of=lambda a: "u4",
            seen_elsewhere={},
        )
        == []
    )
