"""Versioned schema migrations: a version table and an ordered list of Python steps.

Why not Alembic: the schema is created from one SQLAlchemy metadata, and the few steps
we need run identically on SQLite and PostgreSQL as plain functions; a version table
keeps upgrades explicit without an extra config tree. Add a step by appending to
``MIGRATIONS``; never edit a released step.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Connection, inspect, select

from truthline.store import _tables as t


def _v1(conn: Connection) -> None:
    t.metadata.create_all(conn, checkfirst=True)


def _v2(conn: Connection) -> None:
    """annotations.deleted_at: deletions at the source are recorded, not lost or ignored."""
    cols = {c["name"] for c in inspect(conn).get_columns(t.annotations.name)}
    if "deleted_at" not in cols:
        kind = t.annotations.c.deleted_at.type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(f"ALTER TABLE annotations ADD COLUMN deleted_at {kind}")


def _v3(conn: Connection) -> None:
    """responses.prompt: the rendered prompt text as sent, not only its hash."""
    cols = {c["name"] for c in inspect(conn).get_columns(t.responses.name)}
    if "prompt" not in cols:
        kind = t.responses.c.prompt.type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(f"ALTER TABLE responses ADD COLUMN prompt {kind}")


def _v4(conn: Connection) -> None:
    """Label Studio project kinds: systems' projects go through the loop's tables.

    ``projects.scope`` marks a namespace of a system's Label Studio units (not a project),
    ``ls_projects.kind`` names the kind that builds and reads a project, and
    ``ls_tasks.shown`` / ``exposures.shown`` record what a task showed besides its data and
    prediction (PhysAlign's pass 4 shows the earlier annotation, adjudication both answers)."""
    for table, col in (
        (t.projects, "scope"),
        (t.ls_projects, "kind"),
        (t.ls_tasks, "shown"),
        (t.exposures, "shown"),
    ):
        cols = {c["name"] for c in inspect(conn).get_columns(table.name)}
        if col not in cols:
            kind = table.c[col].type.compile(dialect=conn.dialect)
            conn.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN {col} {kind}")


def _v5(conn: Connection) -> None:
    """withdrawals: items withdrawn from a benchmark with the reason (RealityBench App. D)."""
    t.withdrawals.create(conn, checkfirst=True)


def _v6(conn: Connection) -> None:
    """annotations.simulated: SIMULATED annotators are marked in the store, not only by a
    ``simulated`` source (the demo's annotators label through Label Studio, whose source is
    the same as a real person's). Rows whose source already said ``simulated`` get it."""
    cols = {c["name"] for c in inspect(conn).get_columns(t.annotations.name)}
    if "simulated" not in cols:
        kind = t.annotations.c.simulated.type.compile(dialect=conn.dialect)
        false = "0" if conn.dialect.name == "sqlite" else "false"
        conn.exec_driver_sql(
            f"ALTER TABLE annotations ADD COLUMN simulated {kind} NOT NULL DEFAULT {false}"
        )
    conn.execute(
        t.annotations.update().where(t.annotations.c.source == "simulated").values(simulated=True)
    )


def _v7(conn: Connection) -> None:
    """Blind stays blind (issue 26): exposure violations found by pull, review pseudonyms,
    gold-standard items with known answers.
    Number 6 is left to a step written at the same time."""
    t.exposure_violations.create(conn, checkfirst=True)
    t.annotator_pseudonyms.create(conn, checkfirst=True)
    t.gold_standard.create(conn, checkfirst=True)


def _v8(conn: Connection) -> None:
    """request_claims: a lease per request key, so two runs on one store never pay twice
    for one answer (issue 27)."""
    t.request_claims.create(conn, checkfirst=True)


def _v9(conn: Connection) -> None:
    """fresh_runs: the start of each unfinished ``prefill run --fresh``, so its rerun asks
    nothing twice (issue 28)."""
    t.fresh_runs.create(conn, checkfirst=True)


def _v10(conn: Connection) -> None:
    """simulated_accounts: SIMULATED annotators named before their annotations exist, so
    every pull marks them (PhysAlign's simulate commands; issue 26's last gap)."""
    t.simulated_accounts.create(conn, checkfirst=True)


MIGRATIONS: list[tuple[int, str, Callable[[Connection], None]]] = [
    (1, "initial schema: projects, items, responses, predictions, annotations, gold, runs", _v1),
    (2, "annotations.deleted_at: deletions in Label Studio kept as history", _v2),
    (3, "responses.prompt: the rendered prompt text as sent (per-sample logs)", _v3),
    (4, "Label Studio project kinds: scope, kind and shown columns (PhysAlign state)", _v4),
    (5, "withdrawals: items withdrawn from a benchmark, with the reason", _v5),
    (6, "annotations.simulated: SIMULATED annotators marked in the store", _v6),
    (7, "exposure violations, review pseudonyms, gold-standard items (blind stays blind)", _v7),
    (8, "request_claims: a lease per request key (no paid call twice)", _v8),
    (9, "fresh_runs: the start of an unfinished --fresh prefill (its rerun resumes it)", _v9),
    (10, "simulated_accounts: SIMULATED annotators marked as each pull stores them", _v10),
]

LATEST = max(v for v, _, _ in MIGRATIONS)


def current_version(conn: Connection) -> int:
    if not inspect(conn).has_table(t.schema_version.name):
        return 0
    row = conn.execute(
        select(t.schema_version.c.version).order_by(t.schema_version.c.version.desc())
    ).first()
    return int(row[0]) if row else 0


def migrate(conn: Connection) -> list[int]:
    """Apply every pending step in order, inside the caller's transaction."""
    t.schema_version.create(conn, checkfirst=True)
    # by the set recorded, not the highest: steps numbered in parallel (6 and 7) land in
    # either order, and a store at 7 without 6 still gets 6
    have = {int(v) for (v,) in conn.execute(select(t.schema_version.c.version))}
    applied = []
    for version, desc, step in MIGRATIONS:
        if version in have:
            continue
        step(conn)
        conn.execute(
            t.schema_version.insert().values(
                version=version, description=desc, applied_at=datetime.now(UTC)
            )
        )
        applied.append(version)
    return applied
