"""Which gold snapshot is meant: the one rule every reader of gold uses."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from truthline.errors import TruthlineError
from truthline.store import _tables as tables


def resolve_snapshot(conn: Any, project: str, snapshot: str | None) -> str | None:
    """The full hash of a gold snapshot of ``project``: ``snapshot`` is a hash or a unique
    prefix of one; ``None`` means the newest (``None`` back when the project has no gold).
    The one definition of "latest gold" for the store's status, audit, benchmark and
    export (newest ``created_at``; the hash breaks a tie so every reader picks the same)."""
    t = tables.gold_snapshots
    if snapshot is None:
        row = conn.execute(
            select(t.c.hash).where(t.c.project == project).order_by(t.c.created_at.desc(), t.c.hash)
        ).first()
        return str(row[0]) if row else None
    found = conn.execute(
        select(t.c.hash).where(t.c.project == project, t.c.hash.like(f"{snapshot}%"))
    ).all()
    if len(found) != 1:
        raise TruthlineError(
            f"gold snapshot {snapshot!r} of project {project!r}: "
            + (
                "not found (list them with `truthline audit finalize --json`)"
                if not found
                else "ambiguous prefix, give more characters"
            )
        )
    return str(found[0][0])
