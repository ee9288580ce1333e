"""Balanced aggregation (PHYSALIGN.md §7.2), the hand example of §7.3 and the parent-cluster
bootstrap of §8, checked by hand and against a brute-force loop over resampled parents."""

from __future__ import annotations

import numpy as np
import pytest

from truthline.benchmark import metrics as M

# §7.3: p1: T02 x1 (1), T03-image x2 (1, 0); p2: T03-image x1 (0);
#       p3: T02 x2 (0, 0), T03-text x1 (1)
PARENTS = ["p1", "p1", "p1", "p2", "p3", "p3", "p3"]
TYPES = ["T02", "T03-image", "T03-image", "T03-image", "T02", "T02", "T03-text"]
X = [1, 1, 0, 0, 0, 0, 1]


def test_hand_example_of_the_spec():
    s = M.Support.of(PARENTS, TYPES)
    assert s.agg(X) == pytest.approx(7 / 12)
    assert np.mean(X) == pytest.approx(3 / 7)  # the micro mean differs
    assert (s.weights() * 12).tolist() == pytest.approx([2, 1, 1, 2, 1, 1, 4])
    assert s.weights().sum() == pytest.approx(1.0)
    assert float(s.weights() @ np.array(X, dtype=float)) == pytest.approx(7 / 12)


def test_declared_type_weights_and_a_single_type_reduce_to_parent_mean():
    s = M.Support.of(PARENTS, TYPES, {"T02": 2.0, "T03-image": 1.0, "T03-text": 1.0})
    assert s.agg(X) == pytest.approx((2 * 0.5 + 0.25 + 1) / 4)
    one = M.Support.of(["a", "a", "b"], ["T03-image"] * 3)
    assert one.agg([1, 0, 1]) == pytest.approx((0.5 + 1) / 2)


def test_bootstrap_recomputes_the_aggregation_per_resample_and_flags_undefined():
    s = M.Support.of(PARENTS, TYPES)
    W = M.support_draw(s, 400, 7)
    got = np.asarray(s.agg(X, W))
    # brute force: expand each drawn parent as its own cluster instance, aggregate the copy
    pids = s.parent_ids
    for b in range(40):
        par, typ, x = [], [], []
        for k, p in enumerate(pids):
            for c in range(int(W[b, k])):
                for pp, tt, xx in zip(PARENTS, TYPES, X, strict=True):
                    if pp == p:
                        par.append(f"{p}#{c}")
                        typ.append(tt)
                        x.append(xx)
        if set(typ) != set(TYPES):  # a type disappeared: undefined, not re-weighted
            assert np.isnan(got[b])
        else:
            assert got[b] == pytest.approx(M.Support.of(par, typ).agg(x))
    res = M.support_ci(s, {"x": X}, rs=M.Resampling(400, 7))["x"]
    assert res["point"] == pytest.approx(7 / 12)
    assert res["n_undefined"] == int(np.isnan(got).sum()) > 0
    assert res["low"] <= res["point"] <= res["high"]
    strict = M.support_ci(s, {"x": X}, rs=M.Resampling(400, 7), strict=True)["x"]
    assert np.isnan(strict["low"])


def test_derived_quantities_are_ratios_of_aggregates_on_one_draw():
    # the paper's numbers: P(G|C) = JAcc / CAcc = 77.13 / 89.44
    s = M.Support.of(["a", "b"], ["T03-image"] * 2)
    out = M.support_ci(
        s,
        {"C": [1, 1], "J": [1, 0]},
        lambda a: {"P(G|C)": a["J"] / a["C"], "C+G-": a["C"] - a["J"]},
        rs=M.Resampling(200, 1),
    )
    assert out["P(G|C)"]["point"] == pytest.approx(0.5)
    assert out["C+G-"]["point"] == pytest.approx(0.5)


def test_a_ratio_with_a_zero_denominator_is_undefined_not_a_crash():
    s = M.Support.of(["a", "b"], ["T03-image"] * 2)
    out = M.support_ci(
        s, {"C": [0, 0], "J": [0, 0]}, lambda a: {"P(G|C)": a["J"] / a["C"]}, rs=M.Resampling(50, 1)
    )
    assert np.isnan(out["P(G|C)"]["point"]) and out["P(G|C)"]["n_undefined"] == 50


def test_balanced_weights_of_the_balanced_metric_are_the_support_weights():
    w = M.balanced_weights(PARENTS, TYPES)
    assert (w / len(PARENTS) * 12).tolist() == pytest.approx([2, 1, 1, 2, 1, 1, 4])
    assert float(w @ np.array(X, dtype=float)) / len(X) == pytest.approx(7 / 12)
