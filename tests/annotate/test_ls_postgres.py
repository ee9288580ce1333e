"""Label Studio on PostgreSQL (a team's setup): `annotate serve --ls-database URL` against the
PostgreSQL that scripts/test.sh starts (TRUTHLINE_TEST_PG_URL), with the truthline store on the
same server in a database of its own. The real server migrates a fresh database, a push lands
its tasks there (not in a SQLite file), the password never shows, and a later serve reuses
the recorded database while a different one is refused."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from truthline.annotate import LSClient, push
from truthline.annotate._local import creds_path, data_dir, read_state
from truthline.annotate._local import stop as stop_local
from truthline.annotate._ls_database import PASSWORD_ENV, RECORD_NAME, LSDatabase, resolve
from truthline.annotate._server import Credentials, free_port, server_env
from truthline.cli import app
from truthline.errors import TruthlineError
from truthline.workspace import Workspace

from .conftest import add_predictions

SECRET = "pw-" + uuid.uuid4().hex[:12]  # trust auth accepts any password: it must never show


def _pg_server() -> tuple[str, int, str]:
    url = os.environ.get("TRUTHLINE_TEST_PG_URL")
    if not url:
        pytest.fail(
            "TRUTHLINE_TEST_PG_URL is not set: run the suite with scripts/test.sh, which starts PostgreSQL"
        )
    u = urlsplit(url)
    return str(u.hostname), int(u.port or 5432), u.username or "postgres"


@pytest.fixture
def pg_databases() -> Iterator[tuple[str, str]]:
    """(Label Studio's URL with a password, the store's URL): two new databases on one server."""
    host, port, user = _pg_server()
    tag = uuid.uuid4().hex[:8]
    ls_db, store_db = f"ls_{tag}", f"store_{tag}"
    admin = create_engine(
        f"postgresql+psycopg://{user}@{host}:{port}/postgres", isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{store_db}"'))  # Label Studio's: serve creates it
    try:
        yield (
            f"postgresql://{user}:{SECRET}@{host}:{port}/{ls_db}",
            f"postgresql+psycopg://{user}@{host}:{port}/{store_db}",
        )
    finally:
        with admin.connect() as conn:
            for db in (ls_db, store_db):
                conn.execute(text(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'))
        admin.dispose()


def _serve(root: Path, store_url: str, port: int, media_port: int, *extra: str) -> dict:
    r = CliRunner().invoke(
        app,
        [
            "--workspace",
            str(root),
            "--db",
            store_url,
            "annotate",
            "serve",
            "--port",
            str(port),
            "--media-port",
            str(media_port),
            *extra,
            "--json",
        ],
    )
    assert SECRET not in r.output
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


@pytest.mark.labelstudio
def test_serve_on_postgresql_with_the_store_on_the_same_server(
    pg_databases: tuple[str, str], dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    from truthline.media import import_items

    ls_url, store_url = pg_databases
    ws = Workspace.from_env(tmp_path / "ws", db_url=store_url)
    project = ws.init_project("steel-safety")
    root, csv = dataset
    import_items(ws.store, project, root, metadata=csv, progress=False)
    add_predictions(ws, project)
    port, media_port = free_port(), free_port()
    want = LSDatabase.parse(ls_url)
    try:
        info = _serve(ws.root, store_url, port, media_port, "--ls-database", ls_url)
        assert info["started"] and info["ls_database"] == want.shown
        ddir = data_dir(ws)
        assert not (ddir / "label_studio.sqlite3").exists()  # nothing went to SQLite
        assert json.loads((ddir / RECORD_NAME).read_text()) == {"url": want.shown}
        pid = int((ddir / "server.pid").read_text().split()[0])
        assert SECRET not in Path(f"/proc/{pid}/cmdline").read_text()
        creds = Credentials.load(creds_path(ws))
        assert creds is not None
        with LSClient(info["url"], creds.token) as c:
            rep = push(
                ws.store,
                project,
                c,
                "anchored",
                media_base=info["media_base"],
                media_root=Path(info["media_root"]),
                split=1.0,
                progress=False,
            )
        assert rep.created == 8 and rep.predictions == 8
        lsdb = create_engine(ls_url.replace("postgresql://", "postgresql+psycopg://"))
        with lsdb.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM django_migrations")).scalar_one() > 300
            tasks = conn.execute(
                text("SELECT count(*) FROM task WHERE project_id = :p"), {"p": rep.ls_project_id}
            ).scalar_one()
        lsdb.dispose()
        assert tasks == 8
        with ws.store.begin() as conn:  # the store's rows are in its own database
            assert conn.execute(text("SELECT count(*) FROM ls_tasks")).scalar_one() == 8
        for f in ddir.rglob("*"):
            if f.is_file() and f.stat().st_size < 1 << 24:
                assert SECRET.encode() not in f.read_bytes(), f
        stop_local(ws)

        # a later serve without the option starts on the recorded database, projects intact
        again = _serve(ws.root, store_url, port, media_port)
        assert again["started"] and again["ls_database"] == want.shown
        with LSClient(again["url"], creds.token) as c:
            assert c.get(f"/api/projects/{rep.ls_project_id}")["task_number"] == 8
        assert not (ddir / "label_studio.sqlite3").exists()

        other = ls_url.rsplit("/", 1)[0] + "/some_other_db"
        r = CliRunner().invoke(
            app,
            [
                *("--workspace", str(ws.root), "--db", store_url, "annotate", "serve"),
                *("--port", str(port), "--media-port", str(media_port), "--ls-database", other),
            ],
        )
        said = f"{r.output}{r.exception}"  # the app raises; the console entry point prints it
        assert r.exit_code != 0 and "keeps its data in" in said and SECRET not in said
    finally:
        if read_state(ws):
            stop_local(ws)
        ws.store.close()


def test_database_url_parsing_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    db = LSDatabase.parse("postgresql+psycopg://ann:s%40cret@db.example:6543/labels")
    assert (db.host, db.port, db.user, db.name, db.password) == (
        "db.example",
        6543,
        "ann",
        "labels",
        "s@cret",
    )
    assert db.shown == "postgresql://ann@db.example:6543/labels" and "s@cret" not in repr(db)
    assert db == LSDatabase.parse("postgres://ann:other@db.example:6543/labels")  # same database
    monkeypatch.setenv(PASSWORD_ENV, "from-env")
    assert LSDatabase.parse("postgresql://ann@db.example/labels").password == "from-env"
    assert LSDatabase.parse("postgresql://db.example/labels").user == "postgres"
    for bad, says in (
        ("sqlite:///x.db", "runs on PostgreSQL"),
        ("postgresql://db.example", "needs a host and a database name"),
        ("postgresql://db.example:notaport/x", "not a database URL"),
    ):
        with pytest.raises(TruthlineError, match=says):
            LSDatabase.parse(bad)

    # inherited database variables never re-point the server; the given ones are set
    monkeypatch.setenv("POSTGRE_HOST", "elsewhere")
    monkeypatch.setenv("DJANGO_DB", "mysql")
    creds = Credentials.new("http://127.0.0.1:1")
    plain = server_env(Path("/tmp/x"), creds)
    assert "POSTGRE_HOST" not in plain and "DJANGO_DB" not in plain  # SQLite in the data dir
    env = server_env(Path("/tmp/x"), creds, db)
    assert env["DJANGO_DB"] == "default" and env["POSTGRE_HOST"] == "db.example"
    assert (env["POSTGRE_PORT"], env["POSTGRE_NAME"], env["POSTGRE_USER"]) == (
        "6543",
        "labels",
        "ann",
    )
    assert env["POSTGRE_PASSWORD"] == "s@cret"


def test_a_data_dir_keeps_its_database(tmp_path: Path) -> None:
    a = LSDatabase.parse("postgresql://u:pw@h:5432/one")
    assert resolve(tmp_path, None) is None  # nothing recorded, nothing given: SQLite
    (tmp_path / RECORD_NAME).write_text(json.dumps({"url": a.shown}))
    assert resolve(tmp_path, None) == a
    assert resolve(tmp_path, a) == a
    with pytest.raises(TruthlineError, match="keeps its data in postgresql://u@h:5432/one"):
        resolve(tmp_path, LSDatabase.parse("postgresql://u@h:5432/two"))
    sqlite_dir = tmp_path / "old"
    sqlite_dir.mkdir()
    (sqlite_dir / "label_studio.sqlite3").write_bytes(b"")
    with pytest.raises(TruthlineError, match="already keeps its data in SQLite"):
        resolve(sqlite_dir, a)
    (tmp_path / RECORD_NAME).write_text("not json")
    with pytest.raises(TruthlineError, match="not the database record"):
        resolve(tmp_path, None)
