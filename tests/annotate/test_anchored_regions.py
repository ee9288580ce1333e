"""Anchored tasks annotators can correct (issue 26): every pre-annotated worker arrives as a
region with its values (VLM box, else a matched detector box, else a square to place), the
match is in the exposure log, a box without values and an empty annotation are refused at
pull (reported per task, kept out of the store), and a new box in a real browser gets its
controls (Label Studio's ``required`` per-region control) before it can be submitted."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from tests.annotate.test_annotate_cli import CHROMIUM
from truthline.annotate import (
    FIELD_SCHEMA,
    USERS_FILE,
    FieldUnit,
    add_users,
    get_kind,
    label_config,
    pull,
    push,
    submit_annotation,
    user_client,
)
from truthline.annotate._labelconfig import PLACEHOLDER, _heading
from truthline.annotate._regions import (
    KIND,
    place_entities,
    shown_entry,
    valueless_regions,
    with_placed_boxes,
)
from truthline.models import FrameRef
from truthline.models._scripted import ScriptedDetector
from truthline.prefill._mine import _percent_boxes
from truthline.store import tables

from .conftest import LS

DET = [  # the detector's person boxes on the key frame (percent)
    {"x": 60.0, "y": 20.0, "width": 10.0, "height": 30.0, "confidence": 0.9},
    {"x": 11.0, "y": 31.0, "width": 8.0, "height": 20.0, "confidence": 0.8},
    {"x": 35.0, "y": 25.0, "width": 9.0, "height": 25.0, "confidence": 0.7},
]


def _pred(project, n_boxed: int = 1, n: int = 3) -> dict:
    ft = project.field_types["workers"]
    ws = []
    for i in range(n):
        w = {"worker_id": f"W{i + 1}", "action": "A1", "helmet": "worn"}
        if i < n_boxed:  # the VLM placed this one, overlapping DET[1]
            w["box"] = [{"x": 10.0, "y": 30.0, "width": 8.0, "height": 20.0, "label": "worker"}]
        ws.append(w)
    return {"workers": ft.normalize(ws), "scene_type": "production"}


def test_vlm_box_claims_its_detector_box_the_rest_go_left_to_right(steel_ws):
    _ws, project, _ = steel_ws
    pred = _pred(project, n_boxed=1, n=4)
    placed, matches = place_entities(project, pred, {"person_boxes": DET})
    assert pred["workers"][1].get("box") is None  # the stored prediction is left alone
    by = {m.entity: m for m in matches}
    assert by["W1"].source == "vlm" and by["W1"].iou is not None and by["W1"].iou > 0.7
    # DET[1] (x=11) was claimed by W1; the free ones go in order left to right: x=35, x=60
    assert by["W2"].source == "detector" and by["W2"].box["x"] == 35.0
    assert by["W3"].source == "detector" and by["W3"].box["x"] == 60.0
    assert by["W4"].source == "none" and by["W4"].box is None
    ws = {w["worker_id"]: w for w in placed["workers"]}
    assert ws["W2"]["box"][0]["x"] == 35.0 and ws["W2"]["box"][0]["label"] == "worker"
    assert "box" not in ws["W4"] or not ws["W4"]["box"]
    # what the task showed can be rebuilt from the recorded matches (kept at pull)
    entry = shown_entry(matches)
    assert entry["kind"] == KIND
    again = with_placed_boxes(project, pred, [entry])
    ft = project.field_types["workers"]
    assert ft.agree(again["workers"], placed["workers"])
    assert not ft.agree(pred["workers"], placed["workers"])
    # no detections: nobody is placed, every boxless worker is a square to place
    _p, none = place_entities(project, pred, {})
    assert [m.source for m in none] == ["vlm", "none", "none", "none"]


def test_anchored_task_has_a_region_with_values_for_every_worker(steel_ws):
    _ws, project, _ = steel_ws
    pred = _pred(project, n_boxed=0, n=4)
    placed, _m = place_entities(project, pred, {"person_boxes": DET[:2]})
    task = get_kind(FIELD_SCHEMA).task(
        project, FieldUnit(1, "k", ["http://m/a.jpg"], "anchored", [("", placed)], placed)
    )
    res = task["predictions"][0]["result"]
    rects = [r for r in res if r["from_name"] == "workers"]
    assert len(rects) == 4  # every worker a region
    squares = [r for r in rects if r["value"]["width"] == PLACEHOLDER]
    assert len(squares) == 2  # two detector boxes, two squares to place
    for r in rects:  # each with its values set on the same region id
        vals = [x for x in res if x.get("id") == r["id"] and x["from_name"] == "workers__action"]
        assert vals and vals[0]["value"]["choices"] == ["A1"]
    note = task["data"]["workers__unboxed"]
    assert note.startswith("Workers: 2 pre-annotated without a box") and "A1" not in note


def test_config_requires_a_value_on_each_region(steel_ws):
    _ws, project, _ = steel_ws
    cfg = label_config(project)
    action = next(line for line in cfg.splitlines() if 'name="workers__action"' in line)
    assert 'required="true"' in action and 'whenTagName="workers"' in action
    helmet = next(line for line in cfg.splitlines() if 'name="workers__helmet"' in line)
    assert "required" not in helmet  # only one: optional values stay optional


def test_read_refuses_empty_and_valueless_boxes(steel_ws):
    _ws, project, _ = steel_ws
    kind = get_kind(FIELD_SCHEMA)
    box = {
        "id": "r1",
        "from_name": "workers",
        "to_name": "image",
        "type": "rectanglelabels",
        "value": {"x": 5, "y": 5, "width": 9, "height": 20, "rectanglelabels": ["worker"]},
    }
    scene = {
        "from_name": "scene_type",
        "to_name": "image",
        "type": "choices",
        "value": {"choices": ["production"]},
    }
    assert kind.read(project, "k", {"result": []}).refused.startswith("empty annotation")
    bare = kind.read(project, "k", {"result": [box, scene]})
    assert "boxes without values (workers region r1)" in bare.refused
    assert valueless_regions(project, [box, scene]) == ["workers region r1"]
    action = {
        "id": "r1",
        "from_name": "workers__action",
        "to_name": "image",
        "type": "choices",
        "value": dict(box["value"], choices=["A1"]),
    }
    ok = kind.read(project, "k", {"result": [box, action, scene]})
    assert ok.refused is None and ok.values["workers"][0]["action"] == "A1"
    assert kind.read(project, "k", {"result": [scene]}).refused is None  # no box: fine


def test_scripted_detector_boxes_reach_the_clip_meta(tmp_path: Path):
    script = tmp_path / "det.json"
    script.write_text('{"v.mp4": [[0, 2, 0.9, [[10, 20, 5, 40], [50, 10, 8, 30]]], [3, 4, 0.8]]}')
    det = ScriptedDetector.__new__(ScriptedDetector)
    from truthline.models._scripted import load_boxes, load_script

    det.script, det.boxes = load_script(script), load_boxes(script)
    img = np.zeros((100, 200, 3), np.uint8)
    dets = det.detect([FrameRef("v.mp4", 1.0, img), FrameRef("v.mp4", 3.5, img)])
    assert [(d.x, d.y, d.width, d.height) for d in dets[0]] == [(20, 20, 10, 40), (100, 10, 16, 30)]
    assert [(d.width, d.confidence) for d in dets[1]] == [(0, 0.8)]  # no box scripted
    boxes = _percent_boxes(dets[0], img, 0.25)
    assert [(b["x"], b["y"], b["width"], b["height"]) for b in boxes] == [
        (10, 20, 5, 40),
        (50, 10, 8, 30),
    ]
    assert _percent_boxes(dets[1], img, 0.25) == []  # a detection without a box is no box


def _strip_boxes_add_detections(ws, project) -> dict[int, list]:
    """The prefill placed only each item's first worker; the detector saw them all."""
    p, it = tables.predictions, tables.items
    dets = {}
    with ws.store.begin() as conn:
        for r in conn.execute(select(p.c.id, p.c.item_id, p.c["values"])).all():
            vals = copy.deepcopy(r.values)
            boxes = []
            for k, w in enumerate(vals["workers"]):
                b = dict(w["box"][0]) if w.get("box") else None
                if b is not None:
                    b.pop("label", None)
                    boxes.append(b | {"x": b["x"] + 0.5, "confidence": 0.9})
                if k:
                    w.pop("box", None)
            conn.execute(p.update().where(p.c.id == r.id).values(values=vals))
            meta = dict(conn.execute(select(it.c.meta).where(it.c.id == r.item_id)).scalar() or {})
            conn.execute(
                it.update().where(it.c.id == r.item_id).values(meta=meta | {"person_boxes": boxes})
            )
            dets[r.item_id] = boxes
    return dets


