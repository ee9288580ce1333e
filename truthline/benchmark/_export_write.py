"""Writing a release as its rows come, into a folder that appears only when complete.

Why: the export held every row, image and record in memory until the end (1.2 GB at 10k
items) and wrote straight into the destination, so a kill left half a release that the
rerun refused without ``--force``. Here the public splits go out a row group at a time
(``SplitWriter``), the private tables a batch at a time (``TableSink``), the card's composition
is summed chunk by chunk (``CompositionSum``), and everything lands in a hidden sibling
folder renamed into place at the end (``staged``).
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from truthline.audit._gold import GoldItem
from truthline.benchmark._composition import (
    ClassTable,
    Density,
    FieldDensity,
    Spread,
    class_tables,
    density,
)
from truthline.benchmark._release import SPLITS
from truthline.errors import TruthlineError
from truthline.project import Project

ROWS_PER_GROUP = 1000
"""Public rows per Parquet row group (and per Arrow batch held in memory)."""
BYTES_PER_GROUP = 64 << 20
"""A row group is also cut when its media reach this many bytes (large images)."""
ROWS_PER_CONVERT = 2000
"""Private rows per Parquet batch."""


# -- the public splits -----------------------------------------------------------------


class SplitWriter:
    """``data/<split>-00000-of-00001.parquet`` for each split that gets rows, one row group
    per ``ROWS_PER_GROUP`` rows, all under one schema known before the first row."""

    def __init__(self, data: Path, schema: pa.Schema):
        self.data, self.schema = data, schema
        self.rows = dict.fromkeys(SPLITS, 0)
        self.nbytes = dict.fromkeys(SPLITS, 0)
        """Arrow size of each split's rows (the card's ``num_bytes``)."""
        self._buf: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
        self._size = dict.fromkeys(SPLITS, 0)
        self._writers: dict[str, pq.ParquetWriter] = {}

    def add(self, split: str, record: dict[str, Any], media_bytes: int) -> None:
        buf = self._buf[split]
        buf.append(record)
        self._size[split] += media_bytes
        if len(buf) >= ROWS_PER_GROUP or self._size[split] >= BYTES_PER_GROUP:
            self._flush(split)

    def _flush(self, split: str) -> None:
        buf = self._buf[split]
        if not buf:
            return
        try:
            table = pa.Table.from_pylist(buf, schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            raise TruthlineError(
                f"release: item {buf[0]['item']!r}'s batch no longer fits the column types "
                f"read a moment before ({e}); was the store changed during the export? "
                "Export again"
            ) from e
        w = self._writers.get(split)
        if w is None:
            path = self.data / f"{split}-00000-of-00001.parquet"
            w = self._writers[split] = pq.ParquetWriter(path, self.schema)
        w.write_table(table)
        self.rows[split] += table.num_rows
        self.nbytes[split] += table.nbytes
        buf.clear()
        self._size[split] = 0

    def __enter__(self) -> SplitWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is None:
                for s in SPLITS:
                    self._flush(s)
        finally:
            for w in self._writers.values():
                w.close()


# -- the private tables ----------------------------------------------------------------


class TableSink:
    """One private table (``targets``, ``entities``...), written as its rows come: JSON
    lines, or Parquet a batch of ``ROWS_PER_CONVERT`` rows at a time, each column typed by
    ``plan`` (a numeric dtype, or ``None``: JSON text, also for a column the plan lacks)."""

    def __init__(self, stem: Path, fmt: str, plan: dict[str, Any] | None = None):
        self.stem, self.fmt, self.plan = stem, fmt, plan or {}
        self.count = 0
        self._fh: IO[str] | None = None
        self._rows: list[dict[str, Any]] = []
        self._writer: pq.ParquetWriter | None = None

    @property
    def path(self) -> Path:
        return self.stem.with_suffix(".jsonl" if self.fmt == "jsonl" else ".parquet")

    def add(self, row: dict[str, Any]) -> None:
        self.count += 1
        if self.fmt == "jsonl":
            if self._fh is None:
                self._fh = self.path.open("w", encoding="utf-8")
            self._fh.write(json.dumps(row, sort_keys=True, default=str) + "\n")
            return
        self._rows.append(row)
        if len(self._rows) >= ROWS_PER_CONVERT:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        table = pa.Table.from_pandas(_frame(self._rows, self.plan), preserve_index=False)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, table.schema)
        self._writer.write_table(table)
        self._rows.clear()

    def close(self) -> Path | None:
        """The table's file (``None``: no rows, no file)."""
        if self.fmt != "jsonl":
            self._flush()
        self.abort()
        return self.path if self.count else None

    def abort(self) -> None:
        for f in (self._fh, self._writer):
            if f is not None:
                f.close()
        self._fh = self._writer = None


def _frame(rows: list[dict[str, Any]], plan: dict[str, Any]) -> pd.DataFrame:
    """Rows as the table's DataFrame, columns in the order first seen: numeric columns
    typed, the rest as JSON text (a row without the column holds NaN, as in a DataFrame)."""
    names = list(dict.fromkeys(k for r in rows for k in r))
    cols = {}
    for c in names:
        values = [r.get(c, math.nan) for r in rows]
        dt = plan.get(c)
        if dt is not None:
            cols[c] = pd.Series(values, dtype=dt)
        else:
            cols[c] = pd.Series([json.dumps(v, default=str) for v in values])
    return pd.DataFrame(cols)


