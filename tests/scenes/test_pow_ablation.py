"""RealityBench §7 and Table 4 from benchmark runs of SIMULATED models over proxy frames:
error tracing of wrong rejections, documentation on acceptable vs other frames and the
prompt-order ablation with a rerun, each checked against counts made by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.scenes.test_pow_tables import FLIPPER, ORACLE, pow_workspace
from truthline.simulate._vlm import SimProfile, registered_profiles, simulated_profile
from truthline.systems.realitybench import _ablation as A
from truthline.systems.realitybench import _tables as T

STUBBORN = "simulated:pow-sim-rejects-all"
"""SIMULATED: rejects every acceptable frame (accepts every other) but reads every field right."""
MID = "simulated:pow-mid"

if "pow-sim-rejects-all" not in registered_profiles():

    @simulated_profile("pow-sim-rejects-all")
    def _stubborn() -> SimProfile:
        return SimProfile(
            description="SIMULATED: every verdict flipped, every documentation answer right",
            default_error=0.0,
            field_error={"acceptable": 1.0},
        )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("powa")
    ws, proj, frames, ids = pow_workspace(
        tmp,
        [ORACLE, FLIPPER, STUBBORN, MID],
        variants=("verdict_last", "no_verdict"),
        rerun=[MID],
    )
    dec = T.load_decisions(ws.store, proj, ids)
    return ws, proj, frames, ids, dec


def _of(dec, model, field):
    return dec[(dec["model"] == model) & (dec["field"] == field) & (dec["variant"] == "")]


def test_error_tracing_attributes_planted_misreadings(runs):
    _ws, _proj, _frames, _ids, dec = runs
    rows = {(r.model, r.environment): r for r in A.error_tracing(dec[dec["variant"] == ""])}
    acc = _of(dec, ORACLE, "acceptable")
    env = acc["meta"].map(lambda m: m["environment"])
    for e in ("tape_gap", "slope_gauge"):
        accepted = int(acc.loc[env == e, "gold"].astype(bool).sum())
        assert accepted, e
        for m in (FLIPPER, STUBBORN):  # both reject every frame the scorer accepts
            assert rows[(m, e)].wrong_rejections == accepted
        assert rows[(ORACLE, e)].wrong_rejections == 0 and rows[(ORACLE, e)].scene_share is None
    # says the tape leans exactly when it does not: all its tape_gap wrong rejections are
    # scene misreadings; it reads the gauge right, so its slope_gauge ones are requirement
    # misreadings; the stubborn model reads everything right
    f, s = rows[(FLIPPER, "tape_gap")], rows[(STUBBORN, "tape_gap")]
    assert (f.scene_misreading, f.requirement_misreading) == (f.wrong_rejections, 0)
    assert f.scene_share is not None and f.scene_share.point == 1.0
    assert (s.scene_misreading, s.requirement_misreading) == (0, s.wrong_rejections)
    assert rows[(FLIPPER, "slope_gauge")].scene_share.point == 0.0
    # the reported defects that triggered rejection, counted by hand
    lean = _of(dec, FLIPPER, "tape_leans")
    verdict = dict(zip(_of(dec, FLIPPER, "acceptable")["item_id"], _of(dec, FLIPPER, "acceptable")["pred"], strict=True))  # fmt: skip
    said = lean.loc[lean["pred"].astype(bool), "item_id"].tolist()
    assert f.defect_claims == len(said) > 0
    assert f.defect_rejected == sum(verdict.get(i) is False for i in said)
    assert f.defect_rejection_share.point == pytest.approx(f.defect_rejected / len(said))
    assert rows[(FLIPPER, "slope_gauge")].defect_claims is None  # slope has no defect value
    # pooled over models: the sums
    pooled = rows[("all", "tape_gap")]
    models = [r for (m, e), r in rows.items() if e == "tape_gap" and m != "all"]
    assert pooled.wrong_rejections == sum(r.wrong_rejections for r in models)
    assert pooled.scene_misreading == sum(r.scene_misreading for r in models)


def test_documentation_on_acceptable_vs_other_frames(runs):
    _ws, proj, _frames, _ids, dec = runs
    rows = {
        (r.model, r.environment): r for r in A.documentation_gap(proj, dec[dec["variant"] == ""])
    }
    d = dec[(dec["model"] == FLIPPER) & (dec["variant"] == "")]
    ok = dict(zip(_of(dec, FLIPPER, "acceptable")["item_id"], _of(dec, FLIPPER, "acceptable")["gold"].astype(bool), strict=True))  # fmt: skip
    doc = d[(d["field"] != "acceptable") & d["item_id"].isin(ok)]
    on = doc[doc["item_id"].map(ok)]
    off = doc[~doc["item_id"].map(ok)]
    r = rows[(FLIPPER, "all")]
    # FLIPPER gets only tape_leans wrong; multi-choice "any named part" counts as right
    assert r.on_acceptable == pytest.approx(1 - (on["field"] == "tape_leans").mean())
    assert r.on_other == pytest.approx(1 - (off["field"] == "tape_leans").mean())
    assert (r.acceptable_n, r.other_n) == (len(on), len(off))
    assert rows[(ORACLE, "all")].on_acceptable == rows[(ORACLE, "all")].on_other == 1.0
    assert rows[(ORACLE, "plate")].gap == 0.0


def test_rerun_has_its_own_cache_key(runs):
    from sqlalchemy import select

    from truthline.store import tables

    ws, _proj, _frames, _ids, _dec = runs
    r = tables.run_results
    with ws.store.begin() as conn:
        got = {
            rid: {x.response_id for x in conn.execute(
                select(r.c.response_id).where(r.c.run_id == rid, r.c.model == MID))}
            for rid in ("pow-default", "pow-rerun")
        }  # fmt: skip
    assert got["pow-default"] and not got["pow-default"] & got["pow-rerun"]


def test_prompt_order_ablation_against_hand_counts(runs):
    ws, proj, _frames, _ids, dec = runs
    again = T.load_decisions(ws.store, proj, ["pow-rerun"])
    rows = A.prompt_order_ablation(A.with_rerun(dec, again), resamples=300)
    by = {(r.model, r.environment, r.variant): r for r in rows}
    assert {v for (m, e, v) in by if m == MID} == {"verdict_last", "no_verdict", A.RERUN}
    lean = dec[(dec["model"] == MID) & (dec["field"] == "tape_leans")]
    claims = {v: dict(zip(g["item_id"], g["pred"].astype(bool), strict=True)) for v, g in lean.groupby("variant")}  # fmt: skip
    for v in ("verdict_last", "no_verdict"):
        common = sorted(set(claims[""]) & set(claims[v]))
        base = np.mean([claims[""][i] for i in common])
        other = np.mean([claims[v][i] for i in common])
        r = by[(MID, "tape_gap", v)]
        assert (r.items, r.default_rate, r.variant_rate) == (len(common), base, other)
        assert r.difference.point == pytest.approx(other - base)
        # a SIMULATED rerun answers as before: no noise, so any CI excluding zero is a change
        assert r.rerun_difference is not None and r.rerun_difference.point == 0.0
        assert r.changed_beyond_noise == r.difference.excludes_zero()
    # the FLIPPER claims a lean exactly where there is none, whatever the prompt
    for v in ("verdict_last", "no_verdict"):
        r = by[(FLIPPER, "tape_gap", v)]
        assert r.difference.point == 0.0 and r.rerun_difference is None
        assert r.changed_beyond_noise is None  # no rerun of it: noise unknown


def _planted(default, variant, rerun, scenes):
    rows = []
    for v, claims in (("", default), ("verdict_last", variant), (A.RERUN, rerun)):
        for i, c in enumerate(claims):
            rows.append({"model": "SIMULATED", "variant": v, "item_id": i, "parent": scenes[i],
                         "meta": {"environment": "tape_gap"}, "field": "tape_leans",
                         "pred": c, "gold": False})  # fmt: skip
    return pd.DataFrame(rows)


def test_changed_only_beyond_rerun_noise():
    scenes = [f"s{i // 2}" for i in range(40)]
    default = [True] * 30 + [False] * 10
    fewer = [False] * 40
    # verdict last: no defect claimed at all; the rerun repeats the default exactly
    r = next(
        x
        for x in A.prompt_order_ablation(_planted(default, fewer, default, scenes), resamples=400)
        if x.environment == "tape_gap" and x.variant == "verdict_last"
    )
    assert r.difference.point == pytest.approx(-0.75) and r.difference.high < 0
    assert r.rerun_difference.point == 0.0 and r.changed_beyond_noise is True
    # a rerun that moves as far as the variant: not beyond noise
    r = next(
        x
        for x in A.prompt_order_ablation(_planted(default, fewer, fewer, scenes), resamples=400)
        if x.environment == "tape_gap" and x.variant == "verdict_last"
    )
    assert r.difference.excludes_zero() and r.changed_beyond_noise is False


def test_ablation_cli_with_rerun(runs):
    from truthline._cli_common import State
    from truthline.systems.realitybench._cli_tables import app

    ws, _proj, _frames, _ids, _dec = runs
    res = CliRunner().invoke(
        app, ["ablation", "--rerun", "pow-rerun", "--json", "--resamples", "100"],
        obj=State(workspace=ws.root),
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert "pow-rerun" not in out["runs"] and out["rerun"] == "pow-rerun"
    mid = [r for r in out["ablation"] if r["model"] == MID and r["variant"] != A.RERUN]
    assert mid and all(r["rerun_difference"] is not None for r in mid)
    res = CliRunner().invoke(app, ["tracing", "--json"], obj=State(workspace=ws.root))
    got = {(r["model"], r["environment"]): r for r in json.loads(res.stdout)["error_tracing"]}
    assert got[(FLIPPER, "tape_gap")]["scene_share"]["point"] == 1.0


def test_report_shows_the_ablation_for_runs_with_variants(runs):
    from types import SimpleNamespace

    from truthline.report import Report, render_markdown

    ws, proj, _frames, ids, _dec = runs
    ctx = SimpleNamespace(store=ws.store, project=proj, run_ids=ids, data={}, resamples=50)
    secs = T.report_sections(ctx)
    assert "RealityBench: prompt-order ablation (Table 4)" in [s.title for s in secs]
    got = ctx.data["realitybench_tables"]["ablation"]
    assert {r["variant"] for r in got} == {"verdict_last", "no_verdict"}
    assert all(r["changed_beyond_noise"] is None for r in got)  # no rerun in a report
    assert "no rerun" in render_markdown(Report("t", secs, simulated=True))


def test_documentation_under_each_variant_against_hand_counts(runs):
    _ws, proj, _frames, _ids, dec = runs
    rows = {(r.model, r.variant): r for r in A.variant_documentation(proj, dec, resamples=200)}
    assert {v for (m, v) in rows if m == MID} == {"verdict_last", "no_verdict"}
    d = dec[dec["model"] == MID]
    ok = dict(zip(_of(dec, MID, "acceptable")["item_id"], _of(dec, MID, "acceptable")["gold"].astype(bool), strict=True))  # fmt: skip
    doc = d[(d["field"] != "acceptable") & d["item_id"].map(lambda i: ok.get(i, False))]
    for v in ("verdict_last", "no_verdict"):
        common = set(doc.loc[doc["variant"] == "", "item_id"]) & set(
            doc.loc[doc["variant"] == v, "item_id"]
        )
        mc = doc["field"] == "visible_face"  # "any named part counts": credit > 0

        def score(variant, common=common, mc=mc):
            g = doc[(doc["variant"] == variant) & doc["item_id"].isin(common)]
            right = np.where(mc[g.index], g["credit"].astype(float) > 0, g["correct"].astype(bool))
            return right.mean()

        r = rows[(MID, v)]
        assert r.items == len(common)
        assert (r.default_score, r.variant_score) == (
            pytest.approx(score("")),
            pytest.approx(score(v)),
        )
        assert r.difference.point == pytest.approx(score(v) - score(""))
    # the oracle answers every field right under every prompt: no difference
    assert rows[(ORACLE, "no_verdict")].difference.point == 0.0


def test_rail_attachment_traces_missing_parts():
    """A planted SIMULATED rail_attachment run: the shared field is the missing-parts list
    (before lag_bolt), a named part is a defect claim."""
    rows = []
    for i, said in enumerate([["lag_bolt"], ["flashing"], ["lag_bolt"], []]):
        base = {"model": "SIMULATED", "variant": "", "item_id": i, "parent": f"s{i}",
                "meta": {"environment": "rail_attachment"}}  # fmt: skip
        rows.append({**base, "field": "acceptable", "gold": True, "pred": False, "correct": False})
        rows.append(
            {**base, "field": "missing_parts", "gold": [], "pred": said, "correct": not said}
        )
        rows.append({**base, "field": "lag_bolt", "gold": True, "pred": True, "correct": True})
    t = [r for r in A.error_tracing(pd.DataFrame(rows)) if r.model == "SIMULATED"]
    assert len(t) == 1 and t[0].field == "missing_parts"
    assert (t[0].wrong_rejections, t[0].scene_misreading, t[0].requirement_misreading) == (4, 3, 1)
    assert (t[0].defect_claims, t[0].defect_rejected) == (3, 3)
    assert A.claims_defect("missing_parts", ["l_foot"]) and not A.claims_defect("missing_parts", [])
    assert A.claims_defect("lag_bolt", False) and not A.claims_defect("lag_bolt", None)
