"""Conditional scoring (RealityBench): documentation only on scorer-acceptable frames,
false accepts on the rest, tolerances from the field types, "any named part counts",
Kendall tau rankings with paired bootstrap CIs, human baseline rows. Hand-computed
expectations; Kendall's tau checked against scipy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from truthline.benchmark import RunScored, Scored, compute_metrics, compute_run_metrics
from truthline.benchmark import _metrics as M
from truthline.project import load_project
from truthline.systems.realitybench import _conditional as C

PROJECT = Path(__file__).resolve().parents[2] / "projects" / "proof-of-work"


@pytest.fixture(scope="module")
def project():
    return load_project(PROJECT)


def decisions(project, rows) -> pd.DataFrame:
    """rows: (item, env, field, gold, pred[, rendering]) -> scored decisions via the field types."""
    out = []
    for r in rows:
        item, env, field, gold, pred = r[:5]
        ft = project.field(field)
        g, p = ft.normalize(gold), (None if pred is None else ft.normalize(pred))
        out.append(
            {
                "item_id": item,
                "parent": item.split("/")[0],
                "stratum": env,
                "condition": None,
                "path": field,
                "field": field,
                "entity": None,
                "gold": g,
                "pred": p,
                "correct": bool(p is not None and ft.agree(g, p)),
                "credit": float(ft.credit(g, p)) if p is not None else 0.0,
                "provenance": "scene",
                "status": "parsed",
                "confidence": None,
                "meta": {"environment": env, **({"rendering": r[5]} if len(r) > 5 else {})},
            }
        )
    return pd.DataFrame(out)


def scored(project, rows, resamples=200) -> Scored:
    return Scored(project, decisions(project, rows), pd.DataFrame(), M.Resampling(resamples, 0))


ROWS = [
    # accepted tape frame: reading within 1/8 in (6.5 vs 6.6), gap outside 1/4 in
    ("t1", "tape_gap", "acceptable", True, True),
    ("t1", "tape_gap", "tape_reading", 6.5, 6.6),
    ("t1", "tape_gap", "gap", 0.75, 1.1),
    # rejected tape frame the model accepts (a false accept); its wrong answers do not count
    ("t2", "tape_gap", "acceptable", False, True),
    ("t2", "tape_gap", "tape_reading", 4.0, 9.0),
    # accepted gauge frame: 0.2 deg tolerance (20.1 vs 20.25 is right)
    ("g1", "slope_gauge", "acceptable", True, False),
    ("g1", "slope_gauge", "slope", 20.1, 20.25),
    # rejected gauge frame the model rejects too
    ("g2", "slope_gauge", "acceptable", False, False),
    ("g2", "slope_gauge", "slope", 10.0, 10.0),
    # accepted car frame: naming one of the visible sides counts
    ("c1", "vehicle_face", "acceptable", True, True),
    ("c1", "vehicle_face", "visible_face", ["rear", "right"], ["right"]),
]


def test_documentation_counts_only_on_accepted_frames_and_false_accepts_on_the_rest(project):
    r = C.conditional_scores(scored(project, ROWS))
    # accepted frames t1, g1, c1: reading right, gap wrong, slope right, face right -> 3/4
    assert r["value"].point == pytest.approx(3 / 4)
    assert r["documentation_on_rejected"].point == pytest.approx(1 / 2)  # t2 wrong, g2 right
    assert r["false_accepts"] == {"n": 1, "of_rejected": 2}
    assert r["frames"] == {
        "acceptable": 3,
        "rejected": 2,
        "gray_excluded": 0,
        "documentation_without_verdict": 0,
    }
    a = r["acceptability"]
    assert a["counts"] == {"tp": 2, "fp": 1, "fn": 1, "tn": 1}
    assert a["false_accept_rate"].point == pytest.approx(0.5)
    assert a["f1"].point == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    env = r["by_environment"]
    assert set(env) == {"tape_gap", "slope_gauge", "vehicle_face"}
    assert env["tape_gap"]["false_accepts"] == 1 and env["tape_gap"]["rejected_frames"] == 1
    assert env["tape_gap"]["documentation"].point == pytest.approx(0.5)
    assert env["slope_gauge"]["documentation"].point == 1.0
    assert r["by_field"]["tape_reading"]["score"].point == 1.0
    assert r["by_field"]["gap"]["score"].point == 0.0


def test_any_named_part_counts_only_for_declared_fields(project):
    rows = [
        ("c1", "vehicle_face", "acceptable", True, True),
        ("c1", "vehicle_face", "visible_face", ["rear", "right"], ["right"]),
        ("c2", "vehicle_face", "acceptable", True, True),
        ("c2", "vehicle_face", "visible_face", ["rear"], ["front"]),
    ]
    s = scored(project, rows)
    assert C.conditional_scores(s)["value"].point == pytest.approx(0.5)
    # without the rule, the set must match exactly: c1 is wrong too
    assert s.decisions.loc[s.decisions["field"] == "visible_face", "correct"].sum() == 0


def test_registered_metric_and_missing_verdicts(project):
    out = compute_metrics(scored(project, ROWS), ["conditional"])
    assert out["conditional"]["value"].point == pytest.approx(3 / 4)
    none = C.conditional_scores(scored(project, [("x", "e", "slope", 1.0, 1.0)]))
    assert none["value"] is None and "acceptable" in none["note"]


def _model_rows(quality: float, acc_quality: float, rng, rendering=None):
    rows = []
    for i in range(40):
        env = ("tape_gap", "plate")[i % 2]
        ok = bool(i % 3)
        extra = (rendering,) if rendering else ()
        item = f"s{i}/{rendering}" if rendering else f"s{i}/a"
        pred_ok = ok if rng.random() < acc_quality else not ok
        rows.append((item, env, "acceptable", ok, pred_ok, *extra))
        right = rng.random() < quality
        rows.append((item, env, "slope", 10.0, 10.0 if right else 12.0, *extra))
    return rows


def _run(project, specs, rendering=False):
    rng = np.random.default_rng(1)
    entries = {}
    for name, q, aq in specs:
        rows = (
            _model_rows(q, aq, rng, "spp16") + _model_rows(q, aq, rng, "spp4")
            if rendering
            else _model_rows(q, aq, rng)
        )
        entries[name] = scored(project, rows)
    return RunScored(project, entries, {n: "simulated" for n in entries}, rs=M.Resampling(300, 0))


def test_kendall_tau_between_the_two_tracks_matches_scipy(project):
    v = _run(project, [("a", 0.95, 0.9), ("b", 0.7, 0.75), ("c", 0.5, 0.6), ("d", 0.3, 0.55)])
    r = compute_run_metrics(v, ["acceptability_documentation_rank"])[
        "acceptability_documentation_rank"
    ]
    f1 = [r["acceptability_f1"][m] for m in r["models"]]
    doc = [r["documentation"][m] for m in r["models"]]
    assert r["value"].point == pytest.approx(kendalltau(f1, doc).statistic)
    assert r["value"].low <= r["value"].point <= r["value"].high
    assert r["value"].resamples == 300


def test_rendering_transfer_pairs_scenes_across_renderings(project):
    v = _run(project, [("a", 0.95, 0.9), ("b", 0.75, 0.8), ("c", 0.5, 0.7), ("d", 0.2, 0.6)], True)
    r = C.rendering_transfer(v)
    assert r["renderings"] == ["spp16", "spp4"] and r["scenes"] == 40
    a = [r["documentation[spp16]"][m] for m in r["models"]]
    b = [r["documentation[spp4]"][m] for m in r["models"]]
    assert r["value"].point == pytest.approx(kendalltau(a, b).statistic)
    assert r["value"].point > 0.5  # the planted ranking survives the rendering change
    few = C.rendering_transfer(_run(project, [("a", 0.9, 0.9), ("b", 0.5, 0.5)], True))
    assert few["value"] is None


def test_human_baseline_rows_against_the_scorer():
    scorer = {"f1": True, "f2": False, "f3": True, "f4": False}
    ratings = pd.DataFrame(
        [
            ("f1", "r1", True),
            ("f2", "r1", True),
            ("f3", "r1", True),
            ("f4", "r1", False),
            ("f1", "r2", True),
            ("f2", "r2", False),
            ("f3", "r2", None),
            ("f4", "r2", False),
            ("f1", "r3", False),
            ("f2", "r3", False),
            ("f3", "r3", True),
            ("f4", "r3", True),
        ],
        columns=["item", "rater", "acceptable"],
    )
    rows = C.human_baseline(
        ratings, scorer, environment={k: "tape_gap" for k in scorer}, resamples=100
    )
    by = {r["rater"]: r for r in rows}
    assert by["r1"]["counts"] == {"tp": 2, "fp": 1, "fn": 0, "tn": 1}
    assert by["r1"]["f1"].point == pytest.approx(0.8)
    assert by["r2"]["frames"] == 3  # the skip is left out, not counted as a reject
    # majority: f1 2-1 yes, f2 2-1 no, f3 2-0 yes, f4 2-1 no -> agrees with the scorer
    assert by["raters' majority"]["f1"].point == pytest.approx(1.0)
    assert "tape_gap" in by["r1"]["by_environment"]


def test_simulated_pow_profiles_resolve_in_a_fresh_benchmark_process():
    # `truthline benchmark run --model simulated:pow-strong` runs in a process that never
    # imported the scenes pipeline: the profiles must come with the benchmark package
    import subprocess
    import sys

    code = (
        "import truthline.benchmark\n"
        "from truthline.simulate._vlm import get_profile\n"
        "print(get_profile('pow-strong').description)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "SIMULATED" in out.stdout


def test_ranking_rows_from_across_metrics_output():
    across = [
        {
            "run_id": "r1",
            "metrics": {
                "acceptability_documentation_rank": {
                    "value": {"point": 0.6, "low": 0.2, "high": 1.0},
                    "items": 40,
                },
                "rendering_transfer": {
                    "value": {"point": 1.0, "low": None, "high": None},
                    "renderings": ["spp16", "spp4"],
                    "scenes": 20,
                },
            },
        },
        {"run_id": "r2", "metrics": {"rendering_transfer": {"value": None, "note": "x"}}},
    ]
    rows = C.ranking_rows(across)
    assert rows == [
        {
            "run": "r1",
            "ranking": "acceptability F1 vs documentation",
            "Kendall tau": "0.60 [0.20, 1.00]",
            "n": 40,
        },
        {"run": "r1", "ranking": "documentation, spp16 vs spp4", "Kendall tau": "1.00", "n": 20},
    ]
