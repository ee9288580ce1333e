"""The paid-answer journal: every paid response on disk (fsync'd) before its store write.

The writer commits answers in groups; a disk filling up (or any store failure) during a
group used to lose every answer of that group, each already paid for. Each answer is now
appended to a journal file (mode 0600, in a 0700 folder under the workspace) as it
arrives, before it is queued for the store (``write``: in the OS's page cache, so a
killed process loses none), and the file is synced once per group before the group's
transaction (``sync``: a power loss can lose at most the answers of the group being
committed, which were not yet reported). The file's space is reserved ahead of use
(``posix_fallocate``), so answers arriving on a full disk still fit; failing to reserve
more tells the run to stop sending. A run that ends with every answer committed deletes
its file; otherwise the next run replays it into the store (no call repeated).

Each line is JSON from orjson (~3 µs a line, where ``json`` took ~20: one per paid answer,
on the event loop). orjson writes a non-finite float as ``null``; the rows never hold one
(answers are parsed to finite numbers, ``arun_requests`` refuses non-finite settings, cost
and latency are computed), so the line reads back as the row. A row orjson cannot encode
(an integer past 64 bits, a non-string key) is written by ``json`` instead.

One file per run, locked (``flock``) while the run lives: a replay never touches the
journal of a live run. A header line names the store (a hash of its URL, password
hidden), so a journal is only ever replayed into the store it was written for.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import bindparam
from sqlalchemy.exc import SQLAlchemyError

from truthline.errors import TruthlineError
from truthline.models._upsert import insert_ignore
from truthline.store import json_hash, make_dumps, tables

_SUFFIX = ".journal"
_RESERVE = 1 << 20
"""Bytes reserved at a time."""
_HEADROOM = 256 << 10
"""Reserve more once less than this is left (room for the answers in flight)."""
_DATES = ("created_at", "updated_at")


class JournalFullError(TruthlineError):
    """The disk holding the journal is full: the run stops sending (answers so far kept)."""


def store_id(store: Any) -> str:
    """Which store a journal belongs to (its shown URL: no password)."""
    return json_hash(["truthline-store", store.shown])[:16]


def default_journal_dir(store: Any) -> Path | None:
    """``journal/`` beside a SQLite store file (the workspace), else under
    ``$TRUTHLINE_WORKSPACE``; None (no journal) when neither is known."""
    url = str(store.url)
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :].split("?", 1)[0]
        if path and path != ":memory:":
            return Path(path).parent / "journal"
        return None
    ws = os.environ.get("TRUTHLINE_WORKSPACE")
    return Path(ws) / "journal" if ws else None


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)


def _encode(obj: Any) -> Any:
    if isinstance(obj, datetime):
        return obj.isoformat()
    raise TypeError(f"cannot journal {type(obj).__name__}")


_JSON = make_dumps(default=_encode, separators=(",", ":"))
"""The fallback encoder (``json.dumps`` with options builds one per call)."""


def _line(row: dict[str, Any], response_id: int | None) -> bytes:
    """One journal record, newline-terminated."""
    rec = {"row": row, "update": response_id}
    try:
        return orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits, a non-string key
        return _JSON(rec).encode() + b"\n"


class Journal:
    """This run's journal file: ``write`` response rows as they arrive and ``sync`` them
    (``append`` both at once), ``done`` when every row is in the store (the file goes),
    ``close`` to keep it for a replay. ``write`` (the event loop) and ``sync`` (the
    writer thread) may run in different threads."""

    def __init__(self, folder: Path, store: Any, label: str = "", run_id: str = ""):
        try:
            _private_dir(folder)
            self.path = folder / f"{uuid.uuid4().hex[:12]}{_SUFFIX}"
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise TruthlineError(
                f"cannot create the answer journal in {folder}: {exc.strerror or exc}; "
                "free space or fix the permissions of the workspace"
            ) from None
        os.fchmod(self._fd, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.end = 0
        self.reserved = 0
        self.full = False
        self.rows = 0
        self._lock = threading.Lock()
        head = {
            "journal": 1,
            "store": store_id(store),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "label": label,
            "run": run_id,
        }
        self._write(json.dumps(head).encode() + b"\n")

    def _reserve(self, need: int) -> None:
        if self.end + need + _HEADROOM <= self.reserved or self.full:
            return
        size = max(_RESERVE, need + _HEADROOM)
        try:
            os.posix_fallocate(self._fd, self.reserved, size)
        except AttributeError:  # no fallocate here (macOS): plain appends
            return
        except OSError:
            self.full = True  # what is reserved still takes the answers in flight
            return
        self.reserved += size

    def _write(self, data: bytes, sync: bool = True) -> None:
        with self._lock:
            self._reserve(len(data))
            view = memoryview(data)
            while view:
                n = os.pwrite(self._fd, view, self.end)
                self.end += n
                view = view[n:]
        if sync:
            self.sync()

    def sync(self) -> None:
        """Everything written so far on the disk (one ``fdatasync``); raises
        ``JournalFullError`` when the disk refuses it."""
        if self._fd < 0:
            return
        try:
            (getattr(os, "fdatasync", None) or os.fsync)(self._fd)
        except OSError as exc:
            self.full = True
            raise self._full_error(exc) from None

    def _full_error(self, exc: OSError) -> JournalFullError:
        return JournalFullError(
            f"cannot write the answer journal {self.path}: {exc.strerror or exc}; "
            "free space on that disk and rerun (answers already stored are kept)"
        )

    def append(self, row: dict[str, Any], response_id: int | None) -> None:
        """Journal one response row (an update of ``response_id`` when given), synced."""
        self.append_many([(row, response_id)])

    def append_many(self, recs: list[tuple[dict[str, Any], int | None]]) -> None:
        """Journal response rows, one sync for all: durable on return. Raises
        ``JournalFullError`` when even the reserved space is gone."""
        self.write(recs)
        self.sync()

    def write(self, recs: list[tuple[dict[str, Any], int | None]]) -> None:
        """Journal response rows without a sync: a killed process loses none of them, a
        power loss those since the last ``sync``. Raises ``JournalFullError`` when even
        the reserved space is gone."""
        data = b"".join(_line(row, rid) for row, rid in recs)
        try:
            self._write(data, sync=False)
        except OSError as exc:
            self.full = True
            raise self._full_error(exc) from None
        self.rows += len(recs)

    def done(self) -> None:
        """Every journaled row is committed: the journal is not needed."""
        with contextlib.suppress(OSError):
            self.path.unlink()
        self.close()

    def close(self) -> None:
        if self._fd < 0:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self.end)  # give back the reserve
        os.close(self._fd)  # the lock goes with it
        self._fd = -1


def _records(data: bytes) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The header and every whole record (a torn last line or the unused reserve, NULs,
    ends the file)."""
    lines = data.split(b"\n")
    out: list[dict[str, Any]] = []
    head: dict[str, Any] | None = None
    for n, line in enumerate(lines[:-1]):  # the last piece has no newline: torn or empty
        if not line or b"\0" in line:
            break
        try:
            obj = json.loads(line)
        except ValueError:
            break
        if n == 0:
            head = obj if isinstance(obj, dict) and obj.get("journal") == 1 else None
            if head is None:
                break
            continue
        out.append(obj)
    return head, out


