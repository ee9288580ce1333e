"""The release card's class table (a taxonomy field's classes with their gold instances)
and annotation density (fields, decisions and entities per item, per field), counted on a
planted gold whose numbers are known; with test answers withheld only train is counted."""

from __future__ import annotations

import json

import pytest

from tests.benchmark.conftest import add_items, write_gold
from truthline.benchmark._export import export_release
from truthline.workspace import Workspace

E = "expert"


def _gold(ids: list[int]) -> dict[int, dict]:
    """Item 0: 2 workers, 1 scene + 6 entity fields; item 1: 1 worker, 1 + 2; item 2: 1
    worker, 1 + 1. Actions A1, B1 | A1 | B1."""
    a, b, c = ids
    return {
        a: {
            "worker_count": (2, E),
            "workers": (["P1", "P2"], E),
            "workers[P1].action": ("A1", E),
            "workers[P2].action": ("B1", E),
            "workers[P1].helmet": ("worn", E),
            "workers[P2].helmet": ("not_worn", E),
            "workers[P1].safety_violation": (False, E),
            "workers[P2].safety_violation": (True, E),
        },
        b: {
            "worker_count": (1, E),
            "workers": (["P1"], E),
            "workers[P1].action": ("A1", E),
            "workers[P1].safety_violation": (False, E),
        },
        c: {
            "worker_count": (1, E),
            "workers": (["P1"], E),
            "workers[P1].action": ("B1", E),
        },
    }


@pytest.fixture
def planted(tmp_path):
    ws = Workspace.from_env(tmp_path / "ws")
    project = ws.init_project("steel-safety")
    ids = [iid for iid, _ in add_items(ws, project.name, 3)]
    per_item = _gold(ids)
    write_gold(ws.store, project.name, per_item, {i: "blind" for i in ids})
    yield ws, project, ids
    ws.store.close()


def test_class_table_and_density_in_card_and_datasheet(planted, tmp_path):
    ws, project, _ = planted
    out = tmp_path / "rel"
    export_release(ws.store, project, out)
    sheet = json.loads((out / "datasheet.json").read_text())
    (actions,) = [t for t in sheet["classes"] if t["field"] == "workers.action"]
    counts = {c["code"]: c["count"] for c in actions["classes"]}
    assert counts["A1"] == 2 and counts["B1"] == 2
    assert sum(counts.values()) == 4 == actions["decisions"] and actions["other"] == 0
    assert len(counts) == len(project.taxonomies["actions"].classes)
    a1 = next(c for c in actions["classes"] if c["code"] == "A1")
    assert (a1["group"], a1["group_name"], a1["name"]) == ("A", "locomotion", "walking")

    d = sheet["density"]
    assert (d["clips"], d["decisions"]) == (3, 15)
    assert d["fields_per_clip"] == {"mean": 4.0, "min": 2, "max": 7}
    assert d["scene_fields_per_clip"] == {"mean": 1.0, "min": 1, "max": 1}
    assert d["entity_fields_per_clip"] == {"mean": 3.0, "min": 1, "max": 6}
    assert d["decisions_per_clip"] == {"mean": 5.0, "min": 3, "max": 8}
    assert d["entities_per_clip"]["mean"] == pytest.approx(4 / 3)
    fields = {f["field"]: f for f in d["fields"]}
    assert fields["workers.action"]["level"] == "per-entity"
    assert (fields["workers.action"]["clips"], fields["workers.action"]["decisions"]) == (3, 4)
    assert fields["workers.helmet"]["clips"] == 1 and fields["workers.helmet"]["decisions"] == 2
    assert fields["worker_count"]["level"] == "scene"
    assert fields["worker_count"]["type"] == "number"
    assert fields["workers"]["level"] == "entity list"

    card = (out / "public" / "README.md").read_text()
    assert "## Classes" in card and "### `workers.action` (taxonomy `actions`)" in card
    assert "| `A1` | A (locomotion) | walking |  | 2 |" in card
    assert "| `C1` |" in card  # a class without instances is listed with 0
    assert "## Annotation density" in card
    assert "| fields (scene-level + per-entity) | 4.0 | 2 | 7 |" in card
    assert "| `workers.action` | per-entity | single_choice | 3 | 4 | 1.33 |" in card
    assert "over all released items (3 items, 15 gold decisions" in card


def test_withheld_test_answers_count_train_only(planted, tmp_path):
    ws, project, _ = planted
    out = tmp_path / "rel"
    rel = export_release(ws.store, project, out, hide_test_answers=True, test_fraction=0.34)
    train = rel["splits"]["items"]["train"]
    assert 0 < train < 3
    sheet = json.loads((out / "datasheet.json").read_text())
    assert sheet["density"]["clips"] == train
    assert sheet["composition_of"].startswith("train split only")
    assert "over train split only" in (out / "public" / "README.md").read_text()
