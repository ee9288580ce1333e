"""Prefill data integrity: every item its prediction, shown predictions immutable
(versions), bad endpoints stop the run, SIGTERM, concurrent runs, redacted URLs, bad counts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from tests.prefill.conftest import STEEL_ANSWER
from truthline.cli import app
from truthline.media import import_items
from truthline.models._stub import StubServer
from truthline.store import now, tables

runner = CliRunner()
TRUTHLINE = [sys.executable, "-c", "from truthline.cli import main; main()"]


def cli(ws, *args: str):
    return runner.invoke(app, ["--workspace", str(ws.root), *args])


def predictions(ws) -> list[dict]:
    with ws.store.begin() as conn:
        return [dict(r._mapping) for r in conn.execute(select(tables.predictions))]


def test_items_with_identical_media_each_get_their_prediction(steel_ws, stub):
    """Byte-identical media and prompt share one request; each item still gets its row
    on the first run (3 copies of a clip used to give 1 prediction, coverage 1.0)."""
    media = steel_ws.media_dir / "steel-safety"
    first = steel_ws.store.items("steel-safety")[0]
    src = media / first["key"]
    for k in range(3):
        shutil.copytree(src, media / "copies" / f"clip_{k}")
    import_items(steel_ws.store, steel_ws.project("steel-safety"), media, progress=False)
    items = steel_ws.store.items("steel-safety")
    copies = [i for i in items if i["key"].startswith("copies/")]
    assert len(copies) == 3 and len(items) == 13
    r = cli(steel_ws, "prefill", "run", "--model", f"openai:qwen@{stub.url}", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)  # "sending to HOST" goes to stderr
    preds = predictions(steel_ws)
    assert sorted(p["item_id"] for p in preds) == sorted(i["id"] for i in items)
    assert data["predictions_written"] == 13
    # the copies shared one paid call
    assert len(stub.log) == 11
    by_item = {p["item_id"]: p for p in preds}
    assert len({by_item[c["id"]]["response_id"] for c in copies}) == 1


def _show(ws, pred: dict, how: str, annotator: str = "ann@x") -> None:
    """Record that an annotator saw ``pred`` (an exposure, or an annotation's link)."""
    ts = now()
    with ws.store.begin() as conn:
        if how == "exposure":
            conn.execute(
                tables.exposures.insert().values(
                    project=pred["project"],
                    item_id=pred["item_id"],
                    annotator=annotator,
                    arm="anchored",
                    prediction_id=pred["id"],
                    model_version=pred["model_version"],
                    created_at=ts,
                )
            )
        else:
            conn.execute(
                tables.annotations.insert().values(
                    project=pred["project"],
                    item_id=pred["item_id"],
                    field_path="worker_count",
                    annotator=annotator,
                    arm="anchored",
                    value=1,
                    source="label_studio",
                    source_id=f"ls:1:{pred['id']}",
                    shown_prediction_id=pred["id"],
                    model_version=pred["model_version"],
                    stored_at=ts,
                )
            )


def test_shown_predictions_are_immutable_and_a_new_prefill_is_a_version(steel_ws, stub):
    spec = f"openai:qwen@{stub.url};alias=qwen"
    assert cli(steel_ws, "prefill", "run", "-m", spec, "--limit", "4").exit_code == 0
    before = sorted(predictions(steel_ws), key=lambda p: p["item_id"])
    assert [p["model_version"] for p in before] == ["qwen"] * 4
    _show(steel_ws, before[0], "exposure")
    _show(steel_ws, before[1], "annotation")
    # a changed prompt (another output cap) gets another answer
    stub.answer = lambda body: json.dumps({**STEEL_ANSWER, "worker_count": 2})
    r = cli(steel_ws, "prefill", "run", "-m", spec, "--limit", "4", "--max-tokens", "700")
    assert r.exit_code == 0, r.output
    assert "2 predictions were already shown" in r.output and "qwen@v2" in r.output
    after = {(p["item_id"], p["model_version"]): p for p in predictions(steel_ws)}
    for p in before[:2]:  # what annotators saw is untouched, found by the same lookup
        assert after[(p["item_id"], "qwen")] == p
        assert after[(p["item_id"], "qwen@v2")]["values"]["worker_count"] == 2
    for p in before[2:]:  # unshown: replaced in place, no version
        assert after[(p["item_id"], "qwen")]["id"] == p["id"]
        assert after[(p["item_id"], "qwen")]["values"]["worker_count"] == 2
        assert (p["item_id"], "qwen@v2") not in after
    st = json.loads(cli(steel_ws, "prefill", "status", "--json").output)
    assert st["models"]["qwen"]["versions"] == {"qwen": 4, "qwen@v2": 2}
    # v2 was not shown: a third answer replaces it; once shown, the next is v3
    stub.answer = lambda body: json.dumps({**STEEL_ANSWER, "worker_count": 3})
    assert cli(steel_ws, "prefill", "run", "-m", spec, "--limit", "4", "--max-tokens", "701")
    after = {(p["item_id"], p["model_version"]): p for p in predictions(steel_ws)}
    assert len(after) == 6
    v2 = after[(before[0]["item_id"], "qwen@v2")]
    assert v2["values"]["worker_count"] == 3
    _show(steel_ws, v2, "exposure", annotator="other@x")
    stub.answer = lambda body: json.dumps({**STEEL_ANSWER, "worker_count": 4})
    r = cli(steel_ws, "prefill", "run", "-m", spec, "--limit", "4", "--max-tokens", "702")
    assert "qwen@v3" in r.output
    after = {(p["item_id"], p["model_version"]): p for p in predictions(steel_ws)}
    assert after[(before[0]["item_id"], "qwen@v2")] == v2
    assert after[(before[0]["item_id"], "qwen@v3")]["values"]["worker_count"] == 4
    assert after[(before[0]["item_id"], "qwen")] == before[0]


def test_prefill_stops_and_exits_1_when_every_call_fails(steel_ws):
    denied = StubServer(cases={"": ["404"]}).start()  # a rejected key: test_key_rejected.py
    try:
        spec = f"openai:m@{denied.url}"
        r = cli(steel_ws, "prefill", "run", "-m", spec, "-c", "1", "--max-failures", "3")
    finally:
        denied.stop()
    assert r.exit_code == 1
    assert "3 consecutive failures" in str(r.exception) and "http_404" in str(r.exception)
    assert len(denied.log) == 3, "it stops sending"
    with steel_ws.store.begin() as conn:
        assert len(conn.execute(select(tables.responses.c.id)).all()) == 3
    down = cli(steel_ws, "prefill", "run", "-m", "openai:m@http://127.0.0.1:9/v1")
    assert down.exit_code == 1 and "connection" in str(down.exception)


def _wait_rows(db, n: int, timeout: float = 120) -> int:
    deadline = time.time() + timeout
    got = 0
    while time.time() < deadline:
        try:
            with sqlite3.connect(db) as c:
                got = c.execute("select count(*) from responses").fetchone()[0]
        except sqlite3.OperationalError:
            got = 0
        if got >= n:
            break
        time.sleep(0.05)
    return got


def test_sigterm_commits_what_arrived_prints_and_exits_nonzero(steel_ws, stub, repo):
    stub.latency_s = 0.4
    cmd = [
        *TRUTHLINE,
        "--workspace",
        str(steel_ws.root),
        "prefill",
        "run",
        "--model",
        f"openai:slow@{stub.url}",
        "--concurrency",
        "3",
    ]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = steel_ws.root / "truthline.db"
    assert _wait_rows(db, 2) >= 2
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, err)
    assert "terminated" in err and "rerun to continue" in err
    with steel_ws.store.begin() as conn:
        resp = conn.execute(select(tables.responses.c.id, tables.responses.c.item_id)).all()
    preds = predictions(steel_ws)
    assert 2 <= len(resp) < 10
    # every answer that arrived is stored with its prediction
    assert sorted(p["response_id"] for p in preds) == sorted(r.id for r in resp)
    answered = len(stub.log)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert len(stub.log) - answered <= 10 - len(resp), "a rerun never repeats a stored answer"
    assert len(predictions(steel_ws)) == 10


