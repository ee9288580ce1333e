"""Dialect inserts that tolerate a row another writer stored first (SQLite, PostgreSQL).

Two runs on one store insert the same unique keys (a response's cache key, a prediction's
item/model, a benchmark result); a plain INSERT makes the second one crash. One home for
the ``ON CONFLICT`` forms both dialects share, and of ``BulkInsert``, which writes a
group of rows with one of them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.engine import Dialect


def _insert(dialect: str, table: Table) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    if dialect == "sqlite":
        from sqlalchemy.dialects import sqlite

        return sqlite.insert(table)
    raise NotImplementedError(f"no ON CONFLICT insert for {dialect}")  # pragma: no cover


def insert_ignore(dialect: str, table: Table, keys: list[str]) -> Any:
    """``INSERT ... ON CONFLICT (keys) DO NOTHING``."""
    return _insert(dialect, table).on_conflict_do_nothing(index_elements=keys)


def insert_or_update(dialect: str, table: Table, keys: list[str], update: list[str]) -> Any:
    """``INSERT ... ON CONFLICT (keys) DO UPDATE SET col = excluded.col`` for ``update``."""
    stmt = _insert(dialect, table)
    return stmt.on_conflict_do_update(
        index_elements=keys, set_={c: stmt.excluded[c] for c in update}
    )


_NONE = object()
"""No value bound yet (``BulkInsert``'s per-column memo)."""

_SQLITE_MAX_VARIABLES = 32766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999
"""Bound parameters one SQLite statement may take (``SQLITE_MAX_VARIABLE_NUMBER``)."""


class BulkInsert:
    """``INSERT ... ON CONFLICT`` (``insert_ignore`` or, with ``update``, ``insert_or_update``)
    of many rows, optionally ``RETURNING`` columns; the rows of one call share one
    transaction and their keys.

    Why: the runner's writer thread stores every answer (a response, its prediction or
    benchmark result) in groups, and on SQLite SQLAlchemy's per-execute work (compiling the
    cached statement into an ``insertmanyvalues`` batch, processing each row's binds through
    its generic machinery) cost more than SQLite's own insert. On SQLite this builds the
    multi-row statement text once per (columns, rows) shape and binds each value through its
    column type's own ``bind_processor``, so the stored row is the one SQLAlchemy's insert
    writes (tests compare them byte for byte). Any other dialect (PostgreSQL), and a group
    whose rows differ in their columns or leave out a column that has a Python default, go
    through the SQLAlchemy statement unchanged.
    """

    def __init__(
        self,
        dialect: Dialect,
        table: Table,
        keys: list[str],
        *,
        update: Sequence[str] = (),
        returning: Sequence[str] = (),
    ):
        stmt = (
            insert_or_update(dialect.name, table, keys, list(update))
            if update
            else insert_ignore(dialect.name, table, keys)
        )
        self.statement = stmt.returning(*(table.c[c] for c in returning)) if returning else stmt
        """The SQLAlchemy statement (every dialect but SQLite, and the fallback)."""
        self.table = table
        self._returns = bool(returning)
        self._fast = dialect.name == "sqlite"
        self._q = dialect.identifier_preparer.quote
        self._procs: dict[str, Callable[[Any], Any] | None] = {
            c.name: c.type.dialect_impl(dialect).bind_processor(dialect) for c in table.c
        }
        self._defaulted = frozenset(
            c.name for c in table.c if c.default is not None or c.server_default is not None
        )
        cols = ", ".join(self._q(k) for k in keys)
        tail = f" ON CONFLICT ({cols}) DO "
        if update:
            tail += "UPDATE SET " + ", ".join(
                f"{self._q(c)} = excluded.{self._q(c)}" for c in update
            )
        else:
            tail += "NOTHING"
        if returning:
            tail += " RETURNING " + ", ".join(self._q(c) for c in returning)
        self._tail = tail
        self._sql: dict[tuple[tuple[str, ...], int], str] = {}
        self._twin: dict[tuple[str, ...], list[int]] = {}

    def __call__(self, conn: Connection, rows: list[dict[str, Any]]) -> list[Any]:
        """Insert ``rows``; the ``RETURNING`` rows of those inserted (or updated), as tuples."""
        if not rows:
            return []
        cols = tuple(rows[0])
        if not self._fast or not self._plain(cols, rows):
            result = conn.execute(self.statement, rows)
            return list(result) if self._returns else []
        per = max(1, _SQLITE_MAX_VARIABLES // len(cols))
        get = itemgetter(*cols)
        # the columns whose type binds its value (JSON, a datetime, a boolean); the others
        # go to the driver as they are. The last value bound per column is kept, by
        # identity: rows of one group share objects (one settings dict per run, one time
        # stamp per claim chunk), and a datetime's or a JSON cell's bind costs more than the
        # check. A column also looks at the one before it of the same type (a row's
        # updated_at is its created_at).
        twin = self._twins(cols)
        bind = [(j, proc, twin[j]) for j, proc in enumerate(self._procs[c] for c in cols) if proc]
        last: list[Any] = [_NONE] * len(cols)
        bound: list[Any] = [None] * len(cols)
        out: list[Any] = []
        for start in range(0, len(rows), per):
            chunk = rows[start : start + per]
            params: list[Any] = []
            for row in chunk:
                vals = list(get(row)) if len(cols) > 1 else [row[cols[0]]]
                for j, proc, k in bind:
                    v = vals[j]
                    if v is last[j]:
                        vals[j] = bound[j]
                    elif v is last[k]:
                        last[j] = v
                        vals[j] = bound[j] = bound[k]
                    else:
                        last[j] = v
                        vals[j] = bound[j] = proc(v)
                params.extend(vals)
            result = conn.exec_driver_sql(self._text(cols, len(chunk)), tuple(params))
            if self._returns:
                out.extend(result)
        return out

    def _twins(self, cols: tuple[str, ...]) -> list[int]:
        """For each column, the nearest earlier one of the same type (itself if none)."""
        out = self._twin.get(cols)
        if out is None:
            kinds = [(type(t), repr(t)) for t in (self.table.c[c].type for c in cols)]
            out = []
            for j, kind in enumerate(kinds):
                before = [i for i in range(j) if kinds[i] == kind]
                out.append(before[-1] if before else j)
            if len(self._twin) < 1024:
                self._twin[cols] = out
        return out

    def _plain(self, cols: tuple[str, ...], rows: list[dict[str, Any]]) -> bool:
        """Every row names the same columns of this table, and none leaves a defaulted
        column to SQLAlchemy (its default would be filled in there, not here)."""
        if not set(cols) <= self._procs.keys():
            return False
        missing = self._defaulted - set(cols)
        if any(not self.table.c[c].primary_key for c in missing):
            return False
        names = set(cols)
        return all(r.keys() == names for r in rows)

    def _text(self, cols: tuple[str, ...], n: int) -> str:
        key = (cols, n)
        sql = self._sql.get(key)
        if sql is None:
            one = "(" + ", ".join("?" * len(cols)) + ")"
            names = ", ".join(self._q(c) for c in cols)
            sql = (
                f"INSERT INTO {self._q(self.table.name)} ({names}) VALUES "
                + ", ".join([one] * n)
                + self._tail
            )
            if len(self._sql) < 1024:
                self._sql[key] = sql
        return sql


__all__ = ["BulkInsert", "insert_ignore", "insert_or_update"]
