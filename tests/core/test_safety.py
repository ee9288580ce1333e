"""Safety of the shell around the stages: safe names, the store file and its errors, media
never changing under labels, the CLI's error net, lazy start-up, and the dashboard's child."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import cv2
import numpy as np
import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.exc import OperationalError

from truthline._names import UnsafeNameError, check_name, check_project_name, inside
from truthline.errors import TruthlineError
from truthline.media import import_items
from truthline.project import validate_data
from truthline.store import SCHEMA_VERSION, Store, StoreError, now, tables
from truthline.workspace import Workspace, templates_dir


# -- names ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["..", ".", "../x", "a/b", "/etc", "a\\b", "", ".hidden", "a..b", "x" * 101]
)
def test_unsafe_names_are_refused(name):
    with pytest.raises(UnsafeNameError, match=r"cannot be used as a file name|empty"):
        check_name(name, "alias")


def test_safe_names_pass_and_inside_stays_under_root(tmp_path):
    assert check_name("gpt-4o.mini_2", "alias") == "gpt-4o.mini_2"
    assert check_project_name("plant-b") == "plant-b"
    with pytest.raises(UnsafeNameError, match="lower-case"):
        check_project_name("Plant B")
    assert inside(tmp_path, "a", "b") == tmp_path / "a" / "b"
    (tmp_path / "link").symlink_to("/")
    with pytest.raises(UnsafeNameError, match="points outside"):
        inside(tmp_path, "link", "etc")
    with pytest.raises(UnsafeNameError, match="points outside"):
        inside(tmp_path, "..", "x")


def test_init_force_never_deletes_outside_the_workspace(tmp_path):
    ws = Workspace.from_env(tmp_path / "ws")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    for name in ("../../victim", str(victim), "../victim"):
        with pytest.raises(TruthlineError, match="cannot be used as a file name"):
            ws.init_project("steel-safety", name=name, force=True)
    # a project folder that is a link out of the workspace is refused, not followed
    ws.projects_dir.mkdir(parents=True)
    (ws.projects_dir / "linked").symlink_to(victim)
    with pytest.raises(TruthlineError, match="points outside"):
        ws.init_project("steel-safety", name="linked", force=True)
    assert (victim / "keep.txt").read_text() == "precious"


# -- the store file -------------------------------------------------------------------
def test_new_sqlite_store_and_its_wal_are_private(tmp_path):
    old = os.umask(0o022)
    try:
        s = Store(f"sqlite:///{tmp_path / 'db' / 'truthline.db'}")
        with s.begin() as conn:
            conn.execute(
                tables.skipped_media.insert().values(
                    project="p", path="x", reason="r", created_at=now()
                )
            )
        files = sorted(p.name for p in (tmp_path / "db").iterdir())
        assert "truthline.db-wal" in files
        for p in (tmp_path / "db").iterdir():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        s.close()
    finally:
        os.umask(old)


def test_store_from_a_newer_truthline_is_refused_untouched(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    Store(url).close()
    con = sqlite3.connect(tmp_path / "s.db")
    con.execute(
        "INSERT INTO truthline_schema VALUES (?, 'future', '2030-01-01')", (SCHEMA_VERSION + 1,)
    )
    con.commit()
    con.close()
    before = (tmp_path / "s.db").read_bytes()
    with pytest.raises(StoreError, match="made by a newer truthline"):
        Store(url)
    assert (tmp_path / "s.db").read_bytes() == before


def test_disk_full_is_one_clear_error_and_keeps_what_was_saved(tmp_path):
    """SQLITE_FULL for real: the page budget of the file is capped (max_page_count)."""
    s = Store(f"sqlite:///{tmp_path / 's.db'}")
    with s.begin() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
    event.listen(s.engine, "connect", lambda c, _r: c.execute(f"PRAGMA max_page_count={pages + 2}"))
    s.engine.dispose()
    with s.begin() as conn:
        conn.execute(
            tables.skipped_media.insert().values(
                project="p", path="kept", reason="r", created_at=now()
            )
        )
    full = r"s\.db: database or disk is full \(free some disk"
    with pytest.raises(StoreError, match=full) as caught, s.begin() as conn:
        for i in range(2000):
            conn.execute(
                tables.skipped_media.insert().values(
                    project="p", path=f"big-{i}-" + "x" * 2000, reason="r", created_at=now()
                )
            )
    assert isinstance(caught.value, OperationalError)  # code catching the driver's error still can
    with s.begin() as conn:
        kept = conn.execute(tables.skipped_media.select()).all()
    assert [r.path for r in kept] == ["kept"]


@pytest.fixture
def private_pg_url():
    """A database of its own on the test PostgreSQL (other suites reset the shared one)."""
    base = os.environ.get("TRUTHLINE_TEST_PG_URL")
    if not base:
        pytest.fail("TRUTHLINE_TEST_PG_URL is not set: run the suite with scripts/test.sh")
    name = f"tl_core_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = base.rsplit("/", 1)[0] + "/" + name
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def test_postgresql_length_limit_names_the_column(private_pg_url, steel_project):
    s = Store(private_pg_url)
    s.upsert_project(steel_project)
    with s.begin() as conn:
        item = conn.execute(
            tables.items.insert().values(
                project="steel-safety",
                key="k",
                media_kind="frames",
                media=[],
                media_root="/m",
                content_hash="h",
                meta={},
                created_at=now(),
                updated_at=now(),
            )
        ).inserted_primary_key[0]
    long_path = "workers[" + "P" * 300 + "].action"
    too_long = r"annotations\.field_path: a value of 316 characters"
    with pytest.raises(StoreError, match=too_long), s.begin() as conn:
        conn.execute(
            tables.annotations.insert().values(
                project="steel-safety",
                item_id=item,
                field_path=long_path,
                annotator="a",
                arm="blind",
                source="import",
                source_id="x",
                stored_at=now(),
            )
        )
    s.close()


# -- items import ---------------------------------------------------------------------
@pytest.fixture
def photos():
    return validate_data(
        {"name": "photos", "media": "image", "fields": {"ok": {"type": "boolean"}}}, "inline"
    )


def _png(path: Path, shade: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.full((20, 30, 3), shade, np.uint8))


def test_same_stem_different_extension_is_refused_before_any_write(store, photos, tmp_path):
    store.upsert_project(photos)
    _png(tmp_path / "m" / "a.png", 1)
    cv2.imwrite(str(tmp_path / "m" / "a.jpg"), np.full((20, 30, 3), 99, np.uint8))
    _png(tmp_path / "m" / "b.png", 2)
    with pytest.raises(TruthlineError, match=r"a\.jpg and a\.png would both be item 'a'"):
        import_items(store, photos, tmp_path / "m", progress=False)
    assert store.items("photos") == []


def test_changed_media_replaces_only_where_nothing_was_built_on_it(store, photos, tmp_path):
    store.upsert_project(photos)
    m = tmp_path / "m"
    _png(m / "free.png", 1)
    _png(m / "seen.png", 2)
    import_items(store, photos, m, progress=False)
    ids = store.item_ids_by_key("photos")
    with store.begin() as conn:
        conn.execute(
            tables.predictions.insert().values(
                project="photos",
                item_id=ids["seen"],
                model_version="m",
                values={"ok": True},
                status="parsed",
                created_at=now(),
            )
        )
    hashes = {r["key"]: r["content_hash"] for r in store.items("photos")}
    _png(m / "free.png", 50)
    _png(m / "seen.png", 60)
    with pytest.raises(TruthlineError, match=r"item 'seen' \(seen.png\).*1 predictions"):
        import_items(store, photos, m, progress=False)
    assert {r["key"]: r["content_hash"] for r in store.items("photos")} == hashes
    _png(m / "seen.png", 2)  # restored: the unlabelled item's new pixels are taken
    rep = import_items(store, photos, m, progress=False)
    assert (rep.updated, rep.unchanged) == (1, 1)
    now_hashes = {r["key"]: r["content_hash"] for r in store.items("photos")}
    assert now_hashes["seen"] == hashes["seen"] and now_hashes["free"] != hashes["free"]


# -- the CLI --------------------------------------------------------------------------
def _run(*args: str, env: dict[str, str] | None = None, code: str | None = None):
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "truthline", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


def test_help_and_version_import_no_stage_and_no_heavy_library():
    probe = (
        "import sys, json\n"
        "from truthline.cli import main\n"
        "sys.argv = ['truthline', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    for flag in ("--help", "--version"):
        out = subprocess.run(
            [sys.executable, "-c", probe, flag], capture_output=True, text=True, timeout=60
        )
        mods = set(json.loads(out.stderr.strip().splitlines()[-1]))
        heavy = {"pandas", "sqlalchemy", "pydantic", "numpy", "streamlit", "cv2"}
        stages = {
            f"truthline.{s}"
            for s in ("audit", "benchmark", "prefill", "annotate", "stats", "dashboards", "demo")
        }
        assert not (mods & (heavy | stages)), sorted(mods & (heavy | stages))
    listed = _run("--help").stdout
    for name in ("prefill", "annotate", "audit", "stats", "benchmark", "dashboard", "demo"):
        assert f" {name} " in listed
    assert "Did you mean 'audit'?" in _run("audt").stderr


def test_stage_help_and_commands_still_load_on_use():
    out = _run("benchmark", "--help")
    assert out.returncode == 0 and "compare-gold" in out.stdout


NET = """
import errno, sys
import truthline.cli as cli
def boom():
    raise {exc}
