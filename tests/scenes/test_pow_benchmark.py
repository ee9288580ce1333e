"""Frames to benchmark: proof-of-work items with scorer/scene gold, SIMULATED models run by
the benchmark runner, conditional scoring and the per-environment tables on the run's
decisions (no Blender: proxy frames with stand-in images)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from truthline.systems.realitybench import _pow as P

MODELS = ["simulated:pow-strong", "simulated:pow-mid", "simulated:pow-weak"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from truthline.benchmark import RunConfig, load_run, run_benchmark
    from truthline.workspace import Workspace

    tmp = tmp_path_factory.mktemp("powb")
    frames = P.proxy_frames(10, seed=3)
    paths = []
    for i in range(len(frames)):
        p = tmp / f"{i}.png"
        Image.fromarray(np.full((12, 16, 3), 7 * (i % 30), np.uint8)).save(p)
        paths.append(str(p))
    frames["image"] = paths
    frames["rendering"] = ["spp16" if i % 2 else "spp4" for i in range(len(frames))]
    ws = Workspace.from_env(tmp / "ws")
    proj = P.import_benchmark(ws, frames)
    snap = P.write_gold(ws.store, proj, frames)
    assert P.write_gold(ws.store, proj, frames) == snap
    man = run_benchmark(ws.store, proj, RunConfig(models=MODELS, concurrency=2), progress=False)
    # the same frames rated by SIMULATED raters in the generated rating project
    P.write_rating_project(ws, frames)
    P.simulate_ratings(ws.store, P.RATING_PROJECT, frames, seed=0)
    run = load_run(ws.store, man["run_id"], proj)
    run.store = ws.store
    run.ws = ws
    return frames, proj, run


def test_gold_has_scorer_and_scene_provenance(run):
    frames, _, r = run
    d = r.decisions
    acc = d[(d["field"] == "acceptable") & (d["model"] == MODELS[0])]
    assert set(acc["provenance"]) == {"scorer"}
    assert set(d[d["field"] != "acceptable"]["provenance"]) == {"scene-gt"}
    verdict = frames[~frames["gray"]]  # gray-zone frames carry no verdict (section 4)
    keys = acc["meta"].map(lambda m: m.get("environment"))
    assert set(keys) == set(P.ENVIRONMENTS) and len(acc) == len(verdict)
    assert acc["gold"].astype(bool).sum() == int(verdict["acceptable"].sum())


def test_conditional_metric_on_the_run(run):
    frames, proj, r = run
    from truthline.benchmark._registry import Scored
    from truthline.systems.realitybench import _conditional as C

    d = r.decisions
    scores = {}
    for m in MODELS:
        sub = d[d["model"] == m]
        s = Scored(proj, sub.reset_index(drop=True), pd.DataFrame())
        out = C.conditional_scores(s)
        scores[m] = out["value"].point
        assert set(out["by_environment"]) == set(P.ENVIRONMENTS)
        n_env = 10 * len(P.ENVIRONMENTS)
        assert out["frames"]["acceptable"] + out["frames"]["rejected"] == n_env - int(
            frames["gray"].sum()
        )
        # a gray frame with no documentation gold has no decisions left at all
        assert 0 < out["frames"]["gray_excluded"] <= int(frames["gray"].sum())
    assert scores["simulated:pow-strong"] > scores["simulated:pow-weak"]


def test_per_environment_tables_and_report_sections(run, tmp_path):
    from truthline.systems.realitybench import _conditional as C

    frames, proj, r = run
    t = C.pow_tables(proj, r.decisions)
    assert len(t["overall"]) == 3 and len(t["by_environment"]) == 3 * len(P.ENVIRONMENTS)
    row = next(
        x for x in t["by_environment"] if x["environment"] == "plate" and x["model"] == MODELS[0]
    )
    sub = frames[(frames["environment"] == "plate") & ~frames["gray"]]  # gray: no verdict
    assert row["frames"] == len(sub) and row["acceptable frames"] == int(sub["acceptable"].sum())
    assert row["false accepts"].endswith(f"/{int((~sub['acceptable']).sum())}")
    assert {x["field"] for x in t["by_field"]} >= {"tape_reading", "plate", "visible_face"}


def test_report_sections_render(run, tmp_path, monkeypatch):
    from types import SimpleNamespace

    import truthline.benchmark._results as R
    from truthline.systems.realitybench import _conditional as C

    _, proj, r = run
    # the fixture's run, without a store round trip
    monkeypatch.setattr(R, "load_run", lambda store, rid, project: r)
    ctx = SimpleNamespace(
        store=r.store, project=proj, run_ids=["x"], data={}, files=tmp_path, resamples=50
    )
    secs = C.report_sections(ctx)
    assert [s.title for s in secs] == [
        "RealityBench: acceptability and conditional documentation",
        "RealityBench: per environment",
        "RealityBench: documentation per field",
        "RealityBench: human baseline",
    ]
    for s in secs:
        s.model()  # every metric named has a glossary entry; every row has its n
    t = ctx.data["realitybench"]
    assert set(t) == {"overall", "by_environment", "by_field", "human", "rankings"}
    raters = [h["model"] for h in t["human"]]
    assert len(raters) == 7 and raters[-1] == "human: raters' majority"
    assert all(h["frames"] <= 10 * len(P.ENVIRONMENTS) for h in t["human"])


def test_dashboard_section_shows_the_tables(run, monkeypatch):
    from types import SimpleNamespace

    import streamlit as st

    import truthline.benchmark._results as R
    from truthline.systems.realitybench import _conditional as C

    _, proj, r = run
    monkeypatch.setattr(R, "load_run", lambda store, rid, project: r)
    shown: list[tuple[str, int]] = []
    monkeypatch.setattr(st, "subheader", lambda t: shown.append((t, -1)))
    monkeypatch.setattr(st, "dataframe", lambda df, **k: shown.append(("table", len(df))))
    from truthline.dashboards._registry import dashboard_section
    from truthline.dashboards._sections import render_sections

    assert dashboard_section.get("realitybench") is C.dashboard_sections  # the entry point
    render_sections(C.dashboard_sections(SimpleNamespace(store=None, project=proj), ["x"]))
    assert [t for t, _ in shown if t != "table"] == [
        "Overall",
        "Per environment",
        "Per documentation field",
    ]
    assert [n for t, n in shown if t == "table"][:2] == [3, 3 * len(P.ENVIRONMENTS)]


def test_benchmark_report_shows_the_realitybench_tables(run, tmp_path):
    from truthline.benchmark import write_report

    _, proj, r = run
    out = tmp_path / "report.md"
    write_report(r.store, proj, [r.manifest["run_id"]], out, resamples=50)
    text = out.read_text()
    for title in (
        "RealityBench: acceptability and conditional documentation",
        "RealityBench: per environment",
        "RealityBench: documentation per field",
        "RealityBench: human baseline",
    ):
        assert title in text, title
    assert "human: raters' majority" in text and "tape_gap" in text


def test_dashboard_benchmark_page_shows_the_realitybench_tables(run, monkeypatch):
    from streamlit.testing.v1 import AppTest

    _, proj, r = run
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(r.ws.root))
    monkeypatch.delenv("TRUTHLINE_DB", raising=False)
    monkeypatch.setenv("TRUTHLINE_PROJECT", proj.name)
    script = "from truthline.dashboards._frame import main\nmain(page='benchmark')\n"
    at = AppTest.from_string(script, default_timeout=120).run()
    assert not at.exception, at.exception
    assert "RealityBench" in [h.value for h in at.header]
    assert {"Overall", "Per environment", "Per documentation field"} <= {
        h.value for h in at.subheader
    }
    env_table = next(
        d.value
        for d in at.dataframe
        if "acceptable frames" in d.value.columns and "environment" in d.value.columns
    )
    assert set(env_table["environment"]) == set(P.ENVIRONMENTS)