@pytest.mark.labelstudio
def test_anchored_push_places_records_and_pull_refuses(ls: LS, steel_ws, media_server):
    ws, project, _ = steel_ws
    dets = _strip_boxes_add_detections(ws, project)
    with ls.admin() as c:
        add_users(c, ["q1ann@example.com"], ws.secrets_dir / USERS_FILE)
        rep = push(
            ws.store,
            project,
            c,
            "anchored",
            media_base=media_server.url,
            media_root=media_server.root,
            split=1.0,
            annotators=["q1ann@example.com"],
            progress=False,
        )
        tasks = c.tasks_by_item(rep.ls_project_id)
    with ws.store.begin() as conn:
        lt = {r.item_id: r for r in conn.execute(select(tables.ls_tasks))}
        exps = {r.item_id: r for r in conn.execute(select(tables.exposures))}
        preds = {r.item_id: r for r in conn.execute(select(tables.predictions))}
    for item, boxes in dets.items():
        n = len(preds[item].values["workers"])
        matches = exps[item].shown[0]["matches"]
        assert exps[item].shown == lt[item].shown and exps[item].shown[0]["kind"] == KIND
        assert len(matches) == n
        if n:
            assert matches[0]["source"] == "vlm" and matches[0]["iou"] > 0.8
            assert all(m["source"] == "detector" for m in matches[1:]) and len(boxes) == n
    item = next(i for i, b in dets.items() if len(b) >= 2)
    with ls.admin() as c:
        task = c.get(f"/api/tasks/{tasks[item]}")
    res = task["predictions"][0]["result"]
    rects = [r for r in res if r["from_name"] == "workers"]
    assert len(rects) == len(dets[item]) and not any(
        r["value"]["width"] == PLACEHOLDER for r in rects
    )
    # three annotators' posts: kept as shown, a bare box, nothing at all
    items = list(tasks)
    shown_vals = with_placed_boxes(project, preds[item].values, lt[item].shown)
    uc = user_client(ls.url, "q1ann@example.com", ws.secrets_dir / USERS_FILE)
    with uc:
        submit_annotation(uc, project, tasks[item], shown_vals, 12.0, shown=shown_vals)
        bare = next(i for i in items if i != item)
        empty = next(i for i in items if i not in (item, bare))
        uc.post(
            f"/api/tasks/{tasks[bare]}/annotations/",
            {
                "result": [
                    {
                        "id": "new1",
                        "from_name": "workers",
                        "to_name": "image",
                        "type": "rectanglelabels",
                        "value": {
                            "x": 5,
                            "y": 5,
                            "width": 9,
                            "height": 20,
                            "rectanglelabels": ["worker"],
                        },
                    }
                ],
                "lead_time": 3.0,
            },
        )
        uc.post(f"/api/tasks/{tasks[empty]}/annotations/", {"result": [], "lead_time": 1.0})
    with ls.admin() as c:
        prep = pull(ws.store, project, c, progress=False)
    refused = {(r["item_id"], r["reason"].split(" (")[0]) for r in prep.refused}
    assert refused == {(bare, "boxes without values"), (empty, "empty annotation")}
    assert sum("refused" in p for p in prep.problems) == 2
    with ws.store.begin() as conn:
        rows = conn.execute(select(tables.annotations)).all()
    assert {r.item_id for r in rows} == {item}  # nothing of the refused ones is stored
    by = {r.field_path: r for r in rows}
    assert by["workers"].kept is True  # kept the detector boxes it was shown


