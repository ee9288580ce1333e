"""Fixtures for the dashboards: a small workspace with rows at every loop stage, and AppTest runs."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from truthline.media import import_items
from truthline.simulate._scene import write_dataset
from truthline.store import now, tables
from truthline.workspace import Workspace

# Known counts planted in ``loop_ws`` (the Overview must show exactly these).
PLANTED = {
    "items": 12,
    "prefill_parsed": 8,
    "prefill_failed": 2,
    "pushed_blind": 4,
    "pushed_anchored": 6,
    "annotated_blind": 3,
    "annotated_anchored": 5,
    "reviewed": 2,
    "gold_items": 4,
    "benchmarked": 7,
    "cost_usd": 0.125,
}


def _plant(ws: Workspace, project: str) -> None:
    """Rows at each loop stage, written the way the stages write them (counts in PLANTED)."""
    ids = sorted(ws.store.item_ids_by_key(project).values())
    ts = now()
    with ws.store.begin() as conn:
        resp_ids = []
        for k, item in enumerate(ids[:10]):
            r = conn.execute(
                insert(tables.responses).values(
                    cache_key=f"k{k}",
                    project=project,
                    item_id=item,
                    purpose="prefill",
                    model_spec="simulated:steel-v1",
                    model_alias="simulated-steel-v1",
                    simulated=True,
                    status="parsed" if k < 8 else "model_failure",
                    cost_usd=0.0125,
                    created_at=ts,
                    updated_at=ts,
                )
            )
            resp_ids.append(r.inserted_primary_key[0])
        for k, item in enumerate(ids[:10]):
            conn.execute(
                insert(tables.predictions).values(
                    project=project,
                    item_id=item,
                    model_version="simulated-steel-v1",
                    response_id=resp_ids[k],
                    values={"worker_count": 1},
                    status="parsed" if k < 8 else "model_failure",
                    simulated=True,
                    created_at=ts,
                )
            )
        server = "http://127.0.0.1:8080"
        for pid, arm, n in ((11, "blind", 4), (12, "anchored", 6)):
            conn.execute(
                insert(tables.ls_projects).values(
                    project=project,
                    arm=arm,
                    cohort="",
                    server_url=server,
                    ls_project_id=pid,
                    title=f"{project} [{arm}]",
                    created_at=ts,
                )
            )
            chosen = ids[:n] if arm == "blind" else ids[4 : 4 + n]
            for j, item in enumerate(chosen):
                conn.execute(
                    insert(tables.ls_tasks).values(
                        ls_project_id=pid,
                        server_url=server,
                        item_id=item,
                        ls_task_id=100 * pid + j,
                        created_at=ts,
                    )
                )
        ann = [("blind", 1, ids[:3]), ("anchored", 1, ids[4:9]), ("review", 2, ids[4:6])]
        for arm, tier, chosen in ann:
            for item in chosen:
                conn.execute(
                    insert(tables.annotations).values(
                        project=project,
                        item_id=item,
                        field_path="worker_count",
                        annotator="sim-expert" if tier == 2 else f"sim-{arm}-1",
                        arm=arm,
                        tier=tier,
                        value=1,
                        source="simulated",
                        source_id=f"sim:{arm}:{item}",
                        stored_at=ts,
                    )
                )
        conn.execute(
            insert(tables.gold_snapshots).values(
                hash="g" * 64, project=project, policy={}, counts={}, created_at=ts
            )
        )
        for item in ids[:4]:
            conn.execute(
                insert(tables.gold).values(
                    snapshot="g" * 64,
                    project=project,
                    item_id=item,
                    field_path="worker_count",
                    value=1,
                    provenance="blind_consensus",
                    sources=[],
                )
            )
        conn.execute(
            insert(tables.runs).values(
                id="run-1",
                project=project,
                manifest={},
                status="done",
                created_at=ts,
                updated_at=ts,
            )
        )
        for item in ids[:7]:
            conn.execute(
                insert(tables.run_results).values(
                    run_id="run-1", model="simulated:steel-strong", item_id=item, status="scored"
                )
            )


@pytest.fixture(scope="session")
def loop_ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A steel-safety workspace of 12 SIMULATED clips with rows planted at every loop stage."""
    ws = Workspace.from_env(tmp_path_factory.mktemp("dash") / "ws")
    project = ws.init_project("steel-safety")
    media = ws.media_dir / project.name
    csv_path = write_dataset(media, n_clips=PLANTED["items"], seed=3)
    import_items(ws.store, project, media, metadata=csv_path, progress=False)
    _plant(ws, project.name)
    with ws.store.begin() as conn:
        assert len(conn.execute(select(tables.items.c.id)).all()) == PLANTED["items"]
    return ws


@pytest.fixture
def run_app(monkeypatch: pytest.MonkeyPatch) -> Callable[..., object]:
    """Run the dashboard script in AppTest on a workspace; returns the finished AppTest."""
    from streamlit.testing.v1 import AppTest

    def run(
        ws: Workspace, page: str | None = None, project: str | None = None, timeout: float = 120
    ):
        monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(ws.root))
        monkeypatch.delenv("TRUTHLINE_DB", raising=False)
        if project:
            monkeypatch.setenv("TRUTHLINE_PROJECT", project)
        else:
            monkeypatch.delenv("TRUTHLINE_PROJECT", raising=False)
        script = f"from truthline.dashboards._frame import main\nmain(page={page!r})\n"
        return AppTest.from_string(script, default_timeout=timeout).run()

    return run


def _texts(at) -> str:
    """Every piece of text an AppTest page shows (markdown, captions, titles, alerts, tables)."""
    parts: list[str] = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "info",
        "warning",
        "error",
        "success",
    ):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [f"{m.label}={m.value}" for m in at.metric]
    for df in at.dataframe:
        parts.append(df.value.to_csv(index=False))
    return "\n".join(parts)


@pytest.fixture
def texts() -> Callable[[object], str]:
    return _texts


os.environ.setdefault("MPLCONFIGDIR", str(Path(os.environ.get("TMPDIR", "/tmp")) / "mpl-dash"))


@pytest.fixture(scope="session")
def sim_ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A SIMULATED loop (prefill, blind/anchored/expert annotations) with a planted
    rubber-stamp annotator ``sim-rubber`` who keeps almost every prefill."""
    from truthline.demo import build_simulated_loop

    return build_simulated_loop(tmp_path_factory.mktemp("sim") / "ws", n_items=60, seed=1)


@pytest.fixture(scope="session")
def empty_ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """Three imported SIMULATED clips and nothing else (a fresh project)."""
    ws = Workspace.from_env(tmp_path_factory.mktemp("empty") / "ws")
    project = ws.init_project("steel-safety")
    media = ws.media_dir / project.name
    csv_path = write_dataset(media, n_clips=3, seed=5)
    import_items(ws.store, project, media, metadata=csv_path, progress=False)
    return ws
