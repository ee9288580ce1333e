"""`truthline syndor` step by step on a frame store (synthetic frames written the way
`truthline scenes render dori` writes them; SIMULATED labels and viewer model)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from truthline.cli import app
from truthline.scenes import FrameRecord, RenderSettings
from truthline.scenes._store import FrameStore

from .test_syndor import DISTANCES, DORI, PPM, _render


def _store(root, lightings=("noon", "midnight")):
    fs = FrameStore(root / "store")
    rng = np.random.default_rng(2)
    for d in DISTANCES:
        for lt in lightings:
            for az in range(4):
                r = _render(root, f"f{d}-{lt}-{az}".replace(".", "_"), d, lt, rng, az)
                params = {"distance_m": d, "azimuth_deg": az * 45.0, "elevation_deg": 0.0,
                          "lighting": lt, "pose": r["pose"], "scene": "field"}  # fmt: skip
                rec = FrameRecord(
                    env="dori", env_version="1", params=params, seed=0,
                    render=RenderSettings(engine="BLENDER_WORKBENCH", res_x=96, res_y=64).to_dict(),
                    gt={"present": True, "pose": r["pose"], "dori_class": DORI[d],
                        "ppm_formula": PPM[d]},
                    images={v: fs.put_image(Path(r[k]).read_bytes(), "png")
                            for v, k in (("rgb", "rgb"), ("mask", "mask"))},
                    image_ext={"rgb": "png", "mask": "png"},
                )  # fmt: skip
                fs.save(rec)
    return root / "store"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return _store(tmp_path_factory.mktemp("frames"))


def test_prepare_label_propagate_benchmark_tables(store, tmp_path):
    ws = tmp_path / "ws"
    runner = CliRunner()

    def tl(*args: str):
        res = runner.invoke(app, ["--workspace", str(ws), *args])
        assert res.exit_code == 0, res.output
        return res

    prep = json.loads(tl("syndor", "prepare", "--store", str(store), "--json").stdout)
    assert prep["renders"] == 24 and prep["items"] == 36
    assert prep["sample"] == {"population": 24, "n": 23, "confidence": 0.95, "margin": 0.05}
    # propagating before anyone labelled says what to do
    bad = runner.invoke(app, ["--workspace", str(ws), "syndor", "propagate"])
    assert bad.exit_code == 1 and "label the sample" in str(bad.exception)
    tl("syndor", "simulate-labels")
    prop = json.loads(
        tl("syndor", "propagate", "--search", "small", "--folds", "3", "--json").stdout
    )
    assert prop["model"]["folds"] == 3 and set(prop["label_sources"]) <= {
        "human", "model-propagated", "render-gt"
    }  # fmt: skip
    assert prop["label_sources"]["render-gt"] == 12
    run = tl("benchmark", "run", "--project", "dori-visibility", "--model",
             "simulated-dori:strong", "--json")  # fmt: skip
    run_id = json.loads(run.stdout)["run_id"]
    out = tmp_path / "tables.md"
    t = json.loads(
        tl("syndor", "tables", run_id, "--no-action", "--out", str(out), "--json").stdout
    )
    assert t["distances"] == ["5.4", "10.8", "23.0"]
    assert t["by_distance"][0]["avg"]["n"] == 36
    assert "Presence by DORI distance" in out.read_text()
    # the paper's presence question on its own: a bare 1/0 reply, parsed by its grammar
    tl("benchmark", "run", "--project", "dori-visibility", "--model", "simulated-dori:strong",
       "--variant", "presence", "--json")  # fmt: skip
    from sqlalchemy import select

    from truthline.store import Store, tables

    r = tables.responses
    with Store(f"sqlite:///{ws / 'truthline.db'}").begin() as conn:
        rows = conn.execute(
            select(r.c.raw_response, r.c.status, r.c.parsed).where(
                r.c.project == "dori-visibility", r.c.purpose == "benchmark"
            )
        ).all()
    bare = [x for x in rows if x.parsed is not None and set(x.parsed) == {"present"}]
    assert len(rows) == 72 and len(bare) == 36  # the JSON run's 36 and the question's 36
    assert {x.raw_response for x in bare} <= {"0", "1"} and {x.status for x in bare} == {"parsed"}


def test_prepare_names_a_store_without_frames(tmp_path):
    res = CliRunner().invoke(
        app, ["--workspace", str(tmp_path / "ws"), "syndor", "prepare", "--store", str(tmp_path)]
    )
    assert res.exit_code == 1 and "no 'dori' frame records" in str(res.exception)


def test_a_daylight_grid_needs_no_labels(tmp_path):
    """No midnight frames: no labelling project, nothing to propagate, render-gt gold."""
    store = _store(tmp_path, lightings=("noon",))
    runner = CliRunner()

    def tl(*args: str):
        res = runner.invoke(app, ["--workspace", str(tmp_path / "ws"), *args])
        assert res.exit_code == 0, (res.output, res.exception)
        return json.loads(res.stdout)

    prep = tl("syndor", "prepare", "--store", str(store), "--json")
    assert prep["items"] == 12 and prep["sample"] == {}
    prop = tl("syndor", "propagate", "--json")
    assert prop["model"] is None and prop["label_sources"] == {"render-gt": 12}
