"""Fixtures for prefill: a workspace with SIMULATED steel-safety clips, a stub server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from truthline.media import import_items
from truthline.models._stub import StubServer
from truthline.simulate._scene import write_dataset
from truthline.workspace import Workspace

STEEL_ANSWER = {
    "scene_type": "production",
    "visibility": ["clear"],
    "worker_count": 1,
    "crane_active": False,
    "vehicle_present": False,
    "scene_violation": False,
    "scene_rules": [],
    "scene_description": "one worker",
    "confidence": "high",
    "workers": [
        {
            "worker_id": "P1",
            "action": "A1",
            "helmet": "worn",
            "harness": "not_required",
            "spatial_context": ["ground_level"],
            "safety_violation": False,
        }
    ],
}


@pytest.fixture(autouse=True)
def _offline_env(offline_models: None) -> None:
    """Every test here runs offline (the shared fixture in tests/conftest.py)."""


@pytest.fixture
def steel_ws(tmp_path) -> Workspace:
    ws = Workspace.from_env(tmp_path / "ws")
    project = ws.init_project("steel-safety")
    media = ws.media_dir / project.name
    csv_path = write_dataset(media, n_clips=10, seed=3, size=(96, 54))
    import_items(ws.store, project, media, metadata=csv_path, progress=False)
    return ws


@pytest.fixture
def stub():
    s = StubServer(answer=lambda body: json.dumps(STEEL_ANSWER)).start()
    yield s
    s.stop()


@pytest.fixture
def repo() -> Path:
    return Path(__file__).resolve().parents[2]
