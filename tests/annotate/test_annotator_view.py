"""What annotators see (issue 14): instructions generated from the project (field titles,
class codes and names, rule texts), no model name anywhere in an anchored project, and
pre-annotated entities without a box shown as squares to place, values set (issue 26)."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from sqlalchemy import select

from truthline.annotate import (
    FIELD_SCHEMA,
    PREFILL_LABEL,
    FieldUnit,
    get_kind,
    instructions,
    label_config,
    push,
    results_to_values,
    task_data,
    values_to_results,
)
from truthline.annotate._labelconfig import PLACEHOLDER, unboxed_key
from truthline.project import load_project
from truthline.store import tables

from .conftest import LS, SIM_MODEL

RULES = """
name = "rulebook"
title = "Site rule book"
description = "Who breaks which rule."
media = "image"
[fields.hazard_level]
type = "single_choice"
ordered = true
description = "How bad it looks."
choices = ["low", "high"]
[fields.rule]
type = "single_choice"
taxonomy = "rules"
description = "The rule broken."
[fields.people]
type = "entity_list"
key = "pid"
[fields.people.fields.pid]
type = "reading"
[fields.people.fields.box]
type = "region"
labels = ["person"]
[fields.people.fields.rule]
type = "single_choice"
taxonomy = "rules"
[taxonomies.rules]
note = "Rules from the site handbook."
groups = { G = "general", H = "height" }
[[taxonomies.rules.classes]]
code = "R-01"
group = "G"
name = "helmet"
description = "A helmet is worn at all times on the floor."
[[taxonomies.rules.classes]]
code = "R-02"
group = "H"
description = "A harness is clipped on above two metres."
"""


@pytest.fixture
def rulebook(tmp_path: Path):
    (tmp_path / "rulebook").mkdir()
    (tmp_path / "rulebook" / "project.toml").write_text(RULES)
    return load_project(tmp_path / "rulebook")


def test_instructions_carry_titles_class_codes_and_rule_texts(rulebook, steel_project):
    page = instructions(rulebook, "anchored")
    for text in (
        "Site rule book",
        "Who breaks which rule.",
        "Hazard level",  # the field's title, not its key
        "How bad it looks.",
        "<code>low</code>",
        "Rules from the site handbook.",
        "R-01",
        "helmet",
        "A helmet is worn at all times on the floor.",  # the rule texts themselves
        "A harness is clipped on above two metres.",
        "height",
        "pre-annotation",
    ):
        assert text in page, text
    steel = instructions(steel_project, "blind")
    for text in ("Worker count", "Number of distinct workers", "A1", "walking", "UA-G-07"):
        assert text in steel, text
    assert "pre-annotation" not in steel  # the blind arm is told nothing is pre-filled


def test_config_shows_titles_and_class_names_but_stores_codes(rulebook):
    cfg = label_config(rulebook)
    root = ET.fromstring(cfg)
    headers = [h.get("value") for h in root.iter("Header")]
    assert "Hazard level: How bad it looks." in headers
    rule = next(c for c in root.iter("Choices") if c.get("name") == "rule")
    opts = {c.get("value"): (c.get("alias"), c.get("hint")) for c in rule}
    assert opts["R-01 helmet"] == ("R-01", "general; A helmet is worn at all times on the floor.")
    # a rule without a name keeps its code as the value; its text is the hint
    assert opts["R-02"] == (None, "height; A harness is clipped on above two metres.")
    # results carry the code (what Label Studio writes for an aliased choice)
    res = values_to_results(rulebook, {"rule": "R-01"})
    assert res[0]["value"] == {"choices": ["R-01"]}
    assert results_to_values(rulebook, res).values["rule"] == "R-01"


PRED = {
    "rule": "R-02",
    "people": [
        {
            "pid": "p1",
            "box": [{"x": 5, "y": 5, "width": 10, "height": 20, "label": "person"}],
            "rule": "R-01",
        },
        {"pid": "p2", "rule": "R-01"},  # the prefill found p2 but could not place it
    ],
}


def test_an_unboxed_prefilled_entity_is_a_square_to_place_never_a_note(rulebook):
    # issue 26: no invented box in the data, but the anchored prediction shows p2 as a
    # placeholder square with its values set (the annotator drags it); the note only says so
    res = values_to_results(rulebook, PRED)
    rects = [r for r in res if r["type"] == "rectanglelabels"]
    assert len(rects) == 1 and rects[0]["id"].endswith("p1")
    task = get_kind(FIELD_SCHEMA).task(
        rulebook, FieldUnit(1, "a", ["http://m/a.jpg"], "anchored", [("", PRED)], PRED)
    )
    pres = task["predictions"][0]["result"]
    p2 = [r for r in pres if str(r.get("id", "")).endswith("p2")]
    assert {r["from_name"] for r in p2} == {"people", "people__pid", "people__rule"}
    assert next(r for r in p2 if r["from_name"] == "people__rule")["value"]["choices"] == ["R-01"]
    note = task["data"][unboxed_key("people")]
    assert "1 pre-annotated without a box" in note and "R-01" not in note and "p2" not in note
    # read back untouched, the square is "no box" and p2 keeps its rule
    back = results_to_values(rulebook, pres).values["people"]
    assert {e["pid"]: ("box" in e, e["rule"]) for e in back} == {
        "p1": (True, "R-01"),
        "p2": (False, "R-01"),
    }
    assert f'value="${unboxed_key("people")}"' in label_config(rulebook)
    assert task_data(rulebook, 1, ["http://m/a.jpg"], "a")[unboxed_key("people")] == ""


@pytest.mark.labelstudio
def test_anchored_project_never_names_the_model(ls: LS, steel_ws, media_server):
    ws, project, _preds = steel_ws
    p = tables.predictions
    with ws.store.begin() as conn:  # the prefill placed nobody but each item's first worker
        rows = conn.execute(select(p.c.id, p.c["values"])).all()
        unboxed = 0
        for r in rows:
            vals = copy.deepcopy(r.values)
            for w in vals["workers"][1:]:
                w.pop("box", None)
                unboxed += 1
            conn.execute(p.update().where(p.c.id == r.id).values(values=vals))
    assert unboxed > 0
    with ls.admin() as c:
        rep = push(
            ws.store,
            project,
            c,
            "anchored",
            media_base=media_server.url,
            media_root=media_server.root,
            split=1.0,
            annotators=["ann@example.com"],
            progress=False,
        )
        assert rep.created == 8 and rep.model_version == SIM_MODEL  # the operator's report
        proj = c.get(f"/api/projects/{rep.ls_project_id}")
        tasks = [c.get(f"/api/tasks/{t}") for t in c.tasks_by_item(rep.ls_project_id).values()]
        preds = c.get("/api/predictions/", project=rep.ls_project_id)
    pushed = json.dumps([proj, tasks, preds])
    assert SIM_MODEL not in pushed
    assert proj["model_version"] == PREFILL_LABEL and proj["show_instruction"] is True
    assert "Worker count" in proj["expert_instruction"]
    assert "UA-G-07" in proj["expert_instruction"]
    # the store keeps the real version for every exposure
    with ws.store.begin() as conn:
        versions = {r.model_version for r in conn.execute(select(tables.exposures))}
    assert versions == {SIM_MODEL}
    # issue 26: every worker a region with its values (boxless ones as squares to place);
    # the note only counts the squares
    rects = squares = 0
    for t in tasks:
        pr = t["predictions"][0]
        assert pr["model_version"] == PREFILL_LABEL
        rects += sum(1 for r in pr["result"] if r["type"] == "rectanglelabels")
        here = sum(
            1
            for r in pr["result"]
            if r["type"] == "rectanglelabels" and r["value"]["width"] == PLACEHOLDER
        )
        squares += here
        note = t["data"][unboxed_key("workers")]
        assert (f"{here} pre-annotated without a box" in note) if here else note == ""
    assert squares == unboxed and rects == len(rows) + unboxed