def _pg_database(base_url: str, name: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    eng = create_engine(base_url, isolation_level="AUTOCOMMIT")
    with eng.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    eng.dispose()
    return make_url(base_url).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def shared_ws(request, tmp_path):
    """A workspace on SQLite or on its own PostgreSQL database (two runs share it)."""
    from truthline.simulate._scene import write_dataset
    from truthline.workspace import Workspace

    url = None
    if request.param == "postgresql":
        base = os.environ.get("TRUTHLINE_TEST_PG_URL")
        if not base:
            pytest.fail("TRUTHLINE_TEST_PG_URL is not set: run the suite with scripts/test.sh")
        url = _pg_database(base, f"tl_concurrent_{os.getpid()}")
    ws = Workspace.from_env(tmp_path / "ws", db_url=url)
    project = ws.init_project("steel-safety")
    media = ws.media_dir / project.name
    csv_path = write_dataset(media, n_clips=12, seed=5, size=(64, 36))
    import_items(ws.store, project, media, metadata=csv_path, progress=False)
    yield ws
    ws.store.close()


def test_two_runs_on_one_store_neither_crashes_nor_loses_answers(shared_ws, stub, repo):
    """Two `prefill run`s at once used to crash on responses.cache_key (IntegrityError),
    and then to pay for every item twice: the runs claim work (tests/models/test_claims.py)."""
    stub.latency_s = 0.3
    cmd = [
        *TRUTHLINE,
        "--workspace",
        str(shared_ws.root),
        "prefill",
        "run",
        "--model",
        f"openai:qwen@{stub.url}",
        "--concurrency",
        "6",
        "--json",
    ]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    if shared_ws.db_url:
        env["TRUTHLINE_DB"] = shared_ws.db_url
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-2000:]
    items = sorted(i["id"] for i in shared_ws.store.items("steel-safety"))
    with shared_ws.store.begin() as conn:
        resp = conn.execute(select(tables.responses.c.item_id)).all()
    assert sorted(r[0] for r in resp) == items, "one response per item"
    preds = predictions(shared_ws)
    assert sorted(p["item_id"] for p in preds) == items, "one prediction per item"
    assert len(stub.log) == len(items), "each item asked once across both runs"


