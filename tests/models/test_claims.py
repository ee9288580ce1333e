"""No paid call twice (issue 27): two runs on one store claim work before sending it.

Two real `prefill run` processes against one counting stub server ask exactly once per
item, on SQLite and PostgreSQL; a second run skips (and names) or waits for work another
live run holds; a killed run's claims free up (at once on its host, else at expiry)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.models._requests import numbered as _req
from tests.prefill.conftest import STEEL_ANSWER
from truthline.media import import_items
from truthline.models import NOT_RUN, PARSED, RetryPolicy, run_requests
from truthline.models._claims import ClaimBook, Claims, Holder
from truthline.models._stub import StubServer
from truthline.store import Store, now, tables

TRUTHLINE = [sys.executable, "-c", "from truthline.cli import main; main()"]
REPO = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(retries=1, base=0.01, cap=0.05)
GOOD = '{"label": "dog", "count": 3}'


def _pg_database(base_url: str, name: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    eng = create_engine(base_url, isolation_level="AUTOCOMMIT")
    with eng.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    eng.dispose()
    return make_url(base_url).set(database=name).render_as_string(hide_password=False)


def _url(kind: str, tmp_path, name: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'claims.db'}"
    base = os.environ.get("TRUTHLINE_TEST_PG_URL")
    if not base:
        pytest.fail("TRUTHLINE_TEST_PG_URL is not set: run the suite with scripts/test.sh")
    return _pg_database(base, f"tl_claims_{name}_{os.getpid()}")


BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path) -> str:
    return _url(request.param, tmp_path, "unit")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _foreign_claim(store: Store, key: str, *, host: str, pid: int, expires_in: float) -> None:
    ts = now()
    with store.begin() as conn:
        conn.execute(
            tables.request_claims.insert().values(
                cache_key=key,
                run_id="otherrun0001",
                label="prefill other",
                host=host,
                pid=pid,
                claimed_at=ts,
                expires_at=ts + timedelta(seconds=expires_in),
            )
        )


def test_a_key_has_one_holder_until_released_expired_or_its_process_is_gone(url):
    store = Store(url)
    try:
        a, b = ClaimBook(store, 60), ClaimBook(store, 60, "prefill p m")
        assert a.claim(["k1", "k2"]) == {}
        others = b.claim(["k2", "k3"])
        assert set(others) == {"k2"} and others["k2"].run_id == a.run_id
        assert others["k2"].pid == os.getpid() and others["k2"].host == a.host
        assert b.held == {"k3"} and a.held == {"k1", "k2"}
        a.release()
        assert b.claim(["k1", "k2"]) == {} and b.held == {"k1", "k2", "k3"}
        b.release()
        # a claim of a run on another host lives until it expires
        _foreign_claim(store, "k4", host="elsewhere", pid=1, expires_in=60)
        assert set(ClaimBook(store, 60).claim(["k4"])) == {"k4"}
        _foreign_claim(store, "k5", host="elsewhere", pid=1, expires_in=-1)
        assert ClaimBook(store, 60).claim(["k5"]) == {}
        # on this host, a run whose process is gone holds nothing (a SIGKILLed run)
        _foreign_claim(store, "k6", host=socket.gethostname(), pid=_dead_pid(), expires_in=600)
        c = ClaimBook(store, 60)
        assert c.claim(["k6"]) == {} and c.held == {"k6"}
        before = _expiry(store, "k6")
        c.renew()
        assert _expiry(store, "k6") >= before
    finally:
        store.close()


def _expiry(store: Store, key: str):
    t = tables.request_claims
    with store.begin() as conn:
        return conn.execute(select(t.c.expires_at).where(t.c.cache_key == key)).scalar_one()


def test_claims_mode_is_checked():
    with pytest.raises(ValueError, match="skip, wait"):
        Claims(mode="later")


def test_claimed_work_is_skipped_and_named_then_taken_after_expiry(stub, tiny, images, store):
    """A live run elsewhere holds one request: it is not sent, the run says by whom."""
    from truthline.models import request_key

    stub.answer = lambda body: GOOD
    spec = f"openai:m@{stub.url};timeout=2"
    reqs = [_req(tiny, images, i) for i in range(4)]
    from truthline.models import parse_model_spec

    key = request_key(parse_model_spec(spec), reqs[2])[0]
    _foreign_claim(store, key, host="gpu-box", pid=4242, expires_in=600)
    claims = Claims()
    res = run_requests(store, spec, reqs, progress=False, policy=FAST, claims=claims)
    assert [r.status for r in res] == [PARSED, PARSED, NOT_RUN, PARSED]
    assert res[2].reason == "claimed" and len(stub.log) == 3
    assert claims.left == {Holder("otherrun0001", "prefill other", "gpu-box", 4242): 1}
    msg = claims.message() or ""
    assert "1 requests claimed by another run" in msg and "host gpu-box, pid 4242" in msg
    assert "\n" not in msg
    with store.begin() as conn:  # this run's own claims are gone, the other run's stay
        keys = [r[0] for r in conn.execute(select(tables.request_claims.c.cache_key))]
    assert keys == [key]
    with store.begin() as conn:
        conn.execute(tables.request_claims.update().values(expires_at=now() - timedelta(1)))
    again = run_requests(store, spec, reqs, progress=False, policy=FAST)
    assert [r.status for r in again] == [PARSED] * 4 and len(stub.log) == 4


def test_waiting_run_takes_the_other_runs_answers_without_a_call(stub, tiny, images, tmp_path):
    """Threads with separate engines: the second run waits for what the first claimed."""
    stub.answer = lambda body: GOOD
    stub.latency_s = 0.3
    spec = f"openai:m@{stub.url};timeout=5"
    reqs = [_req(tiny, images, i) for i in range(8)]
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"  # the fixture's store: one file, two engines
    first_started = threading.Event()
    out: dict[str, list] = {}

    def first() -> None:
        s = Store(db)
        try:
            out["a"] = run_requests(
                s,
                spec,
                reqs,
                concurrency=2,
                progress=False,
                policy=FAST,
                on_result=lambda *_: first_started.set(),
            )
        finally:
            s.close()

    th = threading.Thread(target=first)
    th.start()
    assert first_started.wait(30)
    s2 = Store(db)
    try:
        claims = Claims(mode="wait", poll_s=0.1)
        got = run_requests(s2, spec, reqs, concurrency=2, progress=False, claims=claims)
    finally:
        s2.close()
    th.join(60)
    assert [r.status for r in got] == [PARSED] * 8
    assert len(stub.log) == 8, "each request asked once"
    assert claims.taken >= 1 and not claims.left
    assert sorted(r.response_id for r in got) == sorted(r.response_id for r in out["a"])


@pytest.fixture(params=BACKENDS)
def shared_ws(request, tmp_path):
    from truthline.simulate._scene import write_dataset
    from truthline.workspace import Workspace

    url = None if request.param == "sqlite" else _url(request.param, tmp_path, "two")
    ws = Workspace.from_env(tmp_path / "ws", db_url=url)
    project = ws.init_project("steel-safety")
    media = ws.media_dir / project.name
    csv_path = write_dataset(media, n_clips=24, seed=5, size=(64, 36))
    import_items(ws.store, project, media, metadata=csv_path, progress=False)
    yield ws
    ws.store.close()


def test_two_prefill_runs_at_once_pay_once_per_item(shared_ws):
    """Two `prefill run` processes on one store: calls == items (was 2x), every item one
    response and one prediction, and the run that found work claimed says so."""
    counting = StubServer(answer=lambda body: json.dumps(STEEL_ANSWER), latency_s=0.25).start()
    try:
        cmd = [
            *TRUTHLINE,
            "--workspace",
            str(shared_ws.root),
            "prefill",
            "run",
            "--model",
            f"openai:qwen@{counting.url}",
            "--concurrency",
            "3",
            "--json",
        ]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        if shared_ws.db_url:
            env["TRUTHLINE_DB"] = shared_ws.db_url
        procs = [
            subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=240) for p in procs]
    finally:
        counting.stop()
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-2000:]
    items = sorted(i["id"] for i in shared_ws.store.items("steel-safety"))
    assert len(counting.log) == len(items), "each item asked and paid for once"
    with shared_ws.store.begin() as conn:
        resp = conn.execute(select(tables.responses.c.item_id)).all()
        preds = conn.execute(select(tables.predictions.c.item_id)).all()
        left = conn.execute(select(tables.request_claims.c.cache_key)).all()
    assert sorted(r[0] for r in resp) == items and sorted(r[0] for r in preds) == items
    assert left == [], "both runs released their claims"
    reports = [json.loads(out) for out, _ in outs]
    skipped = [r["claimed_elsewhere"] for r in reports if "claimed_elsewhere" in r]
    assert skipped, "the runs overlapped: one left claimed work to the other"
    for s in skipped:
        assert s["requests"] >= 1 and s["runs"][0]["pid"] in {p.pid for p in procs}
        assert "claimed by another run" in s["message"]


def test_two_benchmark_runs_at_once_pay_once_and_the_skipper_resumes(tmp_path):
    """`benchmark run` claims the same way: the run that left work to the other is
    partial, names it in its entry, and its rerun takes the answers without a call."""
    from tests.benchmark.conftest import make_bench_ws
    from truthline.benchmark import RunConfig, run_benchmark

    ws, project, _items, _snap = make_bench_ws(tmp_path / "ws")
    slow = StubServer(answer=lambda body: json.dumps(STEEL_ANSWER), latency_s=0.2).start()
    model = f"openai:m@{slow.url};timeout=5"
    started = threading.Event()
    out: dict[str, dict] = {}

    def first() -> None:
        s = Store(ws.url)
        try:
            out["a"] = run_benchmark(
                s, project, RunConfig(models=[model], run_id="a", concurrency=2), progress=False
            )
        finally:
            s.close()

    try:
        th = threading.Thread(target=first)
        th.start()
        while not slow.log and th.is_alive():
            started.wait(0.02)
        man_b = run_benchmark(
            ws.store, project, RunConfig(models=[model], run_id="b", concurrency=2), progress=False
        )
        th.join(120)
        asked = len(slow.log)
        again = run_benchmark(
            ws.store, project, RunConfig(models=[model], run_id="b"), progress=False
        )
    finally:
        slow.stop()
        ws.store.close()
    entry_a = next(iter(out["a"]["entries"].values()))
    entry_b = next(iter(man_b["entries"].values()))
    assert out["a"]["status"] == "done" and entry_a["not_run"] == 0
    assert man_b["status"] == "partial" and entry_b["claimed_elsewhere"]["requests"] >= 1
    assert entry_b["claimed_elsewhere"]["runs"][0]["label"].startswith("benchmark a ")
    assert again["status"] == "done" and "claimed_elsewhere" not in next(
        iter(again["entries"].values())
    )
    assert len(slow.log) == asked, "the resumed run took the other run's answers"
    check = Store(ws.url)
    with check.begin() as conn:
        n_keys = len({r[0] for r in conn.execute(select(tables.responses.c.cache_key))})
    check.close()
    assert asked == n_keys, "each request asked once across both runs"
