"""Per-sample logs of a real run against the local OpenAI-compatible stub: one record per
(item, model, variant, condition, control) with the prompt text as the server received
it, the raw output, the outcome, the score per field and Label Studio links; the records
add up to the leaderboard's numbers; JSONL from the CLI; an older store's answers (no
stored prompt) still export, marked."""

from __future__ import annotations

import hashlib
import json

import pytest
from sqlalchemy import insert, update
from typer.testing import CliRunner

from truthline.benchmark import RunConfig, leaderboard, run_benchmark
from truthline.benchmark._samples import SampleFilter, prefill_samples, run_samples, task_url
from truthline.cli import app
from truthline.models._stub import StubServer
from truthline.store import now, tables

GOOD = json.dumps({"worker_count": 1, "workers": [], "scene_type": "yard"})
GARBAGE = "Sure! The scene shows some workers."
REFUSAL = "I'm sorry, I can't help with that."
KINDS = {0: GOOD, 1: GARBAGE, 2: REFUSAL, 3: GOOD}


def _answer(body):
    """Deterministic per request (its messages): a good answer, prose or a refusal."""
    h = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
    return KINDS[h[0] % 4]


def make_stub_run(root):
    """A benchmark run ``r-samples`` on the 16-item gold fixture: ``stub-vlm`` (a local
    OpenAI-compatible stub answering well, with prose or with a refusal) and ``down`` (an
    endpoint refusing the key); the first two items pushed to Label Studio (blind arm).
    Returns (workspace, project, items, the stub's request log)."""
    from tests.benchmark.conftest import make_bench_ws

    ws, project, items, _snap = make_bench_ws(root)
    ok = StubServer(answer=_answer).start()
    down = StubServer(cases={"": ["404"]}).start()
    try:
        cfg = RunConfig(
            models=[f"openai:vlm@{ok.url};alias=stub-vlm", f"openai:vlm@{down.url};alias=down"],
            run_id="r-samples",
            max_failures=None,
            concurrency=4,
        )
        run_benchmark(ws.store, project, cfg, progress=False)
    finally:
        ok.stop()
        down.stop()
    ts = now()
    with ws.store.begin() as conn:  # as annotate push records a pushed task
        conn.execute(
            insert(tables.ls_projects).values(
                project=project.name,
                arm="blind",
                cohort="",
                server_url="http://127.0.0.1:8080",
                ls_project_id=7,
                title="t",
                created_at=ts,
            )
        )
        for k, (iid, _t) in enumerate(items[:2]):
            conn.execute(
                insert(tables.ls_tasks).values(
                    ls_project_id=7,
                    server_url="http://127.0.0.1:8080",
                    item_id=iid,
                    ls_task_id=500 + k,
                    created_at=ts,
                )
            )
    return ws, project, items, ok.log


@pytest.fixture(scope="module")
def stub_run(tmp_path_factory):
    ws, project, items, log = make_stub_run(tmp_path_factory.mktemp("samples") / "ws")
    yield ws, project, items, log
    ws.store.close()


def test_every_answer_is_one_record_with_the_prompt_as_sent(stub_run):
    ws, project, items, log = stub_run
    recs = run_samples(ws.store, project, "r-samples")
    keys = [(r["item_id"], r["model"], r["variant"], r["condition"], r["control"]) for r in recs]
    assert len(keys) == len(set(keys)) == 2 * len(items)
    stub = [r for r in recs if r["model"] == "stub-vlm"]
    # the stored prompt is the text the server received (system + user), for every answer
    sent = sorted(entry.text for entry in log)
    assert sorted(f"{r['prompt']['system']}\n{r['prompt']['user']}" for r in stub) == sent
    assert all(r["images_sent"] == 1 and r["media"][0].endswith(".png") for r in stub)
    # outcome, raw output and parsed value follow what the model said
    by_raw = {GOOD: "ok", GARBAGE: "parse_error", REFUSAL: "refused"}
    assert {r["outcome"] for r in stub} == {"ok", "parse_error", "refused"}
    for r in stub:
        assert r["outcome"] == by_raw[r["raw_output"]]
        # parsed: the answer's target fields read by their types; nothing for a failure
        assert r["parsed"] == ({"worker_count": 1, "workers": []} if r["outcome"] == "ok" else {})
        assert r["n_decisions"] == len(r["decisions"]) > 0  # failures are scored wrong
        if r["outcome"] != "ok":
            assert r["n_correct"] == 0
        wc = r["fields"]["worker_count"]
        gold = next(d["gold"] for d in r["decisions"] if d["field"] == "worker_count")
        assert wc["correct"] == int(r["outcome"] == "ok" and gold == 1)
        assert r["latency_s"] is not None and r["tokens"]["in"] > 0
        assert r["strata"] == {} or set(r["strata"]) == set(project.benchmark.strata)
    # an endpoint refusing the key: infra_missing, no decisions, the reason kept
    down = [r for r in recs if r["model"] == "down"]
    assert {(r["outcome"], r["reason"]) for r in down} == {("infra_missing", "http_404")}
    assert all(r["n_decisions"] == 0 and r["raw_output"] for r in down)


