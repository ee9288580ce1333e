"""A release's gold read in chunks, and the first of the export's two passes over it.

Why not ``load_gold``: it holds every item and decision at once (about 94 KB an item,
measured at 10k items), so the export's memory grew with the benchmark. This reads the
same rows under the same rules (``resolve_snapshot``, ``in_slice``, ``active_withdrawals``),
in the same order (item id, then field path), as the same ``GoldItem``s, ``CHUNK`` items at
a time. The first pass (``scan_gold``) keeps only what the second pass must know before it
writes its first row: the split's clusters, the media column, the public columns' Arrow
types, which private columns stay numeric, and the datasheet's counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
from sqlalchemy import select

from truthline.audit._gold import NO_GOLD_HINT, GoldItem, in_slice
from truthline.audit._withdraw import active_withdrawals
from truthline.benchmark._release import IMAGE_TYPE, cluster_of, nested_gold
from truthline.benchmark._runner import _entity_ids, _public_item
from truthline.benchmark._scoring import leaf_of
from truthline.errors import TruthlineError
from truthline.project import Project
from truthline.store import Store, resolve_snapshot, tables

CHUNK = 1000
"""Items read per query (their decisions come in a second query over the same id range)."""

ANSWER_COLUMNS = ("gold", "provenance")
"""Public columns that give an item's answers away (withheld for a hidden test split)."""


@dataclass
class ReleasedItem:
    """One item's gold and who each value came from (path -> annotator ids, roles, specs)."""

    gold: GoldItem
    sources: dict[str, list[str]]


def resolve(store: Store, project: str, snapshot: str | None) -> str:
    """The snapshot's full hash (default: the latest), as ``load_gold`` resolves it."""
    with store.begin() as conn:
        snap = resolve_snapshot(conn, project, snapshot)
    if snap is None:
        raise TruthlineError(
            f"project {project!r} has no gold yet; {NO_GOLD_HINT} before running a benchmark"
        )
    return snap


def gold_chunks(
    store: Store, project: str, snap: str, slice_: str, chunk: int | None = None
) -> Iterator[list[ReleasedItem]]:
    """The items ``load_gold(store, project, snap, slice_)`` returns, ``chunk`` at a time."""
    size = chunk or CHUNK
    g = tables.gold
    with store.begin() as conn:
        ids = list(
            conn.execute(
                select(g.c.item_id).where(g.c.snapshot == snap).distinct().order_by(g.c.item_id)
            ).scalars()
        )
        gone = active_withdrawals(conn, project)
    ids = [int(i) for i in ids if int(i) not in gone]
    for start in range(0, len(ids), size):
        with store.begin() as conn:
            part = _read_chunk(conn, project, snap, slice_, ids[start : start + size])
        if part:
            yield part


def _read_chunk(
    conn: Any, project: str, snap: str, slice_: str, ids: list[int]
) -> list[ReleasedItem]:
    t = tables
    items = {
        int(r.id): r
        for r in conn.execute(
            select(
                t.items.c.id,
                t.items.c.key,
                t.items.c.parent,
                t.items.c.meta,
                t.items.c.media,
                t.items.c.media_root,
                t.items.c.sim_truth,
            ).where(t.items.c.id.in_(ids))
        )
    }
    a = t.arm_assignments
    arms = {
        int(i): str(arm)
        for i, arm in conn.execute(
            select(a.c.item_id, a.c.arm).where(a.c.project == project, a.c.item_id.in_(ids))
        )
    }
    rows = conn.execute(
        select(
            t.gold.c.item_id,
            t.gold.c.field_path,
            t.gold.c.value,
            t.gold.c.provenance,
            t.gold.c.sources,
        )
        .where(t.gold.c.snapshot == snap, t.gold.c.item_id.between(ids[0], ids[-1]))
        .order_by(t.gold.c.item_id, t.gold.c.field_path)
    )
    out: dict[int, ReleasedItem] = {}
    for r in rows:
        row = items.get(int(r.item_id))
        arm = arms.get(int(r.item_id))
        if row is None or not in_slice(slice_, r.provenance, arm):
            continue
        rel = out.get(row.id)
        if rel is None:
            it = GoldItem(
                int(row.id),
                row.key,
                row.parent,
                dict(row.meta or {}),
                arm,
                list(row.media or []),
                row.media_root,
                row.sim_truth,
            )
            rel = out[row.id] = ReleasedItem(it, {})
        rel.gold.values[r.field_path] = r.value
        rel.gold.provenance[r.field_path] = r.provenance
        rel.sources[r.field_path] = [str(s) for s in (r.sources or [])]
    return list(out.values())


