"""``benchmark export`` streams and is atomic: gold is read a chunk at a time (the same items
as ``load_gold``), the release does not depend on the chunk or row-group sizes, column
types come out as Arrow would infer them over every row, and a failure or a kill mid-export
leaves no release behind (``--force`` keeps the old one until the new one is complete)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import delete, update

import truthline.benchmark._export as export_mod
from tests.benchmark.conftest import add_items, gold_rows, write_gold
from truthline.audit._withdraw import withdraw
from truthline.benchmark import _export_scan, _export_write
from truthline.benchmark._export import export_release, load_release, verify_release
from truthline.benchmark._export_scan import ColumnTypes, gold_chunks, resolve
from truthline.benchmark._gold import load_gold
from truthline.errors import TruthlineError
from truthline.store import Store, tables
from truthline.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]


def _fixed_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """One pseudonym secret for every export, so two releases can be compared file by file."""
    monkeypatch.setattr(export_mod, "secrets", SimpleNamespace(token_bytes=lambda n: b"k" * n))


def _contents(root: Path) -> dict[str, Any]:
    """Every file of a release by relative path: Parquet as (schema, rows), the rest as
    bytes; ``release.json`` without its creation time (``SHA256SUMS`` covers it)."""
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if not p.is_file() or rel == "SHA256SUMS":
            continue
        if p.suffix == ".parquet":
            t = pq.read_table(p)
            out[rel] = (t.schema, t.to_pylist())
        elif rel == "release.json":
            out[rel] = {k: v for k, v in json.loads(p.read_text()).items() if k != "created_at"}
        else:
            out[rel] = p.read_bytes()
    return out


def _vary(ws: Any, snap: str) -> list[int]:
    """Make the gold uneven: items without a parent or an arm, a float among the integer
    counts, named annotators on some values, a subfield missing on one item and one only
    the last item has (a struct field first seen late)."""
    g = tables.gold
    with ws.store.begin() as conn:
        ids = [r.id for r in conn.execute(tables.items.select().order_by(tables.items.c.id))]
        conn.execute(update(tables.items).where(tables.items.c.id.in_(ids[:3])).values(parent=None))
        conn.execute(
            delete(tables.arm_assignments).where(tables.arm_assignments.c.item_id.in_(ids[2:5]))
        )
        mine = (g.c.snapshot == snap,)
        conn.execute(
            update(g)
            .where(*mine, g.c.item_id == ids[5], g.c.field_path == "worker_count")
            .values(value=2.5)
        )
        conn.execute(
            update(g)
            .where(*mine, g.c.item_id.in_(ids[6:9]))
            .values(sources=["alice@example.com", "expert"])
        )
        conn.execute(
            delete(g).where(*mine, g.c.item_id == ids[10], g.c.field_path.like("workers[%].helmet"))
        )
        conn.execute(  # a subfield only the last item has: first seen late
            delete(g).where(
                *mine, g.c.item_id != ids[-1], g.c.field_path.like("workers[%].harness")
            )
        )
    return ids


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("hide", [False, True])
def test_the_release_does_not_depend_on_the_chunk_size(bench_ws, tmp_path, monkeypatch, fmt, hide):
    ws, project, _items, snap = bench_ws
    _vary(ws, snap)
    _fixed_key(monkeypatch)
    one = export_release(ws.store, project, tmp_path / "one", fmt=fmt, hide_test_answers=hide)
    monkeypatch.setattr(_export_scan, "CHUNK", 3)
    three = export_release(ws.store, project, tmp_path / "three", fmt=fmt, hide_test_answers=hide)
    assert one["splits"] == three["splits"]
    assert _contents(tmp_path / "one") == _contents(tmp_path / "three")
    # row groups of ROWS_PER_GROUP: the same rows and types (the card's num_bytes, an
    # Arrow size, may move by a few bytes per group)
    monkeypatch.setattr(_export_write, "ROWS_PER_GROUP", 2)
    small = export_release(ws.store, project, tmp_path / "small", fmt=fmt, hide_test_answers=hide)
    train = "public/data/train-00000-of-00001.parquet"
    assert pq.ParquetFile(tmp_path / "small" / train).num_row_groups == -(
        -small["splits"]["items"]["train"] // 2
    )
    a, b = _contents(tmp_path / "one"), _contents(tmp_path / "small")
    assert {k: v for k, v in a.items() if k.endswith(".parquet")} == {
        k: v for k, v in b.items() if k.endswith(".parquet")
    }
    assert verify_release(tmp_path / "small") == []


def test_the_uneven_gold_travels_typed(bench_ws, tmp_path):
    ws, project, _items, snap = bench_ws
    _vary(ws, snap)
    export_release(ws.store, project, tmp_path / "r", fmt="parquet")
    data = tmp_path / "r" / "public" / "data"
    schema = pq.read_schema(data / "train-00000-of-00001.parquet")
    gold = schema.field("gold").type
    assert gold.field("worker_count").type == pa.float64()  # ints and a float: double
    worker = gold.field("workers").type.value_type
    assert [worker.field(i).name for i in range(worker.num_fields)][-1] == "harness"  # late
    rows = [
        r
        for f in sorted(data.glob("*.parquet"))
        for r in pq.read_table(f).to_pylist()
        if any(s == "expert" for p in r["provenance"] for s in p["sources"])
    ]
    assert len(rows) == 3  # the named annotator is a pseudonym, the role stays as it is
    assert all("alice@example.com" not in json.dumps(r, default=str) for r in rows)


def test_a_parquet_release_keeps_missing_parents_and_arms_null(bench_ws, tmp_path):
    """Private Parquet columns are JSON text: a missing parent or arm is ``null`` there
    (it was ``NaN`` when pandas typed a text column with gaps), and the release reloads."""
    ws, project, _items, snap = bench_ws
    _vary(ws, snap)
    out = tmp_path / "r"
    export_release(ws.store, project, out, fmt="parquet")
    ents = pq.read_table(out / "private" / "entities.parquet").to_pylist()
    assert [e["parent"] for e in ents].count("null") == 3
    prov = pq.read_table(out / "private" / "provenance.parquet").column("arm").to_pylist()
    assert "null" in prov and "NaN" not in prov
    st = Store(f"sqlite:///{tmp_path / 'back.db'}")
    try:
        back = load_release(out, st, workspace_projects=tmp_path / "projects")
        with st.begin() as conn:
            items = conn.execute(tables.items.select()).all()
            arms = conn.execute(tables.arm_assignments.select()).all()
        assert back["items"] == 16 and sum(r.parent is None for r in items) == 3
        assert len(arms) == 13
    finally:
        st.close()


@pytest.mark.parametrize("gap", [False, True])
def test_numeric_private_columns_stay_numbers(bench_ws, tmp_path, monkeypatch, gap):
    """A private column is numeric when all its values are (as pandas types the whole
    column), decided before the first batch is written: int64, or float64 with a gap."""
    ws, project, _items, snap = bench_ws
    g = tables.gold
    with ws.store.begin() as conn:
        conn.execute(delete(g).where(g.c.snapshot == snap, g.c.field_path != "worker_count"))
        if gap:
            first = conn.execute(g.select().where(g.c.snapshot == snap)).first()
            conn.execute(update(g).where(g.c.id == first.id).values(value=None))
    monkeypatch.setattr(_export_write, "ROWS_PER_CONVERT", 5)  # several batches
    export_release(ws.store, project, tmp_path / "r", fmt="parquet")
    table = pq.read_table(tmp_path / "r" / "private" / "targets.parquet")
    assert table.schema.field("value").type == (pa.float64() if gap else pa.int64())
    assert table.schema.field("path").type == pa.large_string()  # JSON text
    values = table.column("value").to_pylist()
    assert len(values) == 16 and values.count(None) == gap  # the gap: null (NaN in pandas)


@pytest.mark.parametrize("slice_", ["all", "blind", "anchored"])
def test_gold_chunks_are_the_items_load_gold_returns(bench_ws, slice_):
    ws, project, _items, snap = bench_ws
    _vary(ws, snap)
    keys = [it.key for it in load_gold(ws.store, project.name).items]
    withdraw(ws.store, project.name, keys[4:6], "blurred")
    want = load_gold(ws.store, project.name, snap, slice_).items
    got = [r.gold for part in gold_chunks(ws.store, project.name, snap, slice_, 3) for r in part]
    assert got == want and len(got) < 16
    with pytest.raises(TruthlineError, match="no gold yet"):
        resolve(ws.store, "nothing-here", None)


def test_the_streamed_export_on_sqlite_and_postgresql(store_url, tmp_path):
    """The chunked reads are plain SQL on both stores: the same items as ``load_gold``, a
    release that verifies and reloads with every decision."""
    ws = Workspace.from_env(tmp_path / "ws", db_url=store_url)
    project = ws.init_project("steel-safety")
    items = add_items(ws, project.name, 12)
    per_item = {
        iid: gold_rows(t, "blind_consensus" if k % 2 else "expert")
        for k, (iid, t) in enumerate(items)
    }
    snap = write_gold(ws.store, project.name, per_item, {iid: "blind" for iid, _ in items})
    try:
        _vary(ws, snap)
        withdraw(ws.store, project.name, [load_gold(ws.store, project.name).items[0].key], "blur")
        for slice_ in ("all", "blind"):
            want = load_gold(ws.store, project.name, snap, slice_).items
            got = [
                r.gold
                for part in gold_chunks(ws.store, project.name, snap, slice_, 5)
                for r in part
            ]
            # blind: 6 blind consensus and 3 expert items with the blind arm (one withdrawn,
            # two without an arm)
            assert got == want and len(got) == (11 if slice_ == "all" else 9)
        out = tmp_path / "r"
        rel = export_release(ws.store, project, out, fmt="parquet")
        assert verify_release(out) == [] and sum(rel["splits"]["items"].values()) == 11
        st = Store(f"sqlite:///{tmp_path / 'back.db'}")
        try:
            load_release(out, st, workspace_projects=tmp_path / "projects")
            with st.begin() as conn:
                n = len(conn.execute(tables.gold.select()).all())
            assert n == sum(len(it.values) for it in load_gold(ws.store, project.name).items)
        finally:
            st.close()
    finally:
        ws.store.close()


def _value(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["none", "bool", "int", "float", "str", "bytes"]
    if depth < 2:
        kinds += ["list", "dict"] * 2
    kind = rng.choice(kinds)
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    if kind == "dict":
        return {k: _value(rng, depth + 1) for k in rng.sample("abc", rng.randint(0, 3))}
    return {
        "none": None,
        "bool": rng.random() < 0.5,
        "int": rng.randint(-5, 5),
        "float": rng.random(),
        "str": "s",
        "bytes": b"b",
    }[kind]


def _inferred(values: list[Any]) -> pa.DataType | None:
    try:
        return pa.array(values).type
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def test_chunked_column_types_are_the_type_of_the_whole_column():
    """Fed in chunks, ``ColumnTypes`` reaches the type Arrow infers for the whole column
    (order-dependent rules included: a bool after a float widens, before one it fails), or
    refuses, in one line naming the column, exactly when Arrow refuses the whole."""
    rng = random.Random(7)
    agreed = refused = 0
    for _ in range(3000):
        values = [_value(rng) for _ in range(rng.randint(1, 6))]
        cuts = sorted(
            {len(values), *rng.sample(range(1, len(values)), rng.randint(0, len(values) - 1))}
        )
        whole = _inferred(values)
        types = ColumnTypes()
        try:
            start = 0
            for cut in cuts:
                types.add("gold", values[start:cut])
                start = cut
        except TruthlineError as e:
            assert whole is None, (values, cuts)
            assert "column 'gold' have mixed types" in str(e) and "\n" not in str(e)
            refused += 1
            continue
        assert types.types["gold"] == whole, (values, cuts)
        agreed += 1
    assert agreed > 500 and refused > 500


# -- atomic: a failure or a kill leaves no release -----------------------------------------


def _fail_on_row(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """The private tables' writer raises on its ``n``-th row (mid-export)."""
    seen = {"rows": 0}
    real = _export_write.TableSink.add

    def add(self: Any, row: dict[str, Any]) -> None:
        seen["rows"] += 1
        if seen["rows"] == n:
            raise OSError(28, "No space left on device")
        real(self, row)

    monkeypatch.setattr(_export_write.TableSink, "add", add)