def test_records_add_up_to_the_leaderboard(stub_run):
    """The drill-down: the records behind a model hold exactly its leaderboard numbers."""
    ws, project, _items, _log = stub_run
    board = {m.model: m for m in leaderboard(ws.store, project, ["r-samples"], resamples=0)}
    m = board["stub-vlm"]
    recs = run_samples(ws.store, project, "r-samples", SampleFilter(model="stub-vlm"))
    assert sum(r["n_decisions"] for r in recs) == m.decisions
    assert sum(r["n_correct"] for r in recs) == pytest.approx(m.accuracy["point"] * m.decisions)
    fails = run_samples(
        ws.store, project, "r-samples", SampleFilter(model="stub-vlm", outcome="model_failure")
    )
    assert len(fails) == m.model_failure > 0
    assert {r["outcome"] for r in fails} == {"parse_error", "refused"}
    infra = run_samples(ws.store, project, "r-samples", SampleFilter(outcome="infra_missing"))
    assert len(infra) == board["down"].infra_missing
    # decision filters: a field and correctness pick the samples holding such a decision
    flt = SampleFilter(model="stub-vlm", field="worker_count", correct=True)
    right = run_samples(ws.store, project, "r-samples", flt)
    assert right and all(r["fields"]["worker_count"]["correct"] == 1 for r in right)
    assert len(right) == sum(r["fields"].get("worker_count", {}).get("correct", 0) for r in recs)
    assert SampleFilter.from_query(flt.query()) == flt


def test_label_studio_task_links(stub_run):
    ws, project, items, _log = stub_run
    recs = run_samples(ws.store, project, "r-samples", SampleFilter(model="stub-vlm"))
    linked = {r["item_id"]: r["label_studio"] for r in recs if r["label_studio"]}
    assert set(linked) == {iid for iid, _ in items[:2]}
    first = linked[items[0][0]][0]
    assert first == {
        "arm": "blind",
        "project_id": 7,
        "task_id": 500,
        "url": "http://127.0.0.1:8080/projects/7/data?task=500",
    }
    assert task_url("http://h:8080/", 3, 9) == "http://h:8080/projects/3/data?task=9"


def test_cli_exports_jsonl_and_json(stub_run, tmp_path):
    ws, _project, items, _log = stub_run
    runner = CliRunner()
    out = tmp_path / "s" / "samples.jsonl"
    base = ["--workspace", str(ws.root), "benchmark", "samples", "r-samples"]
    r = runner.invoke(app, [*base, "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == json.loads(r.stdout)["written"] == 2 * len(items)
    first = json.loads(lines[0])
    assert list(first)[:3] == ["run_id", "item", "item_id"]
    assert {"prompt", "raw_output", "parsed", "outcome", "fields", "cost_usd", "latency_s"} <= set(
        first
    )
    r = runner.invoke(app, [*base, "--model", "stub-vlm", "--outcome", "refused", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got and {x["outcome"] for x in got} == {"refused"}
    r = runner.invoke(app, [*base, "--outcome", "nonsense"])
    assert r.exit_code == 2 and "--outcome" in r.output
    r = runner.invoke(app, [*base, "--field", "nope"])
    assert r.exit_code == 1 and "nope" in str(r.exception)


def test_answers_stored_before_prompt_texts_still_export(stub_run):
    """A store migrated from schema 2 has answers without prompt text: they export with
    their prompt hash and a note, not a crash or an invented prompt."""
    ws, project, _items, _log = stub_run
    recs = run_samples(ws.store, project, "r-samples", SampleFilter(model="stub-vlm"))
    rid = recs[0]["response_id"]
    with ws.store.begin() as conn:
        old = conn.execute(tables.responses.select().where(tables.responses.c.id == rid)).first()
        conn.execute(
            update(tables.responses).where(tables.responses.c.id == rid).values(prompt=None)
        )
    try:
        rec = next(
            r
            for r in run_samples(ws.store, project, "r-samples", SampleFilter(model="stub-vlm"))
            if r["response_id"] == rid
        )
        assert rec["prompt"] is None and rec["prompt_hash"] == old.prompt_hash
        assert "not stored" in rec["prompt_note"]
    finally:
        with ws.store.begin() as conn:
            conn.execute(
                update(tables.responses)
                .where(tables.responses.c.id == rid)
                .values(prompt=old.prompt)
            )


def test_prefill_predictions_as_samples(bench_ws):
    """Prefill predictions export too, scored against the latest gold."""
    from truthline.prefill import prefill

    ws, project, items, _snap = bench_ws
    stub = StubServer(answer=lambda body: GOOD).start()
    try:
        prefill(ws.store, project, f"openai:vlm@{stub.url};alias=pre", progress=False)
    finally:
        stub.stop()
    recs = prefill_samples(ws.store, project)
    assert len(recs) == len(items) and {r["model"] for r in recs} == {"pre"}
    assert all(r["condition"] == "prefill" and r["outcome"] == "ok" for r in recs)
    assert all(r["prompt"] and r["prompt"]["user"] for r in recs)
    assert all(r["n_decisions"] > 0 for r in recs)
    assert sum(r["fields"]["worker_count"]["correct"] for r in recs) == sum(
        t["worker_count"] == 1 for _i, t in items
    )
