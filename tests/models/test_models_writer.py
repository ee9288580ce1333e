"""The response writer thread: group commits, an answer is durable before it is reported,
and a Ctrl-C or an error still commits every answer that arrived."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Sequence

import pytest
from sqlalchemy import select

from tests.models._requests import tiny_request
from truthline.models import NOT_RUN, PARSED, ModelRequest, parse_model_spec, run_requests
from truthline.models._registry import Backend
from truthline.models._types import Completion
from truthline.models._writer import ResponseWriter
from truthline.store import now, tables


class Counting(Backend):
    """A test-only backend: answers every request after ``delay_s``; optionally sends
    this process a SIGINT (a real Ctrl-C) once ``interrupt_after`` answers went out."""

    def __init__(self, delay_s: float = 0.0, interrupt_after: int | None = None):
        super().__init__(parse_model_spec("counting:test"))
        self.delay_s = delay_s
        self.interrupt_after = interrupt_after
        self.answered: list[str] = []

    async def complete(self, request: ModelRequest) -> Completion:
        await asyncio.sleep(self.delay_s)
        if self.interrupt_after is not None and len(self.answered) >= self.interrupt_after:
            await asyncio.sleep(3600)  # never answers; the Ctrl-C cancels it
        self.answered.append(request.user)
        if self.interrupt_after is not None and len(self.answered) == self.interrupt_after:
            os.kill(os.getpid(), signal.SIGINT)
        return Completion(text='{"label": "cat", "count": 2}', tokens_in=5, tokens_out=3)


def reqs(tiny, n: int) -> list[ModelRequest]:
    return [
        tiny_request(tiny, f"request {i}", system=None, settings={"max_tokens": 16})
        for i in range(n)
    ]


def stored(store) -> dict[int, str]:
    with store.begin() as conn:
        return {
            r.id: r.status
            for r in conn.execute(select(tables.responses.c.id, tables.responses.c.status))
        }


def row(key: str) -> dict:
    ts = now()
    return dict(
        cache_key=key,
        created_at=ts,
        updated_at=ts,
        purpose="benchmark",
        model_spec="counting:test",
        model_alias="counting:test",
        simulated=False,
        status=PARSED,
        parsed={"k": key},
    )


def test_writer_groups_rows_and_resolves_after_commit(store, tmp_path):
    db = store.url.removeprefix("sqlite:///")

    async def main() -> tuple[list[int], ResponseWriter, list[int]]:
        w = ResponseWriter(store, asyncio.get_running_loop(), max_group=50)
        futs = [w.submit(row(f"k{i}")) for i in range(200)]
        seen: list[int] = []
        for f in futs:
            rid = await f
            # visible to another connection the moment the future resolves: committed
            with sqlite3.connect(db) as c:
                n = c.execute("select count(*) from responses where id=?", (rid,)).fetchone()
            seen.append(n)
        await w.aclose()
        return [f.result() for f in futs], w, seen

    ids, w, seen = asyncio.run(main())
    assert len(set(ids)) == 200 and set(stored(store)) == set(ids)
    assert seen == [(1,)] * 200
    assert w.rows == 200 and 4 <= w.groups < 200, "rows queued together share a commit"
    with store.begin() as conn:
        by_id = {r.id: r.cache_key for r in conn.execute(select(tables.responses))}
    assert [by_id[i] for i in ids] == [f"k{i}" for i in range(200)], "ids map to their rows"


def test_writer_update_and_closed_writer_refuses(store):
    async def main() -> None:
        w = ResponseWriter(store, asyncio.get_running_loop())
        rid = await w.submit(row("x"))
        again = await w.submit({**row("x"), "status": "model_failure"}, response_id=rid)
        assert again == rid
        await w.aclose()
        with pytest.raises(RuntimeError, match="closed"):
            w.submit(row("y"))

    asyncio.run(main())
    assert stored(store) == {1: "model_failure"}


def test_every_reported_answer_is_already_committed(store, tiny):
    db = store.url.removeprefix("sqlite:///")
    checked: list[int] = []

    def on_result(req: ModelRequest, res) -> None:
        with sqlite3.connect(db) as c:
            n = c.execute("select count(*) from responses where id=?", (res.response_id,))
            assert n.fetchone() == (1,), "reported before its commit"
        checked.append(res.response_id)

    res = run_requests(
        store,
        "counting:test",
        reqs(tiny, 150),
        concurrency=32,
        progress=False,
        on_result=on_result,
        backend=Counting(),
    )
    assert all(r.status == PARSED for r in res)
    assert sorted(checked) == sorted(r.response_id for r in res) == sorted(stored(store))


def test_ctrl_c_flushes_every_answer_that_arrived(store, tiny, monkeypatch):
    assert threading.current_thread() is threading.main_thread()
    slow_write = ResponseWriter._write

    def write(self: ResponseWriter, group: Sequence) -> list[int]:
        time.sleep(0.05)  # answers pile up in the queue while a commit is under way
        return slow_write(self, list(group))

    monkeypatch.setattr(ResponseWriter, "_write", write)
    be = Counting(delay_s=0.001, interrupt_after=40)
    res = run_requests(
        store, "counting:test", reqs(tiny, 100), concurrency=8, progress=False, backend=be
    )
    answered = set(be.answered)
    assert len(answered) == 40
    done = [r for r in res if r.status == PARSED]
    # every answer that arrived is in the store and reported; the rest never ran
    assert len(done) == 40 and sorted(stored(store)) == sorted(r.response_id for r in done)
    assert {q.user for q, r in zip(reqs(tiny, 100), res, strict=True) if r.status == PARSED} == (
        answered
    )
    assert all(r.status == NOT_RUN and r.reason == "interrupted" for r in res if r not in done)
    # a rerun asks only what was never answered
    be2 = Counting()
    res2 = run_requests(store, "counting:test", reqs(tiny, 100), progress=False, backend=be2)
    assert len(be2.answered) == 60 and not set(be2.answered) & answered
    assert sum(r.cached for r in res2) == 40


def test_store_error_stops_the_run_and_is_raised(store, tiny, monkeypatch):
    real = ResponseWriter._write
    calls = {"n": 0}

    def write(self: ResponseWriter, group: Sequence) -> list[int]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full (simulated)")
        return real(self, list(group))

    monkeypatch.setattr(ResponseWriter, "_write", write)
    be = Counting(delay_s=0.002)
    with pytest.raises(OSError, match="disk full"):
        run_requests(
            store, "counting:test", reqs(tiny, 200), concurrency=4, progress=False, backend=be
        )
    assert 1 <= len(stored(store)) < 200
    assert len(be.answered) < 200, "the run stops asking after the store failed"


def test_on_result_error_is_raised_after_the_flush(store, tiny):
    seen: list[int] = []

    def on_result(req: ModelRequest, res) -> None:
        seen.append(res.response_id)
        if len(seen) == 5:
            raise ValueError("callback bug")

    be = Counting(delay_s=0.01)  # answers span several 25 ms commit groups
    with pytest.raises(ValueError, match="callback bug"):
        run_requests(
            store,
            "counting:test",
            reqs(tiny, 100),
            concurrency=4,
            progress=False,
            on_result=on_result,
            backend=be,
        )
    # whatever was answered is committed (nothing paid for is lost)
    assert len(stored(store)) == len(be.answered) < 100


def test_a_failing_persist_never_loses_the_answers(store, tiny):
    """persist runs in the responses' transaction; when it raises, the answers are
    committed on their own and the error is raised after the flush."""
    calls = {"n": 0}

    def persist(conn, jobs) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise ValueError("prediction bug")

    be = Counting(delay_s=0.02)
    with pytest.raises(ValueError, match="prediction bug"):
        run_requests(
            store,
            "counting:test",
            reqs(tiny, 100),
            concurrency=4,
            progress=False,
            persist=persist,
            backend=be,
        )
    assert calls["n"] >= 2
    assert len(stored(store)) == len(be.answered) < 100