def _siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_failure_mid_export_leaves_no_release(bench_ws, tmp_path, monkeypatch):
    ws, project, _items, _snap = bench_ws
    out = tmp_path / "rel" / "release"
    with monkeypatch.context() as m:
        _fail_on_row(m, 40)
        with pytest.raises(OSError, match="No space left"):
            export_release(ws.store, project, out, fmt="parquet")
    assert not out.exists() and _siblings(out.parent) == []  # nothing half written
    rel = export_release(ws.store, project, out, fmt="parquet")  # no --force needed
    assert verify_release(out) == [] and rel["splits"]["items"]
    assert _siblings(out.parent) == ["release"]


def test_an_empty_destination_folder_is_filled(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    out = tmp_path / "made-by-the-cli"
    out.mkdir()
    export_release(ws.store, project, out, fmt="jsonl")
    assert verify_release(out) == [] and _siblings(tmp_path) == ["made-by-the-cli", "ws"]


def test_force_keeps_the_old_release_until_the_new_one_is_complete(bench_ws, tmp_path, monkeypatch):
    ws, project, _items, _snap = bench_ws
    out = tmp_path / "r" / "release"
    first = export_release(ws.store, project, out, fmt="jsonl")
    with pytest.raises(TruthlineError, match="not empty; choose a new folder or pass --force"):
        export_release(ws.store, project, out, fmt="jsonl")
    with monkeypatch.context() as m:
        _fail_on_row(m, 25)
        with pytest.raises(OSError):
            export_release(ws.store, project, out, fmt="parquet", force=True)
    kept = json.loads((out / "release.json").read_text())
    assert kept["created_at"] == first["created_at"] and verify_release(out) == []
    assert _siblings(out.parent) == ["release"]
    second = export_release(ws.store, project, out, fmt="parquet", force=True)
    assert second["format"] == "parquet" and verify_release(out) == []
    assert not (out / "private" / "targets.jsonl").exists()  # the old files are gone
    assert _siblings(out.parent) == ["release"]


KILLED = """
import sys, time
from pathlib import Path
from truthline.benchmark import _export_write
from truthline.benchmark._export import export_release
from truthline.workspace import Workspace

real = _export_write.SplitWriter.add
def add(self, *a, **k):
    Path(sys.argv[3]).touch()  # mid-export: the parent kills us now
    time.sleep(60)
_export_write.SplitWriter.add = add
ws = Workspace.from_env(sys.argv[1])
export_release(ws.store, ws.project("steel-safety"), Path(sys.argv[2]), fmt="parquet")
"""


def test_a_killed_export_leaves_no_release_and_the_rerun_sweeps_its_leftovers(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    out, mark = tmp_path / "r" / "release", tmp_path / "started"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED), str(ws.root), str(out), str(mark)],
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while not mark.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "export never started"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()
    left = _siblings(out.parent)
    assert len(left) == 1 and left[0].startswith(".release.partial-")  # hidden, not the release
    export_release(ws.store, project, out, fmt="parquet")  # no --force needed
    assert verify_release(out) == [] and _siblings(out.parent) == ["release"]


def test_an_unreadable_image_is_one_line_naming_the_item(bench_ws, tmp_path):
    ws, project, _items, _snap = bench_ws
    with ws.store.begin() as conn:
        row = conn.execute(tables.items.select().order_by(tables.items.c.id.desc())).first()
    assert row is not None
    (Path(row.media_root) / row.media[0]).unlink()
    out = tmp_path / "release"
    with pytest.raises(TruthlineError, match=rf"item {row.key!r}: cannot read its image") as e:
        export_release(ws.store, project, out, fmt="jsonl")
    assert "\n" not in str(e.value) and not out.exists() and _siblings(tmp_path) == ["ws"]