def public_columns(
    project: Project,
    rel: ReleasedItem,
    meta: dict[str, Any],
    prompts: tuple[str | None, str],
    public_name: Callable[[str], str],
) -> dict[str, Any]:
    """An item's public columns after ``item`` and the media, in the release's column order:
    ``meta`` is its public metadata, ``prompts`` its rendered (system, user) prompt,
    ``public_name`` the public name of a gold source."""
    it = rel.gold
    columns: dict[str, Any] = {}
    if meta:
        columns["meta"] = meta
    columns["system"], columns["prompt"] = prompts
    cands = _entity_ids(project, it)
    if cands:
        columns["candidates"] = cands
    columns["gold"] = nested_gold(project, it.values)
    columns["provenance"] = [
        {
            "path": path,
            "provenance": it.provenance[path],
            "sources": [public_name(s) for s in rel.sources.get(path, [])],
        }
        for path in it.values
    ]
    columns["simulated"] = it.sim_truth is not None
    return columns


class ColumnTypes:
    """The Arrow type of each column, fed a chunk of rows at a time: what ``pa.array``
    infers over the whole column. Each chunk is inferred behind one sample value of the type
    so far (``sample_of``), so Arrow's own rules decide (nulls give way, ints and bools
    widen to doubles where it allows, struct fields unite in the order first seen)."""

    def __init__(self) -> None:
        self.types: dict[str, pa.DataType] = {}

    def add(self, column: str, values: list[Any]) -> None:
        prev = self.types.get(column)
        head = [] if prev is None else [sample_of(prev)]
        try:
            self.types[column] = pa.array(head + values).type
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            raise TruthlineError(
                f"release: gold or metadata values of column {column!r} have mixed types "
                f"({e}); make each field's values one type before exporting"
            ) from e


_SAMPLES = {
    pa.null(): None,
    pa.bool_(): True,
    pa.int64(): 1,
    pa.float64(): 0.5,
    pa.string(): "s",
    pa.binary(): b"b",
    pa.timestamp("us"): datetime(2000, 1, 1),
    pa.date32(): date(2000, 1, 1),
}


def sample_of(t: pa.DataType) -> Any:
    """One Python value ``pa.array`` infers as ``t`` (the types JSON values infer to)."""
    if pa.types.is_struct(t):
        return {f.name: sample_of(f.type) for f in t}
    if pa.types.is_list(t):
        return [sample_of(t.value_type)]
    if t not in _SAMPLES:
        raise TruthlineError(f"release: a column infers to {t}, which the export cannot write")
    return _SAMPLES[t]


@dataclass
class Kinds:
    """The kinds of value a private table's column has held: enough to tell the dtype
    pandas gives the whole column (numeric columns stay numbers, every other one travels
    as JSON text), without holding the column."""

    rows: int = 0
    none: bool = False
    flag: bool = False
    real: bool = False
    ints: list[int] = field(default_factory=list)
    """The least and the greatest integer seen."""
    other: bool = False

    def see(self, v: Any) -> None:
        self.rows += 1
        if v is None:
            self.none = True
        elif isinstance(v, bool):
            self.flag = True
        elif isinstance(v, int):
            self.ints = [min([v, *self.ints]), max([v, *self.ints])]
        elif isinstance(v, float):
            self.real = True
        else:
            self.other = True

    def dtype(self, rows: int) -> Any:
        """The column's numeric dtype, or ``None`` for a JSON text column; ``rows``: the
        table's rows (a row without the column holds NaN there, as in a DataFrame)."""
        if self.other:
            return None
        sample: list[Any] = [*self.ints]
        sample += [None] * self.none + [True] * self.flag + [0.5] * self.real
        sample += [math.nan] * (self.rows < rows)
        dt = pd.Series(sample).dtype
        return dt if pd.api.types.is_numeric_dtype(dt) else None


