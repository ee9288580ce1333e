"""A benchmark request byte-identical to a prefill request (same model, prompt, images and
sent settings) reuses the stored answer: no call, scored as a fresh answer would be,
marked ``reused`` in the samples (with where it came from) and counted in the manifest;
its cost is not this run's. ``fresh`` asks again, and a stopped fresh run resumes
without asking twice. Keys: only what is sent; answers stored under the old key (with
the condition label) are still found."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import delete, select, update
from typer.testing import CliRunner

from truthline.benchmark import RunConfig, run_benchmark
from truthline.benchmark._samples import run_samples
from truthline.cli import app
from truthline.models import default_settings, parse_model_spec, request_key
from truthline.models._keys import legacy_key
from truthline.models._stub import StubServer
from truthline.prefill import prefill
from truthline.store import tables

GOOD = json.dumps({"worker_count": 1, "workers": [], "scene_type": "yard"})
PRICED = ";price_in=1000;price_out=1000"


@pytest.fixture
def stub():
    s = StubServer(answer=lambda body: GOOD).start()
    yield s
    s.stop()


def _spec(stub: StubServer, alias: str = "m") -> str:
    return f"openai:vlm@{stub.url};alias={alias}{PRICED}"


def _board(store, run_id: str) -> dict[int, tuple]:
    """Each item's outcome and scored decisions in one run."""
    r = tables.run_results
    with store.begin() as conn:
        rows = conn.execute(
            select(r.c.item_id, r.c.status, r.c.scores).where(r.c.run_id == run_id)
        ).all()
    return {int(i): (st, json.dumps(sc["decisions"], sort_keys=True)) for i, st, sc in rows}


def test_benchmark_reuses_a_byte_identical_prefill_answer(bench_ws, stub):
    ws, project, items, _snap = bench_ws
    pre = prefill(ws.store, project, _spec(stub), progress=False).as_dict()
    assert len(stub.log) == len(items) and pre["cost_usd"] > 0
    wire = {x.digest for x in stub.log}

    man = run_benchmark(
        ws.store, project, RunConfig(models=[_spec(stub)], run_id="r1"), progress=False
    )
    assert len(stub.log) == len(items), "a byte-identical request was sent again"
    e = man["entries"]["m||base|"]
    assert e["answers"] == {
        "fresh": 0,
        "reused": 16,
        "reused_cost_usd": pytest.approx(pre["cost_usd"]),
    }
    assert e["cost_usd"] == 0.0
    recs = run_samples(ws.store, project, "r1")
    assert len(recs) == 16 and all(r["reused"] for r in recs)
    src = recs[0]["reused_from"]
    assert src["purpose"] == "prefill" and src["run_id"] is None and src["cost_usd"] > 0
    assert recs[0]["cost_usd"] == 0.0

    # the same scores as answers asked fresh (the prefill's answers read under the
    # benchmark's own answer fields); the fresh run sends the very same requests
    fresh = run_benchmark(
        ws.store, project, RunConfig(models=[_spec(stub)], run_id="r2", fresh=True), progress=False
    )
    assert len(stub.log) == 32 and {x.digest for x in stub.log[16:]} == wire
    assert fresh["entries"]["m||base|"]["answers"]["fresh"] == 16
    assert fresh["entries"]["m||base|"]["cost_usd"] > 0
    assert _board(ws.store, "r1") == _board(ws.store, "r2")
    assert not any(r["reused"] for r in run_samples(ws.store, project, "r2"))

    # a later run reuses, and names the earlier benchmark run its answer came from
    run_benchmark(
        ws.store, project, RunConfig(models=[_spec(stub, "m2")], run_id="r3"), progress=False
    )
    assert len(stub.log) == 32
    origin = run_samples(ws.store, project, "r3")[0]["reused_from"]
    assert origin["purpose"] in ("prefill", "benchmark")
    assert origin["run_id"] in (None, "r1", "r2")


