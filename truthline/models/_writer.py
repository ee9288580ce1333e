"""Response rows committed off the event loop, in small groups.

A store write inside the event loop (~2 ms of SQLAlchemy + SQLite per answer) stalls
every in-flight request. The writer thread takes rows from a queue, writes everything
that has queued up since its last commit in one transaction, and only then resolves
each row's future. So "committed as it arrives" still holds in the sense that matters:
the runner reports an answer (result, ``on_result``, progress) only after its commit,
and the wait is at most one group commit. No timer: under load a group is whatever
arrived during the previous commit (at most ``max_group`` rows), when idle it is one row.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam

from truthline.store import tables

_STOP = object()


@dataclass
class _Pending:
    row: dict[str, Any]
    response_id: int | None
    future: asyncio.Future = field(repr=False)


class ResponseWriter:
    """Commits ``responses`` rows in a dedicated thread; ``submit`` returns a future
    that resolves to the row's id once its transaction has committed."""

    def __init__(self, store: Any, loop: asyncio.AbstractEventLoop, *, max_group: int = 256):
        if max_group < 1:
            raise ValueError("max_group must be at least 1")
        self.store = store
        self.loop = loop
        self.max_group = max_group
        self.groups = 0
        """Transactions committed (tests and benches read it)."""
        self.rows = 0
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._main, name="truthline-writer", daemon=True)
        self._closing = False
        t = tables.responses
        self._insert = t.insert().returning(t.c.id, sort_by_parameter_order=True)
        self._update = t.update().where(t.c.id == bindparam("_response_id"))
        self._thread.start()

    def submit(self, row: dict[str, Any], response_id: int | None = None) -> asyncio.Future:
        """Queue one row (an update of ``response_id`` when given, else an insert)."""
        if self._closing:
            raise RuntimeError("the response writer is closed")
        fut = self.loop.create_future()
        self._queue.put(_Pending(row, response_id, fut))
        return fut

    async def aclose(self) -> None:
        """Commit everything queued, then stop the thread. A flush is never abandoned
        halfway: a cancellation (a second Ctrl-C) while waiting is absorbed."""
        if self._closing:
            return
        self._closing = True
        self._queue.put(_STOP)
        joined = asyncio.ensure_future(asyncio.to_thread(self._thread.join))
        while not joined.done():
            try:
                await asyncio.shield(joined)
            except asyncio.CancelledError:
                continue
        await asyncio.sleep(0)  # let the last group's futures resolve

    # -- the thread ----------------------------------------------------------------------
    def _main(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is _STOP:
                return
            group: list[_Pending] = [first]
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
                ids = self._write(group)
            except BaseException as exc:  # every row of the group learns why
                self.loop.call_soon_threadsafe(_fail, group, exc)
            else:
                self.groups += 1
                self.rows += len(group)
                self.loop.call_soon_threadsafe(_resolve, group, ids)

    def _write(self, group: list[_Pending]) -> list[int]:
        ids: list[int] = [0] * len(group)
        inserts = [k for k, p in enumerate(group) if p.response_id is None]
        updates = [k for k, p in enumerate(group) if p.response_id is not None]
        with self.store.begin() as conn:
            if inserts:
                got = conn.execute(self._insert, [group[k].row for k in inserts]).all()
                if len(got) != len(inserts):
                    raise RuntimeError(f"inserted {len(got)} responses, expected {len(inserts)}")
                for k, r in zip(inserts, got, strict=True):
                    ids[k] = int(r[0])
            if updates:
                params = []
                for k in updates:
                    p = group[k]
                    row = {c: v for c, v in p.row.items() if c not in ("cache_key", "created_at")}
                    params.append({**row, "_response_id": p.response_id})
                    ids[k] = int(p.response_id or 0)
                conn.execute(self._update, params)
        return ids


def _resolve(group: list[_Pending], ids: list[int]) -> None:
    for p, rid in zip(group, ids, strict=True):
        if not p.future.done():
            p.future.set_result(rid)


def _fail(group: list[_Pending], exc: BaseException) -> None:
    for p in group:
        if not p.future.done():
            p.future.set_exception(exc)


__all__ = ["ResponseWriter"]
