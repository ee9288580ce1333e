"""Fixtures for the model layer: a store, a tiny project, images, a local stub server."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from truthline.models._stub import StubServer
from truthline.project import load_project
from truthline.store import Store

TINY = """
name = "tiny"
media = "image"
[fields.label]
type = "single_choice"
choices = ["cat", "dog"]
[fields.count]
type = "number"
integer = true
min = 0
"""


@pytest.fixture(autouse=True)
def _offline_env(offline_models: None) -> None:
    """Every test here runs offline (the shared fixture in tests/conftest.py)."""


@pytest.fixture
def store(tmp_path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    yield s
    s.close()


@pytest.fixture
def tiny(tmp_path, store):
    d = tmp_path / "tiny"
    d.mkdir()
    (d / "project.toml").write_text(TINY)
    p = load_project(d)
    store.upsert_project(p, str(d))
    return p


@pytest.fixture
def images(tmp_path) -> list[Path]:
    import cv2

    out = []
    for i in range(4):
        img = np.full((40, 60, 3), 30 * i, np.uint8)
        f = tmp_path / f"img{i}.png"
        cv2.imwrite(str(f), img)
        out.append(f)
    return out


@pytest.fixture
def stub():
    s = StubServer().start()
    yield s
    s.stop()


__all__ = ["os"]
