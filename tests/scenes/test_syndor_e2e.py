"""SynDORBench on real (tiny, Workbench) renders of the dori environment: the Blender worker,
the frame store, variants, features, SIMULATED labels, propagation, gold, a benchmark run and
the tables. Fails without the scenes venv."""

from __future__ import annotations

import pandas as pd
import pytest

from truthline.scenes import RenderSettings
from truthline.scenes._render import render
from truthline.systems.syndorbench import _discern as dis
from truthline.systems.syndorbench import _sim as sim
from truthline.systems.syndorbench import _syndor as sd
from truthline.systems.syndorbench import _tables as tb

PARAMS = [
    {"distance_m": d, "azimuth_deg": az, "elevation_deg": 0.0, "lighting": lt,
     "pose": pose, "scene": "field"}
    for d in (5.4, 10.8, 23.0)
    for lt in ("noon", "midnight")
    for pose in ("walking", "absent")
    for az in (0.0, 135.0, 270.0)
]  # fmt: skip


@pytest.fixture(scope="module")
def frames(worker, tmp_path_factory) -> tuple[pd.DataFrame, object]:
    root = tmp_path_factory.mktemp("dori")
    rep = render(
        "dori",
        PARAMS,
        root / "store",
        RenderSettings(engine="BLENDER_WORKBENCH", res_x=192, res_y=108),
        client=worker,
    )
    assert not rep.failed and rep.rendered == len(PARAMS)
    return sd.renders_from_store(root / "store"), root


def test_renders_become_benchmark_items_with_the_frame_gt(frames):
    renders, root = frames
    assert len(renders) == 36
    assert set(renders["dori"]) == {"recognition", "observation", "detection"}
    assert renders.loc[renders["pose"] == "absent", "present"].eq(False).all()
    items = sd.make_items(renders, root / "out", seed=0)
    assert len(items) == 18 + 2 * 18
    night = items[items["condition"] == "night"]
    assert (night["night_from"] == "png-scaled").all()  # Workbench ignores the lamps
    absent = items[items["pose"] == "absent"]
    assert (absent["visible_px_mask"] == 0).all() and (absent["raw_area_ratio"] == 0).all()
    seen = items[(items["pose"] == "walking") & (items["condition"] == "day")]
    assert (seen["visible_px_mask"] > 0).all()
    # the visible mask shrinks with distance (about 1/d^2 in pixels)
    px = seen.groupby("distance_m")["visible_px_mask"].mean()
    assert px[5.4] > 2.5 * px[10.8] > 2.5 * 2.5 * px[23.0] / 1.2


def test_whole_loop_on_tiny_renders(frames, tmp_path):
    from truthline.benchmark import RunConfig, load_run, run_benchmark
    from truthline.workspace import Workspace

    renders, root = frames
    items = sd.make_items(renders, root / "out", seed=0)
    ws = Workspace.from_env(tmp_path / "ws")
    sample = sd.label_sample(items, seed=0)
    assert len(sample) == dis.cochran_n(36) == 33
    dis.write_label_project(ws, "dori-labels", sample, strata=["dori", "lighting"])
    sim.simulate_labels(ws.store, "dori-labels", sample, seed=0)
    human = dis.human_labels(ws.store, "dori-labels")
    grids = {"rf_grid": {"n_estimators": [20]}, "xgb_grid": {"n_estimators": [20]}}
    labelled, model = sd.fit_and_propagate(items, human, seed=0, folds=3, holdout=0, **grids)
    proj = sd.import_benchmark(ws, labelled, root / "out")
    snap = sd.write_gold(ws.store, proj.name, labelled, model)
    man = run_benchmark(
        ws.store, proj, RunConfig(models=["simulated-dori:strong"], snapshot=snap), progress=False
    )
    run = load_run(ws.store, man["run_id"], proj)
    t = tb.syndor_tables(run.decisions, action=False)
    row = t["by_distance"][0]
    assert t["distances"] == ["5.4", "10.8", "23.0"]
    assert row["avg"]["n"] == 54 and all(row[d]["n"] == 18 for d in t["distances"])
    # absent frames are presence-0 gold from the render; a person in view is 1 only if
    # discernible (human or propagated)
    d = run.decisions[run.decisions["path"] == "present"]
    absent = d[[m["pose"] == "absent" for m in d["meta"]]]
    assert len(absent) == 27 and (absent["gold"] == False).all()  # noqa: E712
    assert len(t["by_condition"]) == 3 and len(t["threshold"]) == 3
