"""Fixtures for the PhysAlign tests: one generated set of problems per session (seeded).

The Label Studio fixtures (``ls``) come from tests/annotate/conftest.py: the same real
server, started from a copy of the migrated template.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.annotate.conftest import LS, start_copy
from truthline.store import Store
from truthline.systems.physalign import generate


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 SIMULATED problems (3 per domain), seed 1, without a release."""
    out = tmp_path_factory.mktemp("gen") / "g"
    generate(12, 1, out)
    return out


@pytest.fixture(scope="session")
def generated_small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 SIMULATED problems (one per domain), seed 2: for tests that post many annotations."""
    out = tmp_path_factory.mktemp("gen_small") / "g"
    generate(4, 2, out)
    return out


@pytest.fixture
def small_copy(generated_small: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "gs"
    shutil.copytree(generated_small, dest)
    return dest


@pytest.fixture
def gen_copy(generated: Path, tmp_path: Path) -> Path:
    """A private copy of the generated problems a test may change."""
    dest = tmp_path / "g"
    shutil.copytree(generated, dest)
    return dest


@pytest.fixture(scope="session")
def ls(tmp_path_factory: pytest.TempPathFactory):
    inst: LS = start_copy(tmp_path_factory.mktemp("ls") / "data")
    try:
        yield inst
    finally:
        inst.server.stop()


@pytest.fixture(scope="session")
def users_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SIMULATED annotators' passwords for the session's server (one file, like a workspace's)."""
    return tmp_path_factory.mktemp("secrets") / "label_studio_users.json"


@pytest.fixture
def store(tmp_path: Path):
    """A fresh store (a workspace's): it records the Label Studio projects, tasks,
    annotations and exposures of the passes and the verification."""
    s = Store(f"sqlite:///{tmp_path / 'truthline.db'}")
    try:
        yield s
    finally:
        s.close()
