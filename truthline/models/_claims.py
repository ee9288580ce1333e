"""Claims: a lease in the store on every request a run is about to send (issue 27).

Two runs on one store each asked and paid for every item (the response rows stayed single,
the bill did not). A run now claims the cache keys it will send before sending any: one
``INSERT ... ON CONFLICT DO NOTHING`` per chunk, so of two runs exactly one gets a key
(the key is the primary key, on SQLite and PostgreSQL alike). A claim carries an expiry
that the live run renews; a killed run's claims free up when it expires, and at once on
the same host when its process is gone. Work another live run holds is skipped (reported,
left for it) or waited for (``Claims.mode``).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, delete, select, update

from truthline.models._upsert import BulkInsert
from truthline.store import now, tables

MODES = ("skip", "wait")
_CHUNK = 500
_LIVE: set[str] = set()
"""Run ids of this process's runs that have not ended: a claim with this pid and another
run id is stale (a run in this process that ended without releasing it)."""


@dataclass(frozen=True)
class Holder:
    """The live run that holds a claim: what a user needs to find it."""

    run_id: str
    label: str
    host: str
    pid: int

    def describe(self) -> str:
        what = f"{self.label}, " if self.label else ""
        return f"{what}run {self.run_id}, host {self.host}, pid {self.pid}"


@dataclass
class Claims:
    """How a run treats work another live run has claimed, and what it left to others.

    ``mode``: ``skip`` (default) leaves it to that run (``not_run``, reason ``claimed``);
    ``wait`` polls every ``poll_s`` until that run has answered it (taken from the store
    without a call) or its claim ends (then this run claims and sends it). ``lease_s``:
    how long a claim outlives a run that stopped renewing it (killed on another host).
    """

    mode: str = "skip"
    lease_s: float = 120.0
    poll_s: float = 1.0
    label: str = ""
    left: dict[Holder, int] = field(default_factory=dict)
    """After a run: requests left to each other run (skip mode, or a stop while waiting)."""
    taken: int = 0
    """After a run: requests another run answered while this one waited (no call)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"claims mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if not self.lease_s > 0 or not self.poll_s > 0:
            raise ValueError("claims lease_s and poll_s must be positive")

    @property
    def left_total(self) -> int:
        return sum(self.left.values())

    def message(self) -> str | None:
        """One line for the user about the work left to other runs (None: none was)."""
        if not self.left:
            return None
        runs = "; ".join(f"{n} by {h.describe()}" for h, n in sorted(self.left.items(), key=str))
        return (
            f"{self.left_total} requests claimed by another run ({runs}), left for it; rerun "
            "when it has finished to use its answers (or wait for it with --wait-claimed)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.left_total,
            "runs": [
                {"run": h.run_id, "label": h.label, "host": h.host, "pid": h.pid, "requests": n}
                for h, n in sorted(self.left.items(), key=str)
            ],
        }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    except OSError:
        return True
    return True


class ClaimBook:
    """One run's claims in the store: ``claim``, ``renew``, ``release`` (blocking store
    calls; the runner runs them in a thread)."""

    def __init__(self, store: Any, lease_s: float, label: str = ""):
        self.store = store
        self.lease = timedelta(seconds=lease_s)
        self.run_id = uuid.uuid4().hex[:12]
        self.label = label[:300]
        self.host = socket.gethostname()[:255] or "localhost"
        self.pid = os.getpid()
        self.held: set[str] = set()
        _LIVE.add(self.run_id)
        self._insert = BulkInsert(
            store.engine.dialect, tables.request_claims, ["cache_key"], returning=["cache_key"]
        )

    def claim(self, keys: Sequence[str]) -> dict[str, Holder]:
        """Claim ``keys``; returns the holder of each key another live run holds (every
        other key is now this run's, in ``held``). Expired claims, and those of a run
        whose process is gone from this host, are taken over."""
        t = tables.request_claims
        others: dict[str, Holder] = {}
        uniq = [k for k in dict.fromkeys(keys) if k not in self.held]
        for i in range(0, len(uniq), _CHUNK):
            chunk = uniq[i : i + _CHUNK]
            ts = now()
            until = ts + self.lease
            with self.store.begin() as conn:
                if i == 0:  # stale claims go first, whatever their key (one pass per call)
                    conn.execute(delete(t).where(t.c.expires_at < ts))
                    self._drop_dead(conn)
                rows = [
                    dict(
                        cache_key=k,
                        run_id=self.run_id,
                        label=self.label,
                        host=self.host,
                        pid=self.pid,
                        claimed_at=ts,
                        expires_at=until,
                    )
                    for k in chunk
                ]
                got = {r[0] for r in self._insert(conn, rows)}
                self.held.update(got)
                rest = [k for k in chunk if k not in got]
                if rest:
                    for r in conn.execute(select(t).where(t.c.cache_key.in_(rest))):
                        if r.run_id == self.run_id:
                            self.held.add(r.cache_key)
                        else:
                            others[r.cache_key] = Holder(r.run_id, r.label, r.host, int(r.pid))
        return others

    def _drop_dead(self, conn: Any) -> None:
        """Claims of runs on this host whose process has ended (killed: nothing renews
        them, and waiting for the lease would only delay the rerun). Every key of such a
        run is stale, so this asks by run, not by key: a few rows, not one per key."""
        t = tables.request_claims
        runs = select(t.c.run_id, t.c.pid).where(t.c.host == self.host, t.c.run_id != self.run_id)
        dead = {
            r.run_id
            for r in conn.execute(runs.distinct())
            if (r.pid == self.pid and r.run_id not in _LIVE) or not _alive(int(r.pid))
        }
        if dead:
            conn.execute(delete(t).where(t.c.run_id.in_(dead)))

    def renew(self) -> None:
        """Push this run's claims' expiry one lease ahead (the heartbeat)."""
        t = tables.request_claims
        with self.store.begin() as conn:
            conn.execute(
                update(t).where(t.c.run_id == self.run_id).values(expires_at=now() + self.lease)
            )

    def release(self, keep: set[str] | frozenset[str] = frozenset()) -> None:
        """Drop this run's claims, but those in ``keep`` (answers not yet in the store:
        they wait in the journal until the lease ends or this process is gone)."""
        t = tables.request_claims
        with self.store.begin() as conn:
            if not keep:
                conn.execute(delete(t).where(t.c.run_id == self.run_id))
            else:
                drop = sorted(self.held - set(keep))
                for i in range(0, len(drop), _CHUNK):
                    conn.execute(
                        delete(t).where(
                            and_(t.c.run_id == self.run_id, t.c.cache_key.in_(drop[i : i + _CHUNK]))
                        )
                    )
        self.held &= set(keep)

    def end(self) -> None:
        """The run is over: claims it kept are stale to later runs of this process too."""
        _LIVE.discard(self.run_id)


__all__ = ["MODES", "ClaimBook", "Claims", "Holder"]
