"""The store: the single source of truth (SQLite by default, PostgreSQL by URL)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, func, select
from sqlalchemy.exc import OperationalError

from truthline.errors import TruthlineError
from truthline.store import _tables as t
from truthline.store._migrations import LATEST, current_version, migrate


def now() -> datetime:
    return datetime.now(UTC)


def json_hash(obj: Any) -> str:
    """Stable SHA-256 of a JSON-able object (sorted keys)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # pragma: no cover - trivial
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


class Store:
    """A migrated database. Writes are short transactions committed as they happen."""

    def __init__(self, url: str, *, create: bool = True):
        self.url = url
        if url.startswith("sqlite:///"):
            path = url.removeprefix("sqlite:///")
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.engine: Engine = create_engine(url, future=True, pool_pre_ping=True)
        except Exception as exc:  # bad URL / missing driver
            raise TruthlineError(f"cannot open the store at {redact_url(url)}: {exc}") from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            with self.engine.begin() as conn:
                if create:
                    migrate(conn)
                elif current_version(conn) < LATEST:
                    raise TruthlineError(
                        "the store schema is out of date; run any truthline command to migrate"
                    )
        except OperationalError as exc:
            raise TruthlineError(
                f"cannot open the store at {redact_url(url)}: {exc.orig}"
            ) from None

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A transaction committed on exit (rolled back on error)."""
        with self.engine.begin() as conn:
            yield conn

    def close(self) -> None:
        self.engine.dispose()

    # -- projects ---------------------------------------------------------------------
    def upsert_project(self, project, source_path: str = "") -> None:
        """Register or refresh a project definition (``truthline.project.Project``)."""
        definition = project.model_dump(mode="json")
        h = json_hash(definition)
        ts = now()
        with self.begin() as conn:
            row = conn.execute(
                select(t.projects.c.name).where(t.projects.c.name == project.name)
            ).first()
            values = dict(
                title=project.title,
                definition=definition,
                definition_hash=h,
                source_path=source_path,
                updated_at=ts,
            )
            if row:
                conn.execute(
                    t.projects.update().where(t.projects.c.name == project.name).values(**values)
                )
            else:
                conn.execute(t.projects.insert().values(name=project.name, created_at=ts, **values))

    def project_names(self) -> list[str]:
        with self.begin() as conn:
            return [
                r[0] for r in conn.execute(select(t.projects.c.name).order_by(t.projects.c.name))
            ]

    # -- items ------------------------------------------------------------------------
    def items(self, project: str) -> list[dict[str, Any]]:
        with self.begin() as conn:
            rows = conn.execute(
                select(t.items).where(t.items.c.project == project).order_by(t.items.c.id)
            )
            return [dict(r._mapping) for r in rows]

    def item_ids_by_key(self, project: str) -> dict[str, int]:
        with self.begin() as conn:
            rows = conn.execute(
                select(t.items.c.key, t.items.c.id).where(t.items.c.project == project)
            )
            return {k: i for k, i in rows}

    # -- status -----------------------------------------------------------------------
    def status(self, project: str) -> dict[str, Any]:
        """Counts per stage of the loop for one project."""

        def count(conn: Connection, table, *where, distinct=None) -> int:
            col = func.count(func.distinct(distinct)) if distinct is not None else func.count()
            return int(conn.execute(select(col).select_from(table).where(*where)).scalar_one())

        with self.begin() as conn:
            out: dict[str, Any] = {"project": project}
            out["items"] = count(conn, t.items, t.items.c.project == project)
            out["skipped_media"] = count(
                conn, t.skipped_media, t.skipped_media.c.project == project
            )
            preds = conn.execute(
                select(t.predictions.c.model_version, t.predictions.c.status, func.count())
                .where(t.predictions.c.project == project)
                .group_by(t.predictions.c.model_version, t.predictions.c.status)
            ).all()
            out["predictions"] = {
                "total": sum(n for _, _, n in preds),
                "by_model": _nest((m, s, n) for m, s, n in preds),
            }
            cost = conn.execute(
                select(func.coalesce(func.sum(t.responses.c.cost_usd), 0.0)).where(
                    t.responses.c.project == project
                )
            ).scalar_one()
            out["model_cost_usd"] = round(float(cost), 6)
            ann = conn.execute(
                select(
                    t.annotations.c.arm,
                    t.annotations.c.tier,
                    func.count(func.distinct(t.annotations.c.source_id)),
                )
                .where(t.annotations.c.project == project)
                .group_by(t.annotations.c.arm, t.annotations.c.tier)
            ).all()
            out["annotations"] = {
                "total": sum(n for _, _, n in ann),
                "by_arm_tier": {f"{arm}/tier{tier}": n for arm, tier, n in ann},
                "annotators": count(
                    conn,
                    t.annotations,
                    t.annotations.c.project == project,
                    distinct=t.annotations.c.annotator,
                ),
            }
            snap = conn.execute(
                select(t.gold_snapshots.c.hash, t.gold_snapshots.c.counts)
                .where(t.gold_snapshots.c.project == project)
                .order_by(t.gold_snapshots.c.created_at.desc())
            ).first()
            out["gold"] = {
                "snapshots": count(conn, t.gold_snapshots, t.gold_snapshots.c.project == project),
                "latest": snap[0] if snap else None,
                "values": count(conn, t.gold, t.gold.c.snapshot == snap[0]) if snap else 0,
            }
            out["runs"] = count(conn, t.runs, t.runs.c.project == project)
            out["exclusions"] = count(
                conn,
                t.exclusions,
                t.exclusions.c.project == project,
                t.exclusions.c.active.is_(True),
            )
            return out


def _nest(rows) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for a, b, n in rows:
        out.setdefault(a, {})[b] = n
    return out


def redact_url(url: str) -> str:
    """A database URL with any password replaced, safe to print."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database URL>"