cli.app.registered_commands[0].callback = boom  # `init`, as if it failed that way
sys.argv = ["truthline", "boom"]
cli.main()
"""


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (
            "OSError(errno.ENOSPC, 'No space left on device', '/data/reports/a.md')",
            "no space left on the device writing /data/reports/a.md",
        ),
        (
            "FileNotFoundError(errno.ENOENT, 'No such file or directory', '/no/dir/r.html')",
            "/no/dir/r.html: No such file or directory (check the path",
        ),
        (
            "PermissionError(errno.EACCES, 'Permission denied', '/etc/x')",
            "/etc/x: Permission denied",
        ),
        ("__import__('csv').Error('field larger than field limit (131072)')", "field limit"),
        (
            "b'\\xff'.decode('utf-8')",
            "an input file is not UTF-8 text (byte 0xff at offset 0)",
        ),
    ],
)
def test_expected_failures_are_one_line_exit_1(exc, line):
    out = _run(code=NET.format(exc=exc))
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert line in " ".join(out.stderr.split())


def test_bugs_keep_their_traceback_and_debug_shows_it_always():
    out = _run(code=NET.format(exc="ZeroDivisionError('a bug')"))
    assert out.returncode == 1 and "Traceback" in out.stderr and "ZeroDivisionError" in out.stderr
    expected = NET.format(exc="OSError(errno.ENOSPC, 'No space left on device', '/x')")
    assert "Traceback" not in _run(code=expected).stderr
    assert "Traceback" in _run(code=expected, env={"TRUTHLINE_DEBUG": "1"}).stderr


def test_output_path_creates_missing_folders_or_says_why(tmp_path):
    from truthline._cli_common import output_dir, output_path

    target = output_path(tmp_path / "a" / "b" / "report.md", "--report")
    assert target.parent.is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(TruthlineError, match=r"--report .*cannot create the folder"):
        output_path(tmp_path / "file" / "r.md", "--report")
    with pytest.raises(TruthlineError, match="is a folder"):
        output_path(tmp_path / "a", "--out")
    assert output_dir(tmp_path / "rel" / "x").is_dir()


# -- the dashboard's Streamlit child --------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_dashboard_stops_streamlit_on_sigterm_and_sigint(tmp_path, sig):
    ws = Workspace.from_env(tmp_path / "ws")
    ws.init_project(str(templates_dir() / "steel-safety"))
    ws.store.close()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "truthline", "-w", str(ws.root), "dashboard", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # our signal reaches truthline only, as from a supervisor
    )
    try:
        deadline = time.monotonic() + 120
        while not _listening(port):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "streamlit did not start"
            time.sleep(0.5)
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 0
    finally:  # Streamlit shares the session: nothing of this test outlives it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(0.5)
    assert not _listening(port), "Streamlit is still listening after truthline stopped"
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # the port is free again


# -- permissions, as a user who really lacks them ---------------------------------------
def _as_unprivileged(cmd: list[str]) -> list[str]:
    """Root ignores file modes: run the command as ``nobody`` then (setpriv, util-linux)."""
    if os.geteuid() != 0:
        return cmd
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]


@pytest.mark.parametrize("case", ["read-only-store", "unwritable-workspace"])
def test_permission_denied_is_one_line_and_changes_nothing(case):
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(dir=os.environ.get("TRUTHLINE_TEST_TMP")))
    try:
        top.chmod(0o755)
        ws = Workspace.from_env(top / "ws")
        project = ws.init_project(str(templates_dir() / "steel-safety"), name="plant")
        media = top / "clips" / "c1"
        for k in range(2):
            _png(media / f"f{k}.jpg", 10 * k)
        ws.store.close()
        db = ws.root / "truthline.db"
        if case == "read-only-store":
            for p in [ws.root, *ws.root.rglob("*")]:  # private by default (issue 27): let
                p.chmod(p.stat().st_mode | (0o055 if p.is_dir() else 0o044))  # nobody read
            db.chmod(0o444)
            args = ["items", "import", str(top / "clips")]
        else:
            for p in [ws.root, *ws.root.rglob("*")]:
                p.chmod(0o555 if p.is_dir() else 0o444)
            args = ["init", str(templates_dir() / "steel-safety"), "--name", "other"]
        before = db.read_bytes()
        for p in (top, top / "clips", media, *media.iterdir()):
            p.chmod(p.stat().st_mode | 0o055)
        out = subprocess.run(
            _as_unprivileged([sys.executable, "-m", "truthline", "-w", str(ws.root), *args]),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=top,
            env={**os.environ, "HOME": str(top)},
        )
        assert out.returncode == 1, out.stdout + out.stderr
        assert "Traceback" not in out.stderr
        flat = " ".join(out.stderr.split())
        assert flat.startswith("error: ") and len(out.stderr.strip().splitlines()) <= 2, flat
        assert str(ws.root) in flat.replace(" ", "") or str(ws.root) in flat
        assert db.read_bytes() == before
        assert project.name == "plant"
    finally:
        for p in [top, *top.rglob("*")]:
            with contextlib.suppress(OSError):
                p.chmod(0o755)
        shutil.rmtree(top, ignore_errors=True)


def test_lazy_help_lines_match_the_stages_own_help():
    """``truthline --help`` lists the stages without importing them; its lines must say what
    the stages themselves say."""
    import importlib
    import inspect

    import typer

    from truthline.cli import LAZY_COMMANDS

    for name, (module, attr, line) in LAZY_COMMANDS.items():
        obj = getattr(importlib.import_module(module), attr)
        own = obj.info.help if isinstance(obj, typer.Typer) else inspect.getdoc(obj)
        assert isinstance(own, str) and own.strip().splitlines()[0] == line, name


RAW_PG = """
import sys
import truthline.cli as cli
def boom():
    from truthline.store import Store, now, tables
    s = Store({url!r})
    with s.engine.begin() as conn:  # around Store.begin: the CLI's net must still name it
        conn.execute(tables.projects.insert().values(
            name="p" * 150, title="", definition={{}}, definition_hash="h",
            source_path="", created_at=now(), updated_at=now()))
cli.app.registered_commands[0].callback = boom
sys.argv = ["truthline", "boom"]
cli.main()
"""


def test_raw_postgresql_length_error_is_one_line_naming_the_column(private_pg_url):
    out = _run(code=RAW_PG.format(url=private_pg_url))
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert "projects.name: a value of 150 characters" in " ".join(out.stderr.split())


def test_net_names_the_file_that_is_not_utf8(tmp_path):
    bad = tmp_path / "prompt.j2"
    bad.write_bytes(b"Describe the scene \xe9\n")
    code = NET.format(exc=f"__import__('pathlib').Path({str(bad)!r}).read_text('utf-8')")
    out = _run(code=code)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    flat = " ".join(out.stderr.split())
    assert f"file {bad} is not UTF-8 text (byte 0xe9 at offset 19)" in flat, flat