def test_password_in_model_url_is_never_stored_or_printed(steel_ws, stub):
    secret = "s3cr3t-pw"
    spec = f"openai:qwen@http://user:{secret}@127.0.0.1:{stub.port}/v1;alias=q"
    r = cli(steel_ws, "prefill", "run", "-m", spec, "--limit", "2", "--json")
    assert r.exit_code == 0, r.output
    assert secret not in r.output
    with steel_ws.store.begin() as conn:
        specs = [x[0] for x in conn.execute(select(tables.responses.c.model_spec))]
    assert specs and all(secret not in s and "user:***@" in s for s in specs)
    assert all(secret.encode() not in f.read_bytes() for f in _store_files(steel_ws))
    from truthline.models import get_backend, parse_model_spec

    ms = parse_model_spec(spec)
    assert ms.url is not None and secret in ms.url  # the client still authenticates
    assert secret not in repr(ms) + ms.text + get_backend(ms).describe()
    bad = cli(steel_ws, "prefill", "run", "-m", f"openai:@http://u:{secret}@h/v1")
    assert bad.exit_code == 1 and secret not in str(bad.exception)


def _store_files(ws) -> list:
    return [p for p in ws.root.iterdir() if p.name.startswith("truthline.db")]


@pytest.mark.parametrize(
    "args",
    [
        ["run", "-m", "simulated:steel-v1", "--limit", "-1"],
        ["run", "-m", "simulated:steel-v1", "--limit", "0"],
        ["run", "-m", "simulated:steel-v1", "--max-tokens", "-5"],
        ["run", "-m", "simulated:steel-v1", "--max-failures", "-1"],
        ["run", "-m", "simulated:steel-v1", "--max-cost", "-1"],
        ["run", "-m", "simulated:steel-v1", "--concurrency", "-2"],
        ["mine", ".", "--sample", "-1"],
        ["mine", ".", "--min-per-class", "-3"],
        ["mine", ".", "--fps", "-1"],
        ["mine", ".", "--fps", "0"],
        ["mine", ".", "--window", "-60"],
        ["mine", ".", "--min-conf", "-0.5"],
        ["mine", ".", "--min-frames", "-1"],
        ["mine", ".", "--keep", "-1"],
    ],
)
def test_negative_counts_are_usage_errors(steel_ws, args):
    r = cli(steel_ws, "prefill", *args)
    assert r.exit_code == 2, (args, r.output)
    assert "Invalid value" in r.output and args[-2] in r.output
    assert predictions(steel_ws) == []
