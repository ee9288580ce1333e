"""The SIMULATED observer follows the paper's discernibility mechanism: pixel density,
illumination, subject contrast and the night-vision ISP (recovers some, not all, of what
darkness costs). Measured on a seeded planted grid run through the real pipeline (ISP,
features, SIMULATED annotators, propagation, gold, benchmark run, tables): SIMULATED strong
and weak viewers' presence accuracy is ordered day >= night-vision >= night at each distance
and falls with distance."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from truthline.systems.syndorbench import _discern as dis
from truthline.systems.syndorbench import _sim as sim
from truthline.systems.syndorbench import _syndor as sd
from truthline.systems.syndorbench import _tables as tb

W, H = 160, 90
PPM = {5.4: 200.0, 10.8: 100.0, 23.0: 47.0}
DORI = {5.4: "recognition", 10.8: "observation", 23.0: "detection"}
OUTFITS = {"bright": (175, 160, 150), "mid": (125, 110, 100), "drab": (104, 100, 92),
           "dark": (50, 45, 40)}  # fmt: skip
"""Figure colours on a grey-green ground of mean 90: strong to weak luminance contrast."""
CONDITIONS = ("day", "night-vision", "night")


def _planted(root, name, d, lighting, outfit, pos, present, rng) -> dict:
    """A planted 'render': textured ground and (when present) a figure of the height a
    1.75 m person has at that distance's density, in the outfit's colour."""
    bg = np.clip(rng.normal(90, 12, (H, W, 3)), 0, 255)
    fh = max(2, round(PPM[d] * 1.75 / 1080 * H))
    mask = np.zeros((H, W), bool)
    if present:
        x0 = 20 + 22 * pos
        mask[80 - fh : 80, x0 : x0 + max(2, fh // 3)] = True
    img = bg.copy()
    img[mask] = OUTFITS[outfit]
    rgb, m = root / f"{name}.png", root / f"{name}-mask.png"
    Image.fromarray(img.astype(np.uint8)).save(rgb)
    Image.fromarray((mask * 255).astype(np.uint8)).convert("RGB").save(m)
    return {
        "render": name, "scene": "field", "pose": "walking" if present else "absent",
        "lighting": lighting, "distance_m": d, "dori": DORI[d], "azimuth": pos * 45,
        "elevation": 0, "present": present, "ppm": PPM[d], "rgb": str(rgb), "mask": str(m),
    }  # fmt: skip


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The grid run end to end: items, their gold (present AND discernible) and a benchmark
    run of both SIMULATED viewers."""
    from truthline.benchmark import RunConfig, load_run, run_benchmark
    from truthline.workspace import Workspace

    root = tmp_path_factory.mktemp("planted")
    rng = np.random.default_rng(0)
    rows = [
        _planted(root, f"p{d}-{lt}-{o}-{p}-{int(pr)}".replace(".", "_"), d, lt, o, p, pr, rng)
        for d in PPM
        for lt in ("noon", "midnight")
        for o in OUTFITS
        for p in range(6)
        for pr in (True, False)
    ]
    items = sd.make_items(pd.DataFrame(rows), root / "out", seed=0)
    ws = Workspace.from_env(root / "ws")
    sample = sd.label_sample(items, seed=0)
    dis.write_label_project(ws, "labels", sample, strata=["dori", "lighting"])
    sim.simulate_labels(ws.store, "labels", sample, seed=0)
    grids = {"rf_grid": {"n_estimators": [30]}, "xgb_grid": {"n_estimators": [30]}}
    human = dis.human_labels(ws.store, "labels")
    labelled, model = sd.fit_and_propagate(items, human, seed=0, folds=3, holdout=0, **grids)
    proj = sd.import_benchmark(ws, labelled, root / "out")
    snap = sd.write_gold(ws.store, proj.name, labelled, model)
    cfg = RunConfig(models=["simulated-dori:strong", "simulated-dori:weak"], snapshot=snap)
    run = load_run(ws.store, run_benchmark(ws.store, proj, cfg, progress=False)["run_id"], proj)
    labelled["gold"] = labelled["present"] & labelled["discernible"]
    return labelled, tb.syndor_tables(run.decisions, action=False)


def _expected_accuracy(items: pd.DataFrame, profile: str) -> pd.DataFrame:
    """The viewer's expected presence accuracy per condition x distance (no sampling noise)."""
    vis = sim.simulated_visibility(items)
    acc = []
    for r, v in zip(items.to_dict("records"), vis, strict=True):
        scene = sim.scene_visibility(r["ppm"], r["lighting"], r["condition"])
        h = sim.person_px(r["ppm"], r["condition"])
        _, says = sim.presence_probability(profile, float(v), scene, h)
        acc.append(says if r["gold"] else 1.0 - says)
    df = items.assign(acc=acc)
    return df.groupby(["condition", "distance_m"])["acc"].mean().unstack()


