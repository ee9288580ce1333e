"""Rows whose JSON columns are decoded in one pass per query on SQLite (issue 28).

SQLAlchemy decodes a JSON column value by value (one ``json.loads`` and two Python calls
per cell). Reading a benchmark's gold or a project's items touches several JSON cells per
row, and that per-cell decode was most of the time those reads took (~0.03 ms per item of
a runner whose whole budget is ~1.3 ms). On SQLite the cells are JSON text, so the text is
fetched as it is stored and every JSON cell of the result is decoded by one ``json.loads``
of a JSON array made of them: the same values as SQLAlchemy's SQLite JSON type reads (SQL
NULL is None; a number is kept as SQLite returns it: a column declared JSON has numeric
affinity, so ``3`` is stored as the integer 3, not as text). PostgreSQL's driver hands
back decoded values already; there the statement runs unchanged.
"""

from __future__ import annotations

import json
import keyword
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from sqlalchemy import JSON, Connection, Select, Text, type_coerce

_ROWS: dict[tuple[str, ...], type] = {}


def _row_type(names: tuple[str, ...]) -> Any:
    cls = _ROWS.get(names)
    if cls is None:
        cls = _ROWS[names] = namedtuple("JsonRow", names)  # type: ignore[misc]
    return cls


def _fieldnames(names: tuple[str, ...]) -> bool:
    """Whether the keys can name a namedtuple's fields (else the plain path)."""
    ok = all(n.isidentifier() and not keyword.iskeyword(n) and n[0] != "_" for n in names)
    return ok and len(set(names)) == len(names)


def _text(cell: str | bytes) -> str:
    return cell if isinstance(cell, str) else cell.decode("utf-8")


def rows_with_json(conn: Connection, stmt: Select) -> list[Any]:
    """``conn.execute(stmt).all()``, with JSON columns decoded in one pass on SQLite; rows
    read by column name (``row.meta``) or position, as SQLAlchemy's rows are."""
    cols = list(stmt.selected_columns)
    json_at = [i for i, c in enumerate(cols) if isinstance(c.type, JSON)]
    names = tuple(str(c.key) for c in cols)
    plain = conn.dialect.name != "sqlite" or getattr(conn.dialect, "_json_deserializer", None)
    if plain or not json_at or not _fieldnames(names):
        return list(conn.execute(stmt).all())
    raw = stmt.with_only_columns(
        *(type_coerce(c, Text).label(c.key) if i in json_at else c for i, c in enumerate(cols))
    )
    rows = conn.execute(raw).all()
    if not rows:
        return []
    # column by column: each JSON column decoded at once, the rows made in one pass
    columns: list[Sequence[Any]] = list(zip(*rows, strict=True))
    for i in json_at:
        columns[i] = _decoded(columns[i])
    return list(map(_row_type(names)._make, zip(*columns, strict=True)))


def _decoded(cells: Sequence[Any]) -> list[Any]:
    """One JSON column's cells decoded by one ``json.loads`` of a JSON array of them; a cell
    that is not text (SQL NULL, a number SQLite stored as one) is kept as it is."""
    if all(c.__class__ is str for c in cells):
        return json.loads("[" + ",".join(cells) + "]")
    at = [k for k, c in enumerate(cells) if isinstance(c, str | bytes)]
    out = list(cells)
    texts = ",".join(_text(cells[k]) for k in at)
    for k, v in zip(at, json.loads("[" + texts + "]"), strict=True):
        out[k] = v
    return out
