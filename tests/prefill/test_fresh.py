"""Prefill reuses a stored answer to the same request and says so; ``--fresh`` asks again,
and a rerun of an unfinished fresh run resumes it (nothing asked twice); the fresh run's
start is kept in ``fresh_runs`` (migration 9), on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from sqlalchemy import select
from typer.testing import CliRunner

from truthline.cli import app
from truthline.media import import_items
from truthline.models._stub import StubServer
from truthline.prefill import prefill
from truthline.simulate._scene import write_dataset
from truthline.store import tables
from truthline.workspace import Workspace

from .conftest import STEEL_ANSWER

PRICED = ";price_in=1000;price_out=1000"


def _ws(root, url=None) -> Workspace:
    ws = Workspace.from_env(root, db_url=url)
    project = ws.init_project("steel-safety")
    media = ws.media_dir / project.name
    csv_path = write_dataset(media, n_clips=6, seed=3, size=(96, 54))
    import_items(ws.store, project, media, metadata=csv_path, progress=False)
    return ws


def _prediction_responses(ws: Workspace) -> dict[int, int]:
    p = tables.predictions
    with ws.store.begin() as conn:
        return {int(i): int(r) for i, r in conn.execute(select(p.c.item_id, p.c.response_id))}


def test_rerun_reuses_and_fresh_asks_again(steel_ws, stub):
    project = steel_ws.project("steel-safety")
    spec = f"openai:vlm@{stub.url};alias=m{PRICED}"
    first = prefill(steel_ws.store, project, spec, progress=False).as_dict()
    assert (first["fresh"], first["reused"], len(stub.log)) == (10, 0, 10)
    again = prefill(steel_ws.store, project, spec, progress=False).as_dict()
    assert (again["fresh"], again["reused"], len(stub.log)) == (0, 10, 10)
    assert again["reused_from"] == {"prefill": 10} and again["cost_usd"] == 0
    before = _prediction_responses(steel_ws)

    fresh = prefill(steel_ws.store, project, spec, progress=False, fresh=True).as_dict()
    assert (fresh["fresh"], fresh["reused"], len(stub.log)) == (10, 0, 20)
    assert fresh["cost_usd"] > 0 and "fresh_since" in fresh
    after = _prediction_responses(steel_ws)
    assert after.keys() == before.keys()
    assert all(after[i] != before[i] for i in before)  # the unshown predictions: new answers
    with steel_ws.store.begin() as conn:
        n = conn.execute(select(tables.responses.c.id)).all()
        run = conn.execute(select(tables.fresh_runs)).one()
    assert len(n) == 20 and run.finished_at is not None

    # that fresh run finished: the next --fresh is a new one and asks again
    prefill(steel_ws.store, project, spec, progress=False, fresh=True)
    assert len(stub.log) == 30
    # a plain rerun reuses (the first answer to each request)
    plain = prefill(steel_ws.store, project, spec, progress=False).as_dict()
    assert plain["reused"] == 10 and len(stub.log) == 30


def _fresh_stop_and_resume(ws: Workspace, stub: StubServer) -> None:
    project = ws.project("steel-safety")
    spec = f"openai:vlm@{stub.url};alias=m{PRICED}"
    each = prefill(ws.store, project, spec, progress=False).as_dict()["cost_usd"] / 6
    assert len(stub.log) == 6 and each > 0
    # the budget stops the fresh run part way: one worst case (~17.9 USD) plus what
    # about two real answers cost fits, the rest does not
    cap = 17.9 + 2.5 * each
    part = prefill(ws.store, project, spec, progress=False, fresh=True, max_cost=cap, concurrency=1)
    assert part.stopped == "budget"
    asked = len(stub.log) - 6
    assert 0 < asked < 6 and part.as_dict()["fresh"] == asked
    with ws.store.begin() as conn:
        since = conn.execute(select(tables.fresh_runs.c.started_at)).scalar_one()
    # the rerun resumes that fresh run: only the requests it had not asked
    rest = prefill(ws.store, project, spec, progress=False, fresh=True).as_dict()
    assert len(stub.log) == 12, "a request asked twice in one fresh run"
    assert rest["fresh"] == 6 - asked and rest["reused"] == asked
    assert rest["fresh_since"].startswith(since.isoformat()[:19])
    with ws.store.begin() as conn:
        assert conn.execute(select(tables.fresh_runs.c.finished_at)).scalar_one() is not None


def test_stopped_fresh_run_resumes_without_asking_twice(store_url, tmp_path):
    ws = _ws(tmp_path / "ws", None if store_url.startswith("sqlite") else store_url)
    stub = StubServer(answer=lambda body: json.dumps(STEEL_ANSWER)).start()
    try:
        _fresh_stop_and_resume(ws, stub)
    finally:
        stub.stop()
        ws.store.close()


def test_cli_says_what_was_asked_and_reused(steel_ws, stub, monkeypatch):
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(steel_ws.root))
    spec = f"openai:vlm@{stub.url};alias=m"
    args = ["prefill", "run", "--model", spec, "--project", "steel-safety"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "10 asked, 0 reused" in first.output
    second = CliRunner().invoke(app, [*args, "--json"])
    data = json.loads(second.stdout)
    assert (data["fresh"], data["reused"], data["reused_from"]) == (0, 10, {"prefill": 10})
    third = CliRunner().invoke(app, [*args, "--fresh"])
    assert "10 asked, 0 reused" in third.output and len(stub.log) == 20
