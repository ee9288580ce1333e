"""Annotation layers (SteelBench App. A: more than 5 workers -> Layer 1, scene fields only;
1..5 workers -> Layer 2, also every worker's fields) on planted items whose answer is known.

The ``crew`` project below declares ``[layers]`` with ``max_count = 2``: an item counting 3
people is Layer 1, one counting 2 (or 1) is Layer 2, one without the count has no layer.
Checked: the layer of each item; errors naming the file and key; the label config (the crew
list's labels come from the task: none on Layer 1) and the tasks of both layers, anchored
predictions cut to the layer; at pull, a Layer 1 annotation with per-person values is
reported out of layer and a Layer 2 one missing a per-person value is reported per task;
at finalize, the out-of-layer values stay out of gold and agreement (counted) and the
incomplete Layer 2 clip is schema-invalid; the per-layer accuracy table and Fig. 12 on
Layer 2 only, on planted SteelBench decisions.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from truthline.annotate import (
    FieldSchemaKind,
    FieldUnit,
    instructions,
    label_config,
    task_data,
)
from truthline.annotate._labelconfig import values_to_results
from truthline.annotate._pull import PullReport, _pull_project
from truthline.audit import finalize
from truthline.audit._data import load
from truthline.benchmark import _metrics as M
from truthline.errors import ProjectError
from truthline.project import Project, item_layer, load_project
from truthline.store import Store, now, tables
from truthline.systems.steelbench import _tables as T
from truthline.workspace import templates_dir

CREW_FIELDS = """
[fields.scene]
type = "single_choice"
choices = ["yard", "shop"]

[fields.crew]
type = "entity_list"
key = "id"

[fields.crew.fields.id]
type = "reading"

[fields.crew.fields.box]
type = "region"
labels = ["person"]

[fields.crew.fields.helmet]
type = "single_choice"
choices = ["worn", "not_worn"]

[fields.crew.fields.note]
type = "text"
"""
CREW_TOML = f"""
name = "crew"
media = "image"

