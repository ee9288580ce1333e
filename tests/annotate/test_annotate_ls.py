"""Against a real Label Studio server: generated configs accepted, push -> annotate as real
users -> pull, blind projects without predictions, idempotent push and pull, edits with
history, malformed results, and a server stopped mid-push."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from truthline.annotate import (
    LabelStudioDown,
    add_users,
    label_config,
    pull,
    push,
    submit_annotation,
    user_client,
)
from truthline.annotate._pseudonyms import real_names
from truthline.annotate._users import USERS_FILE
from truthline.store import tables

from .conftest import LS, start_copy

pytestmark = pytest.mark.labelstudio


def _push(ws, project, ls: LS, media, arm, **kw):
    with ls.admin() as c:
        return push(
            ws.store,
            project,
            c,
            arm,
            media_base=media.url,
            media_root=media.root,
            progress=False,
            **kw,
        )


def _strip(entities):
    """Entity subfields that are None are absent (missing) once read back."""
    return [{k: v for k, v in e.items() if v is not None} for e in entities]


def _rows(ws, table):
    with ws.store.begin() as conn:
        return [
            dict(r._mapping)
            for r in conn.execute(
                select(table).order_by(table.c.id if "id" in table.c else table.c.item_id)
            )
        ]


def test_generated_configs_are_accepted_for_every_field_type(
    ls: LS, all_types_project, steel_project
):
    with ls.admin() as c:
        for proj in (all_types_project, steel_project):
            cfg = label_config(proj)
            created = c.post(
                "/api/projects/", {"title": f"config {proj.name}", "label_config": cfg}
            )
            c.post(f"/api/projects/{created['id']}/validate/", {"label_config": cfg})
            parsed = c.get(f"/api/projects/{created['id']}")["parsed_label_config"]
            assert set(parsed) == {
                n.replace(".", "__")
                for name, ft in proj.field_types.items()
                for n in (
                    [name]
                    + [
                        f"{name}.{s}"
                        for s in getattr(ft, "subfields", {})
                        if getattr(ft.subfields[s], "name", "") != "region"
                    ]
                )
            }
        bad = cfg.replace('toName="image"', 'toName="nope"', 1)
        with pytest.raises(Exception, match="400"):
            c.post(f"/api/projects/{created['id']}/validate/", {"label_config": bad})


def test_push_annotate_pull_roundtrip(ls: LS, steel_ws, media_server, tmp_path: Path, capsys):
    ws, project, preds = steel_ws
    people = ["alice@example.com", "bob@example.com", "carol@example.com"]
    blind = _push(
        ws, project, ls, media_server, "blind", annotators=people, overlap=2, split=0.5, seed=7
    )
    anch = _push(ws, project, ls, media_server, "anchored", annotators=people, split=0.5, seed=7)
    assert blind.created == 4 and anch.created == 4 and anch.predictions == 4
    assert anch.model_version == "simulated-test-vlm"

    admin = ls.admin()
    # blind projects hold zero predictions (ask the server), anchored ones show them
    bp = admin.get(f"/api/projects/{blind.ls_project_id}")
    ap = admin.get(f"/api/projects/{anch.ls_project_id}")
    assert bp["task_number"] == 4 and bp["total_predictions_number"] == 0
    assert bp["maximum_annotations"] == 2 and bp["show_collab_predictions"] is False
    # annotators see a neutral label; the store (report, exposures) keeps the model's name
    assert ap["total_predictions_number"] == 4 and ap["model_version"] == "pre-annotation"
    assert ap["show_collab_predictions"] is True

    # push twice -> no new task; the exposure log says who could see what
    again = _push(ws, project, ls, media_server, "blind", annotators=people, overlap=2)
    assert again.created == 0 and again.existing == 4
    assert admin.get(f"/api/projects/{blind.ls_project_id}")["task_number"] == 4
    exp = _rows(ws, tables.exposures)
    assert len(exp) == 8 * 3
    assert all(e["prediction_id"] is None for e in exp if e["arm"] == "blind")
    assert all(
        e["prediction_id"] is not None and e["model_version"] for e in exp if e["arm"] == "anchored"
    )

    # real login-capable users, acting as themselves
    secrets = ws.secrets_dir / USERS_FILE
    made = add_users(admin, people, secrets)
    assert [m["status"] for m in made] == ["created"] * 3
    assert secrets.stat().st_mode & 0o777 == 0o600
    assert add_users(admin, people[:1], secrets)[0]["status"] == "exists"
    alice, bob, carol = (user_client(ls.url, e, secrets) for e in people)
    assert alice.whoami()["email"] == people[0]

    tasks = {r["item_id"]: r for r in _rows(ws, tables.ls_tasks)}
    arms = {r["item_id"]: r["arm"] for r in _rows(ws, tables.arm_assignments)}
    anch_items = sorted(i for i, a in arms.items() if a == "anchored")
    blind_items = sorted(i for i, a in arms.items() if a == "blind")

    def ls_pred_id(item):
        t = admin.get(f"/api/tasks/{tasks[item]['ls_task_id']}")
        return (
            t["predictions"][0]["id"]
            if isinstance(t["predictions"][0], dict)
            else t["predictions"][0]
        )

    # anchored: alice keeps the prefill of item A; changes one worker's action on item B
    a_keep, a_change = anch_items[0], anch_items[1]
    submit_annotation(
        alice,
        project,
        tasks[a_keep]["ls_task_id"],
        preds[a_keep],
        12.5,
        ls_pred_id(a_keep),
        shown=preds[a_keep],
    )
    changed = {k: v for k, v in preds[a_change].items()}
    changed["workers"] = [dict(w) for w in changed["workers"]]
    changed["workers"][0]["action"] = "F3" if changed["workers"][0]["action"] != "F3" else "A1"
    submit_annotation(
        bob,
        project,
        tasks[a_change]["ls_task_id"],
        changed,
        40.0,
        ls_pred_id(a_change),
        shown=preds[a_change],
    )
    # blind: two annotators on one task, one skip
    b1, b2 = blind_items[0], blind_items[1]
    truth = {it["id"]: it["sim_truth"] for it in ws.store.items(project.name)}
    submit_annotation(alice, project, tasks[b1]["ls_task_id"], truth[b1], 20.0)
    submit_annotation(
        bob, project, tasks[b1]["ls_task_id"], truth[b1] | {"scene_type": "yard"}, 31.0
    )
    submit_annotation(carol, project, tasks[b2]["ls_task_id"], {}, 3.0, cancelled=True)

    rep = pull(ws.store, project, admin, progress=False)
    assert rep.annotations == 5 and rep.new == 5 and rep.problems == []
    rows = _rows(ws, tables.annotations)
    assert len(rows) == 5 * len(project.field_types)
    by = {(r["item_id"], r["annotator"], r["field_path"]): r for r in rows}

    keep = by[(a_keep, people[0], "workers")]
    assert keep["arm"] == "anchored" and keep["tier"] == 1 and keep["kept"] is True
    assert keep["origin"] == "prediction" and keep["lead_time"] == 12.5
    assert keep["parent_prediction"] == ls_pred_id(a_keep)
    assert keep["shown_prediction_id"] is not None and keep["model_version"] == "simulated-test-vlm"
    assert keep["value"] == _strip(preds[a_keep]["workers"])
    chg = by[(a_change, people[1], "workers")]
    assert chg["kept"] is False and chg["origin"] == "prediction-changed"
    assert chg["value"] == _strip(project.field_types["workers"].normalize(changed["workers"]))
    assert by[(a_change, people[1], "scene_type")]["kept"] is True
    two = [r for r in rows if r["item_id"] == b1 and r["field_path"] == "scene_type"]
    assert {(r["annotator"], r["value"]) for r in two} == {
        (people[0], truth[b1]["scene_type"]),
        (people[1], "yard"),
    }
    assert all(
        r["arm"] == "blind" and r["kept"] is None and r["shown_prediction_id"] is None for r in two
    )
    assert by[(b1, people[0], "worker_count")]["value"] == truth[b1]["worker_count"]
    skip = [r for r in rows if r["item_id"] == b2]
    assert skip and all(
        r["skipped"] and r["value"] is None and r["annotator"] == people[2] for r in skip
    )
    assert all(r["annotated_at"] is not None and r["source_updated_at"] is not None for r in rows)

    # pull twice -> identical store
    before = (
        _rows(ws, tables.annotations),
        _rows(ws, tables.annotation_history),
        _rows(ws, tables.exposures),
    )
    rep2 = pull(ws.store, project, admin, progress=False)
    assert rep2.new == 0 and rep2.updated == 0 and rep2.unchanged == 5
    assert (
        _rows(ws, tables.annotations),
        _rows(ws, tables.annotation_history),
        _rows(ws, tables.exposures),
    ) == before

    # an annotation edited in Label Studio after a pull: updated, earlier value in history
    ann_id = by[(b1, people[1], "scene_type")]["ls_annotation_id"]
    from truthline.annotate import values_to_results

    bob.patch(
        f"/api/annotations/{ann_id}",
        {  # an API edit: an entity without a box stays a placeholder square
            "result": values_to_results(
                project, truth[b1] | {"scene_type": "maintenance"}, placeholders=True
            )
        },
    )
    rep3 = pull(ws.store, project, admin, progress=False)
    assert rep3.updated == 1 and rep3.new == 0
    row = next(
        r
        for r in _rows(ws, tables.annotations)
        if r["ls_annotation_id"] == ann_id and r["field_path"] == "scene_type"
    )
    assert row["value"] == "maintenance" and row["revision"] == 2
    hist = _rows(ws, tables.annotation_history)
    assert [(h["annotation_id"], h["value"], h["revision"]) for h in hist] == [
        (row["id"], "yard", 1)
    ]

    # a malformed result is reported with its ids and skipped; the rest of the annotation is stored
    bad = values_to_results(project, {"scene_type": "yard", "worker_count": 2})
    bad.append(
        {
            "from_name": "no_such_field",
            "to_name": "image",
            "type": "choices",
            "value": {"choices": ["x"]},
        }
    )
    bad.append(
        {
            "from_name": "worker_count",
            "to_name": "image",
            "type": "number",
            "value": {"number": "lots"},
        }
    )
    made_bad = admin.post(
        f"/api/tasks/{tasks[blind_items[2]]['ls_task_id']}/annotations/",
        {"result": bad, "lead_time": 1.0},
    )
    rep4 = pull(ws.store, project, admin, progress=False)
    assert rep4.new == 1 and len(rep4.problems) == 2
    for p in rep4.problems:
        assert (
            f"project {blind.ls_project_id}, task {tasks[blind_items[2]]['ls_task_id']}, annotation {made_bad['id']}"
            in p
        )
    got = {
        r["field_path"]: r["value"]
        for r in _rows(ws, tables.annotations)
        if r["ls_annotation_id"] == made_bad["id"]
    }
    assert got["scene_type"] == "yard" and got["worker_count"] == 2  # the valid result wins

    # new items -> only those are pushed (each arm's project gets just its new ones)
    from truthline.store import now

    from .conftest import SIM_MODEL

    src = ws.store.items(project.name)[0]
    with ws.store.begin() as conn:
        for n in range(3):
            new_id = conn.execute(
                tables.items.insert().values(
                    **{k: v for k, v in src.items() if k != "id"}
                    | {"key": f"extra/{n}", "created_at": now(), "updated_at": now()}
                )
            ).inserted_primary_key[0]
            conn.execute(
                tables.predictions.insert().values(
                    project=project.name,
                    item_id=new_id,
                    model_version=SIM_MODEL,
                    values=preds[src["id"]],
                    status="parsed",
                    simulated=True,
                    created_at=now(),
                )
            )
    nb = _push(ws, project, ls, media_server, "blind", annotators=people, overlap=2)
    na = _push(ws, project, ls, media_server, "anchored", annotators=people)
    assert nb.created + na.created == 3 and (nb.existing, na.existing) == (4, 4)
    assert admin.get(f"/api/projects/{blind.ls_project_id}")["total_predictions_number"] == 0

    # the admin token never appears in anything we print or log
    out = capsys.readouterr()
    assert ls.creds.token not in out.out + out.err
    assert ls.creds.token not in ls.server.log_tail(1 << 22)


def test_review_project_shows_tier1_annotations(ls: LS, steel_ws, media_server):
    ws, project, _ = steel_ws
    from truthline.store import now

    rows = []
    for k, it in enumerate(ws.store.items(project.name)[:6]):
        for who in ("a@x.org", "b@x.org"):
            rows.append(
                {
                    "project": project.name,
                    "item_id": it["id"],
                    "field_path": "scene_type",
                    "annotator": who,
                    "arm": "blind",
                    "tier": 1,
                    "value": "yard" if (who == "b@x.org" and k % 2) else "production",
                    "source": "import",
                    "source_id": f"imp:{it['id']}:{who}",
                    "stored_at": now(),
                }
            )
    with ws.store.begin() as conn:
        conn.execute(tables.annotations.insert(), rows)
    rep = _push(
        ws,
        project,
        ls,
        media_server,
        "review",
        sample=3,
        strategy="random",
        seed=1,
        annotators=["expert@x.org"],
    )
    assert rep.created == 3 and set(rep.sample_weights.values()) == {2.0}
    lt = [r for r in _rows(ws, tables.ls_tasks) if r["ls_project_id"] == rep.ls_project_id]
    assert len(lt) == 3 and all(r["sample_weight"] == 2.0 for r in lt)
    with ls.admin() as c:
        task = c.get(f"/api/tasks/{lt[0]['ls_task_id']}")
        versions = sorted(p["model_version"] for p in task["predictions"])
    # the adjudicator sees pseudonyms, never the tier-1 emails; the mapping is in the store
    assert versions == ["tier1:annotator A", "tier1:annotator B"]
    assert "@x.org" not in json.dumps(task)
    assert real_names(ws.store, project.name) == {
        "annotator A": "a@x.org",
        "annotator B": "b@x.org",
    }


def test_server_stopped_mid_push(tmp_path: Path, steel_ws, media_server):
    """The server dies after the first batch: clear error, stored batch kept, rerun completes."""
    ws, project, _ = steel_ws
    own = start_copy(tmp_path / "ls-own")
    try:
        client = own.admin()
        real_post = client.post
        calls = {"n": 0}

        def post(path, json=None, **params):
            if path.endswith("/import"):
                calls["n"] += 1
                if calls["n"] == 2:
                    own.server.stop()
            return real_post(path, json, **params)

        client.post = post  # type: ignore[method-assign]
        with pytest.raises(LabelStudioDown, match=r"not answering.*rerun"):
            push(
                ws.store,
                project,
                client,
                "blind",
                media_base=media_server.url,
                media_root=media_server.root,
                split=0.5,
                seed=3,
                batch=2,
                progress=False,
            )
        kept = _rows(ws, tables.ls_tasks)
        assert len(kept) == 2
        own.server.start(own.creds, progress=False)
        with own.admin() as c:
            rep = push(
                ws.store,
                project,
                c,
                "blind",
                media_base=media_server.url,
                media_root=media_server.root,
                batch=2,
                progress=False,
            )
            assert rep.created == 2 and rep.existing == 2
            assert c.get(f"/api/projects/{rep.ls_project_id}")["task_number"] == 4
        after = _rows(ws, tables.ls_tasks)
        assert after[:2] == kept and len({r["item_id"] for r in after}) == 4
    finally:
        own.server.stop()
