"""Issue 14: an excluded annotator stays visible (marked excluded, with the signal values and
evidence the decision rests on) while gold and every team figure leave them out."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from truthline.audit import exclude_annotator, run_audit
from truthline.demo import build_simulated_loop

RUBBER = "sim-rubber"  # the planted rubber-stamp annotator of the SIMULATED loop


@pytest.fixture(scope="module")
def before_after(tmp_path_factory: pytest.TempPathFactory):
    ws = build_simulated_loop(tmp_path_factory.mktemp("excl") / "ws", n_items=16, seed=2)
    before = run_audit(ws.store, ws.project(), resamples=200).as_dict()
    exclude_annotator(ws.store, ws.project(), RUBBER, "planted rubber stamp", decided_by="lead")
    after = run_audit(ws.store, ws.project(), resamples=200).as_dict()
    return ws, before, after


def test_excluded_annotator_keeps_rows_marker_and_signal_values(before_after):
    _, before, after = before_after
    rec = after["excluded_annotators"][RUBBER]
    assert rec["reason"] == "planted rubber stamp" and rec["decided_by"] == "lead"
    assert rec["decided_at"] and rec["decided_at"][:4].isdigit()
    assert after["signals"][RUBBER]["excluded"] is True
    assert not any(s["excluded"] for a, s in after["signals"].items() if a != RUBBER)
    # the evidence is unchanged by the decision: same values, same team range, same firing
    assert after["signals"][RUBBER]["signals"] == before["signals"][RUBBER]["signals"]
    assert set(after["signals"][RUBBER]["fired"]) >= {"override_low", "vlm_kappa_high"}
    for section in ("override", "direction", "vlm_kappa", "correct_label"):
        assert after[section]["by_annotator"][RUBBER] == before[section]["by_annotator"][RUBBER]
    assert RUBBER in after["flags"]


def test_excluded_annotator_is_still_out_of_gold_and_team_figures(before_after):
    _, before, after = before_after
    assert after["counts"]["excluded"] == [RUBBER]
    team_before = before["override"]["team"]["override_rate"]["point"]
    team_after = after["override"]["team"]["override_rate"]["point"]
    # the rubber stamp keeps every prefill: leaving them out raises the team's override rate
    assert team_after > team_before
    ba = after["before_after"]["rows"]["override_rate"]
    assert ba["after"]["point"] == pytest.approx(team_after)
    assert ba["before"]["point"] == pytest.approx(team_before)
    assert after["gold_preview"]["hash"] != before["gold_preview"]["hash"]
    # the team ceiling of VLM kappa is the retained annotators' highest
    kap = after["vlm_kappa"]["by_annotator"]
    retained = [kap[a]["point"] for a in kap if a != RUBBER and kap[a]["point"] is not None]
    assert after["vlm_kappa"]["ceiling"] == pytest.approx(max(retained))
    assert kap[RUBBER]["point"] > after["vlm_kappa"]["ceiling"]


def test_cli_table_marks_the_excluded_annotator(before_after):
    ws = before_after[0]
    cmd = [sys.executable, "-m", "truthline", "--workspace", str(ws.root), "audit", "run"]
    env = {**os.environ, "COLUMNS": "240"}
    r = subprocess.run(
        [*cmd, "--resamples", "50"], capture_output=True, text=True, timeout=300, env=env
    )
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if RUBBER in line and "%" in line)
    assert "EXCLUDED: planted rubber stamp (lead," in row
    assert "FLAGGED" in row  # the signals that fired stay shown
    j = subprocess.run(
        [*cmd, "--resamples", "50", "--json"], capture_output=True, text=True, timeout=300
    )
    data = json.loads(j.stdout)
    assert data["signals"][RUBBER]["excluded"] is True
    assert data["excluded_annotators"][RUBBER]["decided_by"] == "lead"