[layers]
count = "people"
max_count = 2
entity = "crew"
require = ["crew.helmet"]
{CREW_FIELDS}"""


def _project(tmp_path: Path, text: str, name: str = "crew") -> Project:
    d = tmp_path / name
    d.mkdir()
    (d / "project.toml").write_text(text)
    return load_project(d)


@pytest.fixture
def crew(tmp_path: Path) -> Project:
    return _project(tmp_path, CREW_TOML)


def _box(x: float) -> list[dict[str, Any]]:
    return [{"x": x, "y": 20, "width": 10, "height": 30, "label": "person"}]


def _worker(wid: str, x: float, helmet: str | None = "worn") -> dict[str, Any]:
    w: dict[str, Any] = {"id": wid, "box": _box(x)}
    if helmet is not None:
        w["helmet"] = helmet
    return w


# -- the layer of an item -------------------------------------------------------------------
def test_planted_items_with_3_and_8_workers_are_layers_2_and_1():
    steel = load_project(templates_dir() / "steel-safety")
    three, eight = item_layer(steel, {"persons": 3}), item_layer(steel, {"persons": 8})
    assert three is not None and eight is not None
    assert (three.layer, three.count, three.out_of_layer) == (2, 3, ())
    assert "workers" in three.asked and "workers.helmet" in three.required
    assert (eight.layer, eight.out_of_layer, eight.required) == (1, ("workers",), ())
    assert "workers" not in eight.asked and "worker_count" in eight.asked
    assert item_layer(steel, {"persons": 5}).layer == 2  # the boundary is inclusive
    assert item_layer(steel, {"persons": 0}).layer == 1  # nobody to annotate per person
    assert item_layer(steel, {"persons": ["P1", "P2"]}).layer == 2  # a list counts by length
    assert item_layer(steel, {"persons": "6"}).layer == 1  # a CSV column is text
    assert item_layer(steel, {}) is None and item_layer(steel, {"persons": "many"}) is None


def test_layers_table_errors_name_the_file_and_the_key(tmp_path: Path):
    bad = CREW_TOML.replace('entity = "crew"', 'entity = "scene"')
    with pytest.raises(ProjectError) as exc:
        _project(tmp_path, bad, "bad1")
    assert "project.toml: layers.entity: 'scene' is not an entity-list field" in str(exc.value)
    assert "(entity lists: crew)" in str(exc.value)
    bad = CREW_TOML.replace('require = ["crew.helmet"]', 'require = ["crew.vest"]')
    with pytest.raises(ProjectError, match=r"layers\.require\.0: 'crew\.vest' is not a subfield"):
        _project(tmp_path, bad, "bad2")
    bad = CREW_TOML.replace("max_count = 2", "max_count = 0")
    with pytest.raises(ProjectError, match=r"layers\.max_count"):
        _project(tmp_path, bad, "bad3")
    bad = CREW_TOML.replace("max_count = 2", "max_count = 2\nmaximum = 3")
    with pytest.raises(ProjectError, match=r"layers\.maximum: unknown setting"):
        _project(tmp_path, bad, "bad4")


# -- Label Studio: config and tasks ---------------------------------------------------------
def test_config_takes_the_crew_labels_from_the_task(crew, tmp_path: Path):
    root = ET.fromstring(label_config(crew))
    (rl,) = [el for el in root.iter("RectangleLabels") if el.get("name") == "crew"]
    assert rl.get("value") == "$crew__labels" and list(rl) == []  # no static label
    # the per-person controls exist only inside the region-selected view
    (view,) = [el for el in root.iter("View") if el.get("visibleWhen") == "region-selected"]
    assert {el.get("name") for el in view.iter() if el.get("perRegion")} == {
        "crew__id",
        "crew__helmet",
        "crew__note",
    }
    assert any(el.get("value") == "$crew__layer" for el in root.iter("Header"))
    page = instructions(crew, "blind")
    assert "a clip with 1 to 2 counted is Layer 2" in page and "annotate the scene only" in page
    # a project without [layers] keeps its static labels
    plain = _project(tmp_path, 'name = "plain"\nmedia = "image"\n' + CREW_FIELDS, "plain")
    assert '<RectangleLabels name="crew" toName="image"><Label value="person"/>' in label_config(
        plain
    )
    assert "crew__labels" not in task_data(plain, 1, ["http://m/a.jpg"], "a")
    assert "Layers:" not in instructions(plain, "blind")


def test_layer_1_task_has_no_person_labels_and_layer_2_all(crew):
    one, two = item_layer(crew, {"people": 3}), item_layer(crew, {"people": 2})
    d1 = task_data(crew, 1, ["http://m/a.jpg"], "big", layer=one)
    assert d1["crew__labels"] == []
    assert d1["crew__layer"].startswith("Layer 1 clip (3 counted, more than 2)")
    d2 = task_data(crew, 2, ["http://m/b.jpg"], "small", layer=two)
    assert d2["crew__labels"] == [{"value": "person"}]
    assert d2["crew__layer"].startswith("Layer 2 clip (2 counted)")
    d0 = task_data(crew, 3, ["http://m/c.jpg"], "nocount")  # no count: everything, no note
    assert d0["crew__labels"] == [{"value": "person"}] and d0["crew__layer"] == ""

    pred = {"scene": "yard", "crew": [_worker("W1", 10), _worker("W2", 50)]}
    kind = FieldSchemaKind()

    def predicted(layer: Any) -> set[str]:
        unit = FieldUnit(1, "k", ["http://m/a.jpg"], "anchored", [("", pred)], pred, layer)
        (p,) = kind.task(crew, unit)["predictions"]
        return {r["from_name"] for r in p["result"]}

    assert predicted(one) == {"scene"}  # no person region on a Layer 1 task
    assert predicted(two) == {"scene", "crew", "crew__id", "crew__helmet"}
    assert predicted(None) == predicted(two)


# -- pull, audit and gold -------------------------------------------------------------------
PEOPLE = {"big": 3, "small": 2, "ok": 1}
"""Planted items: ``big`` is Layer 1, ``small`` and ``ok`` Layer 2."""
ANNOTATIONS = {
    # task id: (item, annotator, values)
    11: ("big", "a@x.org", {"scene": "yard", "crew": [_worker("W1", 10)]}),
    12: ("big", "b@x.org", {"scene": "yard", "crew": [_worker("W1", 60, "not_worn")]}),
    13: ("small", "a@x.org", {"scene": "shop", "crew": [_worker("W1", 10), _worker("W2", 50, None)]}),
    14: ("ok", "a@x.org", {"scene": "shop", "crew": [_worker("W1", 10)]}),
    15: ("ok", "b@x.org", {"scene": "shop", "crew": [_worker("W1", 10)]}),
}  # fmt: skip


@pytest.fixture
def pulled(crew, tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'layers.db'}")
    store.upsert_project(crew)
    ts = now()
    with store.begin() as conn:
        conn.execute(
            tables.items.insert(),
            [
                dict(project="crew", key=k, media_kind="image", media=[], media_root="",
                     content_hash=k, meta={"people": n}, created_at=ts, updated_at=ts)
                for k, n in PEOPLE.items()
            ],
        )  # fmt: skip
    ids = store.item_ids_by_key("crew")
    tasks = [
        {
            "id": tid,
            "data": {"item_id": ids[key]},
            "annotations": [
                {
                    "id": 100 + tid,
                    "completed_by": {"email": who},
                    "result": values_to_results(crew, vals),
                    "created_at": "2026-01-01T00:00:00Z",
                }
            ],
        }
        for tid, (key, who, vals) in ANNOTATIONS.items()
    ]
    client = SimpleNamespace(url="http://ls.test")
    row = SimpleNamespace(ls_project_id=7, arm="blind", cohort="")
    rep = PullReport()
    _pull_project(store, crew, client, row, tasks, {}, rep)  # type: ignore[arg-type]
    yield store, ids, rep
    store.close()


def test_pull_reports_out_of_layer_values_and_missing_per_person_values(pulled):
    _store, _ids, rep = pulled
    assert rep.new == len(ANNOTATIONS)
    issues = {(i["ls_task_id"], i["item"]): i for i in rep.layer_issues}
    assert set(issues) == {(11, "big"), (12, "big"), (13, "small")}
    assert issues[(11, "big")]["layer"] == 1 and issues[(11, "big")]["out_of_layer"] == ["crew"]
    assert issues[(13, "small")]["missing"] == ["crew[W2].helmet"]
    assert issues[(13, "small")]["out_of_layer"] == []
    lines = [p for p in rep.problems if "task 13" in p]
    assert lines == [
        "Label Studio project 7, task 13, annotation 113: Layer 2 item (2 counted): "
        "required per-entity values missing: crew[W2].helmet"
    ]
    assert any("task 11" in p and "out of layer" in p for p in rep.problems)


def test_out_of_layer_values_stay_out_of_gold_and_agreement(pulled, crew):
    store, ids, _rep = pulled
    # the out-of-layer values are kept in the store, not dropped
    with store.begin() as conn:
        kept = conn.execute(
            tables.annotations.select().where(
                tables.annotations.c.item_id == ids["big"],
                tables.annotations.c.field_path == "crew",
            )
        ).all()
    assert len(kept) == 2 and all(r.value for r in kept)
    data = load(store, crew)
    assert set(data.out_of_layer.values()) == {("crew",)} and len(data.out_of_layer) == 2
    big = [a for a in data.annotations if a.item == ids["big"]]
    assert big and all(not p.startswith("crew") for a in big for p in a.values)
    res = finalize(store, crew)
    gold = {(g.item, g.path): g.value for g in res.values}
    # big: scene gold only (the two annotators' conflicting W1 helmets never meet)
    assert {p for i, p in gold if i == ids["big"]} == {"scene"}
    assert not [p for p in res.pending if p.item == ids["big"]]
    assert res.out_of_layer == {ids["big"]: 2}
    assert res.counts()["out_of_layer_annotations"] == 2
    # small: its Layer 2 annotation lacks W2's helmet -> no gold, schema-invalid
    assert res.unusable == {ids["small"]: "schema_invalid"}
    # ok: complete Layer 2 -> per-person gold
    assert gold[(ids["ok"], "crew[W1].helmet")] == "worn"


# -- benchmark: per-layer accuracy, Fig. 12 on Layer 2 ----------------------------------------
def _dec(project: Project, item: str, persons: int, path: str, gold: Any, pred: Any) -> dict:
    leaf = path.split("]")[-1].lstrip(".")
    field = f"workers.{leaf}" if "[" in path else path
    ft = project.field(field)
    g, p = ft.normalize(gold), ft.normalize(pred)
    return {
        "model": "m",
        "variant": "",
        "condition": "base",
        "control": "",
        "item_id": item,
        "parent": f"video_{item}",
        "stratum": None,
        "path": path,
        "field": field,
        "entity": path[path.index("[") + 1 : path.index("]")] if "[" in path else None,
        "gold": g,
        "pred": p,
        "correct": bool(ft.agree(p, g)),
        "credit": float(ft.credit(p, g)),
        "provenance": "expert",
        "status": "parsed",
        "confidence": None,
        "meta": {"camera": "A", "site": "X", "visibility": "clear", "persons": persons},
    }


def _planted_run(steel: Project) -> pd.DataFrame:
    """Layer 2: s1 (1 person; count right, P1 right), s2 (2 persons; count wrong, P1 right,
    P2 wrong); Layer 1: b1, b2 (8 persons; counts right, wrong), and b3 (8 persons in its
    metadata, yet 2 per-worker decisions, both right, from an older gold)."""
    rows = [
        _dec(steel, "s1", 1, "worker_count", 1, 1),
        _dec(steel, "s1", 1, "workers[P1].action", "A1", "A1"),
        _dec(steel, "s2", 2, "worker_count", 2, 3),
        _dec(steel, "s2", 2, "workers[P1].action", "A1", "A1"),
        _dec(steel, "s2", 2, "workers[P2].action", "A1", "F1"),
        _dec(steel, "b1", 8, "worker_count", 8, 8),
        _dec(steel, "b2", 8, "worker_count", 8, 7),
        _dec(steel, "b3", 8, "workers[P1].action", "A1", "A1"),
        _dec(steel, "b3", 8, "workers[P2].action", "A1", "A1"),
    ]
    return pd.DataFrame(rows)


def test_per_layer_accuracy_and_worker_count_on_layer_2_only():
    steel = load_project(templates_dir() / "steel-safety")
    rs = M.Resampling(100, 0)
    d = _planted_run(steel)
    acc = {r.layer: r for r in T.layer_accuracy(steel, d, rs)}
    assert set(acc) == {1, 2}
    assert (acc[2].clips, acc[2].decisions, acc[2].accuracy.point) == (2, 5, 0.6)
    assert (acc[1].clips, acc[1].decisions, acc[1].accuracy.point) == (3, 4, 0.75)
    # Fig. 12: b3 (Layer 1 by its metadata) is out; k=1: 1/1, k=2: 1/2
    (t,) = T.layer2_worker_trends(steel, d, rs, min_decisions=1)
    assert [(b.workers, b.clips, b.decisions, b.accuracy.point) for b in t.bins] == [
        (1, 1, 1, 1.0),
        (2, 1, 2, 0.5),
    ]
    (every,) = T.worker_trends(steel, d, rs, min_decisions=1)  # without the layer rule
    assert [(b.workers, b.clips) for b in every.bins] == [(1, 1), (2, 2)]
    (sec,) = T.layer_sections(T.layer_tables(steel, d, rs) | {"labels": {"m": "m"}})
    assert sec.title == "SteelBench: accuracy per annotation layer (App. A)"
    (table,) = sec.tables
    layer_col = table.columns.index("layer")
    assert [r[layer_col] for r in table.rows] == ["Layer 1", "Layer 2"] and table.n == [4, 5]
    unlayered = steel.model_copy(update={"layers": None})
    assert T.layer_tables(unlayered, d, rs) == {"layers": []}
    # items without a count: no layer table, Fig. 12 by gold count alone
    nocount = d.assign(meta=[{"camera": "A"}] * len(d))
    assert T.layer_accuracy(steel, nocount, rs) == []
    (t0,) = T.layer2_worker_trends(steel, nocount, rs, min_decisions=1)
    assert [(b.workers, b.clips) for b in t0.bins] == [(1, 1), (2, 2)]
