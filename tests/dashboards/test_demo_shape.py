"""The shape of a finished ``truthline demo`` store: a re-run of the prefill model for the
provenance gradient, a recorded exclusion, free (SIMULATED) model calls. The dashboards must
score the re-run (not the prefill against itself), say who is excluded, keep rates readable
beside edit depth, and chart calls when no call costs anything."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from sqlalchemy import select, update

from truthline.audit import (
    default_gradient_model,
    exclude_annotator,
    prediction_versions,
    run_audit,
)
from truthline.demo import build_simulated_loop
from truthline.demo._simulated_loop import PREFILL
from truthline.simulate import simulated_answer
from truthline.store import now, tables

RERUN = f"{PREFILL}@rerun"


@pytest.fixture(scope="module")
def demo_ws(tmp_path_factory: pytest.TempPathFactory):
    ws = build_simulated_loop(tmp_path_factory.mktemp("demo") / "ws", n_items=16, seed=2)
    project = ws.project()
    with ws.store.begin() as conn:
        items = conn.execute(
            select(tables.items.c.id, tables.items.c.key, tables.items.c.sim_truth).where(
                tables.items.c.project == project.name
            )
        ).all()
        rows = []
        for item, key, truth in items:
            raw = simulated_answer("steel-v1", truth, project, f"{key}#rerun")
            vals = {n: project.field_types[n].normalize(v) for n, v in raw.items()}
            rows.append(
                dict(
                    project=project.name,
                    item_id=item,
                    model_version=RERUN,
                    values=vals,
                    status="parsed",
                    simulated=True,
                    created_at=now(),
                )
            )
        conn.execute(tables.predictions.insert(), rows)
        conn.execute(update(tables.responses).values(cost_usd=0.0))
    exclude_annotator(ws.store, project, "sim-rubber", "planted rubber stamp", decided_by="test")
    return ws


def _frame(at, column: str):
    return [df.value for df in at.dataframe if column in df.value.columns]


def test_gradient_defaults_to_a_rerun_of_the_prefill(demo_ws):
    versions = prediction_versions(demo_ws.store, "steel-safety")
    assert versions == sorted([PREFILL, RERUN])
    assert default_gradient_model(versions, PREFILL) == RERUN
    assert default_gradient_model([PREFILL], PREFILL) == PREFILL
    res = run_audit(demo_ws.store, demo_ws.project(), resamples=50)
    assert res.settings["gradient_model"] == RERUN
    assert not any("self-reference" in w for w in res.warnings)


def test_dashboard_and_cli_show_the_same_gradient_default(demo_ws, run_app):
    """Issue 14: the page showed the re-run's inflation while `audit run` scored the prefill
    against itself (24.0 vs 29.5 pp on one store). Both now take run_audit's one default."""
    cmd = [sys.executable, "-m", "truthline", "--workspace", str(demo_ws.root)]
    r = subprocess.run(
        [*cmd, "audit", "run", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    assert cli["settings"]["gradient_model"] == RERUN
    at = run_app(demo_ws, page="audit")
    assert not at.exception, at.exception
    shown = next(m.value for m in at.metric if m.label.startswith("Inflation"))
    assert shown == f"{cli['gradient']['inflation_pp']['point']:+.1f}"
    grad = _frame(at, "reference")[0].set_index("reference")
    for ref, key in (("blind-arm labels", "blind"), ("VLM-sourced gold", "vlm_sourced")):
        assert math.isclose(grad.loc[ref, "point"], cli["gradient"][key]["point"])


def test_audit_page_scores_the_rerun_and_names_the_excluded(demo_ws, run_app, texts):
    at = run_app(demo_ws, page="audit")
    assert not at.exception, at.exception
    assert at.selectbox(key="audit-gradient-model").value == RERUN
    assert not any("self-reference" in w.value for w in at.warning)
    want = run_audit(demo_ws.store, demo_ws.project(), gradient_model=RERUN).as_dict()
    grad = _frame(at, "reference")[0].set_index("reference")
    assert math.isclose(
        grad.loc["VLM-sourced gold", "point"], want["gradient"]["vlm_sourced"]["point"]
    )
    assert grad.loc["VLM-sourced gold", "point"] < 1.0  # not circular
    assert any(i.value.startswith("Excluded already") and "sim-rubber" in i.value for i in at.info)
    # before/after: edit depth (a count) has its own chart; the rates chart stays on [-1, 1]
    tables_ = _frame(at, "before_point")
    assert len(tables_) == 2
    rates, other = tables_
    assert "edit_depth" not in set(rates["aggregate"]) and set(other["aggregate"]) == {"edit_depth"}
    assert rates[["before_high", "after_high"]].abs().max().max() <= 1.0
    # choosing the prefill itself brings the circularity warning back
    at.selectbox(key="audit-gradient-model").set_value(PREFILL).run()
    assert not at.exception
    assert any("self-reference" in w.value for w in at.warning)


def test_free_model_calls_are_charted_as_calls(demo_ws, run_app, texts):
    at = run_app(demo_ws, page="overview")
    assert not at.exception, at.exception
    assert "No call has a cost yet (SIMULATED or free models): calls are shown." in texts(at)


def test_audit_page_keeps_the_excluded_annotator_visible(demo_ws, run_app):
    """Issue 14: the excluded annotator keeps rows in the signals, the quadrant and the
    per-annotator direction, marked excluded, with who/when/why and the signal values."""
    at = run_app(demo_ws, page="audit")
    assert not at.exception, at.exception
    sig = _frame(at, "signal")[0]
    rubber = sig[sig["annotator"] == "sim-rubber"]
    assert len(rubber) >= 2 and rubber["excluded"].all()
    assert set(rubber["exclusion_reason"]) == {"planted rubber stamp"}
    assert (
        rubber["fired"].sum() >= 2 and not sig[sig["annotator"] != "sim-rubber"]["excluded"].any()
    )
    excl = _frame(at, "decided_by")[0]
    assert excl.to_dict("records")[0]["annotator"] == "sim-rubber"
    assert excl.loc[0, "decided_by"] == "test" and excl.loc[0, "decided_at"]
    assert excl.loc[0, "override_low"] == pytest.approx(
        rubber.set_index("signal").loc["override_low", "value"]
    )
    quad = _frame(at, "vlm_kappa_point")[0]
    # excluded, and SIMULATED (issue 26: marked in the store, shown beside the name)
    assert "sim-rubber (excluded) (SIMULATED)" in set(quad["annotator"])
    assert not any("sim-rubber" in e.value for e in at.error)  # no longer "flagged, act"


def test_agreement_page_leaves_the_excluded_out_by_default_but_offers_them(demo_ws, run_app):
    at = run_app(demo_ws, page="agreement")
    assert not at.exception, at.exception
    pick = at.multiselect(key="agr-annotators")
    assert "sim-rubber" in pick.options or "sim-rubber (excluded)" in pick.options
    assert "sim-rubber" not in pick.value
    assert any("Excluded: sim-rubber (planted rubber stamp)" in c.value for c in at.caption)
    assert "sim-rubber" not in set(_frame(at, "annotator_b")[0]["annotator_a"])
    pick.set_value([*pick.value, "sim-rubber"]).run()
    assert not at.exception, at.exception
    assert "sim-rubber" in set(_frame(at, "annotator_b")[0]["annotator_a"])
