"""Audit kappa on a number field with a tolerance (issue 13): observed AND chance agreement
use w_ij = 1[|v_i - v_j| <= tol], so independent raters get kappa ~ 0.

Checked against a brute-force double loop (p_o over decisions, p_e over every rater-1 x
rater-2 pair of decisions) and against ``truthline.stats`` on the same values. Before the
fix the audit mixed a tolerant p_o with an exact p_e: kappa ~ 0.2 for independent raters.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from truthline.audit import import_table, run_audit
from truthline.project import load_project
from truthline.stats import agreement, as_ratings

TOML = """
name = "tol"
media = "image"

[audit]
resamples = 50
seed = 3

[fields.action]
type = "single_choice"
choices = ["walk", "stand", "carry"]

[fields.length]
type = "number"
unit = "in"
tolerance = 0.25
"""
TOL = 0.25
N_ANCH, N_BLIND = 400, 400
ACTIONS = ("walk", "stand", "carry")


def brute_kappa(a: np.ndarray, b: np.ndarray, same: np.ndarray) -> float:
    """``same[i, j]``: decision i's rater-1 value agrees with decision j's rater-2 value."""
    po = np.mean(np.diag(same))
    pe = np.mean(same)
    return float((po - pe) / (1 - pe))


def tol_same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a[:, None] - b[None, :]) <= TOL + 1e-12


@pytest.fixture
def independent(tmp_path: Path, sqlite_store, add_items, add_predictions):
    """VLM vs annotator A (anchored, items 0..399) and A vs B (blind, items 400..799), all
    ratings independent: tape readings in 1/8 inch over 0..4 inches, random actions."""
    d = tmp_path / "tol"
    d.mkdir()
    (d / "project.toml").write_text(TOML)
    project = load_project(d)
    rng = np.random.default_rng(7)
    n = N_ANCH + N_BLIND
    vlm_len, vlm_act = rng.integers(0, 33, n) / 8, rng.choice(ACTIONS, n)
    a_len, a_act = rng.integers(0, 33, n) / 8, rng.choice(ACTIONS, n)
    b_len, b_act = rng.integers(0, 33, n) / 8, rng.choice(ACTIONS, n)
    ids = add_items(sqlite_store, project, [f"i{k}" for k in range(n)])
    add_predictions(
        sqlite_store,
        project,
        "v1",
        {ids[f"i{k}"]: {"action": str(vlm_act[k]), "length": float(vlm_len[k])} for k in range(n)},
    )
    path = tmp_path / "labels.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "field", "annotator", "arm", "tier", "value", "shown_prediction"])
        for k in range(n):
            arm = "anchored" if k < N_ANCH else "blind"
            raters = [("A", a_act, a_len)] + ([("B", b_act, b_len)] if arm == "blind" else [])
            for who, act, length in raters:
                for f, x, v in (("action", act[k], vlm_act[k]), ("length", length[k], vlm_len[k])):
                    shown = str(v) if arm == "anchored" else ""
                    w.writerow([f"i{k}", f, who, arm, 1, str(x), shown])
    import_table(sqlite_store, project, path, create_items=False)
    res = run_audit(sqlite_store, project).as_dict()
    vals = dict(vlm_len=vlm_len, vlm_act=vlm_act, a_len=a_len, a_act=a_act, b_len=b_len)
    return res, vals


def test_vlm_kappa_of_independent_number_is_near_zero(independent):
    res, v = independent
    anch = slice(0, N_ANCH)
    x, y = v["vlm_len"][anch], v["a_len"][anch]
    want = brute_kappa(x, y, tol_same(x, y))
    got = res["vlm_kappa"]["by_field"]["length"]
    assert got["point"] == pytest.approx(want, abs=1e-9)
    assert abs(got["point"]) < 0.05  # was ~0.2: tolerant p_o over exact p_e
    assert np.isfinite(got["low"]) and got["low"] < got["point"] < got["high"]
    # the same figure from truthline.stats (the field's tolerance as rating metadata)
    r = as_ratings(np.column_stack([x, y]), level="interval")
    r.meta["tolerance"] = TOL
    stats_k = agreement(r, "cohen", resamples=0)[0]
    assert stats_k.weights == "tolerance"
    assert got["point"] == pytest.approx(stats_k.point, abs=1e-9)
    per_a = res["vlm_kappa"]["by_annotator_field"]["A"]["length"]["point"]
    assert per_a == pytest.approx(want, abs=1e-9)


def test_iaa_of_independent_number_is_near_zero(independent):
    res, v = independent
    blind = slice(N_ANCH, N_ANCH + N_BLIND)
    x, y = v["a_len"][blind], v["b_len"][blind]
    want = brute_kappa(x, y, tol_same(x, y))
    got = res["iaa"]["length"]["blind"]["point"]
    assert got == pytest.approx(want, abs=1e-9)
    assert abs(got) < 0.05


def test_pooled_kappa_uses_each_fields_own_agreement(independent):
    """Team (and per-annotator) kappa pools the fields: a pair of decisions agrees only
    within one field, numbers within the tolerance, choices when equal."""
    res, v = independent
    anch = slice(0, N_ANCH)
    xl, yl = v["vlm_len"][anch], v["a_len"][anch]
    xa, ya = v["vlm_act"][anch], v["a_act"][anch]
    n = N_ANCH
    same = np.zeros((2 * n, 2 * n), dtype=bool)  # decisions: actions, then lengths
    same[:n, :n] = xa[:, None] == ya[None, :]
    same[n:, n:] = tol_same(xl, yl)
    want = brute_kappa(np.r_[xa, xl], np.r_[ya, yl], same)
    assert res["vlm_kappa"]["team"]["point"] == pytest.approx(want, abs=1e-9)
    assert res["vlm_kappa"]["by_annotator"]["A"]["point"] == pytest.approx(want, abs=1e-9)
    # NB: not ~0 even for independent raters: with field-qualified categories chance
    # agreement is sum_f (n_f/n)^2 p_e,f (pairs across fields never agree), a property of
    # the pooled definition, not of the tolerance
