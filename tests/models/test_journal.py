"""Paid answers survive a failing store write (issue 27): each is journaled (fsync'd, mode
0600) before its store write and replayed by the next run, which asks nothing again."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat

import pytest
from sqlalchemy import func, select

from tests.models._requests import numbered as _req
from tests.models._rows import GOOD, response_row
from truthline.errors import TruthlineError
from truthline.models import PARSED, RetryPolicy, run_requests
from truthline.models import _journal as journal_mod
from truthline.models._journal import Journal, replay
from truthline.models._writer import ResponseWriter
from truthline.store import Store, StoreError, tables

FAST = RetryPolicy(retries=1, base=0.01, cap=0.05)


def _count(store: Store) -> int:
    with store.begin() as conn:
        return conn.execute(select(func.count()).select_from(tables.responses)).scalar_one()


def _disk_full(self, group):  # the writer's transaction, failing as a full disk does
    raise StoreError("the store at db.sqlite: database or disk is full")


def test_a_failing_store_write_loses_no_paid_answer(
    stub, tiny, images, store, tmp_path, monkeypatch
):
    stub.answer = lambda body: GOOD
    stub.latency_s = 0.2  # all six in flight at once: every one is paid before a write fails
    spec = f"openai:m@{stub.url};timeout=2"
    reqs = [_req(tiny, images, i) for i in range(6)]
    folder = tmp_path / "journal"  # the default: beside the SQLite store file
    monkeypatch.setattr(ResponseWriter, "_write", _disk_full)
    with pytest.raises(StoreError, match="disk is full"):
        run_requests(store, spec, reqs, concurrency=6, progress=False, policy=FAST)
    paid = len(stub.log)
    assert paid == 6 and _count(store) == 0, "every answer was paid for, none stored"
    files = list(folder.glob("*.journal"))
    assert len(files) == 1, "the answers wait in the journal"
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    with store.begin() as conn:  # the unstored answers keep their claims (until the lease ends)
        assert len(conn.execute(select(tables.request_claims)).all()) == 6

    monkeypatch.undo()
    res = run_requests(store, spec, reqs, concurrency=3, progress=False, policy=FAST)
    assert len(stub.log) == paid, "the rerun asks nothing again"
    assert [r.status for r in res] == [PARSED] * 6 and all(r.cached for r in res)
    assert _count(store) == 6 and not list(folder.glob("*.journal"))
    assert {r.values["label"] for r in res} == {"dog"}
    with store.begin() as conn:
        assert conn.execute(select(tables.request_claims)).all() == []


def test_a_run_whose_answers_are_stored_leaves_no_journal(stub, tiny, images, store, tmp_path):
    stub.answer = lambda body: GOOD
    folder = tmp_path / "j"
    run_requests(
        store,
        f"openai:m@{stub.url}",
        [_req(tiny, images, i) for i in range(3)],
        progress=False,
        journal_dir=folder,
    )
    assert _count(store) == 3 and folder.is_dir() and not list(folder.iterdir())


def _row(key: str) -> dict:
    return response_row(key)


def test_replay_skips_live_runs_other_stores_and_a_torn_tail(store, tmp_path):
    folder = tmp_path / "j"
    live = Journal(folder, store)
    live.append(_row("live"), None)
    other = Store(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        foreign = Journal(folder, other)
        foreign.append(_row("foreign"), None)
        foreign.close()
    finally:
        other.close()
    ended = Journal(folder, store)
    ended.append(_row("a"), None)
    ended.append(_row("b"), None)
    ended.close()
    with ended.path.open("ab") as f:  # a record cut off by a crash mid-write
        f.write(json.dumps({"row": _row("torn")}, default=str).encode()[:40])
    assert replay(store, folder) == 2
    with store.begin() as conn:
        keys = sorted(r[0] for r in conn.execute(select(tables.responses.c.cache_key)))
    assert keys == ["a", "b"], "not the live run's, not another store's, not the torn one"
    assert not ended.path.exists() and live.path.exists() and foreign.path.exists()
    with pytest.raises(BlockingIOError):  # the live run still holds its lock
        fd = os.open(live.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    live.done()
    assert not live.path.exists()


def test_reserved_space_takes_answers_in_flight_and_a_full_disk_stops_sending(
    stub, tiny, images, store, tmp_path, monkeypatch
):
    """The journal reserves its space ahead; when no more can be reserved the run stops
    sending, stores what arrived and says why in one line."""
    stub.answer = lambda body: GOOD
    stub.latency_s = 0.05
    calls = {"n": 0}
    real = os.posix_fallocate

    def fallocate(fd, offset, length):
        calls["n"] += 1
        if calls["n"] > 1:  # the first reservation succeeds, the disk is full after it
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, offset, length)

    monkeypatch.setattr(journal_mod, "_RESERVE", 4096)
    monkeypatch.setattr(journal_mod, "_HEADROOM", 2048)
    monkeypatch.setattr(os, "posix_fallocate", fallocate)
    reqs = [_req(tiny, images, i) for i in range(40)]
    with pytest.raises(TruthlineError, match="journal") as exc:
        run_requests(
            store,
            f"openai:m@{stub.url}",
            reqs,
            concurrency=2,
            progress=False,
            journal_dir=tmp_path / "j",
        )
    assert "\n" not in str(exc.value) and "free space" in str(exc.value)
    assert len(stub.log) < 40, "it stopped sending"
    assert _count(store) == len(stub.log), "every answer that arrived is stored"


def test_an_answer_is_in_the_journal_when_submitted_before_its_commit(store, tmp_path):
    """The writer journals each row as it arrives (at the end of the event loop's turn that
    submitted it, every answer of that turn in one write), not when its group commits: a
    process killed while answers wait for their group (the linger) loses none of them."""
    import asyncio
    import threading

    gate = threading.Event()
    real = ResponseWriter._to_journal

    def held(self, group):  # the group's sync and commit wait until the journal was read
        gate.wait(10)
        return real(self, group)

    async def main() -> list[int]:
        writer = ResponseWriter(store, asyncio.get_running_loop(), linger_s=0.0)
        writer.journal = Journal(tmp_path / "j", store)
        writer._to_journal = held.__get__(writer)  # type: ignore[method-assign]
        writes: list[int] = []
        journal_write = writer.journal.write
        writer.journal.write = lambda recs: (writes.append(len(recs)), journal_write(recs))[1]  # type: ignore[method-assign]
        futs = [writer.submit(_row(k)) for k in ("a", "b", "c")]
        await asyncio.sleep(0)  # the end of this turn of the loop
        assert writes == [3], "one write for the turn's answers"
        lines = writer.journal.path.read_bytes().rstrip(b"\0").splitlines()
        keys = [json.loads(x)["row"]["cache_key"] for x in lines[1:]]
        assert keys == ["a", "b", "c"], "journaled before any commit"
        assert _count(store) == 0
        gate.set()
        ids = list(await asyncio.gather(*futs))
        await writer.aclose()
        writer.journal.done()
        return ids

    ids = asyncio.run(main())
    assert len(set(ids)) == 3 and _count(store) == 3


def test_a_row_the_journal_cannot_write_fails_its_answer_not_the_run(store, tmp_path):
    """The turn's journal write is a loop callback: a row it cannot encode (here a set)
    fails that answer's future with the reason (unresolved, the run would hang); the other
    answers of the turn are journaled and stored."""
    import asyncio

    async def main() -> None:
        writer = ResponseWriter(store, asyncio.get_running_loop(), linger_s=0.0)
        writer.journal = Journal(tmp_path / "j", store)
        bad = _row("bad")
        bad["parsed"] = {"x": {1, 2}}
        futs = [writer.submit(_row("a")), writer.submit(bad)]
        done = await asyncio.wait_for(asyncio.gather(*futs, return_exceptions=True), 10)
        assert isinstance(done[0], int)
        assert isinstance(done[1], TypeError) and "cannot journal set" in str(done[1])
        await writer.aclose()
        lines = writer.journal.path.read_bytes().rstrip(b"\0").splitlines()
        assert [json.loads(x)["row"]["cache_key"] for x in lines[1:]] == ["a"]
        writer.journal.close()

    asyncio.run(main())
    assert set(_stored(store)) == {"a"}


def _stored(store: Store) -> dict[str, dict]:
    cols = [c for c in tables.responses.c if c.name != "id"]
    with store.begin() as conn:
        return {r.cache_key: dict(r._mapping) for r in conn.execute(select(*cols))}


def test_a_replayed_row_is_the_row_the_writer_stores(store, tmp_path):
    """Journal lines (orjson, and ``json`` for what orjson cannot write) read back as the
    row itself: text outside ASCII, a time without microseconds, an integer past 64 bits."""
    import asyncio

    odd = _row("odd")
    odd["raw_response"] = 'é — "quoted"\n\u2028 tab\t'
    odd["created_at"] = odd["updated_at"] = odd["created_at"].replace(microsecond=0)
    odd["prompt"] = {"system": "ß", "user": "日本"}
    huge = _row("huge")
    huge["parsed"] = {"count": 2**70}  # orjson refuses it: the line falls back to json
    rows = {"odd": odd, "huge": huge, "plain": _row("plain")}
    folder = tmp_path / "j"
    journal = Journal(folder, store)
    journal.write([(r, None) for r in rows.values()])
    journal.close()
    lines = journal.path.read_bytes().rstrip(b"\0").splitlines()[1:]
    assert [json.loads(x)["row"]["cache_key"] for x in lines] == list(rows)
    assert replay(store, folder) == 3
    replayed = _stored(store)

    other = Store(f"sqlite:///{tmp_path / 'direct.db'}")
    try:

        async def direct() -> None:
            writer = ResponseWriter(other, asyncio.get_running_loop(), linger_s=0.0)
            await asyncio.gather(*(writer.submit(r) for r in rows.values()))
            await writer.aclose()

        asyncio.run(direct())
        assert replayed == _stored(other), "the replay stores what the writer would have"
    finally:
        other.close()
    assert replayed["huge"]["parsed"] == {"count": 2**70}
    assert replayed["odd"]["raw_response"] == odd["raw_response"]


def test_a_non_finite_setting_is_refused_before_anything_is_sent(stub, tiny, images, store):
    """The journal's JSON has no NaN, and no endpoint takes one: a run refuses it upfront,
    naming the setting."""
    from tests.models._requests import tiny_request

    bad = tiny_request(tiny, "x", settings={"temperature": float("nan"), "max_tokens": 8})
    ok = tiny_request(tiny, "y")
    with pytest.raises(TruthlineError, match="setting temperature is nan"):
        run_requests(store, f"openai:m@{stub.url}", [ok, bad], progress=False, policy=FAST)
    nested = tiny_request(tiny, "z", settings={"image_policy": {"scale": [1.0, float("inf")]}})
    with pytest.raises(TruthlineError, match=r"image_policy\.scale\.1 is inf"):
        run_requests(store, f"openai:m@{stub.url}", [nested], progress=False, policy=FAST)
    assert stub.log == [] and _count(store) == 0
