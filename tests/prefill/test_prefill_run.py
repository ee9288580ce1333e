"""`truthline prefill run/status` and `models check` end to end, and crash safety."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from sqlalchemy import select
from typer.testing import CliRunner

from truthline.cli import app
from truthline.models import data_url
from truthline.store import tables

runner = CliRunner()
TRUTHLINE = [sys.executable, "-c", "from truthline.cli import main; main()"]


def cli(ws, *args: str):
    return runner.invoke(app, ["--workspace", str(ws.root), *args])


def predictions(ws):
    with ws.store.begin() as conn:
        return [dict(r._mapping) for r in conn.execute(select(tables.predictions))]


def test_prefill_simulated_fills_the_store(steel_ws):
    r = cli(steel_ws, "prefill", "run", "--model", "simulated:steel-v1", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["simulated"] is True and data["by_status"] == {"parsed": 10}
    preds = predictions(steel_ws)
    assert len(preds) == 10
    assert {p["model_version"] for p in preds} == {"simulated:steel-v1"}
    assert all(p["simulated"] and p["status"] == "parsed" for p in preds)
    items = {i["id"]: i for i in steel_ws.store.items("steel-safety")}
    with steel_ws.store.begin() as conn:
        resp = {r.id: r for r in conn.execute(select(tables.responses))}
    for p in preds:
        row = resp[p["response_id"]]
        assert row.item_id == p["item_id"] and row.simulated and row.purpose == "prefill"
        assert p["values"] == row.parsed
        truth = items[p["item_id"]]["sim_truth"]
        assert {w["worker_id"] for w in p["values"]["workers"]} <= {
            w["worker_id"] for w in truth["workers"]
        }
    # a rerun asks nothing and changes nothing
    r2 = cli(steel_ws, "prefill", "run", "--model", "simulated:steel-v1", "--json")
    assert json.loads(r2.output)["cached"] == 10 and predictions(steel_ws) == preds
    st = json.loads(cli(steel_ws, "prefill", "status", "--json").output)
    m = st["models"]["simulated:steel-v1"]
    assert m["by_status"] == {"parsed": 10} and m["predictions"] == 10 and m["simulated"]


def test_prefill_refuses_a_free_form_variant(steel_ws):
    """V2 answers in prose mapped to the fields before scoring: a prefill cannot use it."""
    r = cli(steel_ws, "prefill", "run", "--model", "simulated:steel-v1", "--variant", "v2")
    msg = str(r.exception or "") + r.output  # the CLI entry point prints a TruthlineError
    assert r.exit_code != 0 and "'v2'" in msg and "free-form" in msg, msg
    assert predictions(steel_ws) == []


def test_prefill_openai_endpoint_fills_the_store(steel_ws, stub):
    spec = f"openai:qwen-vl@{stub.url};alias=qwen-local"
    r = cli(steel_ws, "prefill", "run", "--model", spec, "--limit", "6", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)  # "sending to HOST" goes to stderr
    assert data["by_status"] == {"parsed": 6} and data["simulated"] is False
    preds = predictions(steel_ws)
    assert len(preds) == 6 and {p["model_version"] for p in preds} == {"qwen-local"}
    assert preds[0]["values"]["workers"][0]["action"] == "A1"
    assert not any(p["simulated"] for p in preds)
    # the prompt was rendered from the project's templates, with 8 images per item
    first = stub.log[0].text
    assert "safety officer" in first and "A1 (locomotion): walking" in first
    assert len(stub.log) == 6


def test_models_check_reports_down_endpoint_and_hides_key(monkeypatch, stub):
    r = runner.invoke(app, ["models", "check", "openai:m@http://127.0.0.1:9/v1"])
    assert r.exit_code == 1 and "down or unreachable" in str(r.exception or r.output)
    secret = "sk-test-SECRET-123456"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    stub.cases = {}
    stub.answer = lambda body: '{"ok": true}'
    ok = runner.invoke(app, ["models", "check", f"openai:m@{stub.url}", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["answer_ok"] is True
    stub.answer = lambda body: "nope"
    from truthline.models._stub import StubServer

    denied = StubServer(cases={"": ["401"]}).start()
    try:
        r = subprocess.run(
            [*TRUTHLINE, "models", "check", f"openai:m@{denied.url}"],
            capture_output=True,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": secret},
            timeout=60,
        )
    finally:
        denied.stop()
    assert r.returncode == 1
    assert "key was rejected" in r.stderr and secret not in r.stdout + r.stderr


def test_crash_safety_sigkill_and_rerun(steel_ws, stub, repo):
    stub.latency_s = 0.4
    spec = f"openai:slow@{stub.url}"
    cmd = [
        *TRUTHLINE,
        "--workspace",
        str(steel_ws.root),
        "prefill",
        "run",
        "--model",
        spec,
        "--concurrency",
        "2",
        "--json",
    ]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = steel_ws.root / "truthline.db"
    deadline = time.time() + 120
    done_before = 0
    while time.time() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(db) as c:
                    done_before = c.execute("select count(*) from responses").fetchone()[0]
            except sqlite3.OperationalError:
                done_before = 0
        if done_before >= 3:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert 3 <= done_before < 10, "the kill must land mid-run"
    with sqlite3.connect(db) as c:
        stored = {r[0] for r in c.execute("select item_id from responses")}
    n_first = len(stub.log)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # every item ends with exactly one answer and one prediction
    with steel_ws.store.begin() as conn:
        rows = conn.execute(select(tables.responses.c.item_id)).all()
    items = steel_ws.store.items("steel-safety")
    assert sorted(x[0] for x in rows) == sorted(i["id"] for i in items)
    preds = predictions(steel_ws)
    assert sorted(p["item_id"] for p in preds) == sorted(i["id"] for i in items)
    # the server never saw a completed item again (requests identified by text + images)
    policy = {"max_side": 1024, "jpeg_quality": 85, "detail": "auto"}
    texts = {e.text for e in stub.log}
    second = stub.log[n_first:]
    assert second, "the rerun must ask for the missing items"
    for it in items:
        urls = [data_url(steel_ws.media_dir / "steel-safety" / m, policy) for m in it["media"]]
        digests = {hashlib.sha256("\x1f".join([t, *urls]).encode()).hexdigest() for t in texts}
        asked_first = [e for e in stub.log[:n_first] if e.digest in digests]
        asked_again = [e for e in second if e.digest in digests]
        assert asked_first or asked_again, f"item {it['id']} never asked"
        if it["id"] in stored:
            assert not asked_again, f"item {it['id']} was answered, then asked again"
