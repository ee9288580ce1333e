"""Metrics across models end to end on the tiny gold fixture: a project-supplied rule from
rules.py beside the definition, the hard subset it defines, routing oracle and ensemble,
per-worker calibration, and the CLI (across, transfer, report)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from truthline.benchmark import (
    RunConfig,
    across_metrics,
    load_run,
    model_metrics,
    run_benchmark,
)
from truthline.errors import TruthlineError

RULES = '''
from truthline.benchmark import majority_answer, rule


@rule("no-helmet")
def no_helmet(request, support):
    """Everyone lacks a helmet (right exactly where the gold says not_worn)."""
    answer = majority_answer(request, support)
    for w in answer.get("workers", []):
        w["helmet"] = "not_worn"
    return answer
'''

MODELS = [
    "simulated:steel-strong",
    "simulated:steel-weak",
    "simulated:steel-v1",
    "rule:majority",
    "rule:no-helmet",
]


@pytest.fixture
def across_run(bench_ws):
    ws, project, items, _ = bench_ws
    (project.root / "rules.py").write_text(RULES)
    man = run_benchmark(ws.store, project, RunConfig(models=MODELS), progress=False)
    return ws, project, items, man["run_id"]


def test_project_rule_defines_the_hard_subset(across_run):
    ws, project, _items, rid = across_run
    data = across_metrics(ws.store, project, rid, resamples=0)["metrics"]
    assert set(data) == {"routing_oracle", "ensemble", "hard_subset"}  # what the project names
    hard = data["hard_subset"]
    assert hard["rule"] == "rule:no-helmet"  # the project's own rule before built-in ones
    # the rule is wrong on every helmet decision whose gold is "worn", right on not_worn
    run = load_run(ws.store, rid, project)
    d = run.decisions[run.decisions["model"] == "rule:no-helmet"]
    assert hard["hard_decisions"] == int((~d["correct"].astype(bool)).sum())
    helmets = d[d["field"] == "workers.helmet"]
    assert helmets.loc[helmets["gold"] == "not_worn", "correct"].all()
    assert set(hard["models"]) == {"simulated:steel-strong", "simulated:steel-weak",
                                   "simulated:steel-v1"}  # fmt: skip
    strong = hard["models"]["simulated:steel-strong"]
    assert strong["hard"]["point"] <= 1.0 and strong["all"]["point"] > 0
    route = data["routing_oracle"]
    assert route["value"]["point"] >= route["best_single"]["accuracy"]["point"] - 1e-12
    assert "rule:majority" not in route["best_by_environment"].values()
    assert data["ensemble"]["members"] == [
        "simulated:steel-strong",
        "simulated:steel-v1",
        "simulated:steel-weak",
    ]


def test_per_worker_calibration(across_run):
    ws, project, _items, rid = across_run
    run = load_run(ws.store, rid, project)
    d = run.decisions[run.decisions["model"] == "simulated:steel-strong"]
    workers = d[d["field"] == "workers.action"]
    # each answered worker carries its own stated confidence; a missed worker has none
    answered = workers["pred"].notna()
    assert answered.sum() > len(workers) / 2
    assert workers.loc[answered, "confidence"].notna().all()
    assert workers.loc[~answered, "confidence"].isna().all()
    assert set(workers["confidence"].dropna().round(3)) <= {0.333, 0.667, 1.0}
    scalar = d[d["field"] == "worker_count"]
    assert scalar["confidence"].isna().all()  # no per-answer confidence mixed in
    [m] = [
        m
        for m in model_metrics(ws.store, project, rid, resamples=0)
        if m.model == "simulated:steel-strong"
    ]
    bins = m.metrics["ece"]["bins"]
    assert sum(b["n"] for b in bins) == int(workers["confidence"].notna().sum())


def test_unknown_rule_is_a_clear_error(bench_ws):
    ws, project, _items, _ = bench_ws
    with pytest.raises(TruthlineError, match=r"unknown rule 'nope'.*rules\.py"):
        run_benchmark(ws.store, project, RunConfig(models=["rule:nope"]), progress=False)


def test_cli_across_transfer_and_report(across_run, tmp_path):
    from truthline.cli import app

    ws, _project, _items, rid = across_run
    base = ["--workspace", str(ws.root)]
    runner = CliRunner()
    r = runner.invoke(app, [*base, "benchmark", "across", rid, "--metric", "ensemble", "--json"])
    assert r.exit_code == 0, r.output
    assert set(json.loads(r.stdout)["metrics"]) == {"ensemble"}
    r = runner.invoke(app, [*base, "benchmark", "across", rid, "--metric", "accuracy"])
    assert r.exit_code == 1 and "not a metric across models" in str(r.exception)
    # the same run against itself: identical scores, perfect rank transfer
    r = runner.invoke(app, [*base, "benchmark", "transfer", rid, "--against", rid, "--json"])
    assert r.exit_code == 0, r.output
    t = json.loads(r.stdout)
    assert t["spearman_rho"] == pytest.approx(1.0) and len(t["models"]) == 3
    r = runner.invoke(app, [*base, "benchmark", "transfer", rid])
    assert r.exit_code == 1 and "--transfer-column" in str(r.exception)
    r = runner.invoke(app, [*base, "benchmark", "metrics", "--json"])
    assert "rule:no-helmet" in json.loads(r.stdout)["rules"]
    out = tmp_path / "rep" / "report.md"
    r = runner.invoke(
        app, [*base, "benchmark", "report", rid, "--out", str(out), "--resamples", "50"]
    )
    assert r.exit_code == 0, r.output
    md = out.read_text()
    for title in ("Routing oracle", "Majority-of-models ensemble", "Hard subset"):
        assert f"## {title} ({rid})" in md, title
    assert "rule:no-helmet" in md
    csvs = [p.name for p in (out.parent / "report_files").glob("*.csv")]
    assert any(n.startswith("hard_subset") for n in csvs), csvs
