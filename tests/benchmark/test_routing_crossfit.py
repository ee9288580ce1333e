"""Routing oracle, cross-fitted (METRICS.md §6): with three equal SIMULATED models of true
accuracy 0.70 the cross-fitted estimate is unbiased and its interval covers, where the
in-sample oracle is optimistic; a real per-environment advantage is found on both halves;
an environment missing from the choosing half takes that half's best single model."""

from __future__ import annotations

import numpy as np
import pytest

from tests.benchmark.test_diagnostics import _project, _scored
from truthline.benchmark import RunScored, compute_run_metrics
from truthline.benchmark import metrics as M
from truthline.stats._ranks import IN_SAMPLE, routing_crossfit

MODELS = ["m1", "m2", "m3"]


def _equal_models(seed: int, n: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SIMULATED: three models each right with probability 0.70 on every decision."""
    rng = np.random.default_rng(seed)
    env = np.repeat(["a", "b", "c", "d"], n // 4)
    clusters = np.repeat(np.arange(n // 2), 2)
    return (rng.random((n, 3)) < 0.70).astype(float), env, clusters


def test_equal_models_cross_fitted_is_unbiased_and_covers():
    est, covered, in_sample = [], 0, []
    seeds = 80
    for s in range(seeds):
        c, env, cl = _equal_models(s)
        r = routing_crossfit(MODELS, c, np.ones_like(c), env, clusters=cl, resamples=300, seed=s)
        est.append(r.routed.point)
        covered += r.routed.low <= 0.70 <= r.routed.high
        in_sample.append(r.in_sample.point)
        assert r.in_sample_label == IN_SAMPLE
    assert np.mean(est) == pytest.approx(0.70, abs=0.01)
    assert covered / seeds >= 0.90
    assert np.mean(in_sample) > 0.715  # the in-sample oracle picks each environment's luck


def test_a_real_advantage_is_chosen_on_both_halves():
    rng = np.random.default_rng(0)
    n = 800
    env = np.repeat(["x", "y"], n // 2)
    p = np.where(env[:, None] == "x", [0.9, 0.5, 0.6], [0.5, 0.9, 0.6])
    c = (rng.random((n, 3)) < p).astype(float)
    r = routing_crossfit(MODELS, c, np.ones_like(c), env, resamples=200, seed=1)
    assert r.choices == {"half 1": {"x": "m1", "y": "m2"}, "half 2": {"x": "m1", "y": "m2"}}
    assert r.routed.point == pytest.approx(0.9, abs=0.03)
    assert r.gain.low > 0.1 and r.gain.low <= 0.2 <= r.gain.high  # true gain 0.9 - 0.7


def test_environment_missing_from_a_half_takes_its_best_single_model():
    # A is right on every x decision, B on every z one; "z" is one cluster, so one half
    # never sees it: that half routes z to its best single model (A), the other to B
    c = np.array([[1, 0]] * 4 + [[0, 1]] * 2, dtype=float)
    env = ["x", "x", "x", "x", "z", "z"]
    cl = ["c1", "c2", "c3", "c4", "c5", "c5"]
    for seed in range(4):
        r = routing_crossfit(["A", "B"], c, np.ones_like(c), env, clusters=cl, resamples=0,
                             seed=seed)  # fmt: skip
        z = {h: ch["z"] for h, ch in r.choices.items()}
        assert sorted(z.values()) == ["A", "B"]
        blind = next(h for h, m in z.items() if m == "A")
        assert r.single_choices[blind] == "A" and r.clusters == 5
        assert r.routed.point == pytest.approx(4 / 6)  # x always right, z routed wrong once


def test_routing_metric_reports_the_cross_fit_and_labels_the_in_sample():
    p = _project("dori-visibility")
    rng = np.random.default_rng(2)
    entries = {}
    for lab, acc in (("A", (0.9, 0.4)), ("B", (0.4, 0.9)), ("rule:r", (1.0, 1.0))):
        rows = []
        for i in range(200):
            e = "xy"[i % 2]
            right = rng.random() < acc[i % 2]
            rows.append({"item": f"i{i}", "stratum": e, "path": "action", "gold": "standing",
                         "pred": "standing" if right else "lying", "parent": f"s{i // 2}"})  # fmt: skip
        entries[lab] = _scored(p, rows)
    kinds = {"A": "simulated", "B": "simulated", "rule:r": "rule"}
    keys = {lab: (lab, "", "base", "") for lab in entries}
    v = RunScored(p, entries, kinds, keys, M.Resampling(200, 0))
    r = compute_run_metrics(v, ["routing_oracle"])["routing_oracle"]
    assert r["models"] == ["A", "B"]  # the rule (right everywhere) is never routed to
    assert r["best_by_environment"] == {"x": "A", "y": "B"}
    assert r["in_sample"]["label"] == "in-sample (optimistic)"
    assert r["value"].point == pytest.approx(0.9, abs=0.06)
    assert r["value"].low < r["value"].point < r["value"].high
    assert r["best_single"]["accuracy"].point < r["value"].point
    assert r["clusters"] == 100 and r["n"] == 200
