"""Fixtures for the annotate tests: a real Label Studio server (copied migrated data dir,
one per session), a workspace with simulated steel-safety clips and SIMULATED predictions,
and a media server on 127.0.0.1 serving that workspace's registered media.

The server comes from ``python -m truthline.annotate.server_env --ensure`` (scripts/test.sh
runs it); the fixture calls the same function, so a missing environment is created, never
skipped.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from truthline.annotate import LocalServer, LSClient, MediaHTTPServer
from truthline.annotate._server import CREDENTIALS_NAME, Credentials, free_port
from truthline.annotate.server_env import copy_template
from truthline.store import now, tables
from truthline.workspace import Workspace

SIM_MODEL = "simulated-test-vlm"


@dataclass
class LS:
    server: LocalServer
    creds: Credentials

    @property
    def url(self) -> str:
        return self.server.url

    def admin(self) -> LSClient:
        return LSClient(self.url, self.creds.token)


def start_copy(dest: Path) -> LS:
    """A Label Studio started from a copy of the migrated template (~5-15 s)."""
    copy_template(dest)
    creds = Credentials.load(dest / CREDENTIALS_NAME)
    assert creds is not None
    server = LocalServer(dest, port=free_port())
    server.start(creds, progress=False)
    return LS(server, creds)


@pytest.fixture(scope="session")
def ls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LS]:
    inst = start_copy(tmp_path_factory.mktemp("ls") / "data")
    try:
        yield inst
    finally:
        inst.server.stop()


@pytest.fixture(scope="session")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Eight SIMULATED clips (8 frames each) and their metadata CSV."""
    from truthline.simulate._scene import write_dataset

    root = tmp_path_factory.mktemp("media") / "clips"
    csv = write_dataset(root, n_clips=8, seed=3, size=(160, 90))
    return root, csv


def simulated_prediction(truth: dict, k: int) -> dict:
    """A SIMULATED prefill from the known truth: every third item gets a wrong action."""
    vals = copy.deepcopy(truth)
    if k % 3 == 0 and vals["workers"]:
        w = vals["workers"][0]
        w["action"] = "B1" if w["action"] != "B1" else "A1"
    vals["confidence"] = "medium"
    for i, w in enumerate(vals["workers"]):
        w["box"] = [
            {"x": 10.0 + 20 * i, "y": 30.0, "width": 8.0, "height": 20.0, "label": "worker"}
        ]
    return vals


def add_predictions(ws: Workspace, project, model: str = SIM_MODEL) -> dict[int, dict]:
    out = {}
    rows = []
    for k, it in enumerate(ws.store.items(project.name)):
        raw = simulated_prediction(it["sim_truth"], k)
        vals = {n: project.field_types[n].normalize(v) for n, v in raw.items()}
        out[it["id"]] = vals
        rows.append(
            {
                "project": project.name,
                "item_id": it["id"],
                "model_version": model,
                "values": vals,
                "status": "parsed",
                "simulated": True,
                "created_at": now(),
            }
        )
    with ws.store.begin() as conn:
        conn.execute(tables.predictions.insert(), rows)
    return out


@pytest.fixture
def steel_ws(tmp_path: Path, dataset: tuple[Path, Path]):
    """A workspace with the steel-safety project, 8 items and SIMULATED predictions."""
    from truthline.media import import_items

    root, csv = dataset
    ws = Workspace.from_env(tmp_path / "ws")
    project = ws.init_project("steel-safety")
    import_items(ws.store, project, root, metadata=csv, progress=False)
    preds = add_predictions(ws, project)
    return ws, project, preds


@pytest.fixture
def media_server(steel_ws, dataset: tuple[Path, Path], ls: LS) -> Iterator[MediaHTTPServer]:
    """The workspace's registered media (the dataset's clips) for the session's Label Studio."""
    srv = MediaHTTPServer.for_workspace(steel_ws[0], dataset[0], origins=[ls.url]).start_thread()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def artifacts_dir() -> Path:
    d = Path(__file__).resolve().parents[2] / "artifacts"
    d.mkdir(exist_ok=True)
    return d


def copy_dir(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest)


@pytest.fixture
def all_types_project(tmp_path: Path):
    from truthline.project import load_project

    from .test_annotate_units import ALL_TYPES

    (tmp_path / "alltypes").mkdir()
    (tmp_path / "alltypes" / "project.toml").write_text(ALL_TYPES)
    return load_project(tmp_path / "alltypes")
