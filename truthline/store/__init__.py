"""The store: SQLAlchemy Core tables over SQLite (default) or PostgreSQL, with migrations.

Public API: ``Store`` (open + migrate), ``StoreError``, ``explain`` (one line for a
database error), ``tables`` (the table objects), ``now``, ``json_hash`` and ``redact_url``.
"""

from truthline.store import _tables as tables
from truthline.store._migrations import LATEST as SCHEMA_VERSION
from truthline.store._store import Store, StoreError, explain, json_hash, now, redact_url

__all__ = [
    "SCHEMA_VERSION",
    "Store",
    "StoreError",
    "explain",
    "json_hash",
    "now",
    "redact_url",
    "tables",
]
