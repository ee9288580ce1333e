"""``rows_with_json`` reads the very values SQLAlchemy's JSON type reads, cell by cell, on
SQLite (one decode per query) and PostgreSQL (the statement unchanged)."""

from __future__ import annotations

import pytest
from sqlalchemy import JSON, Column, Integer, MetaData, String, Table, null, select

from truthline.store import now, rows_with_json, tables

VALUES = [
    {"a": 1, "b": [1, 2.5, "x"], "c": None, "ü": "é"},
    [],
    {},
    "dog",
    "3",  # a string that looks like a number stays a string
    3,
    3.0,  # numeric affinity stores it as the integer 3: read back as SQLite returns it
    -0.25,
    1e300,
    2**62,
    True,
    False,
    None,  # JSON null
    [[{"deep": ["er", {"est": 0}]}]],
    'quote " and \\ backslash, comma, ] bracket',
]


@pytest.fixture
def scratch(store):
    md = MetaData()
    t = Table(
        "json_rows_scratch",
        md,
        Column("id", Integer, primary_key=True),
        Column("name", String),
        Column("doc", JSON),
        Column("other", JSON),
    )
    md.create_all(store.engine)
    with store.begin() as conn:
        conn.execute(
            t.insert(),
            [
                {"id": i, "name": f"n{i}", "doc": v, "other": VALUES[-1 - i]}
                for i, v in enumerate(VALUES)
            ],
        )
        conn.execute(t.insert().values(id=99, name=None, doc=null(), other={"k": "v"}))
    yield t
    md.drop_all(store.engine)


def _cells(rows) -> list[tuple]:
    return [tuple((type(v), v) for v in r) for r in rows]


def test_the_values_are_sqlalchemys_cell_by_cell(store, scratch):
    stmt = select(scratch.c.id, scratch.c.doc, scratch.c.name, scratch.c.other).order_by(
        scratch.c.id
    )
    with store.begin() as conn:
        want = conn.execute(stmt).all()
        got = rows_with_json(conn, stmt)
    assert len(got) == len(VALUES) + 1
    assert _cells(got) == _cells(want)  # same types too: 3 stays int, "3" stays str
    assert got[0].doc == VALUES[0] and got[-1].doc is None and got[-1].other == {"k": "v"}
    assert [r.name for r in got] == [r.name for r in want]


def test_store_items_a_filter_and_an_empty_result(store, tmp_path):
    from truthline.project import load_project

    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "project.toml").write_text(
        'name = "p"\nmedia = "image"\n[fields.label]\ntype = "single_choice"\n'
        'choices = ["a", "b"]\n'
    )
    project = load_project(tmp_path / "p")
    store.upsert_project(project, "/nowhere")
    t = tables
    with store.begin() as conn:
        conn.execute(
            t.items.insert(),
            [
                dict(
                    project="p",
                    key=f"k{i}",
                    media_kind="image",
                    content_hash=f"{i:064d}",
                    created_at=now(),
                    updated_at=now(),
                    media=[f"{i}.png"],
                    media_root="/m",
                    meta={"site": "A" if i % 2 else "B", "n": i},
                    sim_truth=None if i % 3 else {"label": "a"},
                )
                for i in range(7)
            ],
        )
        stmt = select(t.items).where(t.items.c.project == "p").order_by(t.items.c.id)
        assert _cells(rows_with_json(conn, stmt)) == _cells(conn.execute(stmt).all())
        none = select(t.items).where(t.items.c.project == "nobody")
        assert rows_with_json(conn, none) == []
    assert [it["meta"]["n"] for it in store.items("p")] == list(range(7))
    assert store.items("p")[0]["sim_truth"] == {"label": "a"}


def test_columns_a_namedtuple_cannot_carry_take_the_plain_path(store, scratch):
    stmt = select(scratch.c.doc.label("class"), scratch.c.other.label("_x")).order_by(scratch.c.id)
    with store.begin() as conn:
        got = rows_with_json(conn, stmt)
        assert _cells(got) == _cells(conn.execute(stmt).all())
