"""The store: the single source of truth (SQLite by default, PostgreSQL by URL)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, String, create_engine, event, func, select
from sqlalchemy.exc import DatabaseError, DataError, DBAPIError, OperationalError

from truthline.errors import TruthlineError
from truthline.store import _tables as t
from truthline.store._json_rows import rows_with_json
from truthline.store._json_text import dumps, make_dumps
from truthline.store._migrations import LATEST, current_version, migrate
from truthline.store._snapshots import resolve_snapshot
from truthline.store._status import AnnotationCounts, GoldCounts, PredictionCounts, StageCounts


def now() -> datetime:
    return datetime.now(UTC)


_HASHED = make_dumps(sort_keys=True, default=str)
"""``json.dumps(obj, sort_keys=True, default=str)``, its encoder built once (``_json_text``)."""


def json_hash(obj: Any) -> str:
    """Stable SHA-256 of a JSON-able object (sorted keys)."""
    return text_hash(_HASHED(obj))


json_hash_text = _HASHED
"""The text ``json_hash`` hashes (callers that put a hashed text together from parts)."""


def text_hash(text: str) -> str:
    """``json_hash`` of an object whose ``json_hash_text`` is ``text``."""
    return hashlib.sha256(text.encode()).hexdigest()


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # pragma: no cover - trivial
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


class StoreError(TruthlineError):
    """The store cannot be opened or written (read-only, not a database, disk full, too new,
    a value longer than its column): one line naming the store, never a driver traceback."""


class _DriverStoreError(StoreError):
    """A StoreError that is also the SQLAlchemy error it translates, so callers that catch
    ``OperationalError`` (a retry on a locked database, say) keep working."""

    def __init__(self, message: str, exc: DBAPIError):
        DBAPIError.__init__(self, exc.statement, exc.params, exc.orig)  # type: ignore[arg-type]
        self.message = message

    def __str__(self) -> str:
        return self.message


class StoreOperationalError(_DriverStoreError, OperationalError):
    """Read-only store, disk full, locked, unreachable server."""


class StoreDataError(_DriverStoreError, DataError):
    """A value the database refuses (on PostgreSQL: longer than its column)."""


class StoreDatabaseError(_DriverStoreError, DatabaseError):
    """The file is not a database."""


def _sqlite_file(url: str) -> Path | None:
    if not url.startswith("sqlite:///"):
        return None
    path, _, query = url.removeprefix("sqlite:///").partition("?")
    if path.startswith("file:"):  # SQLite URI filename (uri=true): ``file:/path?mode=ro``
        path = path.removeprefix("file:")
        if "mode=ro" in query:
            return Path(path)
    return Path(path) if path and path != ":memory:" else None


def _create_private(path: Path) -> None:
    """Create a new SQLite file 0600 (SQLite gives its -wal/-shm files the same mode)."""
    try:
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.parent.is_dir():
            return  # the store exists: keep its mode
        raise StoreError(
            f"cannot create the store file {path}: {path.parent} is not a folder"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot create the store file {path}: {exc.strerror or exc}; "
            "pass --workspace (or --db) with a place you can write"
        ) from None
    os.close(fd)


def _string_lengths() -> dict[str, dict[str, int]]:
    """Column length limits per table (PostgreSQL enforces them, SQLite does not)."""
    out: dict[str, dict[str, int]] = {}
    for table in t.metadata.tables.values():
        for col in table.columns:
            if isinstance(col.type, String) and col.type.length:
                out.setdefault(table.name, {})[col.name] = col.type.length
    return out


def _too_long(exc: DBAPIError) -> str | None:
    """Which column a too-long value was written to, from the failed statement and params."""
    m = re.search(r"(?:INSERT INTO|UPDATE)\s+\"?(\w+)", str(exc.statement or ""), re.I)
    limits = _string_lengths()
    tables = [m.group(1)] if m and m.group(1) in limits else list(limits)
    params = exc.params
    rows = params if isinstance(params, list | tuple) else [params]
    for row in rows:
        if not isinstance(row, dict):
            continue
        for key, value in row.items():
            col = re.sub(r"_\d+$", "", str(key))
            for tname in tables:
                limit = limits.get(tname, {}).get(col)
                if limit and isinstance(value, str) and len(value) > limit:
                    return (
                        f"{tname}.{col}: a value of {len(value)} characters "
                        f"({value[:40]!r}...) is longer than the {limit} allowed"
                    )
    return None


def _url_hint(url: str) -> str | None:
    """What to write instead of a PostgreSQL URL SQLAlchemy cannot load: ``postgres://``
    (Heroku's and libpq's spelling) fails with "Can't load plugin: sqlalchemy.dialects:
    postgres", and a bare ``postgresql://`` needs psycopg2, which truthline does not install;
    truthline's driver is psycopg 3, spelled ``postgresql+psycopg://``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    if scheme.lower() in ("postgres", "postgresql", "postgresql+psycopg2"):
        fixed = redact_url(f"postgresql+psycopg://{rest}")
        return f"write the URL as {fixed} (postgresql+psycopg:// selects the psycopg 3 driver)"
    return None


