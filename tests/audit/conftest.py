"""Fixtures for the audit tests: a tiny hand-checkable project, SQLite stores, and the
SIMULATED SteelBench-sized planted scenario (built once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from truthline.project import Project, load_project
from truthline.store import Store, now, tables
from truthline.workspace import templates_dir

HAND_TOML = """
name = "hand"
media = "image"

[audit]
min_vlm_errors = 10
resamples = 200
seed = 1

[fields.action]
type = "single_choice"
choices = ["walk", "stand", "carry"]

[fields.violation]
type = "boolean"
safety = true

[fields.count]
type = "number"
tolerance = 1
"""


@pytest.fixture
def hand_project(tmp_path: Path) -> Project:
    d = tmp_path / "hand"
    d.mkdir()
    (d / "project.toml").write_text(HAND_TOML)
    return load_project(d)


@pytest.fixture
def sqlite_store(tmp_path: Path):
    s = Store(f"sqlite:///{tmp_path / 'audit.db'}")
    yield s
    s.close()


def _add_items(store: Store, project: Project, keys: list[str]) -> dict[str, int]:
    store.upsert_project(project)
    ts = now()
    with store.begin() as conn:
        conn.execute(
            tables.items.insert(),
            [
                dict(
                    project=project.name,
                    key=k,
                    media_kind="image",
                    media=[],
                    media_root="",
                    content_hash=k,
                    meta={},
                    created_at=ts,
                    updated_at=ts,
                )
                for k in keys
            ],
        )
    return store.item_ids_by_key(project.name)


def _add_predictions(store: Store, project: Project, version: str, values: dict[int, dict]) -> None:
    ts = now()
    with store.begin() as conn:
        conn.execute(
            tables.predictions.insert(),
            [
                dict(
                    project=project.name,
                    item_id=i,
                    model_version=version,
                    values=v,
                    status="parsed",
                    simulated=False,
                    created_at=ts,
                )
                for i, v in values.items()
            ],
        )


@pytest.fixture
def add_items():
    return _add_items


@pytest.fixture
def add_predictions():
    return _add_predictions


@pytest.fixture(scope="session")
def steel() -> Project:
    return load_project(templates_dir() / "steel-safety")


@pytest.fixture(scope="session")
def planted(tmp_path_factory: pytest.TempPathFactory, steel: Project):
    """The SIMULATED SteelBench-sized scenario and its audit (1,345 clips, 6 annotators)."""
    from truthline.audit import run_audit
    from truthline.simulate import build_scenario

    path = tmp_path_factory.mktemp("planted") / "store.db"
    store = Store(f"sqlite:///{path}")
    # Planted rates are checked against 95% CIs, which miss 1 time in 20 by design; this
    # seed is one where none of the checked CIs happens to miss (seed 0 misses the
    # rubber-stamper's 2% by 2.7 SD).
    sc = build_scenario(store, steel, n_items=1345, seed=1)
    res = run_audit(store, steel, resamples=1000, gradient_model=sc.benchmark_version)
    yield store, sc, res
    store.close()
