"""The paper's protocol around the proof-of-work frames (RealityBench §4, App. C, App. D):
per-environment prompts with only that environment's answer keys and the verdict order of
the prompt-order ablation, gray-zone frames left out of the acceptability set and counted,
render sanity checks, and frames withdrawn from the benchmark with a recorded reason."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from truthline.systems.realitybench import _pow as P
from truthline.systems.realitybench._sanity import render_problems

ENVS = ("tape_gap", "plate")


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    from truthline.workspace import Workspace

    tmp = tmp_path_factory.mktemp("powp")
    frames = P.proxy_frames(12, envs=ENVS, seed=5)
    paths = []
    for i in range(len(frames)):
        p = tmp / f"{i}.png"
        Image.fromarray(np.full((12, 16, 3), 9 * (i % 25), np.uint8)).save(p)
        paths.append(str(p))
    frames["image"] = paths
    # plant: two gray-zone frames, one frame failing a render sanity check
    frames.loc[[0, 13], "gray"] = True
    frames.loc[3, "withdrawn"] = "render: blank frame"
    ws = Workspace.from_env(tmp / "ws")
    proj = P.import_benchmark(ws, frames)
    snap = P.write_gold(ws.store, proj, frames)
    return ws, proj, frames, snap


def _item(ws, proj, key):
    return next(it for it in ws.store.items(proj.name) if it["key"] == key)


def test_prompt_names_technician_requirement_and_only_its_environment_keys(bench):
    from truthline.models import render_prompt

    ws, proj, frames, _ = bench
    tape = frames[frames["environment"] == "tape_gap"].iloc[0]
    _, user = render_prompt(proj, _item(ws, proj, tape["key"]))
    assert "solar installer" in user and P.REQUIREMENTS["tape_gap"] in user
    keys = [ln.split('"')[1] for ln in user.splitlines() if ln.startswith('- "')]
    assert keys == ["acceptable", "gap", "tape_leans", "tape_reading"]
    assert "even when the photo is inadequate" in user
    # the environment's own question wording is asked
    assert "crosses the far edge of the gap" in user
    plate = frames[frames["environment"] == "plate"].iloc[0]
    _, user = render_prompt(proj, _item(ws, proj, plate["key"]))
    keys = [ln.split('"')[1] for ln in user.splitlines() if ln.startswith('- "')]
    assert "auto-body repair technician" in user and "tape_reading" not in keys
    assert keys[0] == "acceptable" and set(keys[1:]) <= set(json.loads(plate["answers"]))


def test_verdict_order_variants(bench):
    from truthline.models import render_prompt

    ws, proj, frames, _ = bench
    it = _item(ws, proj, frames.iloc[1]["key"])

    def keys(variant):
        _, user = render_prompt(proj, it, template=variant)
        return [ln.split('"')[1] for ln in user.splitlines() if ln.startswith('- "')], user

    first, _ = keys(None)
    last, text_last = keys("verdict_last")
    none, text_none = keys("no_verdict")
    assert first[0] == "acceptable" and last[-1] == "acceptable"
    assert sorted(first) == sorted(last) and none == first[1:]
    assert "acceptable" not in text_none and "Then judge" in text_last


def test_gray_frames_have_no_verdict_and_are_counted(bench):
    from truthline.benchmark import load_gold
    from truthline.benchmark._registry import Scored
    from truthline.systems.realitybench import _conditional as C

    ws, proj, frames, _ = bench
    gold = load_gold(ws.store, proj.name)
    by_key = {it.key: it for it in gold.items}
    gray_keys = set(frames.loc[[0, 13], "key"])
    for k in gray_keys:
        assert "acceptable" not in by_key[k].values  # out of the acceptability set
        assert len(by_key[k].values) >= 1  # documentation gold kept
    # scoring: an always-accept predictor's false accepts count only verdict frames
    rows = []
    for it in gold.items:
        for f, v in it.values.items():
            rows.append(
                {
                    "item_id": str(it.item_id),
                    "field": f,
                    "gold": v,
                    "pred": True if f == "acceptable" else v,
                    "correct": True if f != "acceptable" else bool(v),
                    "credit": 1.0,
                    "meta": it.meta,
                }
            )
    s = Scored(proj, pd.DataFrame(rows), pd.DataFrame())
    out = C.conditional_scores(s)
    live = frames[frames["withdrawn"] == ""]
    assert out["frames"]["gray_excluded"] == int(live["gray"].sum()) >= 2
    verdict = frames[~frames["gray"] & (frames["withdrawn"] == "")]
    assert out["false_accepts"]["of_rejected"] == int((~verdict["acceptable"]).sum())
    assert out["frames"]["acceptable"] + out["frames"]["rejected"] == len(verdict)


def test_withdrawn_frames_leave_gold_and_are_counted(bench):
    from truthline.audit import reason_counts, withdraw, withdrawals
    from truthline.benchmark import load_gold
    from truthline.errors import TruthlineError

    ws, proj, frames, _ = bench
    sick = frames.loc[3, "key"]
    gold = load_gold(ws.store, proj.name)
    assert sick not in {it.key for it in gold.items}
    assert gold.withdrawn == {sick: "render: blank frame"}
    # a manual withdrawal (the paper's board-texture defect), idempotent, undoable
    extra = list(frames.loc[[5, 6], "key"])
    assert withdraw(ws.store, proj.name, extra, "board texture defect") == 2
    assert withdraw(ws.store, proj.name, extra, "board texture defect") == 0
    assert reason_counts(withdrawals(ws.store, proj.name)) == {
        "board texture defect": 2,
        "render: blank frame": 1,
    }
    assert len(load_gold(ws.store, proj.name).items) == len(frames) - 3
    assert withdraw(ws.store, proj.name, extra, "", undo=True) == 2
    assert len(load_gold(ws.store, proj.name).items) == len(frames) - 1
    with pytest.raises(TruthlineError, match="no item"):
        withdraw(ws.store, proj.name, ["tape_gap/nope"], "x")
    with pytest.raises(TruthlineError, match="needs a reason"):
        withdraw(ws.store, proj.name, extra, "  ")


def test_render_problems():
    rng = np.random.default_rng(0)
    ok = rng.uniform(0, 1, (40, 60, 3)).astype(np.float32)
    poly = [[10, 10], [40, 10], [40, 30], [10, 30]]
    gt = {"target": {"polygon_px": poly}, "occlusion": {"blocked": 0}}
    mask = np.zeros((40, 60), bool)
    mask[10:30, 10:40] = True
    assert render_problems(gt, ok, mask) == []
    assert render_problems(gt, (ok * 255).astype(np.uint8), mask) == []
    assert "blank frame" in render_problems(gt, np.full_like(ok, 0.5), mask)[0]
    assert "target covers 0%" in render_problems(gt, ok, np.zeros_like(mask))[0]
    # an occluded target may be hidden: not a render defect
    occluded = {**gt, "occlusion": {"blocked": 3}}
    assert render_problems(occluded, ok, np.zeros_like(mask)) == []
    assert "projection" in render_problems({**gt, "projection_check_px": 3.0}, ok, mask)[0]
    bad = ok.copy()
    bad[0, 0, 0] = np.nan
    assert render_problems(gt, bad, mask) == ["render: non-finite pixel values"]


def test_positive_stratum_frames_leave_random_frames_alone_and_false_accepts(bench):
    from truthline.benchmark._registry import Scored
    from truthline.systems.realitybench import _conditional as C

    base = P.sample_params("tape_gap", 6, seed=2)
    more = P.sample_params("tape_gap", 6, seed=2, positive=4)
    assert more[:6] == base  # asking for positives changes no random frame
    assert all(p["stratum"] == P.POSITIVE and p["bad_factors"] == [] for p in more[6:])
    # a rejected positive-stratum frame is not a false-accept opportunity
    rows = [
        {"item_id": str(i), "field": "acceptable", "gold": g, "pred": True, "correct": g,
         "credit": 1.0, "meta": {"sample_stratum": st, "environment": "tape_gap"}}
        for i, (g, st) in enumerate(
            [(False, "random"), (False, "positive"), (True, "positive"), (True, "random")]
        )
    ]  # fmt: skip
    out = C.conditional_scores(Scored(bench[1], pd.DataFrame(rows), pd.DataFrame()))
    assert out["false_accepts"] == {"n": 1, "of_rejected": 1}
    assert out["by_environment"]["tape_gap"]["rejected_frames"] == 1


def test_environment_table_lists_the_eleven_with_their_terms():
    import tomllib
    from pathlib import Path

    rows = P.environment_table(n=20)
    assert [r["environment"] for r in rows] == list(P.ENVIRONMENTS) and len(rows) == 11
    fields = set(tomllib.loads(Path("projects/proof-of-work/project.toml").read_text())["fields"])
    by = {r["environment"]: r for r in rows}
    for r in rows:
        assert r["requirement"] and r["technician"] and set(r["fields"]) <= fields
        assert {"in_frame", "occlusion"} <= set(r["scene_terms"]), r["environment"]
        assert 0.0 < r["acceptable_random"] < 1.0
    assert "tape_upright" in by["tape_gap"]["scene_terms"]  # the paper's 5-degree rule
    assert by["tape_gap"]["thresholds"]["tape_upright"] == ["<=", 5.0]
    assert "car_in_frame" in by["ro_board"]["scene_terms"]