def test_visibility_follows_density_illumination_contrast_and_the_isp():
    base = {"scene": "field", "visible_px_mask": 100, "raw_bbox_h_frac": 0.3, "nv_lum_ks": 0.8}
    rows = [
        {**base, "key": f"k{i}", "lighting": lt, "condition": c}
        for i, (lt, c) in enumerate(
            [("noon", "day"), ("evening", "day"), ("midnight", "night-vision"),
             ("midnight", "night")]
        )
    ]  # fmt: skip
    small = {**rows[0], "key": "small", "raw_bbox_h_frac": 0.03}
    drab = {**rows[0], "key": "drab", "nv_lum_ks": 0.1}
    gone = {**rows[0], "key": "gone", "visible_px_mask": 0}
    noon, evening, nv, night, v_small, v_drab, v_gone = sim.simulated_visibility(
        pd.DataFrame([*rows, small, drab, gone])
    )
    assert noon > evening > nv > night > 0 and v_gone == 0
    assert v_small < noon - 0.3 and v_drab < noon - 0.3  # density and contrast each matter
    # the ISP wins back part, not all, of what darkness costs
    assert sim.illumination("midnight", "night") < sim.illumination("midnight", "night-vision")
    assert sim.illumination("midnight", "night-vision") < sim.illumination("noon", "day")
    assert sim.person_px(200.0, "night-vision") < sim.person_px(200.0, "night")  # smear
    with pytest.raises(Exception, match="unknown lighting"):
        sim.illumination("eclipse", "day")


def test_viewers_guess_in_the_dark_and_strong_sees_more_than_weak():
    for prof in sim.SIM_PROFILES:
        _, dark = sim.presence_probability(prof, 0.0, 0.05, 350.0)  # nobody, black frame
        _, lit = sim.presence_probability(prof, 0.0, 0.95, 350.0)  # nobody, clear view
        assert dark > 5 * lit  # an unseen scene is guessed about; a clear one ruled out
    s_far, _ = sim.presence_probability("strong", 0.9, 0.9, 82.0)
    w_far, _ = sim.presence_probability("weak", 0.9, 0.9, 82.0)
    w_near, _ = sim.presence_probability("weak", 0.9, 0.9, 350.0)
    assert s_far > w_far and w_near > w_far  # acuity: the weak viewer needs more pixels
    rng = random.Random(0)
    draws = [sim.simulated_presence("weak", 0.0, 0.05, 350.0, rng)[0] for _ in range(4000)]
    assert np.mean(draws) == pytest.approx(dark, abs=0.03)  # sampled as the probability says


def test_planted_grid_orders_day_nv_night_and_falls_with_distance(planted):
    labelled, tables = planted
    sampled = {(r["model"].split(":")[1], r["condition"]): r for r in tables["by_condition"]}
    ds = tables["distances"]
    assert ds == ["5.4", "10.8", "23.0"]
    for prof in ("strong", "weak"):
        exp = _expected_accuracy(labelled, prof)
        print(f"\nSIMULATED {prof}: expected presence accuracy\n{exp.round(3)}")
        print({c: [round(sampled[prof, c][d]["acc"], 3) for d in ds] for c in CONDITIONS})
        for d in PPM:  # day >= night-vision >= night at each distance
            assert exp.loc["day", d] >= exp.loc["night-vision", d] >= exp.loc["night", d]
        assert exp.loc["day", 5.4] - exp.loc["night", 5.4] > 0.2  # darkness costs a lot
        for c in ("day", "night-vision"):  # falls with distance
            assert exp.loc[c, 5.4] >= exp.loc[c, 10.8] >= exp.loc[c, 23.0]
        assert exp.loc["night-vision", 5.4] - exp.loc["night-vision", 23.0] > 0.1
        assert exp[5.4].mean() - exp[23.0].mean() > 0.03
        assert exp.loc["night"].max() - exp.loc["night"].min() < 0.02  # all guessing
        # the benchmark's own (sampled) accuracy shows the same shape
        avg = {c: sampled[prof, c]["avg"]["acc"] for c in CONDITIONS}
        assert avg["day"] > avg["night-vision"] > avg["night"]
        for d in ds:
            acc = [sampled[prof, c][d]["acc"] for c in CONDITIONS]
            assert acc[0] >= acc[1] - 0.05 and acc[1] >= acc[2] - 0.05
    strong = {c: sampled["strong", c]["avg"]["acc"] for c in CONDITIONS}
    weak = {c: sampled["weak", c]["avg"]["acc"] for c in CONDITIONS}
    assert all(strong[c] > weak[c] for c in CONDITIONS)
