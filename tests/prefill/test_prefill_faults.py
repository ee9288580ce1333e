"""Fault injection: a stub serving 20 % 429/5xx/timeouts/garbage, a real `prefill run`
SIGKILLed mid-run, then rerun: nothing lost, nothing duplicated, at most the calls in
flight at the kill paid for twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter

import pytest
from sqlalchemy import select

from tests.prefill.conftest import STEEL_ANSWER
from truthline.media import import_items
from truthline.models._stub import StubServer
from truthline.store import tables

TRUTHLINE = [sys.executable, "-c", "from truthline.cli import main; main()"]
N_ITEMS = 40
CONCURRENCY = 4


@pytest.fixture
def ws40(tmp_path):
    from truthline.simulate._scene import write_dataset
    from truthline.workspace import Workspace

    ws = Workspace.from_env(tmp_path / "ws")
    project = ws.init_project("steel-safety")
    media = ws.media_dir / project.name
    csv_path = write_dataset(media, n_clips=N_ITEMS, seed=11, size=(64, 36))
    import_items(ws.store, project, media, metadata=csv_path, progress=False)
    yield ws
    ws.store.close()


@pytest.fixture
def faulty():
    s = StubServer(
        answer=lambda body: json.dumps(STEEL_ANSWER),
        fault_rate=0.2,
        # the draw hashes each request's bytes (prompt and images): this seed serves these 40
        # requests 10 faults, 4 of them garbage, 5 among the first 14 sent; a change to the
        # prompt or to the image bytes sent can call for another (the asserts below say so)
        fault_seed=12,
        latency_s=0.05,
        timeout_sleep_s=3.0,
    ).start()
    yield s
    s.stop()


def _count(db) -> int:
    try:
        with sqlite3.connect(db) as c:
            return c.execute("select count(*) from responses").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_faults_sigkill_rerun_nothing_lost_nothing_duplicated(ws40, faulty, repo):
    cmd = [
        *TRUTHLINE,
        "--workspace",
        str(ws40.root),
        "prefill",
        "run",
        "--model",
        f"openai:flaky@{faulty.url};timeout=1",
        "--concurrency",
        str(CONCURRENCY),
        "--json",
    ]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = ws40.root / "truthline.db"
    deadline = time.time() + 120
    while time.time() < deadline and _count(db) < N_ITEMS // 3:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    t_kill = time.time()
    proc.wait(30)
    kept = _count(db)
    assert N_ITEMS // 3 <= kept < N_ITEMS, "the kill must land mid-run"
    first = list(faulty.log)
    assert {e.step for e in first} - {"ok"}, "faults were served"

    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]

    items = sorted(i["id"] for i in ws40.store.items("steel-safety"))
    with ws40.store.begin() as conn:
        resp = conn.execute(
            select(tables.responses.c.item_id, tables.responses.c.status, tables.responses.c.id)
        ).all()
        preds = conn.execute(
            select(tables.predictions.c.item_id, tables.predictions.c.response_id)
        ).all()
    # 0 lost, 0 duplicated: exactly one response per item, one prediction per answer
    assert sorted(x.item_id for x in resp) == items
    answered = {x.id: x.item_id for x in resp if x.status != "infra_missing"}
    assert sorted(p.item_id for p in preds) == sorted(answered.values())
    assert all(answered[p.response_id] == p.item_id for p in preds)
    statuses = Counter(x.status for x in resp)
    last = {e.digest: e.step for e in faulty.log if e.billed}  # each request's last answer
    garbage = sum(step == "garbage" for step in last.values())
    assert garbage >= 1, "the fault seed serves garbage to some request"
    assert statuses["model_failure"] == garbage, "garbage answers are recorded as model failures"
    # at most the calls in flight at the kill were paid for twice (requests still
    # unanswered: at most the concurrency). An answer that arrived is in the journal at
    # once, so one waiting for its group commit (the writer's linger) is replayed, not
    # asked again: the answers of the last commit window are printed, and not re-billed
    billed = sum(e.billed for e in faulty.log)
    rebilled = billed - N_ITEMS
    window = sum(e.billed and e.done_at > t_kill - 0.15 for e in first)
    print(
        f"items {N_ITEMS}, billed {billed}, re-billed {rebilled}, answered in the window {window}"
    )
    assert 0 <= rebilled <= CONCURRENCY, (billed, rebilled, window)
    by_digest = Counter(e.digest for e in faulty.log if e.billed)
    assert sum(n - 1 for n in by_digest.values()) == rebilled
