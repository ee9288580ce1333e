"""SteelBench's appendix tables (truthline.systems.steelbench._tables) on planted decisions
whose answers are computed by hand: zones and domains with the cross-model Spearman of
zone rankings (Fig. 10, Table 25), the worker-count slope (Fig. 12), safety error
directions and DRS sensitivity (Tables 23, 18), Cramér's V and the within-camera
visibility effect (App. E.5), the human reference and gap (App. D); the report sections
on a SIMULATED run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from truthline.benchmark import _metrics as M
from truthline.project import load_project
from truthline.systems.steelbench import _tables as T

ROOT = Path(__file__).resolve().parents[2] / "projects"
RS = M.Resampling(200, 0)


@pytest.fixture(scope="module")
def project():
    return load_project(ROOT / "steel-safety")


def dec(
    project: Any,
    model: str,
    item: str,
    worker: str,
    gold: Any,
    pred: Any,
    *,
    field: str = "workers.action",
    camera: str = "A",
    site: str = "X",
    visibility: str = "clear",
    provenance: str = "expert",
) -> dict[str, Any]:
    """One scored decision as ``load_run`` gives it (field types decide correctness)."""
    ft = project.field(field)
    g, p = ft.normalize(gold), ft.normalize(pred)
    sub = field.split(".", 1)[1]
    return {
        "model": model,
        "variant": "",
        "condition": "base",
        "control": "",
        "item_id": item,
        "parent": f"video_{item}",
        "stratum": None,
        "path": f"workers[{worker}].{sub}",
        "field": field,
        "entity": worker,
        "gold": g,
        "pred": p,
        "correct": bool(ft.agree(p, g)),
        "credit": float(ft.credit(p, g)),
        "provenance": provenance,
        "status": "parsed",
        "confidence": None,
        "meta": {"camera": camera, "site": site, "visibility": visibility},
    }


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows)


# -- Fig. 10 / Table 25 ---------------------------------------------------------------------
def zone_rows(project):
    """m1: A 2/2, B 1/2, C 0/2, D 1/1; m2: A 1/2, B 2/2, C 0/2, D 1/1 (D: one clip)."""
    plan = {
        "m1": {"A": [1, 1], "B": [1, 0], "C": [0, 0], "D": [1]},
        "m2": {"A": [1, 0], "B": [1, 1], "C": [0, 0], "D": [1]},
    }
    site = {"A": "X", "B": "X", "C": "Y", "D": "Y"}
    out = []
    for m, zones in plan.items():
        for z, hits in zones.items():
            for k, hit in enumerate(hits):
                out.append(
                    dec(
                        project,
                        m,
                        f"{z}{k}",
                        "P1",
                        "A1",
                        "A1" if hit else "B1",
                        camera=z,
                        site=site[z],
                    )
                )
    return frame(out)


def test_zone_accuracy_spread_and_spearman(project):
    z = T.zone_tables(project, zone_rows(project), RS, min_clips=2)
    assert z.dropped_zones == {"D": 1}
    acc = {(r.model, r.group): r.accuracy.point for r in z.zones}
    assert acc == {
        ("m1", "A"): 1.0, ("m1", "B"): 0.5, ("m1", "C"): 0.0,
        ("m2", "A"): 0.5, ("m2", "B"): 1.0, ("m2", "C"): 0.0,
    }  # fmt: skip
    assert {r.domain for r in z.zones if r.group in "AB"} == {"X"}
    assert z.spread == {"m1": 1.0, "m2": 1.0}
    # ranks m1 (A, B, C) = (1, 2, 3), m2 = (2, 1, 3): rho = 1 - 6 * 2 / (3 * 8) = 0.5
    assert z.agreement.zones == ("A", "B", "C")
    assert z.agreement.mean_rho == pytest.approx(0.5)
    dom = {(r.model, r.group): (r.accuracy.point, r.clips) for r in z.domains}
    assert dom[("m1", "X")] == (0.75, 4) and dom[("m1", "Y")] == (pytest.approx(1 / 3), 3)


# -- Fig. 12 --------------------------------------------------------------------------------
def worker_rows(project):
    """k=1: 2 clips, 2/2 right; k=2: 2 clips, 3/4; k=3: 2 clips, 2/6; k=6 (Layer 1): out."""
    plan = {1: [[1], [1]], 2: [[1, 1], [1, 0]], 3: [[1, 0, 0], [1, 0, 0]], 6: [[0] * 6]}
    out = []
    for k, clips in plan.items():
        for c, hits in enumerate(clips):
            for w, hit in enumerate(hits):
                out.append(dec(project, "m", f"k{k}_{c}", f"P{w + 1}", "A1", "A1" if hit else "F1"))
    return frame(out)


def test_worker_count_slope_and_dropped_bins(project):
    (t,) = T.worker_trends(project, worker_rows(project), RS, min_decisions=2)
    assert [(b.workers, b.decisions, b.accuracy.point) for b in t.bins] == [
        (1, 2, 1.0), (2, 4, 0.75), (3, 6, pytest.approx(1 / 3))
    ]  # fmt: skip
    # least squares on (1, 1), (2, .75), (3, 1/3): (1/3 - 1) / 2
    assert t.slope.point == pytest.approx(-1 / 3)
    assert t.slope.low <= t.slope.point <= t.slope.high
    assert t.step_1_2 == pytest.approx(-0.25)
    (t3,) = T.worker_trends(project, worker_rows(project), RS, min_decisions=3)
    assert t3.dropped == (1,) and t3.slope.point == pytest.approx(1 / 3 - 0.75)


# -- Tables 23 and 18 -----------------------------------------------------------------------
def test_safety_directions_counts(project):
    f = "workers.safety_violation"
    pairs = [(True, False), (True, False), (False, True), (False, True), (False, True),
             (True, True), (False, False)]  # fmt: skip
    rows = frame(
        [dec(project, "m", f"s{i}", "P1", g, p, field=f) for i, (g, p) in enumerate(pairs)]
    )
    (r,) = T.safety_directions(project, rows, RS)
    assert (r.violations, r.caught, r.missed, r.false_alarms) == (3, 1, 2, 3)
    assert r.false_alarm_share.point == pytest.approx(0.6) and r.regime == "false-alarm"
    assert r.safety_recall.point == pytest.approx(1 / 3)


def test_drs_sensitivity_relaxed_and_tightened(project):
    values = {"naudc": {"value": 0.80}, "crg": {"value": {"point": 0.21}},
              "safety_recall": 0.95, "dwa": {"value": 0.5}}  # fmt: skip
    r = T.drs_sensitivity({"m": values}, project.benchmark.checks)["m"]
    # naudc .80 < .85 but >= .765; crg .21 > .20 but <= .22; recall .95 >= .90, < .99
    assert (r["drs"], r["drs_relaxed"], r["drs_strict"]) == (0.25, 0.75, 0.0)
    stored = {"drs": {"drs": 1.0, "drs_relaxed": 1.0, "drs_strict": 1.0, "checks": [{}]}}
    assert T.drs_sensitivity({"m": stored}, project.benchmark.checks)["m"]["drs"] == 1.0


# -- App. E.5 -------------------------------------------------------------------------------
def test_cramers_v_hand_computed():
    # 2x2 [[3, 1], [1, 3]]: chi2 = 8 (9 - 1)^2 / 4^4 = 2, V = sqrt(2 / 8) = 0.5
    cam = ["a"] * 4 + ["b"] * 4
    vis = ["clear"] * 3 + ["dust"] + ["clear"] + ["dust"] * 3
    assert T.cramers_v(cam, vis) == pytest.approx(0.5)
    assert T.cramers_v(["a", "a", "b", "b"], ["clear", "dust"] * 2) == pytest.approx(0.0)
    assert T.cramers_v(["a", "b"], ["clear", "clear"]) is None


def test_visibility_effect_within_camera(project):
    """c1: clear 2/2, dust 1/2; c2: clear 1/2, dust 0/2; c3: dust only, 2/2. Within camera
    -0.5 (both cameras -0.5, weights 1); unstratified 3/6 - 3/4 = -0.25."""
    plan = {("c1", "clear"): [1, 1], ("c1", "dust"): [1, 0], ("c2", "clear"): [1, 0],
            ("c2", "dust"): [0, 0], ("c3", "dust"): [1, 1]}  # fmt: skip
    rows = frame(
        [
            dec(project, "m", f"{c}{v}{i}", "P1", "A1", "A1" if h else "B1", camera=c, visibility=v)
            for (c, v), hits in plan.items()
            for i, h in enumerate(hits)
        ]
    )
    (e,) = T.visibility_effects(project, rows, RS, camera="camera", visibility="visibility",
                                clear="clear")  # fmt: skip
    assert e.condition == "dust" and (e.cameras_used, e.cameras_lacking) == (2, 1)
    assert e.within_camera.point == pytest.approx(-0.5)
    assert e.unstratified.point == pytest.approx(-0.25)
    c = T.camera_confound(rows, "camera", "visibility")
    assert (c.clips, c.cameras, c.conditions) == (10, 3, 2) and 0 < c.cramers_v < 1


# -- App. D ---------------------------------------------------------------------------------
def human_case(project):
    """Item 1 (expert gold P1=A1, P2=B1), item 2 (anchored gold: never a human's reference).
    h1: item 1 P1 right, P2 wrong; h2: both right. m1: P1 right only; m2: none right."""
    rows = []
    for m, preds in (("m1", ("A1", "B5")), ("m2", ("F1", "F1"))):
        rows.append(dec(project, m, 1, "P1", "A1", preds[0]))
        rows.append(dec(project, m, 1, "P2", "B1", preds[1]))
        rows.append(dec(project, m, 2, "P1", "B1", "B1", provenance="anchored_kept"))
    ann = pd.DataFrame(
        [
            (1, "h1", "workers", [{"worker_id": "P1", "action": "A1"},
                                  {"worker_id": "P2", "action": "B5"}]),
            (1, "h2", "workers", [{"worker_id": "P1", "action": "A1"},
                                  {"worker_id": "P2", "action": "B1"}]),
            (2, "h1", "workers", [{"worker_id": "P1", "action": "F1"}]),
        ],
        columns=["item_id", "annotator", "field_path", "value"],
    )  # fmt: skip
    return frame(rows), ann


def test_human_reference_and_gap(project):
    d, ann = human_case(project)
    humans = T.score_humans(project, T.decisions_of_first(d), ann)
    assert set(humans["item_id"]) == {1}  # item 2's gold is not expert-reviewed
    refs, pooled = T.human_reference(humans, RS)
    acc = {r.who: (r.accuracy.point, r.decisions) for r in refs}
    assert acc == {"h1": (0.5, 2), "h2": (1.0, 2), "blind arm (pooled)": (0.75, 2)}
    gaps = {g.model: g for g in T.human_gaps(pooled, d, RS)}
    assert gaps["m1"].gap.point == pytest.approx(0.25) and gaps["m1"].best
    assert gaps["m2"].gap.point == pytest.approx(0.75) and not gaps["m2"].best
    assert gaps["m1"].model_accuracy.point == pytest.approx(0.5)
    assert (gaps["m1"].clips, gaps["m1"].decisions) == (1, 2)


def test_blind_annotations_reads_blind_tier1_only(bench_ws):
    from truthline.store import now, tables

    ws, project, items, _ = bench_ws
    iid = items[0][0]
    ts = now()
    base = dict(project=project.name, item_id=iid, field_path="worker_count", tier=1,
                value=2, skipped=False, flagged=False, source="simulated", stored_at=ts)  # fmt: skip
    with ws.store.begin() as conn:
        for who, arm, tier, skipped in (
            ("h1", "blind", 1, False),
            ("h2", "anchored", 1, False),
            ("x", "blind", 2, False),
            ("h3", "blind", 1, True),
        ):
            conn.execute(tables.annotations.insert().values(
                **{**base, "annotator": who, "arm": arm, "tier": tier, "skipped": skipped,
                   "source_id": f"t:{who}"}))  # fmt: skip
    got = T.blind_annotations(ws.store, project.name, [iid])
    assert got[["annotator", "value"]].values.tolist() == [["h1", 2]]


# -- report sections on a SIMULATED run ----------------------------------------------------
def test_report_sections_on_simulated_run(bench_ws, tmp_path):
    from truthline.benchmark import RunConfig, leaderboard, run_benchmark
    from truthline.benchmark._report import ReportContext

    ws, project, _, _ = bench_ws
    models = ["simulated:steel-strong", "simulated:steel-weak"]
    man = run_benchmark(ws.store, project, RunConfig(models=models), progress=False)
    rid = man["run_id"]
    board = leaderboard(ws.store, project, [rid], resamples=0)
    ctx = ReportContext(ws.store, project, [rid], {"leaderboard": board}, tmp_path, resamples=50)
    secs = T.report_sections(ctx)
    titles = [s.title for s in secs]
    for part in ("Fig. 10", "Table 25", "Fig. 12", "Table 23", "Table 18", "App. E.5"):
        assert any(part in t for t in titles), part
    assert not any("App. D" in t for t in titles)  # fixture gold has no expert provenance
    data = ctx.data["steelbench"]
    assert {r["model"] for r in data["safety"]} == set(models)
    shown = {r["model"] for s in secs if s.tables for r in s.tables[0].records() if "model" in r}
    assert shown == {f"{m} [SIMULATED]" for m in models}
    rows = zone_rows(project)
    assert T.is_steel(project)(rows)
    assert not T.is_steel(load_project(ROOT / "proof-of-work"))(rows)
    assert not T.is_steel(project)(rows[rows["field"] != "workers.action"])


def test_human_reference_section_from_the_store(bench_ws, tmp_path):
    """Four blind clips made expert-reviewed; h_good labels them as their truth, h_bad
    calls every action F1: h_good 100 %, h_bad = the share of F1 actions, pooled = the mean."""
    from sqlalchemy import update

    from truthline.benchmark import RunConfig, leaderboard, run_benchmark
    from truthline.benchmark._report import ReportContext
    from truthline.store import now, tables

    ws, project, items, _ = bench_ws
    expert = items[:4]
    ts = now()
    with ws.store.begin() as conn:
        ids = [iid for iid, _ in expert]
        conn.execute(
            update(tables.gold).where(tables.gold.c.item_id.in_(ids)).values(provenance="expert")
        )
        for iid, truth in expert:
            for who in ("h_good", "h_bad"):
                workers = [
                    {
                        "worker_id": w["worker_id"],
                        "action": w["action"] if who == "h_good" else "F1",
                    }
                    for w in truth["workers"]
                ]
                conn.execute(tables.annotations.insert().values(
                    project=project.name, item_id=iid, field_path="workers", annotator=who,
                    arm="blind", tier=1, value=workers, skipped=False, flagged=False,
                    source="simulated", source_id=f"t:{who}:{iid}", stored_at=ts))  # fmt: skip
    man = run_benchmark(
        ws.store, project, RunConfig(models=["simulated:steel-weak"]), progress=False
    )
    board = leaderboard(ws.store, project, [man["run_id"]], resamples=0)
    ctx = ReportContext(ws.store, project, [man["run_id"]], {"leaderboard": board}, tmp_path,
                        resamples=50)  # fmt: skip
    secs = {s.title: s for s in T.report_sections(ctx)}
    assert "SteelBench: human reference (App. D)" in secs
    actions = [w["action"] for _, t in expert for w in t["workers"]]
    share_f1 = actions.count("F1") / len(actions)
    got = {h["who"]: h for h in ctx.data["steelbench"]["human"]}
    assert got["h_good"]["accuracy"]["point"] == pytest.approx(1.0)
    assert got["h_good"]["decisions"] == len(actions)
    assert got["h_bad"]["accuracy"]["point"] == pytest.approx(share_f1)
    assert got["blind arm (pooled)"]["accuracy"]["point"] == pytest.approx((1 + share_f1) / 2)
    (gap,) = ctx.data["steelbench"]["human_gap"]
    m_acc = gap["model_accuracy"]["point"]
    assert gap["best"] and gap["gap"]["point"] == pytest.approx((1 + share_f1) / 2 - m_acc)
