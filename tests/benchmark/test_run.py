"""The runner end to end on the tiny gold fixture: scoring contract outcomes, resume,
rule baselines, provenance slices with a planted inflation, export -> reload -> same
scores, report and CLI."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from truthline.benchmark import RunConfig, compare_gold, leaderboard, model_metrics, run_benchmark
from truthline.models import Backend, Completion, InfraError, backend
from truthline.store import Store, tables

CANNED: dict[str, Any] = {}
CALLS: list[str] = []


@backend("canned")
class CannedBackend(Backend):
    """Test backend: answers looked up by item key; counts every call."""

    max_concurrency = 1

    def worst_case_tokens(self, request):
        return 1, 1  # what it bills at most: the budget reserves $1 per request below

    async def complete(self, request):
        key = request.context["key"]
        CALLS.append(key)
        ans = CANNED.get(key, "default")
        if ans == "INFRA":
            raise InfraError("http_500", "service unavailable", retry=False)
        if isinstance(ans, tuple):  # (text, finish_reason)
            return Completion(text=ans[0], finish_reason=ans[1], tokens_in=1)
        if ans == "default":
            ans = json.dumps(CANNED["_truth"][key])
        return Completion(text=ans, tokens_in=1, tokens_out=1)


def _answer(truth: dict) -> dict:
    return {
        "worker_count": truth["worker_count"],
        "workers": [
            {k: w[k] for k in ("worker_id", "action", "helmet", "harness", "safety_violation")}
            for w in truth["workers"]
        ],
    }


def _keys(ws, project) -> dict[int, str]:
    return {r["id"]: r["key"] for r in ws.store.items(project.name)}


def test_scoring_contract_outcomes(bench_ws):
    ws, project, items, _ = bench_ws
    keys = _keys(ws, project)
    truths = {keys[i]: _answer(t) for i, t in items}
    CANNED.clear()
    CANNED["_truth"] = truths
    ks = [keys[i] for i, _ in items]
    one = json.dumps(truths[ks[0]])
    CANNED[ks[0]] = one  # one object
    CANNED[ks[1]] = f"```json\n{json.dumps(truths[ks[1]])}\n```"  # fenced block
    CANNED[ks[2]] = one[:-1] + ', "worker_count": 1}'  # duplicate key
    CANNED[ks[3]] = json.dumps(truths[ks[3]]) + "\n" + json.dumps(truths[ks[3]])  # two objects
    CANNED[ks[4]] = json.dumps({**truths[ks[4]], "notes": "extra keys are ignored"})
    missing = dict(truths[ks[5]])
    del missing["worker_count"]
    CANNED[ks[5]] = json.dumps(missing)  # one field missing: siblings still scored
    CANNED[ks[6]] = (json.dumps(truths[ks[6]])[:30], "length")  # truncated at the output cap
    CANNED[ks[7]] = "I'm sorry, I can't help with that."  # refusal
    CANNED[ks[8]] = "INFRA"  # infrastructure failure
    man = run_benchmark(ws.store, project, RunConfig(models=["canned:x"]), progress=False)
    rows = {
        r.item_id: r
        for r in ws.store.engine.connect().execute(
            select(tables.run_results).where(tables.run_results.c.run_id == man["run_id"])
        )
    }
    ids = [i for i, _ in items]

    def acc(i):
        d = rows[i].scores["decisions"]
        return sum(x["correct"] for x in d) / len(d)

    assert rows[ids[0]].status == "parsed" and acc(ids[0]) == 1.0
    assert rows[ids[1]].status == "parsed" and acc(ids[1]) == 1.0
    assert (
        rows[ids[2]].status == "model_failure" and rows[ids[2]].scores["reason"] == "duplicate_key"
    )
    assert (
        rows[ids[3]].status == "model_failure"
        and rows[ids[3]].scores["reason"] == "multiple_objects"
    )
    assert rows[ids[4]].status == "parsed" and acc(ids[4]) == 1.0
    dec5 = {d["path"]: d["correct"] for d in rows[ids[5]].scores["decisions"]}
    assert dec5["worker_count"] is False and all(v for p, v in dec5.items() if p != "worker_count")
    assert rows[ids[6]].scores["reason"] == "truncated" and acc(ids[6]) == 0.0
    assert rows[ids[7]].scores["reason"] == "refused" and acc(ids[7]) == 0.0
    assert rows[ids[8]].status == "infra_missing"
    [m] = model_metrics(ws.store, project, man["run_id"], resamples=0)
    assert m.requests == 16 and m.infra_missing == 1 and m.model_failure == 4
    assert m.coverage == pytest.approx(15 / 16)
    assert m.format_rate == pytest.approx(11 / 15)
    # failures stay in the denominator, infra-missing does not
    n_dec = sum(len(rows[i].scores["decisions"]) for i in ids if i != ids[8])
    assert m.decisions == n_dec
    wrong = sum(len(rows[i].scores["decisions"]) for i in ids[2:4] + ids[6:8]) + 1
    assert m.accuracy["point"] == pytest.approx((n_dec - wrong) / n_dec)


def test_resume_does_not_repeat_answered_requests(bench_ws):
    ws, project, items, _ = bench_ws
    keys = _keys(ws, project)
    CANNED.clear()
    CANNED["_truth"] = {keys[i]: _answer(t) for i, t in items}
    CALLS.clear()
    # $1 per request and a $5 budget: the run stops part-way, like a killed run
    cfg = RunConfig(models=["canned:x;price_in=1000000;price_out=0"], concurrency=1, max_cost=5.0)
    man = run_benchmark(ws.store, project, cfg, progress=False)
    assert man["status"] == "partial"
    first = len(CALLS)
    assert first == 5
    with ws.store.begin() as conn:
        n = conn.execute(select(func.count()).select_from(tables.run_results)).scalar_one()
    assert n == 5
    # the same command without the budget derives the same run id and resumes it
    man2 = run_benchmark(
        ws.store,
        project,
        RunConfig(models=["canned:x;price_in=1000000;price_out=0"], concurrency=1),
        progress=False,
    )
    assert man2["run_id"] == man["run_id"] and man2["status"] == "done"
    assert len(CALLS) == 16  # the 5 answered requests were never asked again
    assert sorted(CALLS) == sorted(set(CALLS))
    man3 = run_benchmark(
        ws.store,
        project,
        RunConfig(models=["canned:x;price_in=1000000;price_out=0"]),
        progress=False,
    )
    assert len(CALLS) == 16 and len(man3["resumed_at"]) == 2
    entry = next(iter(man3["entries"].values()))
    assert entry["status_counts"] == {"parsed": 16}
    assert entry["cost_usd"] == pytest.approx(16.0)


def test_rule_baselines_on_same_support(bench_ws):
    ws, project, items, _ = bench_ws
    man = run_benchmark(
        ws.store, project, RunConfig(models=["rule:majority", "rule:random"]), progress=False
    )
    board = {m.model: m for m in leaderboard(ws.store, project, [man["run_id"]], resamples=0)}
    maj = board["rule:majority"]
    assert maj.coverage == 1.0 and maj.format_rate == 1.0
    # majority's helmet accuracy equals the share of the most common gold helmet value
    helmets = [w["helmet"] for _, t in items for w in t["workers"]]
    top = max(helmets.count(h) for h in set(helmets)) / len(helmets)
    got = maj.metrics["accuracy"]["by_field"]["workers.helmet"]["point"]
    assert got == pytest.approx(top)
    assert board["rule:random"].decisions == maj.decisions  # same support


def test_compare_gold_shows_planted_inflation(bench_ws):
    """VLM-sourced (anchored_kept) gold copies one model's mistakes: that model (and
    the slice) score higher on anchored gold than on blind gold."""
    ws, project, items, _snap = bench_ws
    keys = _keys(ws, project)
    CANNED.clear()
    truths = {keys[i]: _answer(t) for i, t in items}
    CANNED["_truth"] = truths
    # the model errs on every item's first worker action; on anchored items the gold was
    # taken from its answer (kept prefill), on blind items the gold is the truth
    flip = {"A1": "B1", "F1": "B1", "B1": "B7", "B7": "B1", "D1": "B1", "B5": "B1"}
    with ws.store.begin() as conn:
        for k, (iid, _t) in enumerate(items):
            ans = json.loads(json.dumps(truths[keys[iid]]))
            w0 = ans["workers"][0]
            w0["action"] = flip[w0["action"]]
            CANNED[keys[iid]] = json.dumps(ans)
            if k >= 8:
                conn.execute(
                    tables.gold.update()
                    .where(
                        tables.gold.c.item_id == iid,
                        tables.gold.c.field_path == f"workers[{w0['worker_id']}].action",
                    )
                    .values(value=w0["action"], provenance="anchored_kept")
                )
    man = run_benchmark(
        ws.store, project, RunConfig(models=["canned:x", "simulated:steel-strong"]), progress=False
    )
    cmp = compare_gold(ws.store, project, man["run_id"], resamples=300)
    by = {m.model: m for m in cmp.models}
    canned = by["canned:x"]
    assert canned.anchored and canned.blind and canned.inflation_anchored_pp
    assert canned.anchored["point"] > canned.blind["point"]
    infl = canned.inflation_anchored_pp
    assert infl["point"] > 0
    assert infl["low"] < infl["point"] < infl["high"]
    assert canned.ci("vlm-sourced") == canned.vlm_sourced
    assert canned.vlm_sourced and canned.vlm_sourced["point"] == 1.0  # its own answers
    assert cmp.mean_inflation_pp is not None and cmp.resamples == 300
    # field-balanced: per-field accuracies averaged over the fields every slice holds
    fb = canned.field_balanced
    assert "workers.action" in fb.fields
    assert fb.vlm_sourced and fb.vlm_sourced["point"] == 1.0
    assert fb.inflation_anchored_pp and fb.anchored and fb.blind
    assert fb.inflation_anchored_pp["point"] == pytest.approx(
        100 * (fb.anchored["point"] - fb.blind["point"])
    )
    assert fb.inflation_anchored_pp["point"] > 0


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "hf"])
def test_export_reload_rerun_gives_identical_scores(bench_ws, tmp_path, fmt):
    from truthline.benchmark._export import export_release, load_release, verify_release

    ws, project, _items, snap = bench_ws
    spec = "simulated:steel-weak"
    man = run_benchmark(ws.store, project, RunConfig(models=[spec]), progress=False)
    before = model_metrics(ws.store, project, man["run_id"], resamples=200)[0]
    out = tmp_path / "release"
    rel = export_release(ws.store, project, out, fmt=fmt)
    assert rel["gold_snapshot"] == snap
    # the public half is the hub dataset (typed splits, card); the private records that
    # reload it exactly live in a sibling folder (tests/benchmark/test_export_release.py)
    assert sorted(p.name for p in (out / "public" / "data").iterdir()) == [
        "test-00000-of-00001.parquet",
        "train-00000-of-00001.parquet",
    ]
    assert (out / "public" / "README.md").is_file() and not (out / "public" / "private").exists()
    assert (out / "private").is_dir() and (out / "SHA256SUMS").is_file()
    sheet = json.loads((out / "datasheet.json").read_text())
    assert sheet["items_in_release"] == 16 and sheet["simulated"] is True
    assert set(sheet["provenance"]) == {"blind_consensus", "anchored_kept", "anchored_corrected"}
    assert "licence" in (out / "DATASHEET.md").read_text().lower()
    assert verify_release(out) == []
    st = Store(f"sqlite:///{tmp_path / 'reloaded.db'}")
    got = load_release(out, st, workspace_projects=tmp_path / "projects")
    man2 = run_benchmark(st, got["project"], RunConfig(models=[spec]), progress=False)
    after = model_metrics(st, got["project"], man2["run_id"], resamples=200)[0]
    assert after.decisions == before.decisions
    assert after.metrics["accuracy"] == before.metrics["accuracy"]
    assert after.metrics["dwa"] == before.metrics["dwa"]
    # tampering is caught
    victim = next(p for p in (out / "private").rglob("*") if p.is_file())
    victim.write_bytes(victim.read_bytes() + b"x")
    assert verify_release(out)
    st.close()


def test_cli_end_to_end(bench_ws, tmp_path):
    from truthline.cli import app

    ws, _project, _items, snap = bench_ws
    runner = CliRunner()
    base = ["--workspace", str(ws.root)]
    r = runner.invoke(
        app,
        [
            *base,
            "benchmark",
            "run",
            "-m",
            "simulated:steel-strong",
            "-m",
            "simulated:steel-weak",
            "-m",
            "rule:majority",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    man = json.loads(r.stdout)
    rid = man["run_id"]
    assert man["gold_snapshot"] == snap and len(man["entries"]) == 3
    assert all(e["status_counts"] == {"parsed": 16} for e in man["entries"].values())
    assert man["tool_version"] and man["output_cap"] == 2048 and "image_policy" in man
    r = runner.invoke(app, [*base, "benchmark", "show", rid, "--resamples", "100", "--json"])
    assert r.exit_code == 0, r.output
    board = json.loads(r.stdout)
    assert board[0]["model"] == "simulated:steel-strong" and board[0]["simulated"]
    r = runner.invoke(
        app, [*base, "benchmark", "compare-gold", rid, "--resamples", "100", "--json"]
    )
    assert r.exit_code == 0 and len(json.loads(r.stdout)["models"]) == 3
    r = runner.invoke(app, [*base, "benchmark", "paired", rid, "--resamples", "200", "--json"])
    pairs = json.loads(r.stdout)["pairs"]
    assert any(p["distinguishable"] for p in pairs)
    out = tmp_path / "rep" / "report.html"
    r = runner.invoke(
        app, [*base, "benchmark", "report", rid, "--out", str(out), "--resamples", "100"]
    )
    assert r.exit_code == 0, r.output
    html = out.read_text()
    assert "Leaderboard" in html and "SIMULATED" in html
    # one self-contained file: the plot is embedded, its PNG copy saved beside it
    assert '<img src="data:image/png;base64,' in html and "report_files/leaderboard.png" in html
    files = out.parent / "report_files"
    for name in (
        "leaderboard.png",
        "conditions.png",
        "per_class.png",
        "safety.png",
        "calibration.png",
        "leaderboard.csv",
    ):
        assert (files / name).stat().st_size > 0, name
    r = runner.invoke(
        app,
        [
            *base,
            "benchmark",
            "export",
            "--out",
            str(tmp_path / "rel"),
            "--format",
            "jsonl",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, [*base, "benchmark", "run", "-m", "simulated:x", "--gold", "nope"])
    assert r.exit_code == 1 and "unknown gold slice" in str(r.exception)
    r = runner.invoke(app, [*base, "benchmark", "--help"])
    assert r.exit_code == 0 and "compare-gold" in r.output


def test_items_sharing_one_request_each_get_their_result(bench_ws):
    """No-image control: items whose prompts are byte-identical share one call, and
    every item still gets its scored row (only the first used to)."""
    ws, project, items, _ = bench_ws
    keys = _keys(ws, project)
    CANNED.clear()
    CANNED["_truth"] = {keys[i]: _answer(t) for i, t in items}
    CALLS.clear()
    man = run_benchmark(
        ws.store, project, RunConfig(models=["canned:x"], control="no-image"), progress=False
    )
    assert len(CALLS) < len(items), "identical requests were sent once"
    with ws.store.begin() as conn:
        rows = conn.execute(
            select(tables.run_results.c.item_id).where(tables.run_results.c.run_id == man["run_id"])
        ).all()
    assert sorted(r[0] for r in rows) == sorted(i for i, _ in items)
    entry = next(iter(man["entries"].values()))
    assert sum(entry["status_counts"].values()) == len(items)


def test_endpoint_failing_closes_the_run_and_raises(bench_ws):
    from truthline.models import EndpointFailingError

    ws, project, _, _ = bench_ws
    cfg = RunConfig(models=["openai:m@http://127.0.0.1:9/v1"], max_failures=2, concurrency=1)
    with pytest.raises(EndpointFailingError, match="2 consecutive failures"):
        run_benchmark(ws.store, project, cfg, progress=False)
    with ws.store.begin() as conn:
        status = conn.execute(select(tables.runs.c.status)).scalar_one()
        n = conn.execute(select(func.count()).select_from(tables.run_results)).scalar_one()
    assert status == "partial" and n == 2


@backend("sigterm")
class SigtermBackend(Backend):
    """Test backend: answers 3 requests, then this process gets a real SIGTERM while
    the next requests are in flight."""

    async def complete(self, request):
        import asyncio
        import os
        import signal

        CALLS.append(request.context["key"])
        if len(CALLS) == 4:
            os.kill(os.getpid(), signal.SIGTERM)
        if len(CALLS) > 3:
            await asyncio.sleep(3600)  # in flight when the signal lands
        return Completion(text=json.dumps(CANNED["_truth"][request.context["key"]]))


def test_sigterm_stores_what_arrived_and_raises(bench_ws):
    from truthline.benchmark._runner import RunInterrupted

    ws, project, items, _ = bench_ws
    keys = _keys(ws, project)
    CANNED.clear()
    CANNED["_truth"] = {keys[i]: _answer(t) for i, t in items}
    CALLS.clear()
    cfg = RunConfig(models=["sigterm:x"], concurrency=2)
    with pytest.raises(RunInterrupted, match="terminated") as exc:
        run_benchmark(ws.store, project, cfg, progress=False)
    assert exc.value.exit_code == 143
    with ws.store.begin() as conn:
        status = conn.execute(select(tables.runs.c.status)).scalar_one()
        rows = conn.execute(select(tables.run_results.c.status)).all()
    assert status == "partial" and [r[0] for r in rows] == ["parsed"] * 3
