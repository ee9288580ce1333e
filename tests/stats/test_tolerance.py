"""Numbers with a tolerance: observed and chance agreement use one definition (issue 13).

w_ij = 1[|v_i - v_j| <= tol] for both; checked against a brute-force double loop over
decisions (p_o) and over all rater-1 x rater-2 pairs of decisions (p_e).
"""

from __future__ import annotations

import numpy as np
import pytest

from truthline.stats import (
    ToleranceWeights,
    agreement,
    as_ratings,
    kappa_codes,
    kappa_from_sums,
    kappa_unit_sums,
    kappa_weights,
)


def brute_kappa(a: np.ndarray, b: np.ndarray, tol: float) -> float:
    po = np.mean(np.abs(a - b) <= tol + 1e-12)
    pe = np.mean(np.abs(a[:, None] - b[None, :]) <= tol + 1e-12)
    return float((po - pe) / (1 - pe))


def independent(n: int = 4000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # tape readings in 1/8 inch steps over 0..4 inches, two raters independent
    return rng.integers(0, 33, n) / 8, rng.integers(0, 33, n) / 8


def test_independent_raters_kappa_near_zero_with_tolerance():
    a, b = independent()
    tol = 0.25
    units = np.arange(len(a))
    ca, cb, q, w, agree = kappa_weights(a, b, tol)
    S = kappa_unit_sums(units, agree, ca, cb, q, len(a)).sum(axis=0)
    k = float(kappa_from_sums(S, q, w)[0])
    assert k == pytest.approx(brute_kappa(a, b, tol), abs=1e-12)
    assert abs(k) < 0.03
    # the old mix: tolerant observed agreement, exact chance agreement (issue 13: 0.207)
    ea, eb, eq = kappa_codes(a, b)
    mixed = float(kappa_from_sums(kappa_unit_sums(units, agree, ea, eb, eq, len(a)).sum(0), eq)[0])
    assert mixed > 0.1


def test_apply_equals_dense_matrix_with_groups():
    rng = np.random.default_rng(1)
    x = rng.normal(size=60).round(1)
    g = rng.integers(0, 3, 60)
    w = ToleranceWeights(x, 0.15, groups=g)
    dense = (g[:, None] == g[None, :]) & (np.abs(x[:, None] - x[None, :]) <= 0.15 + 1e-12)
    assert np.array_equal(w.matrix(), dense.astype(float))
    P = rng.random((5, 60))
    assert np.allclose(w.apply(P), P @ dense.astype(float))


def test_kappa_family_uses_tolerance_for_both_on_numbers():
    a, b = independent(600, 3)
    r = as_ratings(np.column_stack([a, b]), level="interval")
    r.meta["tolerance"] = 0.25
    res = agreement(r, ["cohen", "pairwise"], resamples=0)
    cohen, pairwise = res
    assert cohen.weights == "tolerance"
    assert cohen.point == pytest.approx(brute_kappa(a, b, 0.25), abs=1e-12)
    assert pairwise.point == pytest.approx(np.mean(np.abs(a - b) <= 0.25), abs=1e-12)
    exact = agreement(as_ratings(np.column_stack([a, b])), "cohen", resamples=0)[0]
    assert exact.weights == "none" and cohen.point != exact.point