@pytest.mark.labelstudio
def test_browser_new_box_gets_its_controls_before_submit(
    ls: LS, steel_ws, media_server, tmp_path: Path, artifacts_dir: Path
):
    """Real browser, default settings (a new region is not selected): draw a box on an
    anchored task and submit. Label Studio refuses (the required per-region control),
    selects the box and shows its controls; set the action, submit again, pull."""
    from playwright.sync_api import sync_playwright

    assert os.path.exists(CHROMIUM), "Debian chromium is required (scripts/test.sh installs it)"
    ws, project, _ = steel_ws
    _strip_boxes_add_detections(ws, project)
    with ls.admin() as c:
        [u] = add_users(c, ["q1web@example.com"], ws.secrets_dir / USERS_FILE)
        rep = push(
            ws.store,
            project,
            c,
            "anchored",
            media_base=media_server.url,
            media_root=media_server.root,
            split=1.0,
            annotators=["q1web@example.com"],
            progress=False,
        )
        tasks = c.tasks_by_item(rep.ls_project_id)
    with ws.store.begin() as conn:
        preds = {r.item_id: r.values for r in conn.execute(select(tables.predictions))}
    item = next(i for i in tasks if preds[i]["workers"])
    n_pred = len(preds[item]["workers"])
    import json

    password = json.loads((ws.secrets_dir / USERS_FILE).read_text())["q1web@example.com"][
        "password"
    ]
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "c")}
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            env=env,
            viewport={"width": 1400, "height": 1000},
            args=["--no-sandbox", "--disable-gpu", "--no-first-run"],
        )
        page = ctx.new_page()
        page.goto(f"{ls.url}/user/login/")
        page.fill("input[name=email]", "q1web@example.com")
        page.fill("input[name=password]", password)
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_url(lambda u: "/user/login" not in u, timeout=60_000)
        page.goto(f"{ls.url}/projects/{rep.ls_project_id}/data?task={tasks[item]}")
        canvas = page.locator(".konvajs-content").first
        canvas.wait_for(timeout=60_000)
        page.wait_for_timeout(2000)
        page.locator(".lsf-label", has_text="worker").first.click()  # the box label
        canvas.scroll_into_view_if_needed()  # the label sits below the image
        page.wait_for_timeout(300)
        bb = canvas.bounding_box()
        assert bb is not None
        x0, y0 = bb["x"] + bb["width"] * 0.80, bb["y"] + bb["height"] * 0.55
        page.mouse.move(x0, y0)
        page.mouse.down()
        page.mouse.move(x0 + 30, y0 + 40, steps=5)
        page.mouse.up()
        page.wait_for_timeout(500)
        sub = project.field_types["workers"].subfields["action"]
        action = page.get_by_text(_heading("action", sub), exact=True).first
        hidden_before = not action.is_visible()  # not selected: its controls are hidden
        page.get_by_role("button", name="Submit").click()
        page.wait_for_timeout(1500)
        page.screenshot(path=str(artifacts_dir / "ls-anchored-required.png"))
        modal = page.get_by_text("is not set for a selected box", exact=False)
        assert modal.first.is_visible()
        page.get_by_role("button", name="OK").first.click()
        modal.first.wait_for(state="hidden", timeout=10_000)
        assert action.is_visible()  # the refused box is selected: its controls show
        page.get_by_text("B5 working at ground level", exact=True).first.click()  # its action
        page.get_by_role("button", name="Submit").click()
        page.wait_for_timeout(3000)
        page.screenshot(path=str(artifacts_dir / "ls-anchored-submitted.png"))
        ctx.close()
    assert hidden_before
    with ls.admin() as c:
        prep = pull(ws.store, project, c, progress=False)
    assert prep.refused == [] and prep.new == 1
    with ws.store.begin() as conn:
        rows = conn.execute(
            select(tables.annotations).where(tables.annotations.c.field_path == "workers")
        ).all()
    [row] = rows
    assert len(row.value) == n_pred + 1
    new = [w for w in row.value if w["worker_id"].startswith("ls-")]
    assert len(new) == 1 and new[0]["action"] == "B5" and new[0]["box"][0]["x"] > 60
    assert u["email"] == "q1web@example.com"


def test_mining_keeps_the_middle_samples_person_boxes():
    from truthline.prefill._mine import MineConfig, Sample, VideoInfo, find_clips

    info = VideoInfo(path=Path("v.mp4"), video_id="v", camera="c")
    box = {"x": 1.0, "y": 2.0, "width": 3.0, "height": 4.0, "confidence": 0.9}
    samples = [
        Sample(float(t), 0.9, 1, None, [box | {"x": float(t)}] if t != 2 else []) for t in range(7)
    ] + [Sample(7.0, 0.0, 0)]
    [clip] = find_clips(info, 25.0, 200, samples, MineConfig())
    # the middle of 0..6 is t=3: its boxes (t=2 had none) are the key frame's
    assert clip.meta["person_boxes"] == [box | {"x": 3.0}] and clip.meta["persons"] == 1
    nobox = [Sample(float(t), 0.9, 1) for t in range(7)] + [Sample(7.0, 0.0, 0)]
    [clip] = find_clips(info, 25.0, 200, nobox, MineConfig())
    assert "person_boxes" not in clip.meta  # a detector without boxes adds none
