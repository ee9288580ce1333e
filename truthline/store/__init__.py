"""The store: SQLAlchemy Core tables over SQLite (default) or PostgreSQL, with migrations.

Public API: ``Store`` (open + migrate), ``StoreError``, ``explain`` (one line for a
database error), ``tables`` (the table objects), ``now``, ``json_hash`` and ``redact_url``.
"""

from truthline.store import _tables as tables
from truthline.store._migrations import LATEST as SCHEMA_VERSION
from truthline.store._snapshots import resolve_snapshot
from truthline.store._status import AnnotationCounts, GoldCounts, PredictionCounts, StageCounts
from truthline.store._store import Store, StoreError, explain, json_hash, now, redact_url

__all__ = [
    "SCHEMA_VERSION",
    "AnnotationCounts",
    "GoldCounts",
    "PredictionCounts",
    "StageCounts",
    "Store",
    "StoreError",
    "explain",
    "json_hash",
    "now",
    "redact_url",
    "resolve_snapshot",
    "tables",
]