def _row(rec: dict[str, Any]) -> dict[str, Any]:
    row = dict(rec["row"])
    for k in _DATES:
        if isinstance(row.get(k), str):
            row[k] = datetime.fromisoformat(row[k])
    return row


def replay(store: Any, folder: Path | None) -> int:
    """Write the answers of ended runs' journals into the store (answers already there are
    kept as they are) and delete those journals; returns the rows replayed. Journals of
    live runs (locked) and of other stores are left alone."""
    if folder is None or not folder.is_dir():
        return 0
    mine = store_id(store)
    total = 0
    for path in sorted(folder.glob(f"*{_SUFFIX}")):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live run's journal
            data = path.read_bytes()
            head, recs = _records(data)
            if head is None or head.get("store") != mine:
                continue
            _replay_records(store, path, recs, str(head.get("run") or ""))
            total += len(recs)
            path.unlink()
        finally:
            os.close(fd)
    return total


def _replay_records(store: Any, path: Path, recs: list[dict[str, Any]], run_id: str) -> None:
    """The rows, and the end of the claims the journal's run kept for them (it is over:
    its journal was not locked)."""
    t = tables.responses
    inserts = [_row(r) for r in recs if not r.get("update")]
    updates = [
        {
            **{c: v for c, v in _row(r).items() if c not in ("cache_key", "created_at")},
            "_response_id": int(r["update"]),
        }
        for r in recs
        if r.get("update")
    ]
    try:
        with store.begin() as conn:
            if inserts:
                conn.execute(insert_ignore(store.engine.dialect.name, t, ["cache_key"]), inserts)
            if updates:
                conn.execute(t.update().where(t.c.id == bindparam("_response_id")), updates)
            if run_id:
                c = tables.request_claims
                conn.execute(c.delete().where(c.c.run_id == run_id))
    except (TruthlineError, SQLAlchemyError) as exc:
        raise TruthlineError(
            f"cannot replay the answer journal {path} into the store: {exc}; fix the store "
            "and rerun (the journal is kept)"
        ) from None


__all__ = ["Journal", "JournalFullError", "default_journal_dir", "replay", "store_id"]
