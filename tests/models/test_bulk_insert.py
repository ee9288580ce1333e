"""``BulkInsert`` on SQLite writes the rows SQLAlchemy's own insert writes, byte for byte.

The writer thread's fast path builds its multi-row statement by hand; a value bound
differently (a timestamp's format, a JSON's spacing, a boolean as text) would make the
stored cache, predictions or results differ from what every other code path reads and
writes. So each table is written twice, once per path, and the raw SQLite cells (value
and storage class) compared.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select

from tests.models._rows import response_row
from truthline.models._upsert import BulkInsert
from truthline.store import Store, tables

TS = dt.datetime(2026, 12, 5, 1, 2, 3, 456789, tzinfo=dt.UTC)


def _response(i: int, **over: Any) -> dict[str, Any]:
    """A response row whose cells vary with ``i`` (every bind kind, None included)."""
    row = response_row(
        f"{i:064x}",
        created_at=TS,
        project="p",
        purpose="prefill",
        simulated=bool(i % 2),
        status="parsed" if i % 3 else "model_failure",
        reason=None if i % 3 else "unparseable",
        raw_response='{"label": "cat"}' if i % 4 else None,
        parsed={"label": "cät", "n": i, "x": 0.1 + i, "nested": {"b": [1, None], "a": True}},
        field_errors={} if i % 2 else {"count": "not a number"},
        tokens_in=i,
        tokens_out=2 * i,
        cost_usd=1e-6 * i,
        latency_s=None if i == 0 else 0.25 * i,
        settings={"temperature": 0.0, "max_tokens": 64},
        prompt_hash="a" * 64,
        image_hashes=["b" * 64, "c" * 64],
        prompt={"system": "s", "user": 'u\n"q"'},
        updated_at=TS + dt.timedelta(seconds=i),
    )
    row.update(over)
    return row


def _cells(path: Path, table: str) -> list[tuple[Any, ...]]:
    """Every cell as SQLite holds it: its value and its storage class."""
    con = sqlite3.connect(path)
    try:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        select_list = ", ".join(f'"{c}", typeof("{c}")' for c in cols)
        return con.execute(f"SELECT {select_list} FROM {table} ORDER BY id").fetchall()
    finally:
        con.close()


@pytest.fixture
def two(tmp_path: Path):
    """Two empty stores on SQLite with one project and three items each."""
    out = []
    for name in ("sqlalchemy", "bulk"):
        path = tmp_path / f"{name}.db"
        s = Store(f"sqlite:///{path}")
        with s.begin() as conn:
            conn.execute(
                tables.projects.insert(),
                dict(name="p", definition={}, definition_hash="h", created_at=TS, updated_at=TS),
            )
            conn.execute(
                tables.items.insert(),
                [
                    dict(
                        project="p",
                        key=f"k{i}",
                        media_kind="image",
                        media=[f"{i}.png"],
                        media_root="/m",
                        content_hash=str(i),
                        meta={},
                        created_at=TS,
                        updated_at=TS,
                    )
                    for i in range(3)
                ],
            )
        out.append((s, path))
    yield out
    for s, _ in out:
        s.close()


def _both(two, table, keys, rows_per_call, *, paths: list[str] | None = None, **kw):
    """Write the same calls through the SQLAlchemy statement and through ``BulkInsert``;
    ``paths`` collects, per statement ``BulkInsert`` ran, whether it was its own text
    ("driver") or SQLAlchemy's compiled statement ("compiled")."""
    returned = []
    for (store, _), fast in zip(two, (False, True), strict=True):
        bulk = BulkInsert(store.engine.dialect, table, keys, **kw)
        got = []

        def seen(_conn, _cur, statement, _params, context, _many, fast=fast) -> None:
            if fast and paths is not None and statement.startswith("INSERT"):
                paths.append("compiled" if context.compiled is not None else "driver")

        event.listen(store.engine, "before_cursor_execute", seen)
        for rows in rows_per_call:
            with store.begin() as conn:
                if fast:
                    got.append(sorted(tuple(r) for r in bulk(conn, rows)))
                else:
                    result = conn.execute(bulk.statement, rows)
                    got.append(sorted(tuple(r) for r in result) if result.returns_rows else [])
        event.remove(store.engine, "before_cursor_execute", seen)
        returned.append(got)
    return returned


def test_responses_are_stored_byte_for_byte_as_sqlalchemy_stores_them(two) -> None:
    calls = [
        [_response(i) for i in range(5)],
        # a key stored already, and one twice in the same call: neither is inserted again
        [_response(2, status="parsed"), _response(7), _response(7, reason="second")],
        # JSON columns given None (SQLAlchemy binds it through the type: JSON null)
        [_response(9, prompt=None, settings=None, image_hashes=None, item_id=None)],
    ]
    paths: list[str] = []
    slow, fast = _both(
        two, tables.responses, ["cache_key"], calls, paths=paths, returning=["id", "cache_key"]
    )
    assert paths == ["driver"] * 3  # one statement per call, built by BulkInsert
    assert fast == slow
    assert [len(r) for r in fast] == [5, 1, 1]
    assert _cells(two[1][1], "responses") == _cells(two[0][1], "responses")
    assert len(_cells(two[1][1], "responses")) == 7