def test_only_identical_requests_share_a_key(bench_ws):
    ws, project, _items, _snap = bench_ws
    from truthline.benchmark._gold import load_gold
    from truthline.benchmark._runner import build_requests, targets_of
    from truthline.models import item_requests

    gold = load_gold(ws.store, project.name)
    targets = targets_of(project, gold)
    spec = parse_model_spec("openai:vlm@http://127.0.0.1:9/v1;alias=a")
    pre = item_requests(
        project, ws.store.items(project.name), purpose="prefill", settings=default_settings(project)
    )
    by_item = {r.item_id: request_key(spec, r)[0] for r in pre}

    def keys(**kw):
        reqs = build_requests(project, gold.items, targets, seed=0, **kw)
        return {r.item_id: request_key(spec, r)[0] for r in reqs}, reqs

    base, reqs = keys(variant=None, condition="base", control="")
    assert base == by_item  # the condition label is not sent: the same request
    no_image, _ = keys(variant=None, condition="base", control="no-image")
    assert not set(no_image.values()) & set(by_item.values())  # no images: another request
    other = parse_model_spec("openai:other@http://127.0.0.1:9/v1;alias=a")
    assert request_key(other, reqs[0])[0] != base[reqs[0].item_id]
    hotter = reqs[0]
    hotter.settings = {**hotter.settings, "temperature": 0.7}
    assert request_key(spec, hotter)[0] != base[hotter.item_id]
    # the key before this change (with the label): answers stored under it are found
    old = legacy_key(spec, reqs[1], request_key(spec, reqs[1]), False)
    assert old is not None and old != base[reqs[1].item_id]
    assert legacy_key(spec, pre[0], request_key(spec, pre[0]), False) is None


def test_answers_stored_under_the_old_key_are_still_reused(bench_ws, stub):
    ws, project, _items, _snap = bench_ws
    run_benchmark(ws.store, project, RunConfig(models=[_spec(stub)], run_id="r1"), progress=False)
    assert len(stub.log) == 16
    from truthline.benchmark._gold import load_gold
    from truthline.benchmark._runner import build_requests, targets_of

    gold = load_gold(ws.store, project.name)
    reqs = build_requests(
        project,
        gold.items,
        targets_of(project, gold),
        variant=None,
        condition="base",
        control="",
        seed=0,
    )
    spec = parse_model_spec(_spec(stub))
    t = tables.responses
    with ws.store.begin() as conn:  # as a store written before the key left the label
        for r in reqs:
            k = request_key(spec, r)
            conn.execute(
                update(t)
                .where(t.c.cache_key == k[0])
                .values(cache_key=legacy_key(spec, r, k, False))
            )
    man = run_benchmark(
        ws.store, project, RunConfig(models=[_spec(stub)], run_id="r2"), progress=False
    )
    assert len(stub.log) == 16 and man["entries"]["m||base|"]["answers"]["reused"] == 16


def test_stopped_fresh_run_resumes_without_asking_twice(bench_ws, stub):
    ws, project, _items, _snap = bench_ws
    each = prefill(ws.store, project, _spec(stub), progress=False).as_dict()["cost_usd"] / 16
    cfg = RunConfig(models=[_spec(stub)], fresh=True, concurrency=1)
    # the budget counts only fresh calls: one worst case (~18 USD) and about two answers
    part = run_benchmark(
        ws.store,
        project,
        RunConfig(**{**cfg.__dict__, "max_cost": 18.2 + 2.5 * each}),
        progress=False,
    )
    run_id = part["run_id"]
    assert run_id.endswith("-fresh-1") and part["status"] == "partial"
    asked = len(stub.log) - 16
    assert 0 < asked < 16 and part["entries"]["m||base|"]["answers"]["fresh"] == asked
    # answers stored but not scored (a crash between, or a journal replayed): found again
    with ws.store.begin() as conn:
        conn.execute(delete(tables.run_results).where(tables.run_results.c.run_id == run_id))
    done = run_benchmark(ws.store, project, cfg, progress=False)
    assert done["run_id"] == run_id and done["status"] == "done"
    assert len(stub.log) == 32, "a request asked twice in one fresh run"
    assert done["entries"]["m||base|"]["answers"] == {
        "fresh": 16,
        "reused": 0,
        "reused_cost_usd": 0.0,
    }
    # that fresh run is done: the next --fresh is a new run and asks again
    again = run_benchmark(ws.store, project, cfg, progress=False)
    assert again["run_id"].endswith("-fresh-2") and len(stub.log) == 48


