"""Inputs that used to pass silently (issue 27): a throwaway in-memory store
(``TRUTHLINE_DB=sqlite://``) and annotator ids of 300 characters or with control characters
are refused with one line where they enter: the store URL, ``audit import-table``,
``annotate users add``, the SIMULATED scenario's team (pull: tests/annotate/test_annotator_ids.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from truthline._names import MAX_ANNOTATOR, annotator_problem, check_annotator
from truthline.annotate._users import check_emails
from truthline.errors import TruthlineError
from truthline.simulate._scenario import TeamMember, build_scenario
from truthline.store import Store, StoreError, tables
from truthline.workspace import Workspace

MEMORY_URLS = [
    "sqlite://",
    "sqlite:///:memory:",
    "sqlite+pysqlite://",
    "SQLITE://",
    "sqlite:///file::memory:?cache=shared&uri=true",
    "sqlite:///file:mem1?mode=memory&cache=shared&uri=true",
]


def truthline(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    import os

    return subprocess.run(
        [sys.executable, "-m", "truthline", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


@pytest.mark.parametrize("url", MEMORY_URLS)
def test_an_in_memory_store_is_refused(url):
    with pytest.raises(StoreError, match="in-memory SQLite database, thrown away") as exc:
        Store(url)
    assert "\n" not in str(exc.value) and "TRUTHLINE_DB=sqlite:////" in str(exc.value)


def test_file_stores_are_still_fine(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for url in (f"sqlite:///{tmp_path / 'a.db'}", "sqlite:///relative.db"):
        Store(url).close()
    assert (tmp_path / "relative.db").is_file()


def test_truthline_db_sqlite_memory_from_the_command_line(tmp_path: Path):
    for how in ({"env": {"TRUTHLINE_DB": "sqlite://"}}, {"db": "sqlite:///:memory:"}):
        args = ["-w", str(tmp_path / "ws")]
        if "db" in how:
            args += ["--db", str(how["db"])]
        out = truthline(*args, "init", "steel-safety", env=how.get("env"))  # type: ignore[arg-type]
        assert out.returncode == 1, out.stdout + out.stderr
        lines = out.stderr.strip().splitlines()
        flat = " ".join(out.stderr.split())
        assert flat.startswith("error: ") and "in-memory SQLite database" in flat, flat
        assert len(lines) <= 3 and "Traceback" not in out.stderr  # one message (wrapped)
        assert not (tmp_path / "ws" / "projects").exists()


@pytest.mark.parametrize(
    ("who", "fragment"),
    [
        ("a" * (MAX_ANNOTATOR + 1), f"is {MAX_ANNOTATOR + 1} characters long (at most 200)"),
        ("x" * 300 + "@example.com", "is 312 characters long"),
        ("ann\nrow", "control character U+000A"),
        ("ann\x00", "control character U+0000"),
        ("ann\u202egnp.exe", "control character U+202E"),  # right-to-left override
        ("ann\x1b[31m", "control character U+001B"),
        ("   ", "empty annotator"),
    ],
)
def test_bad_annotator_ids(who, fragment):
    assert fragment in (annotator_problem(who) or "")
    with pytest.raises(TruthlineError, match=r"^annotator: "):
        check_annotator(who)


def test_good_annotator_ids():
    for who in ("ann_1", "dora@example.com", "Zoë Müller", "a" * MAX_ANNOTATOR, "名前"):
        assert annotator_problem(who) is None and check_annotator(who) == who


def test_import_table_refuses_long_and_control_character_annotators(tmp_path: Path):
    ws = tmp_path / "ws"
    assert truthline("-w", str(ws), "init", "steel-safety").returncode == 0
    csv = tmp_path / "labels.csv"
    long_who = "z" * 300
    csv.write_text(
        "item,field,annotator,value\n"
        f"c1,worker_count,{long_who},2\n"
        'c1,worker_count,"ann\x07bell",2\n'
        "c1,worker_count,ann,2\n"
    )
    out = truthline("-w", str(ws), "audit", "import-table", str(csv), "--create-items")
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    flat = " ".join(text.split())
    assert "labels.csv:2: column 'annotator': annotator id 'zzz" in flat
    assert "is 300 characters long (at most 200)" in flat
    assert "labels.csv:3: column 'annotator'" in flat and "U+0007" in flat
    assert "Traceback" not in text
    store = Workspace.from_env(ws).store
    with store.begin() as conn:  # the whole file refused: nothing written
        assert conn.execute(select(tables.annotations)).all() == []
        assert conn.execute(select(tables.items)).all() == []


def test_users_add_refuses_an_email_longer_than_an_annotator_id():
    long_email = "x" * 240 + "@example.com"
    with pytest.raises(TruthlineError, match=r"252 characters long .*no account was created"):
        check_emails(["ok@example.com", long_email])
    assert check_emails(["ok@example.com"]) == ["ok@example.com"]


def test_simulated_team_names_are_checked(tmp_path: Path):
    with pytest.raises(TruthlineError, match="TeamMember name: annotator id 'aaa"):
        TeamMember("a" * 300, "careful")
    with pytest.raises(TruthlineError, match=r"TeamMember name: .*U\+000A"):
        TeamMember("ann\n1", "careful")
    ws = Workspace.from_env(tmp_path / "ws")
    project = ws.init_project("steel-safety")
    with pytest.raises(TruthlineError, match="expert_name: "):
        build_scenario(ws.store, project, n_items=10, expert_name="e" * 201)
    assert ws.store.status(project.name)["annotations"]["total"] == 0
