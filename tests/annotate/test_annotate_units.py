"""Label config mapping, value <-> result conversion, arm assignment, review sampling,
server start-up guards — without a Label Studio server (the media server: test_media_server)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from truthline.annotate import (
    assign_arms,
    label_config,
    results_to_values,
    task_data,
    values_to_results,
)
from truthline.annotate._labelconfig import is_placeholder, placeholder_box
from truthline.annotate._push import _sample_review
from truthline.annotate._server import Credentials, LocalServer
from truthline.errors import TruthlineError
from truthline.project import load_project

ALL_TYPES = """
name = "alltypes"
media = "image"
[fields.kind]
type = "single_choice"
choices = ["a", "b", "c"]
[fields.tags]
type = "multi_choice"
choices = ["x", "y", "z"]
[fields.ok]
type = "boolean"
[fields.count]
type = "number"
integer = true
min = 0
max = 50
[fields.plate]
type = "reading"
normalizations = ["case"]
[fields.note]
type = "text"
[fields.boxes]
type = "region"
labels = ["car", "person"]
[fields.people]
type = "entity_list"
key = "pid"
[fields.people.fields.pid]
type = "reading"
[fields.people.fields.box]
type = "region"
labels = ["person"]
[fields.people.fields.role]
type = "single_choice"
choices = ["driver", "walker"]
[fields.people.fields.age]
type = "number"
[fields.people.fields.masked]
type = "boolean"
"""


@pytest.fixture
def all_types(tmp_path: Path):
    (tmp_path / "alltypes").mkdir()
    (tmp_path / "alltypes" / "project.toml").write_text(ALL_TYPES)
    return load_project(tmp_path / "alltypes")


FULL = {
    "kind": "b",
    "tags": ["x", "z"],
    "ok": False,
    "count": 7,
    "plate": "ab 12",
    "note": "two cars",
    "boxes": [
        {"x": 1, "y": 2, "width": 3, "height": 4, "label": "car"},
        {"x": 50, "y": 20, "width": 10, "height": 30, "label": "person"},
    ],
    "people": [
        {
            "pid": "p1",
            "box": [{"x": 5, "y": 5, "width": 10, "height": 20, "label": "person"}],
            "role": "driver",
            "age": 31.5,
            "masked": True,
        },
        {"pid": "p2", "role": "walker"},  # no box: shown as a placeholder
    ],
}


def test_config_has_one_control_per_field_with_per_region_subfields(all_types):
    cfg = label_config(all_types)
    assert '<Choices name="kind" toName="image" choice="single-radio"' in cfg
    assert '<Choices name="tags" toName="image" choice="multiple"' in cfg
    assert '<Choice value="yes"/><Choice value="no"/>' in cfg
    assert '<Number name="count" toName="image" min="0" max="50" step="1"/>' in cfg
    assert '<TextArea name="plate"' in cfg and '<TextArea name="note"' in cfg
    assert (
        '<RectangleLabels name="boxes" toName="image"><Label value="car"/><Label value="person"/>'
        in cfg
    )
    assert '<RectangleLabels name="people" toName="image"><Label value="person"/>' in cfg
    for sub in ("people__pid", "people__role", "people__age", "people__masked"):
        assert f'name="{sub}"' in cfg
        line = next(x for x in cfg.splitlines() if f'name="{sub}"' in x)
        assert 'perRegion="true"' in line
    assert "people__box" not in cfg  # the box IS the region


def test_roundtrip_every_field_type(all_types):
    # an API post (simulated annotators) keeps a boxless entity as a placeholder square
    res = values_to_results(all_types, FULL, placeholders=True)
    conv = results_to_values(all_types, res)
    assert conv.problems == []
    for name, ft in all_types.field_types.items():
        assert conv.values[name] == ft.normalize(FULL[name]), name
    # the boxless entity came back without a box, not with the placeholder square
    p2 = next(e for e in conv.values["people"] if e["pid"] == "p2")
    assert "box" not in p2


def test_missing_fields_read_back_as_missing_or_empty(all_types):
    conv = results_to_values(all_types, values_to_results(all_types, {"kind": "a"}))
    assert conv.values["kind"] == "a"
    assert conv.values["tags"] is None and conv.values["count"] is None
    assert conv.values["boxes"] == [] and conv.values["people"] == []


def test_malformed_results_are_reported_and_skipped(all_types):
    res = values_to_results(all_types, {"kind": "a", "count": 3})
    res.append(
        {"from_name": "nope", "to_name": "image", "type": "choices", "value": {"choices": ["a"]}}
    )
    res.append(
        {"from_name": "count", "to_name": "image", "type": "number", "value": {"number": "many"}}
    )
    res.append(
        {"from_name": "kind", "to_name": "image", "type": "choices", "value": {"choices": ["zzz"]}}
    )
    conv = results_to_values(all_types, res)
    assert len(conv.problems) == 3
    assert any("unknown from_name 'nope'" in p for p in conv.problems)
    assert any(p.startswith("result 3 (count)") for p in conv.problems)
    # the good results are kept: the later bad ones did not overwrite them
    assert conv.values["kind"] == "a" and conv.values["count"] == 3


def test_drawn_region_without_key_gets_region_id_key(all_types):
    res = [
        {
            "id": "abc",
            "from_name": "people",
            "to_name": "image",
            "type": "rectanglelabels",
            "value": {
                "x": 40,
                "y": 40,
                "width": 5,
                "height": 5,
                "rotation": 0,
                "rectanglelabels": ["person"],
            },
            "origin": "manual",
        },
        {
            "id": "abc",
            "from_name": "people__role",
            "to_name": "image",
            "type": "choices",
            "value": {"x": 40, "y": 40, "width": 5, "height": 5, "choices": ["walker"]},
        },
    ]
    conv = results_to_values(all_types, res)
    assert conv.values["people"] == [
        {
            "pid": "ls-abc",
            "role": "walker",
            "box": [{"x": 40.0, "y": 40.0, "width": 5.0, "height": 5.0, "label": "person"}],
        }
    ]
    assert conv.origins["people"] == "manual"


def test_origins_merge_to_the_most_changed(all_types):
    res = values_to_results(all_types, FULL, origin="prediction")
    res[-1]["origin"] = "prediction-changed"
    conv = results_to_values(all_types, res)
    assert conv.origins["kind"] == "prediction"
    assert conv.origins["people"] == "prediction-changed"


def test_placeholder_slots():
    for i in (0, 5, 13, 30):
        assert is_placeholder(placeholder_box(i))
    assert not is_placeholder({"x": 1.5, "y": 1, "width": 6, "height": 6})
    assert not is_placeholder({"x": 1, "y": 1, "width": 7, "height": 6})


def test_steel_config_and_roundtrip(steel_project):
    cfg = label_config(steel_project)
    # the class name is shown, the code stored (alias); the hint names the group
    assert '<Choice value="B1 operating equipment" alias="B1" hint="stationary work"/>' in cfg
    truth = {
        "scene_type": "yard",
        "worker_count": 1,
        "visibility": ["dust", "glare"],
        "workers": [
            {
                "worker_id": "P1",
                "action": "C2",
                "helmet": "cannot_tell",
                "spatial_context": ["elevated", "crane_zone"],
                "safety_violation": True,
                "violation_rule": "UA-G-07",
                "occlusion": "heavy",
            }
        ],
    }
    res = values_to_results(steel_project, truth, placeholders=True)  # P1 has no box
    conv = results_to_values(steel_project, res)
    assert conv.problems == []
    for k, v in truth.items():
        assert conv.values[k] == steel_project.field_types[k].normalize(v)


def test_frames_config_shows_the_whole_clip_beside_the_key_frame(steel_project):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(label_config(steel_project))
    images = {el.get("name"): el for el in root.iter("Image")}
    # boxes and every control point at the key frame; the clip viewer gets every frame
    assert images["image"].get("value") == "$image"
    assert images["clip"].get("value") == "$frames" and images["clip"].get("valueList") is None
    targets = {el.get("toName") for el in root.iter() if el.get("toName")}
    assert targets == {"image"}
    urls = [f"http://m/clip/{i:02d}.jpg" for i in range(8)]
    data = task_data(steel_project, 7, urls, "BF-1/clip_0002")
    assert data["image"] == urls[4] and data["frames"] == urls
    assert data["frames_note"].startswith("BF-1/clip_0002: key frame 5 of 8")


def test_frames_results_with_item_index_read_back_the_same(steel_project):
    truth = {
        "scene_type": "yard",
        "workers": [
            {
                "worker_id": "P1",
                "action": "C2",
                "box": [{"x": 10, "y": 30, "width": 8, "height": 20, "label": "worker"}],
            }
        ],
    }
    plain = values_to_results(steel_project, truth)
    # as a multi-image object would export them: the frame index on every region result
    indexed = [r | {"item_index": 4} if "id" in r else r for r in plain]
    a, b = results_to_values(steel_project, plain), results_to_values(steel_project, indexed)
    assert a.problems == [] and b.problems == []
    assert a.values == b.values
    assert a.values["workers"][0]["box"][0]["x"] == 10.0


def test_a_field_named_like_an_object_tag_is_refused(tmp_path):
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "project.toml").write_text(
        'name = "f"\nmedia = "frames"\n[fields.clip]\ntype = "boolean"\n'
    )
    with pytest.raises(TruthlineError, match="clip: the name 'clip' is taken"):
        label_config(load_project(tmp_path / "f"))


def test_video_projects_refuse_regions(tmp_path):
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "project.toml").write_text(
        'name = "v"\nmedia = "video"\n[fields.b]\ntype = "region"\nlabels = ["x"]\n'
    )
    with pytest.raises(TruthlineError, match="b: region fields need an image"):
        label_config(load_project(tmp_path / "v"))


# -- arm assignment and review sampling ---------------------------------------------------------
def test_assignment_is_counterbalanced_seeded_and_permanent(steel_ws):
    ws, project, _ = steel_ws
    arms = assign_arms(ws.store, project, split=0.5, seed=11)
    assert len(arms) == 8
    assert sorted(arms.values()).count("anchored") == 4
    from sqlalchemy import select

    from truthline.store import tables

    with ws.store.begin() as conn:
        seeds = {r[0] for r in conn.execute(select(tables.arm_assignments.c.seed))}
    assert seeds == {11}
    again = assign_arms(ws.store, project, split=0.9, seed=99)  # existing ones never move
    assert again == arms


def test_assignment_differs_by_seed(steel_ws):
    ws, project, _ = steel_ws
    from truthline.store import tables

    outcomes = set()
    for seed in range(5):
        with ws.store.begin() as conn:
            conn.execute(tables.arm_assignments.delete())
        arms = assign_arms(ws.store, project, split=0.5, seed=seed)
        assert list(arms.values()).count("anchored") == 4
        outcomes.add(tuple(sorted(arms.items())))
    assert len(outcomes) > 1


def test_random_review_sample_weights(steel_project):
    cands = list(range(100))
    pick, w = _sample_review(None, steel_project, cands, {}, 20, "random", seed=0)
    assert len(pick) == 20 and set(w.values()) == {5.0}


def test_risk_sampling_is_unbiased(steel_project):
    """Horvitz-Thompson: sum of weights over the sample estimates the population size."""
    risky = [("a", {"scene_type": "yard"}), ("b", {"scene_type": "production"})]
    calm = [("a", {"scene_type": "yard"}), ("b", {"scene_type": "yard"})]
    tier1 = {i: (risky if i % 4 == 0 else calm) for i in range(200)}
    totals, risky_share = [], []
    for seed in range(200):
        pick, w = _sample_review(None, steel_project, list(tier1), tier1, 40, "risk", seed)
        totals.append(sum(w.values()))
        risky_share.append(np.mean([i % 4 == 0 for i in pick]))
    assert abs(np.mean(totals) - 200) < 6
    assert np.mean(risky_share) > 0.5  # risky items (25 %) are over-sampled


# -- server guards --------------------------------------------------------------------------------
def test_credentials_never_show_secrets(tmp_path):
    c = Credentials.new("http://127.0.0.1:1")
    assert c.token not in repr(c) and c.password not in repr(c)
    c.save(tmp_path / "c.json")
    assert (tmp_path / "c.json").stat().st_mode & 0o777 == 0o600
    assert json.loads((tmp_path / "c.json").read_text())["token"] == c.token


def test_busy_port_is_refused(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        server = LocalServer(tmp_path / "ls", port=port)
        with pytest.raises(TruthlineError, match=f"port {port} on 127.0.0.1 is taken"):
            server.start(Credentials.new(server.url), progress=False)
    assert not (tmp_path / "ls" / "server.pid").exists()


# -- HTTP client: personal access tokens and secrets in errors ------------------------------------
def test_client_refreshes_personal_access_tokens_and_redacts_errors():
    import httpx

    from truthline.annotate import LabelStudioDown, LabelStudioError, LSClient

    pat = "eyJhbGciOiJIUzI1NiJ9.eyJ0b2tlbl90eXBlIjoicmVmcmVzaCJ9.c2lnbmF0dXJl"
    seen = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append((req.url.path, req.headers.get("Authorization")))
        if req.url.path == "/api/token/refresh/":
            assert json.loads(req.content) == {"refresh": pat}
            return httpx.Response(200, json={"access": "ACCESS1"})
        if req.url.path == "/api/fail":
            return httpx.Response(403, text=f"bad token {pat}")
        return httpx.Response(200, json={"email": "a@b.c"})

    c = LSClient("http://127.0.0.1:1", pat)
    c._http = httpx.Client(base_url=c.url, transport=httpx.MockTransport(handler))
    assert c.whoami() == {"email": "a@b.c"}
    assert seen == [("/api/token/refresh/", None), ("/api/current-user/whoami", "Bearer ACCESS1")]
    with pytest.raises(LabelStudioError) as e:
        c.get("/api/fail")
    assert (
        pat not in str(e.value) and "***" in str(e.value) and "check the API token" in str(e.value)
    )

    legacy = LSClient("http://127.0.0.1:1", "abc123legacytoken")
    legacy._http = httpx.Client(base_url=legacy.url, transport=httpx.MockTransport(handler))
    legacy.whoami()
    assert seen[-1] == ("/api/current-user/whoami", "Token abc123legacytoken")
    assert "abc123legacytoken" not in repr(legacy)

    down = LSClient(f"http://127.0.0.1:{_closed_port()}", "abc123legacytoken")
    with pytest.raises(LabelStudioDown, match="not answering") as e2:
        down.whoami()
    assert "abc123legacytoken" not in str(e2.value)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_first_start_progress_counts_applied_migrations(tmp_path):
    import sqlite3

    server = LocalServer(tmp_path, port=1)
    assert server.migrations_applied() == 0
    with sqlite3.connect(tmp_path / "label_studio.sqlite3") as c:
        c.execute("CREATE TABLE django_migrations (id INTEGER PRIMARY KEY, app TEXT, name TEXT)")
        c.executemany(
            "INSERT INTO django_migrations (app, name) VALUES (?, ?)",
            [("a", str(i)) for i in range(7)],
        )
    assert server.migrations_applied() == 7
