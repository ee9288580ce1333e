"""Shared fixtures: workspaces, the steel-safety project, and stores on SQLite and PostgreSQL.

PostgreSQL comes from ``scripts/test.sh`` (a private cluster on 127.0.0.1, URL in
``TRUTHLINE_TEST_PG_URL``). Without it the PostgreSQL variants fail with a clear message:
a skipped store test would hide the very thing it is there to check.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from truthline.project import Project, load_project
from truthline.store import Store
from truthline.workspace import Workspace, templates_dir

REPO = Path(__file__).resolve().parents[1]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("YOLO_OFFLINE", "1")


@pytest.fixture
def offline_models(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):
    """Detector/VLM libraries kept off the network (no downloads, no settings written to
    $HOME) and no real API key: for areas that load local models or call backends."""
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(tmp_path_factory.getbasetemp() / "yolo"))
    for k, v in {
        "YOLO_OFFLINE": "1",
        "YOLO_AUTOINSTALL": "False",
        "YOLO_VERBOSE": "False",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }.items():
        monkeypatch.setenv(k, v)
    for k in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "OPENAI_CUSTOM_HEADERS",
    ):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture(scope="session")
def steel_project() -> Project:
    return load_project(templates_dir() / "steel-safety")


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.from_env(tmp_path / "ws")


def _reset_pg(url: str) -> None:
    from sqlalchemy import create_engine, text

    eng = create_engine(url)
    with eng.begin() as conn:
        conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    eng.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store URL: SQLite in a temp folder, or the test PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    url = os.environ.get("TRUTHLINE_TEST_PG_URL")
    if not url:
        pytest.fail(
            "TRUTHLINE_TEST_PG_URL is not set: run the suite with scripts/test.sh, which starts PostgreSQL"
        )
    _reset_pg(url)
    return url


@pytest.fixture
def store(store_url: str):
    s = Store(store_url)
    yield s
    s.close()