def private_rows(
    project: Project, rel: ReleasedItem, split: str, cluster: str, media: list[str]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(table, row) of every private record of an item: ``targets`` and ``provenance`` per
    decision, one ``entities`` row, its ``simulated_truth``; ``media`` its public names."""
    it = rel.gold
    for path, value in it.values.items():
        yield "targets", {"item": it.key, "path": path, "value": value}
        yield (
            "provenance",
            {
                "item": it.key,
                "path": path,
                "provenance": it.provenance[path],
                "sources": rel.sources.get(path, []),
                "arm": it.arm,
            },
        )
    yield (
        "entities",
        {
            "item": it.key,
            "parent": it.parent,
            "meta": it.meta,
            "ids": _entity_ids(project, it),
            "media": media,
            "split": split,
            "cluster": cluster,
        },
    )
    if it.sim_truth is not None:
        yield "simulated_truth", {"item": it.key, "truth": it.sim_truth}


@dataclass
class GoldScan:
    """What the first pass learns: the release's items in order, each item's cluster, the
    public columns and their Arrow types, and the datasheet's counts."""

    snapshot: str
    keys: list[str] = field(default_factory=list)
    clusters: dict[str, str] = field(default_factory=dict)
    n_media: list[int] = field(default_factory=list)
    seen_targets: list[str] = field(default_factory=list)
    """Target leaf fields in the order first seen (used when the project declares none)."""
    strata: dict[str, dict[str, int]] = field(default_factory=dict)
    provenance: dict[str, int] = field(default_factory=dict)
    decisions: int = 0
    simulated: bool = False
    columns: list[str] = field(default_factory=list)
    """The public columns after ``item`` and the media: the first item's (as before)."""
    types: dict[str, pa.DataType] = field(default_factory=dict)
    """Arrow type of each of ``columns`` over every item."""
    kinds: dict[str, dict[str, Kinds]] = field(default_factory=dict)
    """Per private table and column, the kinds of value it holds."""

    def plan(self, table: str) -> dict[str, Any]:
        """A private table's column dtypes (numeric, or ``None``: JSON text)."""
        cols = self.kinds.get(table, {})
        rows = max((k.rows for k in cols.values()), default=0)
        return {c: k.dtype(rows) for c, k in cols.items()}


def _columns(project: Project, rel: ReleasedItem) -> dict[str, Any]:
    """The public columns, for their types: prompts as placeholders of their type (the
    system prompt is null unless the project has one), sources by their own names."""
    prompts = ("" if project.prompts.system else None, "")
    return public_columns(project, rel, _public_item(project, rel.gold)["meta"], prompts, str)


def scan_gold(store: Store, project: Project, snap: str, slice_: str) -> GoldScan:
    """First pass: every released item's split cluster, media count, column types and
    counts, holding one chunk of items at a time."""
    scan = GoldScan(snap)
    leaves = project.leaf_fields()
    for s in project.strata:
        scan.strata[s] = {}
    types = ColumnTypes()
    for part in gold_chunks(store, project.name, snap, slice_):
        for rel in part:
            it = rel.gold
            scan.keys.append(it.key)
            scan.clusters[it.key] = cluster_of(project, it)
            scan.n_media.append(len(it.media))
            scan.simulated |= it.sim_truth is not None
            scan.decisions += len(it.values)
            for s, counts in scan.strata.items():
                v = str(it.meta.get(s, ""))
                counts[v] = counts.get(v, 0) + 1
            for path, prov in it.provenance.items():
                scan.provenance[prov] = scan.provenance.get(prov, 0) + 1
                leaf = leaf_of(path)
                if leaf in leaves and leaf not in scan.seen_targets:
                    scan.seen_targets.append(leaf)
            names = [f"{it.key}/{Path(m).name}" for m in it.media]  # their kind, not the split
            for table, row in private_rows(project, rel, "", scan.clusters[it.key], names):
                cols = scan.kinds.setdefault(table, {})
                for c, v in row.items():
                    cols.setdefault(c, Kinds()).see(v)
        rows = [_columns(project, rel) for rel in part]
        if not scan.columns:
            scan.columns = list(rows[0])
        for c in scan.columns:
            types.add(c, [r.get(c) for r in rows])
    scan.types = types.types
    return scan


def answer_types(
    store: Store, project: Project, snap: str, slice_: str, shown: Callable[[str], bool]
) -> dict[str, pa.DataType]:
    """The answer columns' types over the items whose answers are shown (``shown(key)``):
    the test split's are null when withheld, so only the others type the columns."""
    types = ColumnTypes()
    for part in gold_chunks(store, project.name, snap, slice_):
        rows = [_columns(project, rel) for rel in part if shown(rel.gold.key)]
        for c in ANSWER_COLUMNS:
            types.add(c, [r[c] for r in rows])
    return types.types


def media_type(media_col: str, n_media: list[int]) -> pa.DataType:
    """The Arrow type of the media column (what ``pa.array`` infers for its values)."""
    if media_col == "image":
        return IMAGE_TYPE
    inner = IMAGE_TYPE if media_col == "frames" else pa.string()
    return pa.list_(inner if any(n_media) else pa.null())
