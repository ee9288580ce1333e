"""Label Studio on PostgreSQL (a team's setup): a database URL -> Label Studio's settings.

Label Studio reads its database from the environment (``label_studio/core/settings``):
``DJANGO_DB=default`` selects PostgreSQL, ``POSTGRE_NAME/USER/PASSWORD/HOST/PORT`` say
where. The password comes from the URL or ``TRUTHLINE_LS_DB_PASSWORD`` (else libpq's own
``PGPASSWORD`` / ``~/.pgpass``); it reaches the server by environment only and is never
printed or written. The data dir records the URL without it (``database.json``): a later
``serve`` without ``--ls-database`` uses the same database, a different one is refused
(the store's task ids point into the first), and so is moving a SQLite data dir.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from truthline.errors import TruthlineError

PASSWORD_ENV = "TRUTHLINE_LS_DB_PASSWORD"
RECORD_NAME = "database.json"
SCHEMES = ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2")

# Inherited variables that would re-point Label Studio's database: dropped from its env.
DB_ENV_PREFIXES = ("POSTGRE_", "HEARTEX_", "MYSQL_", "DATABASE_NAME")


@dataclass(frozen=True)
class LSDatabase:
    """Where Label Studio keeps its data; equal when they name the same database."""

    host: str
    port: int
    name: str
    user: str
    password: str = field(default="", repr=False, compare=False)

    @classmethod
    def parse(cls, url: str, *, what: str = "--ls-database") -> LSDatabase:
        """``postgresql://user[:password]@host[:port]/dbname`` (also ``postgresql+psycopg``)."""
        try:
            parts = urlsplit(url.strip())
            port = parts.port or 5432
        except ValueError:
            raise TruthlineError(
                f"{what}: not a database URL (postgresql://user@host:port/dbname)"
            ) from None
        if parts.scheme.lower() not in SCHEMES:
            raise TruthlineError(
                f"{what}: Label Studio runs on PostgreSQL here; give a postgresql://"
                f"user@host:port/dbname URL (got a {parts.scheme or 'scheme-less'} URL)"
            )
        name = unquote(parts.path.lstrip("/"))
        if not parts.hostname or not name or "/" in name:
            raise TruthlineError(
                f"{what}: the URL needs a host and a database name "
                "(postgresql://user@host:port/dbname)"
            )
        password = unquote(parts.password or "") or os.environ.get(PASSWORD_ENV, "")
        return cls(
            host=parts.hostname,
            port=port,
            name=name,
            user=unquote(parts.username or "") or "postgres",
            password=password,
        )

    @property
    def shown(self) -> str:
        """The URL without its password (what is printed and recorded)."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.name}"

    def env(self) -> dict[str, str]:
        """Label Studio's database settings (an empty password leaves it to libpq)."""
        return {
            "DJANGO_DB": "default",
            "POSTGRE_NAME": self.name,
            "POSTGRE_USER": self.user,
            "POSTGRE_PASSWORD": self.password,
            "POSTGRE_HOST": self.host,
            "POSTGRE_PORT": str(self.port),
        }

    def _connect(self, dbname: str) -> Any:
        import psycopg

        return psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password or None,
            dbname=dbname,
            connect_timeout=5,
            autocommit=True,
        )

    def ensure_exists(self) -> None:
        """Create the database when the server lacks it (needs CREATEDB); one clear line else."""
        import psycopg

        try:
            self._connect(self.name).close()
            return
        except psycopg.OperationalError as exc:
            if f'"{self.name}" does not exist' not in str(exc):
                raise TruthlineError(
                    f"cannot reach Label Studio's database {self.shown}: "
                    f"{_first_line(exc)}; check the URL and the password ({PASSWORD_ENV})"
                ) from None
        from psycopg import sql

        try:
            with self._connect("postgres") as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
        except psycopg.Error as exc:
            raise TruthlineError(
                f"database {self.name!r} does not exist on {self.host}:{self.port} and could not "
                f"be created ({_first_line(exc)}); create it (createdb -O {self.user} "
                f"{self.name}) and serve again"
            ) from None

    def migrations_applied(self) -> int:
        """Rows in Django's migration table (0 for a fresh or unreachable database)."""
        import psycopg

        try:
            with self._connect(self.name) as conn:
                row = conn.execute("SELECT count(*) FROM django_migrations").fetchone()
        except psycopg.Error:
            return 0
        return int(row[0]) if row else 0


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def recorded(data_dir: Path) -> LSDatabase | None:
    """The database a data dir's server was started on (password from the environment)."""
    path = data_dir / RECORD_NAME
    if not path.is_file():
        return None
    try:
        url = str(json.loads(path.read_text(encoding="utf-8"))["url"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise TruthlineError(
            f"{path} is not the database record truthline writes (JSON with 'url'); restore it "
            "or serve again with --ls-database URL"
        ) from None
    return LSDatabase.parse(url, what=str(path))


def resolve(data_dir: Path, given: LSDatabase | None) -> LSDatabase | None:
    """The database to start on: the one given, else the recorded one; a switch is refused."""
    rec = recorded(data_dir)
    if given is None:
        return rec
    if rec is not None and rec != given:
        raise TruthlineError(
            f"Label Studio for {data_dir} keeps its data in {rec.shown}, not {given.shown}: the "
            "store's task ids point there. Serve without --ls-database, or use another workspace"
        )
    if rec is None and (data_dir / "label_studio.sqlite3").exists():
        raise TruthlineError(
            f"Label Studio for {data_dir} already keeps its data in SQLite "
            f"({data_dir / 'label_studio.sqlite3'}); it cannot move to {given.shown} here. "
            "Use a new workspace for the PostgreSQL server"
        )
    if rec is not None and not given.password and rec.password:
        return replace(given, password=rec.password)
    return given


def record(data_dir: Path, db: LSDatabase) -> None:
    """Keep the URL (never the password) beside Label Studio's data."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / RECORD_NAME).write_text(json.dumps({"url": db.shown}) + "\n", encoding="utf-8")
