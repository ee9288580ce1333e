"""Benchmark page: leaderboard, conditions, safety, calibration, per class, paired, gold."""

from __future__ import annotations

import pytest

from truthline.benchmark import compare_gold, leaderboard, list_runs, paired_matrix
from truthline.demo._simulated_loop import BENCH_MODELS


def _frame(at, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_benchmark_page_shows_the_benchmark_numbers(sim_ws, run_app):
    at = run_app(sim_ws, page="benchmark")
    assert not at.exception, at.exception
    project = sim_ws.project()
    run_id = list_runs(sim_ws.store, project.name)[0]["run_id"]
    lb = _frame(at, "accuracy_point")
    want = leaderboard(sim_ws.store, project, [run_id])
    assert list(lb["model"]) == [r.model for r in want]
    assert set(lb["model"]) == set(BENCH_MODELS)
    assert lb["accuracy_point"].tolist() == pytest.approx([r.accuracy["point"] for r in want])
    # steel-strong is planted to beat steel-weak, and the paired CI tells them apart.
    assert lb["model"].iloc[0] == "simulated:steel-strong"
    pairs = _frame(at, "distinguishable")
    pm = paired_matrix(sim_ws.store, project, run_id)
    assert pairs["diff_point"].tolist() == pytest.approx([c.difference["point"] for c in pm.pairs])
    assert bool(pairs["distinguishable"].iloc[0])
    gold = _frame(at, "gold slice")
    cg = compare_gold(sim_ws.store, project, run_id)
    strong = next(m for m in cg.models if m.model == "simulated:steel-strong")
    got = gold.query("model == 'simulated:steel-strong' and `gold slice` == 'blind'")["point"]
    assert strong.blind and got.iloc[0] == pytest.approx(strong.blind["point"])
    titles = [m.value for m in at.markdown]
    for name in ("Accuracy per condition (nAUDC)", "Safety regime", "Calibration"):
        assert f"**{name}**" in titles
    assert any(t.startswith("**Per-class accuracy: workers.action") for t in titles)
    assert "SIMULATED" in at.warning[0].value


def test_slice_filter_reruns_on_that_gold(sim_ws, run_app):
    at = run_app(sim_ws, page="benchmark")
    at.selectbox(key="bench-slice").set_value("blind").run()
    assert not at.exception
    lb = _frame(at, "accuracy_point")
    project = sim_ws.project()
    run_id = list_runs(sim_ws.store, project.name)[0]["run_id"]
    want = leaderboard(sim_ws.store, project, [run_id], slice_="blind")
    assert lb["accuracy_point"].tolist() == pytest.approx([r.accuracy["point"] for r in want])


def test_no_runs_says_what_to_do(empty_ws, run_app):
    at = run_app(empty_ws, page="benchmark")
    assert not at.exception
    assert "benchmark run" in at.info[0].value


def test_leaderboard_names_the_clusters_of_each_interval(sim_ws, run_app):
    """Each accuracy interval is shown with the number of clusters it resampled, and the
    blind gold slice (few videos) comes with a thin-design warning."""
    project = sim_ws.project()
    run_id = list_runs(sim_ws.store, project.name)[0]["run_id"]
    at = run_app(sim_ws, page="benchmark")
    assert not at.exception, at.exception
    lb = _frame(at, "accuracy_point")
    want = leaderboard(sim_ws.store, project, [run_id])
    assert lb["accuracy_clusters"].tolist() == [r.accuracy["clusters"] for r in want]
    cg = compare_gold(sim_ws.store, project, run_id)
    thin = [
        ci
        for m in cg.models
        for ci in (m.blind, m.anchored, m.vlm_sourced)
        if ci and ci.get("warning")
    ]
    assert thin  # the blind slice sits on 15 of the 30 videos
    assert any(f"{thin[0]['clusters']} clusters" in w.value for w in at.warning)
