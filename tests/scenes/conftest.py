"""Scene fixtures. Worker tests render real frames in the scenes venv (bpy 5.0.1).

Without the scenes environment they FAIL with the command that creates it (scripts/test.sh
creates it first): a run can never pass by skipping the renders.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from truthline.scenes import env
from truthline.scenes._worker import WorkerClient


def _need_scenes_env() -> None:
    if env.installed():
        return
    msg = (
        f"the scenes environment is missing ({env.venv_dir()}); "
        "create it with `python -m truthline.scenes.env --ensure`"
    )
    pytest.fail(msg)


@pytest.fixture(scope="session")
def scenes_env() -> None:
    """The scenes venv exists (else the test fails, naming the command that creates it)."""
    _need_scenes_env()


@pytest.fixture(scope="module")
def worker(scenes_env: None) -> Iterator[WorkerClient]:
    """One long-lived Blender worker shared by a test module."""
    c = WorkerClient(timeout_s=120)
    c.start()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="session")
def ray_local(scenes_env: None) -> Iterator[Any]:
    """One local Ray for every Ray test of the session (starting Ray costs ~10 s on 2 cores).
    ``render(..., workers=N)`` joins it instead of starting its own."""
    try:
        import ray
    except ImportError:
        pytest.fail("Ray is missing: pip install -e '.[scenes]'")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False,
                 object_store_memory=128 * 1024 * 1024)  # fmt: skip
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()