def test_predictions_and_upserted_results_match_too(two) -> None:
    with two[0][0].begin() as conn:
        item_ids = [int(r[0]) for r in conn.execute(select(tables.items.c.id))]
    preds = [
        dict(
            project="p",
            item_id=i,
            model_version="m",
            response_id=None,
            values={"label": "dog", "count": i},
            status="parsed",
            simulated=True,
            created_at=TS,
        )
        for i in item_ids
    ]
    slow, fast = _both(
        two,
        tables.predictions,
        ["project", "item_id", "model_version"],
        [preds, preds[:1]],
        returning=["item_id", "model_version"],
    )
    assert fast == slow and [len(r) for r in fast] == [3, 0]
    assert _cells(two[1][1], "predictions") == _cells(two[0][1], "predictions")

    for store, _ in two:
        with store.begin() as conn:
            conn.execute(
                tables.runs.insert(),
                dict(
                    id="r", project="p", manifest={}, status="running", created_at=TS, updated_at=TS
                ),
            )

    def result(i: int, status: str) -> dict[str, Any]:
        return dict(
            run_id="r",
            model="m",
            item_id=i,
            variant="",
            condition="base",
            control="",
            response_id=None,
            status=status,
            scores={"label": {"correct": status == "parsed", "score": 1.0}},
        )

    keys = ["run_id", "model", "item_id", "variant", "condition", "control"]
    first = [result(i, "parsed") for i in item_ids]
    again = [result(item_ids[0], "model_failure")]  # a rerun updates the row in place
    paths: list[str] = []
    update = ["response_id", "status", "scores"]
    _both(two, tables.run_results, keys, [first, again], paths=paths, update=update)
    assert paths == ["driver", "driver"]
    cells = _cells(two[1][1], "run_results")
    assert cells == _cells(two[0][1], "run_results")
    assert len(cells) == 3 and "model_failure" in cells[0]


def test_rows_the_fast_path_cannot_write_as_sqlalchemy_would_go_through_sqlalchemy(two) -> None:
    """A row that leaves a defaulted column out (SQLAlchemy fills its default) or rows that
    differ in their columns take the SQLAlchemy statement: same cells either way."""
    short = {k: v for k, v in _response(0).items() if k not in ("simulated", "attempts")}
    other = {k: v for k, v in _response(1).items() if k != "reason"}
    paths: list[str] = []
    slow, fast = _both(
        two,
        tables.responses,
        ["cache_key"],
        [[short], [other, _response(2)]],
        paths=paths,
        returning=["id"],
    )
    assert set(paths) == {"compiled"}
    assert fast == slow
    assert _cells(two[1][1], "responses") == _cells(two[0][1], "responses")


def test_a_group_larger_than_one_statement_may_bind_is_split(two, monkeypatch) -> None:
    import truthline.models._upsert as upsert

    monkeypatch.setattr(upsert, "_SQLITE_MAX_VARIABLES", 60)  # two response rows a statement
    rows = [_response(i) for i in range(7)]
    paths: list[str] = []
    slow, fast = _both(
        two, tables.responses, ["cache_key"], [rows], paths=paths, returning=["cache_key"]
    )
    assert paths == ["driver"] * 4
    assert fast == slow and len(fast[0]) == 7
    assert _cells(two[1][1], "responses") == _cells(two[0][1], "responses")


def test_values_shared_between_rows_and_columns_bind_as_their_own(two) -> None:
    """``BulkInsert`` reuses the bound form of a value seen just before (same object, same
    column or the previous column of its type): rows sharing objects, alternating between
    them, and a column whose twin holds a different value must still store their own."""
    shared = {"temperature": 0.0, "max_tokens": 64}
    other = {"temperature": 0.5}
    later = TS + dt.timedelta(hours=1)
    rows = []
    for i in range(8):
        stamp = TS if i % 3 else later
        rows.append(
            _response(
                i,
                created_at=stamp,
                updated_at=stamp if i % 2 else later,  # the same object as created_at, or not
                settings=shared if i % 4 else other,  # shared, alternating with another
                field_errors=shared if i == 5 else {},  # the settings' object in another column
                prompt=None if i == 6 else {"system": "s", "user": str(i)},
            )
        )
    slow, fast = _both(two, tables.responses, ["cache_key"], [rows], returning=["id", "cache_key"])
    assert fast == slow
    cells = _cells(two[1][1], "responses")
    assert cells == _cells(two[0][1], "responses") and len(cells) == 8