# -- the card's composition ------------------------------------------------------------


@dataclass
class _Sum:
    """A per-clip count summed over chunks (total, least, most)."""

    total: int = 0
    least: int | None = None
    most: int | None = None

    def add(self, s: Spread, n: int) -> None:
        self.total += round(s.mean * n)  # an exact integer sum: mean * n within 2**-40
        self.least = s.min if self.least is None else min(self.least, s.min)
        self.most = s.max if self.most is None else max(self.most, s.max)

    def spread(self, n: int) -> Spread:
        if not n:
            return Spread.of([])
        return Spread(self.total / n, int(self.least or 0), int(self.most or 0))


SPREADS = (
    "fields_per_clip",
    "scene_fields_per_clip",
    "entity_fields_per_clip",
    "decisions_per_clip",
    "entities_per_clip",
)


class CompositionSum:
    """``composition(project, items)`` over every item, from one chunk of items at a time
    (the class tables and the density of each chunk, summed)."""

    def __init__(self, project: Project):
        self.project = project
        self.clips = 0
        self.decisions = 0
        self._tables: dict[str, ClassTable] = {}
        self._sums = {s: _Sum() for s in SPREADS}
        self._fields: dict[str, FieldDensity] = {}

    def add(self, items: list[GoldItem]) -> None:
        if not items:
            return
        for t in class_tables(self.project, items):
            old = self._tables.get(t.field)
            self._tables[t.field] = t if old is None else _add_tables(old, t)
        d = density(self.project, items)
        self.clips += d.clips
        self.decisions += d.decisions
        for s in SPREADS:
            self._sums[s].add(getattr(d, s), d.clips)
        for f in d.fields:
            old_f = self._fields.get(f.field)
            if old_f is not None:
                f = FieldDensity(
                    f.field,
                    old_f.level,
                    old_f.type,
                    old_f.clips + f.clips,
                    old_f.decisions + f.decisions,
                    0.0,
                )
            self._fields[f.field] = f

    def result(self) -> dict[str, Any]:
        """What ``composition`` returns (the datasheet's ``classes`` and ``density``)."""
        n = self.clips
        fields = tuple(
            FieldDensity(f.field, f.level, f.type, f.clips, f.decisions, f.decisions / n)
            for f in self._fields.values()
        )
        spreads = {s: self._sums[s].spread(n) for s in SPREADS}
        dens = Density(clips=n, decisions=self.decisions, fields=fields, **spreads)
        order = [leaf for leaf in self.project.leaf_fields() if leaf in self._tables]
        return {
            "classes": [asdict(self._tables[leaf]) for leaf in order],
            "density": asdict(dens),
        }


def _add_tables(a: ClassTable, b: ClassTable) -> ClassTable:
    classes = tuple(
        type(x)(**{**asdict(x), "count": x.count + y.count})
        for x, y in zip(a.classes, b.classes, strict=True)
    )
    return ClassTable(a.field, a.taxonomy, classes, a.decisions + b.decisions, a.other + b.other)


# -- the destination -------------------------------------------------------------------


def check_destination(out: Path, force: bool) -> None:
    """``out`` may take a release: missing, an empty folder, or (``force``) any folder."""
    if out.exists() and not out.is_dir():
        raise TruthlineError(f"{out} is a file, not a folder; choose a new folder for the release")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise TruthlineError(f"{out} is not empty; choose a new folder or pass --force")


@contextmanager
def staged(out: Path, force: bool) -> Iterator[Path]:
    """A new hidden sibling folder of ``out`` to write the release into; renamed to ``out``
    only when the block ends without error (``force``: the old release is renamed away
    first and deleted after), removed otherwise, so ``out`` is never half written."""
    check_destination(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    _sweep(out)
    tag = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
    tmp = out.parent / f".{out.name}.partial-{tag}"
    tmp.mkdir()
    try:
        yield tmp
        _swap_in(tmp, out, force, tag)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(tmp: Path, out: Path, force: bool, tag: str) -> None:
    check_destination(out, force)  # again: something may have appeared meanwhile
    if not out.is_dir():
        os.rename(tmp, out)
        return
    if not any(out.iterdir()):
        out.rmdir()
        os.rename(tmp, out)
        return
    old = out.parent / f".{out.name}.old-{tag}"
    os.rename(out, old)
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _sweep(out: Path) -> None:
    """Remove what killed exports of ``out`` on this host left behind (their process gone):
    ``.<name>.partial-<host>-<pid>-<hex>`` and ``.<name>.old-<host>-<pid>-<hex>``."""
    host = socket.gethostname()
    for kind in ("partial", "old"):
        prefix = f".{out.name}.{kind}-{host}-"
        for p in out.parent.iterdir():
            pid = p.name[len(prefix) :].split("-")[0]
            if p.name.startswith(prefix) and pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
