"""Response rows committed off the event loop, in small groups.

A store write inside the event loop (~2 ms of SQLAlchemy + SQLite per answer) stalls
every in-flight request. The writer thread takes rows from a queue, writes everything
that has queued up since its last commit in one transaction, and only then resolves
each row's future. So "committed as it arrives" still holds in the sense that matters:
the runner reports an answer (result, ``on_result``, progress) only after its commit,
and the wait is at most one group commit plus ``linger_s``. A group is whatever arrived
during the previous commit or within ``linger_s`` (25 ms; ``journaled_linger_s``, 250 ms,
once the answers are journaled) of the group's first row (at most ``max_group`` rows; the
thread sleeps once per group rather than waking for every row; closing the writer cuts
the sleep short): a transaction costs more than its rows, so answers arriving a few
milliseconds apart share one. On SQLite a row costs ~32 µs of CPU in groups of 50, ~19 in
groups of 250 and ~16 in groups of 1,000 (the random cache keys' index pages are written
once per commit), so journaled answers, which a crash cannot lose, wait longer. Without
a journal a crash can lose at most that window's answers (not yet reported, so a rerun
asks them again); with one it loses none (they are in the journal as they arrive).

Two runs on one store are safe: a response is inserted with ``ON CONFLICT DO NOTHING``
(SQLite and PostgreSQL dialect inserts) and a key another run stored first resolves to
that stored row, so neither run crashes and every answer keeps its row.

``journal`` (optional, set before the first row; paid answers): each row is written to
it as it arrives (in the event loop, at the end of the loop's turn that submitted it, in one
write with the other answers of that turn: a killed process loses none) and the journal is
synced once per group, before the group's transaction, so a failing store write loses no
paid answer (``_journal``: the next run replays them). A journal
that cannot take more (a full disk) is ``journal_error``: the run stops sending.

``persist`` (optional) writes what a caller derives from each answer (a prefill
prediction, a benchmark result) in this same thread and the same transaction, after the
responses: nothing that points at a response is ever visible without it, and a failing
``persist`` never loses a paid answer (the responses are then committed on their own
and the error is raised). Answers are reported (their futures resolve) only after the
commit. The thread keeps one connection open (a pool checkout per group cost more
than the group's rows).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, bindparam, select

from truthline.models._journal import Journal, JournalFullError
from truthline.models._upsert import BulkInsert
from truthline.store import tables

_STOP = object()


@dataclass
class Job:
    """What ``persist`` gets for one answer: the result (its ``response_id`` filled in
    once stored) and every request it answers (identical requests share one answer)."""

    result: Any
    requests: list[Any]


Persist = Callable[[Connection, list[Job]], None]


@dataclass
class _Pending:
    row: dict[str, Any] | None
    response_id: int | None
    future: asyncio.Future = field(repr=False)
    job: Job | None = None
    journaled: bool = False


class ResponseWriter:
    """Commits ``responses`` rows in a dedicated thread; ``submit`` returns a future
    that resolves to the row's id once its transaction has committed."""

    def __init__(
        self,
        store: Any,
        loop: asyncio.AbstractEventLoop,
        *,
        max_group: int = 1024,
        persist: Persist | None = None,
        linger_s: float = 0.025,
        journaled_linger_s: float = 0.25,
    ):
        if max_group < 1:
            raise ValueError("max_group must be at least 1")
        self.store = store
        self.loop = loop
        self.max_group = max_group
        self.persist = persist
        self.linger_s = linger_s
        self.journaled_linger_s = journaled_linger_s
        """The linger once rows are journaled as they arrive: a longer wait loses nothing
        and makes bigger groups (less CPU per row)."""
        self.groups = 0
        """Transactions committed (tests and benches read it)."""
        self.rows = 0
        self.journal: Journal | None = None
        self.journal_error: JournalFullError | None = None
        """The journal could not take (or reserve room for) more answers."""
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, name="truthline-writer", daemon=True)
        self._closing = False
        self._closed = threading.Event()
        self._unjournaled: list[_Pending] = []
        """Submitted in this turn of the event loop, journaled and queued at its end."""
        self._conn: Connection | None = None
        t = tables.responses
        self._insert = BulkInsert(
            store.engine.dialect, t, ["cache_key"], returning=["id", "cache_key"]
        )
        self._update = t.update().where(t.c.id == bindparam("_response_id"))
        self._thread.start()

    def submit(
        self, row: dict[str, Any] | None, response_id: int | None = None, job: Job | None = None
    ) -> asyncio.Future:
        """Queue one row (an update of ``response_id`` when given, else an insert; none:
        only ``persist`` the job of an answer already stored). The future resolves to
        the response id."""
        if self._closing:
            raise RuntimeError("the response writer is closed")
        fut = self.loop.create_future()
        pending = _Pending(row, response_id, fut, job)
        if self._unjournaled or (
            row is not None and self.journal is not None and self.journal_error is None
        ):
            # journaled at the end of this turn of the loop, with every answer that arrived
            # in it (one write, not one per answer), then queued in order
            self._unjournaled.append(pending)
            if len(self._unjournaled) == 1:
                self.loop.call_soon(self._flush_journal)
        else:
            self._queue.put(pending)
        return fut

    def _flush_journal(self) -> None:
        """Journal the answers submitted since the last flush (one write), then queue them.
        A row the journal cannot write (not JSON) fails its own answer with the reason, as
        ``submit`` did when it wrote each row itself; the others go on."""
        batch, self._unjournaled = self._unjournaled, []
        rows = [p for p in batch if p.row is not None]
        failed: set[int] = set()
        if rows and self.journal is not None and self.journal_error is None:
            try:
                self._journal_rows(rows)
            except JournalFullError as exc:
                self.journal_error = exc
            except Exception:  # which row: each on its own
                for p in rows:
                    try:
                        self._journal_rows([p])
                    except JournalFullError as exc:
                        self.journal_error = exc
                        break
                    except Exception as exc:
                        _fail([p], exc)
                        failed.add(id(p))
            self._check_full()
        for p in batch:
            if id(p) not in failed:
                self._queue.put(p)

    def _journal_rows(self, rows: list[_Pending]) -> None:
        assert self.journal is not None
        self.journal.write([(p.row, p.response_id) for p in rows if p.row is not None])
        for p in rows:
            p.journaled = True

    async def aclose(self) -> None:
        """Commit everything queued, then stop the thread. A flush is never abandoned
        halfway: a cancellation (a second Ctrl-C) while waiting is absorbed."""
        if self._closing:
            return
        self._closing = True
        self._flush_journal()
        self._queue.put(_STOP)
        self._closed.set()  # the last group is not kept waiting out the linger
        joined = asyncio.ensure_future(asyncio.to_thread(self._thread.join))
        while not joined.done():
            try:
                await asyncio.shield(joined)
            except asyncio.CancelledError:
                continue
        await asyncio.sleep(0)  # let the last group's futures resolve

    # -- the thread ----------------------------------------------------------------------
    def _main(self) -> None:
        try:
            self._loop_groups()
        finally:
            self._drop_connection()

    def _loop_groups(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is _STOP:
                return
            group: list[_Pending] = [first]
            linger = self.linger_s if self.journal is None else self.journaled_linger_s
            if self.max_group > 1 and linger > 0:
                # one sleep, then take what queued up: a blocking get per row woke this
                # thread (and took the GIL from the event loop) once per answer
                self._closed.wait(linger)
            while len(group) < self.max_group:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is _STOP:
                    stop = True
                    break
                group.append(nxt)
            try:
                self._to_journal(group)
                ids = self._write(group)
            except BaseException as exc:  # every row of the group learns why
                self.loop.call_soon_threadsafe(_fail, group, exc)
            else:
                self.groups += 1
                self.rows += len(group)
                self.loop.call_soon_threadsafe(_resolve, group, ids)

    def _connection(self) -> Connection:
        """The thread's own connection, kept open: a pool checkout (and its ping) per
        group cost more than the group's rows."""
        if self._conn is None:
            self._conn = self.store.engine.connect()
        return self._conn

    def _drop_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # a broken connection: nothing to close
                self._conn.close()
            self._conn = None

    def _to_journal(self, group: list[_Pending]) -> None:
        """The group's answers on disk (one sync) before its transaction can fail; rows
        submitted before the journal was set are written here."""
        if self.journal is None or not any(p.row is not None for p in group):
            return
        late = [(p.row, p.response_id) for p in group if p.row is not None and not p.journaled]
        try:
            if late:
                self.journal.write(late)
            self.journal.sync()
        except JournalFullError as exc:
            self.journal_error = self.journal_error or exc
            return
        self._check_full()

    def _check_full(self) -> None:
        """The journal could not reserve room for more: stop sending (``journal_error``)."""
        if self.journal is not None and self.journal.full and self.journal_error is None:
            self.journal_error = JournalFullError(
                f"the disk holding the answer journal {self.journal.path.parent} is full: the "
                "run stopped sending (every answer so far is kept); free space and rerun"
            )

    def _write(self, group: list[_Pending]) -> list[int]:
        ids: list[int] = [0] * len(group)
        in_persist = False
        try:
            conn = self._connection()
            with conn.begin():
                self._store_responses(conn, group, ids)
                jobs = self._jobs(group, ids)
                if self.persist is not None and jobs:
                    in_persist = True
                    self.persist(conn, jobs)
            return ids
        except BaseException:
            self._drop_connection()
            if in_persist:  # the answers are committed on their own, then the error is raised
                conn = self._connection()
                with conn.begin():
                    self._store_responses(conn, group, ids)
            raise

    def _jobs(self, group: list[_Pending], ids: list[int]) -> list[Job]:
        for k, p in enumerate(group):
            if p.job is not None and p.row is not None:
                p.job.result.response_id = ids[k]
            elif p.job is not None:
                ids[k] = int(p.job.result.response_id)
        return [p.job for p in group if p.job is not None]

    def _store_responses(self, conn: Connection, group: list[_Pending], ids: list[int]) -> None:
        inserts = [k for k, p in enumerate(group) if p.row is not None and p.response_id is None]
        updates = [k for k, p in enumerate(group) if p.row is not None and p.response_id]
        if inserts:
            self._insert_rows(conn, group, inserts, ids)
        if updates:
            params = []
            for k in updates:
                p = group[k]
                row = {
                    c: v for c, v in (p.row or {}).items() if c not in ("cache_key", "created_at")
                }
                params.append({**row, "_response_id": p.response_id})
                ids[k] = int(p.response_id or 0)
            conn.execute(self._update, params)

    def _insert_rows(
        self, conn: Connection, group: list[_Pending], inserts: list[int], ids: list[int]
    ) -> None:
        """Insert new responses; a key another run stored first (a concurrent run on the
        same store) resolves to that stored row and the job takes its answer."""
        rows = [group[k].row or {} for k in inserts]
        got = {r[1]: int(r[0]) for r in self._insert(conn, rows)}
        lost: list[int] = []
        for k in inserts:
            key = (group[k].row or {})["cache_key"]
            if key in got:
                ids[k] = got.pop(key)
            else:  # stored first by another run (or twice in this group)
                lost.append(k)
        if not lost:
            return
        from truthline.models._runner import _from_row

        t = tables.responses
        keys = [(group[k].row or {})["cache_key"] for k in lost]
        stored = {r.cache_key: r for r in conn.execute(select(t).where(t.c.cache_key.in_(keys)))}
        for k in lost:
            p = group[k]
            r = stored.get((p.row or {})["cache_key"])
            if r is None:
                raise RuntimeError(f"response {(p.row or {})['cache_key'][:12]} was not stored")
            ids[k] = int(r.id)
            if p.job is not None:
                p.job.result = _from_row(r, cached=False)


def _resolve(group: list[_Pending], ids: list[int]) -> None:
    for p, rid in zip(group, ids, strict=True):
        if not p.future.done():
            p.future.set_result(rid)


def _fail(group: list[_Pending], exc: BaseException) -> None:
    for p in group:
        if not p.future.done():
            p.future.set_exception(exc)


__all__ = ["ResponseWriter"]
