"""Label Studio project kinds: a registry one decorator away, discoverable through the
``truthline.label_studio_kinds`` entry points without importing a system; the loop's own
projects are the built-in ``field-schema`` kind; scopes keep a system's units out of project
lists; migration 4 adds the columns to an older store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import inspect, select, text

from truthline.annotate import (
    FIELD_SCHEMA,
    KINDS,
    PREFILL_LABEL,
    FieldSchemaKind,
    FieldUnit,
    ProjectKind,
    ReadBack,
    Scope,
    get_kind,
    label_config,
    project_kind,
    results_to_values,
    values_to_results,
)
from truthline.errors import TruthlineError
from truthline.store import SCHEMA_VERSION, Store, tables

PHYSALIGN_KINDS = {
    "physalign.observe",
    "physalign.review",
    "physalign.verify",
    "physalign.adjudicate",
}


def _py(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


def test_kinds_are_listed_from_entry_points_and_imported_only_when_asked_for():
    out = _py(
        "import sys\n"
        "from truthline.annotate import KINDS, get_kind\n"
        "names = KINDS.names()\n"
        "before = any(m.startswith('truthline.systems') for m in sys.modules)\n"
        "k = get_kind('physalign.review')\n"
        "after = 'truthline.systems.physalign._passes' in sys.modules\n"
        "print(sorted(names), before, after, type(k).__name__, k.tier)"
    )
    assert out == (f"{sorted({FIELD_SCHEMA} | PHYSALIGN_KINDS)} False True ReviewKind 2")


def test_the_loop_imports_no_system():
    out = _py(
        "import sys, truthline.annotate, truthline.store\n"
        "print(sorted(m for m in sys.modules if m.startswith('truthline.systems')))"
    )
    assert out == "[]"


def test_one_decorator_registers_a_kind_and_a_clash_is_an_error():
    @project_kind("test.toy-rate")
    class Rate(ProjectKind):
        fields = ("score",)

        def label_config(self, context):
            return '<View><Text name="t" value="$text"/><Rating name="score" toName="t"/></View>'

        def task(self, context, unit):
            return {"data": {"text": unit}}

        def read(self, context, key, annotation):
            r = next(iter(annotation.get("result") or []), {})
            return ReadBack({"score": (r.get("value") or {}).get("rating")})

    try:
        assert "test.toy-rate" in KINDS and Rate.name == "test.toy-rate"
        k = get_kind("test.toy-rate")
        assert isinstance(k, Rate) and get_kind(k) is k
        assert k.read(None, "u1", {"result": [{"value": {"rating": 4}}]}).values == {"score": 4}
        with pytest.raises(TruthlineError, match="already registered"):

            @project_kind("test.toy-rate")
            class Other(Rate):
                pass

    finally:
        KINDS._items.pop("test.toy-rate", None)
    with pytest.raises(TruthlineError, match=r"unknown Label Studio project kind .*field-schema"):
        get_kind("test.no-such-kind")


def test_the_loops_projects_are_the_field_schema_kind(all_types_project):
    p = all_types_project
    k = get_kind(FIELD_SCHEMA)
    assert isinstance(k, FieldSchemaKind)
    assert k.label_config(p) == label_config(p)
    assert k.field_names(p) == list(p.field_types)
    assert (k.tier_of("blind"), k.tier_of("anchored"), k.tier_of("review")) == (1, 1, 2)
    vals = {n: None for n in p.field_types}
    blind = k.task(p, FieldUnit(7, "a.png", ["http://m/a.png"], "blind"))
    assert blind["data"]["item_id"] == 7 and "predictions" not in blind
    anchored = k.task(p, FieldUnit(7, "a.png", ["http://m/a.png"], "anchored", [("", vals)], vals))
    (pred,) = anchored["predictions"]
    assert pred["model_version"] == PREFILL_LABEL
    assert pred["result"] == values_to_results(p, vals, normalized=True)
    review = k.task(p, FieldUnit(7, "a.png", ["http://m/a.png"], "review", [("x@y.z", vals)]))
    assert [q["model_version"] for q in review["predictions"]] == ["tier1:x@y.z"]
    read = k.read(p, "a.png", {"result": pred["result"]})
    conv = results_to_values(p, pred["result"])
    assert (read.values, read.origins) == (conv.values, conv.origins)


def test_a_scope_is_not_a_project_and_its_units_are_items(tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    (tmp_path / "work").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "work")
    scope = Scope.of_folder("test.scope", tmp_path / "work")
    assert Scope.of_folder("test.scope", tmp_path / "link") == scope  # by its real path
    ids = scope.items(store, {"u1": "h1", "u2": "h2"})
    assert scope.items(store, {"u1": "h1", "u2": "h2"}) == ids  # idempotent
    assert scope.items(store, {"u1": "h1b"})["u1"] == ids["u1"]
    assert store.project_names() == []
    with store.begin() as conn:
        row = conn.execute(
            select(tables.projects).where(tables.projects.c.name == scope.name)
        ).one()
        items = conn.execute(select(tables.items).where(tables.items.c.project == scope.name)).all()
    assert row.scope == "test.scope" and row.source_path == str((tmp_path / "work").resolve())
    assert {i.key: i.content_hash for i in items} == {"u1": "h1b", "u2": "h2"}
    assert all(i.media == [] and i.media_root == "" for i in items)  # nothing to serve
    store.close()


def test_migration_4_adds_the_kind_columns_to_an_older_store(tmp_path: Path):
    assert SCHEMA_VERSION >= 4
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    s = Store(url)
    added = {"projects": "scope", "ls_projects": "kind", "ls_tasks": "shown", "exposures": "shown"}
    with s.begin() as conn:  # back to schema 3
        for table, col in added.items():
            conn.execute(text(f"ALTER TABLE {table} DROP COLUMN {col}"))
        conn.execute(tables.schema_version.delete().where(tables.schema_version.c.version >= 4))
    s.close()
    s = Store(url)
    with s.begin() as conn:
        for table, col in added.items():
            assert col in {c["name"] for c in inspect(conn).get_columns(table)}
        versions = [r[0] for r in conn.execute(select(tables.schema_version.c.version))]
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    s.close()
