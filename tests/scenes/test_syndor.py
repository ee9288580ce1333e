"""SynDORBench pipeline on synthetic renders (no Blender): variants, features, a Cochran
sample labelled by SIMULATED annotators, propagation, gold with provenance, a benchmark run
with SIMULATED viewer models and the paper's tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from truthline.systems.syndorbench import _discern as dis
from truthline.systems.syndorbench import _sim as sim
from truthline.systems.syndorbench import _syndor as sd
from truthline.systems.syndorbench import _tables as tb

DISTANCES = (5.4, 10.8, 23.0)
SIZE = {5.4: 40, 10.8: 20, 23.0: 9}  # figure height in px at 96x64 (halves with distance)
PPM = {5.4: 200.0, 10.8: 100.0, 23.0: 47.0}
SIM = ["simulated-dori:strong", "simulated-dori:weak"]
YOLO = "yolo:yolo11n.yaml;imgsz=64;device=cpu"  # untrained, built from the bundled config
DORI = {5.4: "recognition", 10.8: "observation", 23.0: "detection"}


def _render(root: Path, name: str, dist: float, lighting: str, rng, az: int) -> dict:
    """A SIMULATED 'render': a textured ground, a lighter figure of the distance's size."""
    h, w = 64, 96
    bg = np.clip(rng.normal(90, 12, (h, w, 3)), 0, 255)
    fh = SIZE[dist]
    fw = max(2, fh // 3)
    x0, y0 = 40 + az, 50 - fh
    mask = np.zeros((h, w), bool)
    mask[y0 : y0 + fh, x0 : x0 + fw] = True
    img = bg.copy()
    img[mask] = (170, 150, 140)
    rgb, m = root / f"{name}.png", root / f"{name}-mask.png"
    Image.fromarray(img.astype(np.uint8)).save(rgb)
    Image.fromarray((mask * 255).astype(np.uint8)).convert("RGB").save(m)
    return {
        "render": name, "scene": "field", "pose": ["walking", "guard_up"][az % 2],
        "lighting": lighting, "distance_m": dist, "dori": DORI[dist], "azimuth": az * 45,
        "elevation": 0, "present": True, "ppm": PPM[dist], "rgb": str(rgb), "mask": str(m),
    }  # fmt: skip


@pytest.fixture(scope="module")
def renders(tmp_path_factory) -> tuple[pd.DataFrame, Path]:
    root = tmp_path_factory.mktemp("renders")
    rng = np.random.default_rng(0)
    rows = [
        _render(root, f"r{d}-{lt}-{az}".replace(".", "_"), d, lt, rng, az)
        for d in DISTANCES
        for lt in ("noon", "midnight")
        for az in range(8)
    ]
    return pd.DataFrame(rows), tmp_path_factory.mktemp("out")


@pytest.fixture(scope="module")
def items(renders) -> pd.DataFrame:
    df, out = renders
    return sd.make_items(df, out, seed=1, nv={"denoise_strength": 3.0})


def test_variants_one_per_day_render_two_per_night_render(items, renders):
    df, _ = renders
    assert len(items) == 24 + 2 * 24
    assert set(items["condition"]) == {"day", "night", "night-vision"}
    night = items[items["condition"] == "night"].set_index("render")
    nv = items[items["condition"] == "night-vision"].set_index("render")
    # the camera's raw output at midnight is dark; the night-vision ISP lifts it
    dark = np.mean([np.asarray(Image.open(p)).mean() for p in night["image"]])
    lit = np.mean([np.asarray(Image.open(p)).mean() for p in nv["image"]])
    assert dark < 20 < lit
    assert (night["night_from"] == "png-scaled").all()
    assert nv.iloc[0]["isp"]["pipeline"] == "night_vision"
    # features: the same raw/nv pair on both items of a render; NV shows more absolute
    # contrast (KS is rank-based: the same order of dark values gives the same statistic)
    assert np.allclose(night["nv_lum_ks"], nv.loc[night.index, "nv_lum_ks"])
    assert nv["nv_delta_l"].mean() > 3 * nv["raw_delta_l"].mean()
    assert nv["nv_edge_iou"].mean() > nv["raw_edge_iou"].mean()
    # bigger figure (nearer) -> larger area ratio
    day = items[items["condition"] == "day"].groupby("distance_m")["raw_area_ratio"].mean()
    assert day[5.4] > day[10.8] > day[23.0]
    again = sd.make_items(df.iloc[24:26], renders[1], seed=1, nv={"denoise_strength": 3.0})
    first = items.set_index("key").loc[again["key"], "image_sha256"]
    assert list(again["image_sha256"]) == list(first)  # reproducible from the seed


def test_ray_fan_out_gives_the_same_items(items, renders):
    df, out = renders
    part = df.iloc[22:26]  # two day and two midnight renders
    ray_items = sd.make_items(part, out, seed=1, nv={"denoise_strength": 3.0}, workers=2)
    want = items.set_index("key").loc[ray_items["key"]]
    assert list(ray_items["image_sha256"]) == list(want["image_sha256"])
    assert np.allclose(ray_items["nv_edge_iou"], want["nv_edge_iou"])


def test_cochran_sample_covers_every_cell(items):
    s = sd.label_sample(items, seed=0)
    assert s.attrs["cochran"]["population"] == 48
    assert len(s) == dis.cochran_n(48) == 43
    assert set(s["condition"]) == {"night", "night-vision"}
    small = sd.label_sample(items, n=6, seed=0)
    assert {(c, d) for c, d in zip(small["condition"], small["distance_m"], strict=True)} == {
        (c, d) for c in ("night", "night-vision") for d in DISTANCES
    }


def test_pipeline_to_gold_benchmark_and_tables(items, renders, tmp_path):
    from truthline.benchmark import RunConfig, load_run, run_benchmark
    from truthline.workspace import Workspace

    _, out = renders
    ws = Workspace.from_env(tmp_path / "ws")
    sample = sd.label_sample(items, seed=0)
    dis.write_label_project(ws, "dori-labels", sample, strata=["dori", "lighting"])
    assert sim.simulate_labels(ws.store, "dori-labels", sample, seed=0) == 43 * 3 * 2
    assert sim.simulate_labels(ws.store, "dori-labels", sample, seed=0) == 0  # idempotent
    human = dis.human_labels(ws.store, "dori-labels")
    assert len(human) == 43 and set(human["source"]) == {"simulated"}
    grids = {
        "rf_grid": {"n_estimators": [20]},
        "xgb_grid": {"n_estimators": [20], "max_depth": [2]},
    }
    labelled, model = sd.fit_and_propagate(items, human, seed=0, folds=3, holdout=0, **grids)
    src = labelled.set_index("key")["discernible_source"]
    assert (src[labelled["condition"].to_numpy() == "day"] == "render-gt").all()
    labelled_keys = human.dropna(subset=["discernible"])["key"]  # a 1-1-1 split is no label
    assert set(src[labelled_keys]) == {"human"}
    n_human = len(labelled_keys)
    assert 30 < n_human <= 43 and (src == "model-propagated").sum() == 48 - n_human
    assert 0 <= model.cv_accuracy <= 1 and model.name in model.candidates

    proj = sd.import_benchmark(ws, labelled, out)
    assert len(ws.store.items(proj.name)) == 72
    snap = sd.write_gold(ws.store, proj.name, labelled, model)
    assert sd.write_gold(ws.store, proj.name, labelled, model) == snap  # idempotent
    from truthline.audit._gold import load_gold

    gold = pd.DataFrame(load_gold(ws.store, proj.name, snap))
    prov = gold[gold["field_path"] == "present"]["provenance"].value_counts().to_dict()
    assert prov == {"render-gt": 24, "human": n_human, "model-propagated": 48 - n_human}
    assert set(gold[gold["field_path"] == "action"]["provenance"]) == {"render-gt"}

    man = run_benchmark(
        ws.store,
        proj,
        RunConfig(models=[*SIM, YOLO], concurrency=2),
        progress=False,
    )
    run = load_run(ws.store, man["run_id"], proj)

    def embed(texts):  # character-trigram counts: a deterministic stand-in for MiniLM
        out = np.zeros((len(texts), 512))
        for i, t in enumerate(texts):
            for j in range(len(t) - 2):
                out[i, hash(t[j : j + 3]) % 512] += 1
        return out + 1e-9

    t = tb.syndor_tables(run.decisions, embed=embed)
    assert t["distances"] == ["5.4", "10.8", "23.0"]
    by = {r["model"]: r for r in t["by_distance"]}
    strong, weak = by["simulated-dori:strong"], by["simulated-dori:weak"]
    assert strong["avg"]["n"] == 72 and strong["5.4"]["n"] == 24
    assert strong["avg"]["acc"] > weak["avg"]["acc"]
    # the tables agree with the decisions they came from
    d = run.decisions
    sub = d[(d["model"] == "simulated-dori:strong") & (d["path"] == "present")]
    near = sub[[str(m["distance_m"]) == "5.4" for m in sub["meta"]]]
    assert strong["5.4"]["acc"] == pytest.approx(near["correct"].astype(float).mean())
    from sklearn.metrics import f1_score

    assert strong["5.4"]["f1"] == pytest.approx(
        f1_score(near["gold"].astype(bool), near["pred"].astype(bool), average="macro")
        if near["gold"].nunique() == 2
        else f1_score(
            near["gold"].astype(bool), near["pred"].astype(bool), pos_label=near["gold"].iloc[0]
        )
    )
    conds = {(r["model"], r["condition"]) for r in t["by_condition"]}
    assert ("simulated-dori:weak", "night-vision") in conds and len(conds) == 9  # 3 models x 3
    line = {(r["model"], r["condition"]): r for r in t["threshold"]}
    for (m, c), r in line.items():
        row = next(x for x in t["by_condition"] if x["model"] == m and x["condition"] == c)
        first_fail = next((x for x in t["distances"] if row[x]["acc"] < 0.8), None)
        assert (None if r["falls_below_at_m"] is None else str(r["falls_below_at_m"])) == first_fail
    # the YOLO baseline went through the yolo: backend and answers presence only
    yolo = next(r for r in t["by_distance"] if r["model"].startswith("yolo:"))
    assert yolo["avg"]["n"] == 72
    assert {r["model"] for r in t["action"]} >= set(SIM)
    md = tb.tables_markdown(t)
    assert "Presence by DORI distance" in md and "Operational threshold (80% accuracy)" in md
    # the benchmark report's SynDORBench sections (a SECTIONS builder)
    from truthline.benchmark._report import ReportContext

    ctx = ReportContext(ws.store, proj, [man["run_id"]], {}, tmp_path, 0)
    secs = tb.report_sections(ctx)
    titles = [s.title for s in secs]
    assert titles[:3] == [
        "SynDORBench: presence by DORI distance",
        "SynDORBench: presence by lighting condition and distance",
        "SynDORBench: 80% operational threshold",
    ]
    assert secs[0].figure is not None and (tmp_path / "syndorbench_conditions.png").is_file()
    assert len(secs[1].table) == 9 and ctx.data["syndorbench"]["distances"] == t["distances"]


def test_threshold_line_holds_then_falls():
    row = {"5.4": {"acc": 0.95}, "10.8": {"acc": 0.81}, "23.0": {"acc": 0.5}}
    assert tb._threshold(row, ["5.4", "10.8", "23.0"], 0.8) == {
        "meets_threshold_up_to_m": "10.8",
        "falls_below_at_m": "23.0",
    }
    never = {"5.4": {"acc": 0.7}, "10.8": {"acc": 0.9}}
    assert tb._threshold(never, ["5.4", "10.8"], 0.8) == {
        "meets_threshold_up_to_m": None,
        "falls_below_at_m": "5.4",
    }


def test_missing_render_columns_are_named(tmp_path):
    from truthline.errors import TruthlineError

    with pytest.raises(TruthlineError, match="missing column"):
        sd.make_items(pd.DataFrame([{"render": "x"}]), tmp_path)


def test_renders_from_store_reads_one_grid_when_the_store_holds_more(tmp_path):
    """A store that also holds another grid's frames (or an older env version's): the demo
    reads only the frames it just rendered."""
    import io

    from truthline.scenes import FrameRecord, RenderSettings
    from truthline.scenes._store import FrameStore

    store = FrameStore(tmp_path)

    def png(v: int) -> bytes:
        buf = io.BytesIO()
        Image.new("RGB", (8, 6), (v, v, v)).save(buf, format="PNG")
        return buf.getvalue()

    ids = []
    for i, res in enumerate((96, 192)):
        rec = FrameRecord(
            env="dori", env_version="1",
            params={"distance_m": 5.4, "lighting": "noon", "pose": "walking", "scene": "field",
                    "azimuth_deg": 0.0, "elevation_deg": 0.0},
            seed=0, render=RenderSettings(res_x=res, res_y=res // 2).to_dict(),
            gt={"present": True, "dori_class": "recognition", "ppm_formula": 186.7},
            images={"rgb": store.put_image(png(i), "png"), "mask": store.put_image(png(255), "png")},
            image_ext={"rgb": "png", "mask": "png"},
        )  # fmt: skip
        store.save(rec)
        ids.append(rec.job_id)
    assert len(sd.renders_from_store(tmp_path)) == 2
    one = sd.renders_from_store(tmp_path, job_ids=[ids[1]])
    assert list(one["render"]) == [ids[1]] and one.loc[0, "dori"] == "recognition"
    assert Path(one.loc[0, "rgb"]).is_file() and one.loc[0, "linear"] is None
    from truthline.errors import TruthlineError

    with pytest.raises(TruthlineError, match="no 'dori' frame records"):
        sd.renders_from_store(tmp_path / "empty")


def test_simulated_dori_resolves_through_its_entry_point_in_a_fresh_process():
    """The backend registers itself when the entry point imports its module (a check of
    'simulated-dori' in the registry is true before that import: entry points count)."""
    import subprocess
    import sys

    code = (
        "from truthline.models._registry import get_backend\n"
        "b = get_backend('simulated-dori:weak')\n"
        "assert type(b).__name__ == 'SimulatedDoriBackend' and b.simulated, b\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
