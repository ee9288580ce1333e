"""What a page works on: a READ-ONLY store, the project, and where they came from.

The CLI passes the workspace, database URL and project to the Streamlit process in
``TRUTHLINE_WORKSPACE`` / ``TRUTHLINE_DB`` / ``TRUTHLINE_PROJECT``. Pages never write: the
store is opened without migrating and every connection is set read-only at the database.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import event

from truthline.errors import TruthlineError
from truthline.project import Project
from truthline.store import Store, redact_url


def _read_only(dbapi_conn, _record) -> None:  # pragma: no cover - trivial
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA query_only=ON")
    cur.close()


def _read_only_pg(dbapi_conn, _record) -> None:  # pragma: no cover - needs PostgreSQL
    cur = dbapi_conn.cursor()
    cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    cur.close()
    dbapi_conn.commit()


def read_only_store(url: str) -> Store:
    """Open a store that refuses writes (SQLite ``query_only``, PostgreSQL read-only sessions)."""
    store = Store(url, create=False)
    listener = _read_only if store.engine.dialect.name == "sqlite" else _read_only_pg
    event.listen(store.engine, "connect", listener)
    store.engine.dispose()  # drop the connection opened for the version check
    return store


@dataclass(frozen=True)
class Source:
    """Where the dashboards read from (hashable: it keys every cache)."""

    url: str
    workspace: str | None
    project: str | None

    @classmethod
    def from_env(cls) -> Source:
        ws = os.environ.get("TRUTHLINE_WORKSPACE")
        url = os.environ.get("TRUTHLINE_DB")
        root = Path(ws or "workspace").resolve()
        if not url:
            db = root / "truthline.db"
            if not db.is_file():
                raise TruthlineError(
                    f"no store at {db}; run `truthline demo --workspace {root}` or "
                    "`truthline init steel-safety` first, or pass --workspace/--db"
                )
            url = f"sqlite:///{db}"
        return cls(url=url, workspace=str(root), project=os.environ.get("TRUTHLINE_PROJECT"))

    @property
    def shown_url(self) -> str:
        return redact_url(self.url)


@dataclass
class Context:
    """Handed to every page's render function."""

    source: Source
    store: Store
    project: Project

    @property
    def name(self) -> str:
        return self.project.name


def load_project(store: Store, source: Source, name: str) -> Project:
    """The project definition: the workspace's folder if there is one, else the store's copy."""
    from sqlalchemy import select

    from truthline.project import load_project as load_file
    from truthline.project import validate_data
    from truthline.store import tables as t
    from truthline.workspace import Workspace

    if source.workspace:
        ws = Workspace(root=Path(source.workspace), db_url=source.url)
        if name in ws.project_names():
            return load_file(ws.projects_dir / name)
    with store.begin() as conn:
        row = conn.execute(select(t.projects.c.definition).where(t.projects.c.name == name)).first()
    if row is None:
        raise TruthlineError(f"no project {name!r} in the store at {source.shown_url}")
    return validate_data(row[0], f"store:projects/{name}")
