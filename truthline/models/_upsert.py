"""Dialect inserts that tolerate a row another writer stored first (SQLite, PostgreSQL).

Two runs on one store insert the same unique keys (a response's cache key, a prediction's
item/model, a benchmark result); a plain INSERT makes the second one crash. One home for
the ``ON CONFLICT`` forms both dialects share.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table


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


__all__ = ["insert_ignore", "insert_or_update"]