def test_budget_counts_only_fresh_calls(bench_ws, stub):
    ws, project, _items, _snap = bench_ws
    prefill(ws.store, project, _spec(stub), progress=False)
    man = run_benchmark(
        ws.store,
        project,
        RunConfig(models=[_spec(stub)], run_id="r0", max_cost=0.0),
        progress=False,
    )
    e = man["entries"]["m||base|"]
    assert man["status"] == "done" and e["not_run"] == 0 and e["cost_usd"] == 0.0
    assert e["answers"]["reused"] == 16 and e["answers"]["reused_cost_usd"] > 0


def test_cli_run_shows_reused_and_fresh(bench_ws, stub, monkeypatch):
    ws, project, _items, _snap = bench_ws
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(ws.root))
    prefill(ws.store, project, _spec(stub), progress=False)
    args = ["benchmark", "run", "--model", _spec(stub), "--project", project.name]
    res = CliRunner().invoke(app, [*args, "--run", "c1"])
    assert res.exit_code == 0, res.output
    cells = " ".join(res.output.replace("│", " ").split())
    assert "fresh 0, reused 16" in cells or ("fresh 0," in cells and "reused 16" in cells)
    res = CliRunner().invoke(app, [*args, "--run", "c2", "--fresh", "--json"])
    man = json.loads(res.stdout)
    assert man["fresh"] is True and man["entries"]["m||base|"]["answers"]["fresh"] == 16


def test_export_creates_nothing_when_it_fails(bench_ws, monkeypatch, tmp_path):
    ws, project, _items, _snap = bench_ws
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(ws.root))
    out = tmp_path / "release"
    res = CliRunner().invoke(
        app,
        ["benchmark", "export", "--out", str(out), "--project", project.name, "--snapshot", "nope"],
    )
    assert res.exit_code != 0
    assert not out.exists() and not list(tmp_path.glob(".release*"))
    ok = CliRunner().invoke(
        app, ["benchmark", "export", "--out", str(out), "--project", project.name]
    )
    assert ok.exit_code == 0, ok.output
    assert (out / "SHA256SUMS").is_file()


def test_reuse_counts_on_sqlite_and_postgresql(store_url, tmp_path, monkeypatch, stub):
    """The manifest's and the samples' reused / fresh split (a time comparison in SQL)."""
    from tests.benchmark.conftest import make_bench_ws

    if not store_url.startswith("sqlite"):
        monkeypatch.setenv("TRUTHLINE_DB", store_url)
    ws, project, _items, _snap = make_bench_ws(tmp_path / "ws")
    try:
        prefill(ws.store, project, _spec(stub), progress=False, limit=10)
        man = run_benchmark(
            ws.store, project, RunConfig(models=[_spec(stub)], run_id="r1"), progress=False
        )
        a = man["entries"]["m||base|"]["answers"]
        assert (a["reused"], a["fresh"], len(stub.log)) == (10, 6, 16)
        recs = run_samples(ws.store, project, "r1")
        assert sum(r["reused"] for r in recs) == 10
        fresh_cost = sum(r["cost_usd"] for r in recs)
        assert fresh_cost == pytest.approx(man["entries"]["m||base|"]["cost_usd"], abs=1e-6)
    finally:
        ws.store.close()


def test_reused_answers_score_as_they_did_when_asked(bench_ws):
    """Answers of every kind (good, prose, refusal) read again on reuse: the
    same outcome and scores as the run that asked them."""
    import hashlib

    ws, project, _items, _snap = bench_ws
    kinds = [GOOD, "Sure! The scene shows some workers.", "I'm sorry, I can't help with that."]

    def answer(body):
        h = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
        return kinds[h[0] % 3]

    s = StubServer(answer=answer, cases={"": ["ok"]}).start()
    try:
        spec = f"openai:vlm@{s.url};alias=k"
        run_benchmark(ws.store, project, RunConfig(models=[spec], run_id="a"), progress=False)
        man = run_benchmark(ws.store, project, RunConfig(models=[spec], run_id="b"), progress=False)
    finally:
        s.stop()
    assert man["entries"]["k||base|"]["answers"]["reused"] == 16
    first, again = _board(ws.store, "a"), _board(ws.store, "b")
    assert first == again and len({st for st, _ in first.values()}) > 1
