"""The store: SQLAlchemy Core tables over SQLite (default) or PostgreSQL, with migrations.

Public API: ``Store`` (open + migrate), ``StoreError``, ``explain`` (one line for a
database error), ``tables`` (the table objects), ``now``, ``json_hash`` (and
``json_hash_text``/``text_hash``: its text and digest, for keys put together from parts),
``redact_url``;
``lineage`` (one item field's whole history, a ``Lineage``), ``last_pull``,
``item_task_urls`` and ``task_url`` (Label Studio task links); ``rows_with_json`` (a
query's rows with their JSON cells decoded in one pass on SQLite); ``make_dumps``
(``json.dumps`` with its encoder built once: the store's JSON text); ``mark_simulated``,
``register_simulated``, ``mark_registered``, ``simulated_annotators`` and ``shown_name``
(SIMULATED annotators, marked in the store).
"""

from truthline.store import _tables as tables
from truthline.store._json_rows import rows_with_json
from truthline.store._json_text import make_dumps
from truthline.store._lineage import Lineage, item_task_urls, last_pull, lineage, task_url
from truthline.store._migrations import LATEST as SCHEMA_VERSION
from truthline.store._simulated import (
    mark_registered,
    mark_simulated,
    register_simulated,
    shown_name,
    simulated_annotators,
)
from truthline.store._snapshots import resolve_snapshot
from truthline.store._status import AnnotationCounts, GoldCounts, PredictionCounts, StageCounts
from truthline.store._store import (
    Store,
    StoreError,
    explain,
    json_hash,
    json_hash_text,
    now,
    redact_url,
    text_hash,
)

__all__ = [
    "SCHEMA_VERSION",
    "AnnotationCounts",
    "GoldCounts",
    "Lineage",
    "PredictionCounts",
    "StageCounts",
    "Store",
    "StoreError",
    "explain",
    "item_task_urls",
    "json_hash",
    "json_hash_text",
    "last_pull",
    "lineage",
    "make_dumps",
    "mark_registered",
    "mark_simulated",
    "now",
    "redact_url",
    "register_simulated",
    "resolve_snapshot",
    "rows_with_json",
    "shown_name",
    "simulated_annotators",
    "tables",
    "task_url",
    "text_hash",
]
