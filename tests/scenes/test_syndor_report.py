"""The SynDORBench tables in `truthline benchmark report` and on the dashboard's Benchmark
page (a small SIMULATED workspace: synthetic renders, SIMULATED labels and viewer models)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.dashboards.conftest import _texts
from tests.dashboards.conftest import run_app as run_app
from truthline.systems.syndorbench import _discern as dis
from truthline.systems.syndorbench import _sim as sim
from truthline.systems.syndorbench import _syndor as sd

from .test_syndor import DISTANCES, _render


@pytest.fixture(scope="module")
def syndor_ws(tmp_path_factory):
    from truthline.benchmark import RunConfig, run_benchmark
    from truthline.workspace import Workspace

    root = tmp_path_factory.mktemp("syndor")
    rng = np.random.default_rng(1)
    (root / "renders").mkdir()
    renders = pd.DataFrame(
        [
            _render(root / "renders", f"r{d}-{lt}-{az}".replace(".", "_"), d, lt, rng, az)
            for d in DISTANCES
            for lt in ("noon", "midnight")
            for az in range(4)
        ]
    )
    items = sd.make_items(renders, root / "out", seed=0, nv={"denoise_strength": 3.0})
    ws = Workspace.from_env(root / "ws")
    sample = sd.label_sample(items, seed=0)
    dis.write_label_project(ws, "dori-labels", sample, strata=["dori", "lighting"])
    sim.simulate_labels(ws.store, "dori-labels", sample, seed=0)
    human = dis.human_labels(ws.store, "dori-labels")
    grids = {"rf_grid": {"n_estimators": [20]}, "xgb_grid": {"n_estimators": [20]}}
    labelled, model = sd.fit_and_propagate(items, human, folds=3, holdout=0, **grids)
    proj = sd.import_benchmark(ws, labelled, root / "out")
    snap = sd.write_gold(ws.store, proj.name, labelled, model)
    cfg = RunConfig(models=["simulated-dori:strong", "simulated-dori:weak"], snapshot=snap)
    man = run_benchmark(ws.store, proj, cfg, progress=False)
    return ws, proj, man["run_id"]


def test_benchmark_report_has_the_syndorbench_tables(syndor_ws, tmp_path):
    from truthline.benchmark import write_report

    ws, proj, rid = syndor_ws
    out = write_report(ws.store, proj, [rid], tmp_path / "report.md", resamples=0)
    text = (tmp_path / "report.md").read_text()
    for title in (
        "SynDORBench: presence by DORI distance",
        "SynDORBench: presence by lighting condition and distance",
        "SynDORBench: 80% operational threshold",
    ):
        assert title in text
    assert "syndorbench_conditions.png" in text
    assert out["syndorbench"]["distances"] == ["5.4", "10.8", "23.0"]
    csvs = [p.name for p in (tmp_path / "report_files").glob("*.csv")]
    assert sum(n.startswith("syndorbench") for n in csvs) >= 3  # every table also as CSV


def test_dashboard_benchmark_page_shows_the_syndorbench_tables(syndor_ws, run_app):
    ws, proj, _ = syndor_ws
    at = run_app(ws, page="benchmark", project=proj.name)
    assert not at.exception
    text = _texts(at)
    assert "SynDORBench" in text and "By lighting condition × distance" in text
    assert "simulated-dori:strong" in text and "night-vision" in text
