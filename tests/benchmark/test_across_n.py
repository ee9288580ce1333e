"""Every row of the routing-oracle, ensemble and rank-transfer tables carries its n (the
decisions behind it), counted independently from the run's decisions, in the report and
in what the dashboard shows."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from truthline.benchmark import (
    RunConfig,
    across_metrics,
    load_run,
    rank_transfer_runs,
    run_benchmark,
    run_view,
)
from truthline.benchmark._across import transfer_by_column
from truthline.benchmark._report import across_sections
from truthline.store import tables

MODELS = ["simulated:steel-strong", "simulated:steel-weak", "simulated:steel-v1", "rule:majority"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from tests.benchmark.conftest import make_bench_ws

    ws, project, items, _ = make_bench_ws(tmp_path_factory.mktemp("across-n") / "ws")
    with ws.store.begin() as conn:  # two item sets for rank transfer
        for k, (iid, _t) in enumerate(items):
            meta = conn.execute(
                select(tables.items.c.meta).where(tables.items.c.id == iid)
            ).scalar_one()
            conn.execute(
                update(tables.items)
                .where(tables.items.c.id == iid)
                .values(meta={**meta, "half": "a" if k % 2 else "b"})
            )
    rid = run_benchmark(ws.store, project, RunConfig(models=MODELS), progress=False)["run_id"]
    yield ws, project, rid
    ws.store.close()


def _one_model(ws, project, rid):
    d = load_run(ws.store, rid, project).decisions
    return d[d["model"] == "simulated:steel-strong"]


def test_ensemble_and_routing_rows_have_their_n(run):
    ws, project, rid = run
    d = _one_model(ws, project, rid)  # simulated models answer every decision: all common
    data = across_metrics(ws.store, project, rid, resamples=0)["metrics"]
    ens = data["ensemble"]
    assert ens["n_by_field"] == d["field"].value_counts().to_dict()
    assert sum(ens["n_by_field"].values()) == ens["n"]
    route = data["routing_oracle"]
    env = d["stratum"].astype(str)
    assert route["n_by_environment"] == env.value_counts().to_dict()
    for e, best in route["best_by_environment"].items():
        full = load_run(ws.store, rid, project).decisions
        b = full[(full["model"] == best) & (full["stratum"].astype(str) == e)]
        assert route["accuracy_by_environment"][e] == pytest.approx(b["correct"].mean())
    secs = {s.title.split(" (")[0]: s for s in across_sections({"run_id": rid, "metrics": data})}
    assert secs["Majority-of-models ensemble"].n == list(ens["n_by_field"].values())
    assert secs["Routing oracle"].n == [
        route["n_by_environment"][e] for e in route["best_by_environment"]
    ]
    assert None not in secs["Routing oracle"].n + secs["Majority-of-models ensemble"].n


def test_rank_transfer_rows_have_their_n(run):
    ws, project, rid = run
    t = transfer_by_column(run_view(ws.store, project, rid, resamples=0), "half")
    full = load_run(ws.store, rid, project).decisions
    for m, n in t["n"].items():
        d = full[full["model"] == m]
        halves = d["meta"].map(lambda x: x["half"]).value_counts().to_dict()
        assert n == halves
    sec = across_sections({"run_id": rid, "metrics": {"rank_transfer": t}})[0]
    assert sec.n == [f"{t['n'][m]['a']} / {t['n'][m]['b']}" for m in t["scores"]]
    assert sec.n_column == "n decisions (a / b)"
    runs = rank_transfer_runs(ws.store, project, rid, rid)
    assert runs["n"] == {m: {rid: int((full["model"] == m).sum())} for m in runs["models"]}


def test_report_tables_show_the_n(run, tmp_path):
    from truthline.benchmark import write_report

    ws, project, rid = run
    out = tmp_path / "report.md"
    write_report(ws.store, project, [rid], out, resamples=20)
    md = out.read_text(encoding="utf-8")
    for title in ("Routing oracle", "Majority-of-models ensemble"):
        part = md.split(f"## {title} ({rid})", 1)[1].split("\n## ", 1)[0]
        rows = [ln for ln in part.splitlines() if ln.startswith("|") and "---" not in ln]
        header, body = rows[0], rows[1:]
        assert "n decisions" in header and body
        col = [c.strip() for c in header.strip("|").split("|")].index("n decisions")
        for r in body:
            assert [c.strip() for c in r.strip("|").split("|")][col].isdigit(), r
