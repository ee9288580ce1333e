"""``audit import-table`` refuses what it used to accept silently (issue 27): item keys the
project does not have (a typo became a phantom item carrying a label) unless
``--create-items``, two columns of one name, and NUL bytes. Each refusal is one line naming
the file (and line/column) and leaves the store as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.core.test_bad_input import dump
from truthline.audit import import_table
from truthline.errors import TruthlineError
from truthline.workspace import Workspace

HEAD = "item,field,annotator,value\n"


def _csv(path: Path, body: str | bytes) -> Path:
    if isinstance(body, str):
        path.write_text(body, encoding="utf-8")
    else:
        path.write_bytes(body)
    return path


def _counts(store) -> tuple[int, int, int]:
    from sqlalchemy import func, select

    from truthline.store import tables

    with store.begin() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (tables.projects, tables.items, tables.annotations)
        )


def test_unknown_keys_are_refused_by_default(hand_project, sqlite_store, add_items, tmp_path):
    add_items(sqlite_store, hand_project, ["i1", "i2"])
    rows = "".join(f"{k},action,A,walk\n" for k in ["i1", "i2", "i3", "tpyo", *"abcdef"])
    path = _csv(tmp_path / "t.csv", HEAD + rows)
    before = _counts(sqlite_store)
    with pytest.raises(TruthlineError) as exc:
        import_table(sqlite_store, hand_project, path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}: 8 item key(s) not in project 'hand': "), msg
    assert "'a', 'b', 'c', 'd', 'e' and 3 more" in msg  # sorted, at most 5 named
    assert "--create-items" in msg and len(msg.splitlines()) == 1
    assert _counts(sqlite_store) == before


def test_create_items_opts_in(hand_project, sqlite_store, add_items, tmp_path):
    add_items(sqlite_store, hand_project, ["i1"])
    path = _csv(tmp_path / "t.csv", HEAD + "i1,action,A,walk\nnew,action,A,stand\n")
    rep = import_table(sqlite_store, hand_project, path, create_items=True)
    assert rep.items_created == 1 and rep.annotations == 2
    assert set(sqlite_store.item_ids_by_key("hand")) == {"i1", "new"}


def test_known_keys_import_without_the_option(hand_project, sqlite_store, add_items, tmp_path):
    add_items(sqlite_store, hand_project, ["i1", "i2"])
    path = _csv(tmp_path / "t.csv", HEAD + "i1,action,A,walk\ni2,count,A,3\n")
    rep = import_table(sqlite_store, hand_project, path)
    assert (rep.items_created, rep.annotations) == (0, 2)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            "item,field,annotator,value,value\ni1,action,A,walk,stand\n",
            "t.csv:1: column 'value' is given twice (columns 4 and 5)",
        ),
        (b"item,field,annotator,value\ni1,action,A,wa\x00lk\n", "t.csv:2: column 'value': a NUL"),
        (
            b"item,field,annotator,val\x00ue\ni1,action,A,walk\n",
            "t.csv:1: a NUL byte in the header",
        ),
    ],
    ids=["duplicate-column", "nul-cell", "nul-header"],
)
def test_csv_oddities_fail_loudly(hand_project, sqlite_store, add_items, tmp_path, body, fragment):
    add_items(sqlite_store, hand_project, ["i1"])
    before = _counts(sqlite_store)
    with pytest.raises(TruthlineError) as exc:
        import_table(sqlite_store, hand_project, _csv(tmp_path / "t.csv", body))
    assert fragment in str(exc.value) and len(str(exc.value).splitlines()) == 1
    assert _counts(sqlite_store) == before


def test_parquet_duplicate_columns_are_named(hand_project, sqlite_store, tmp_path):
    cols = ["item", "field", "annotator", "value", "value"]
    table = pa.table([pa.array(["i1"]), pa.array(["action"]), pa.array(["A"]),
                      pa.array(["walk"]), pa.array(["stand"])], names=cols)  # fmt: skip
    pq.write_table(table, tmp_path / "t.parquet")
    with pytest.raises(TruthlineError, match=r"t\.parquet:1: column 'value' is given twice"):
        import_table(sqlite_store, hand_project, tmp_path / "t.parquet")


def test_a_device_is_refused(hand_project, sqlite_store):
    with pytest.raises(TruthlineError, match="/dev/zero: not a regular file"):
        import_table(sqlite_store, hand_project, Path("/dev/zero"))


def _tl(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUTHLINE_")}
    env["TRUTHLINE_WORKSPACE"] = str(ws)
    return subprocess.run(
        [sys.executable, "-m", "truthline", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_cli_refuses_unknown_keys_and_opts_in_with_create_items(tmp_path, hand_project):
    ws = Workspace.from_env(tmp_path / "ws")
    ws.init_project(str(hand_project.root))
    ws.store.close()
    path = _csv(tmp_path / "labels.csv", HEAD + "tpyo,action,A,walk\n")
    db = tmp_path / "ws" / "truthline.db"
    before = dump(db)
    proc = _tl(tmp_path / "ws", "audit", "import-table", str(path))
    assert proc.returncode == 1, proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "1 item key(s) not in project 'hand': 'tpyo'" in " ".join(err.split())
    assert dump(db) == before
    proc = _tl(tmp_path / "ws", "audit", "import-table", str(path), "--create-items", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"items_created": 1' in proc.stdout