def _in_memory(url: str) -> bool:
    """Whether a SQLite URL names no file (``sqlite://``, ``:memory:``, ``mode=memory``): a
    store that vanishes, with everything written to it, when the command ends."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme.lower().split("+")[0] != "sqlite":
        return False
    path, _, query = rest.removeprefix("/").partition("?")
    return (
        path in ("", ":memory:")
        or path.startswith("file::memory:")
        or "mode=memory" in query.lower()
    )


class Store:
    """A migrated database. Writes are short transactions committed as they happen."""

    def __init__(self, url: str, *, create: bool = True):
        self.check_url(url)
        self.url = url
        file = _sqlite_file(url)
        if file is not None and create and "mode=ro" not in url:
            _create_private(file)
        try:
            # JSON cells as json.dumps writes them, from one encoder (``_json_text``)
            self.engine: Engine = create_engine(
                url, future=True, pool_pre_ping=True, json_serializer=dumps
            )
        except Exception as exc:  # bad URL / missing driver
            hint = _url_hint(url)
            raise StoreError(f"cannot open the store at {redact_url(url)}: {hint or exc}") from None
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        try:
            with self.engine.begin() as conn:
                have = current_version(conn)
                if have > LATEST:
                    raise StoreError(
                        f"the store at {self.shown}: made by a newer truthline (schema version "
                        f"{have}; this truthline knows up to {LATEST}); upgrade truthline "
                        "(pip install -U truthline) to use it"
                    )
                if create:
                    migrate(conn)
                elif have < LATEST:
                    raise StoreError(
                        "the store schema is out of date; run any truthline command to migrate"
                    )
        except DBAPIError as exc:
            self.engine.dispose()
            raise StoreError(f"cannot open the store at {self.shown}: {_reason(exc)}") from None

    @staticmethod
    def check_url(url: str) -> str:
        """``url`` unless it is a store that cannot keep anything: an in-memory SQLite
        database vanishes, with every paid answer and label, when the command ends."""
        if _in_memory(url):
            raise StoreError(
                f"the store URL {url!r} is an in-memory SQLite database, thrown away with "
                "everything written to it when the command ends; give a file (e.g. "
                "TRUTHLINE_DB=sqlite:////abs/path/truthline.db) or leave TRUTHLINE_DB and --db "
                "unset for the workspace's own truthline.db"
            )
        return url

    @property
    def shown(self) -> str:
        """The store's URL (a file path for SQLite), password hidden: safe to print."""
        file = _sqlite_file(self.url)
        return str(file) if file is not None else redact_url(self.url)

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A transaction committed on exit (rolled back on error).

        Errors of the database itself (read-only or garbage file, disk full, a value longer
        than its column on PostgreSQL) become one StoreError naming the store; integrity
        errors pass through unchanged for callers that resolve conflicts."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except StoreError:
            raise
        except DataError as exc:
            what = _too_long(exc) or _reason(exc)
            msg = f"the store at {self.shown} refused a value: {what}"
            raise StoreDataError(msg, exc) from exc
        except OperationalError as exc:
            msg = f"the store at {self.shown}: {_reason(exc)}"
            raise StoreOperationalError(msg, exc) from exc
        except DatabaseError as exc:
            if "not a database" in str(exc.orig):
                msg = f"the store at {self.shown}: {_reason(exc)}"
                raise StoreDatabaseError(msg, exc) from exc
            raise

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
                select(t.projects.c.definition_hash, t.projects.c.source_path).where(
                    t.projects.c.name == project.name
                )
            ).first()
            if row is not None and tuple(row) == (h, source_path):
                return  # unchanged: a read-only command leaves the store as it was
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
        """Projects (a system's scopes of Label Studio units, ``projects.scope``, left out)."""
        p = t.projects
        with self.begin() as conn:
            return [
                r[0]
                for r in conn.execute(
                    select(p.c.name).where(p.c.scope.is_(None)).order_by(p.c.name)
                )
            ]

    # -- items ------------------------------------------------------------------------
    def items(self, project: str) -> list[dict[str, Any]]:
        with self.begin() as conn:
            stmt = select(t.items).where(t.items.c.project == project).order_by(t.items.c.id)
            return [dict(zip(r._fields, r, strict=True)) for r in rows_with_json(conn, stmt)]

    def item_ids_by_key(self, project: str) -> dict[str, int]:
        with self.begin() as conn:
            rows = conn.execute(
                select(t.items.c.key, t.items.c.id).where(t.items.c.project == project)
            )
            return {k: i for k, i in rows}

    # -- status -----------------------------------------------------------------------
    def status(self, project: str) -> dict[str, Any]:
        """Counts per stage of the loop for one project, as JSON (``stage_counts``)."""
        return self.stage_counts(project).to_dict()

    def stage_counts(self, project: str) -> StageCounts:
        """Counts per stage of the loop for one project."""

        def count(conn: Connection, table, *where, distinct=None) -> int:
            col = func.count(func.distinct(distinct)) if distinct is not None else func.count()
            return int(conn.execute(select(col).select_from(table).where(*where)).scalar_one())

        with self.begin() as conn:
            preds = conn.execute(
                select(t.predictions.c.model_version, t.predictions.c.status, func.count())
                .where(t.predictions.c.project == project)
                .group_by(t.predictions.c.model_version, t.predictions.c.status)
            ).all()
            cost = conn.execute(
                select(func.coalesce(func.sum(t.responses.c.cost_usd), 0.0)).where(
                    t.responses.c.project == project
                )
            ).scalar_one()
            ann = conn.execute(
                select(
                    t.annotations.c.arm,
                    t.annotations.c.tier,
                    func.count(func.distinct(t.annotations.c.source_id)),
                )
                .where(t.annotations.c.project == project)
                .group_by(t.annotations.c.arm, t.annotations.c.tier)
            ).all()
            snap = resolve_snapshot(conn, project, None)
            return StageCounts(
                project=project,
                items=count(conn, t.items, t.items.c.project == project),
                skipped_media=count(conn, t.skipped_media, t.skipped_media.c.project == project),
                predictions=PredictionCounts(
                    total=sum(n for _, _, n in preds),
                    by_model=_nest((m, s, n) for m, s, n in preds),
                ),
                model_cost_usd=round(float(cost), 6),
                annotations=AnnotationCounts(
                    total=sum(n for _, _, n in ann),
                    by_arm_tier={f"{arm}/tier{tier}": n for arm, tier, n in ann},
                    annotators=count(
                        conn,
                        t.annotations,
                        t.annotations.c.project == project,
                        distinct=t.annotations.c.annotator,
                    ),
                ),
                gold=GoldCounts(
                    snapshots=count(conn, t.gold_snapshots, t.gold_snapshots.c.project == project),
                    latest=snap,
                    values=count(conn, t.gold, t.gold.c.snapshot == snap) if snap else 0,
                ),
                runs=count(conn, t.runs, t.runs.c.project == project),
                exclusions=count(
                    conn,
                    t.exclusions,
                    t.exclusions.c.project == project,
                    t.exclusions.c.active.is_(True),
                ),
            )


def _nest(rows) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for a, b, n in rows:
        out.setdefault(a, {})[b] = n
    return out


def explain(exc: DBAPIError) -> str:
    """One line for a database error: the column a too-long value was meant for, or the
    driver's first line with a hint (read-only, disk full, not a database)."""
    return (_too_long(exc) if isinstance(exc, DataError) else None) or _reason(exc)


def _reason(exc: DBAPIError) -> str:
    """The driver's message, first line only, with a hint for the common cases."""
    msg = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc).__name__
    low = msg.lower()
    if "readonly" in low or "read-only" in low:
        msg += " (the file or its folder is read-only; fix the permissions or use another --db)"
    elif "disk is full" in low or "no space" in low:
        msg += " (free some disk space and rerun: what was saved is kept)"
    elif "not a database" in low:
        msg += " (this file is not a truthline store; pass another --db or --workspace)"
    elif "unable to open database file" in low:
        msg += " (the folder is missing or not writable)"
    return msg


def redact_url(url: str) -> str:
    """A database URL with any password replaced, safe to print."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable database URL>"
