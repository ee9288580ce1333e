"""The one kappa kernel: sums -> kappa, batched; used by CohenKappa and the audit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from truthline.stats import (
    agreement_weights,
    cohen_kappa,
    draw,
    kappa_codes,
    kappa_from_counts,
    kappa_from_sums,
    kappa_unit_sums,
)


def _pairs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, size=n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 4, size=n))
    return a, b


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kernel_matches_sklearn(weights):
    a, b = _pairs(300, 1)
    T = np.zeros((4, 4))
    np.add.at(T, (a, b), 1)
    wt = agreement_weights(4, weights)
    got = kappa_from_counts((T * wt).sum(), T.sum(), T.sum(1), T.sum(0), wt)
    assert float(got) == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-12)
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(float(got), abs=1e-12)


def test_unit_sums_resampled_equal_recomputed_kappa():
    # decisions nested in 40 clips: W @ F over clips equals kappa of the expanded resample
    a, b = _pairs(400, 2)
    clip = np.repeat(np.arange(40), 10)
    ca, cb, q = kappa_codes(a, b)
    F = kappa_unit_sums(clip, (a == b).astype(float), ca, cb, q, 40)
    assert float(kappa_from_sums(F.sum(0), q)[0]) == pytest.approx(cohen_kappa_score(a, b))
    W = draw(40, 5, seed=3)
    boot = kappa_from_sums(W @ F, q)
    for r in range(5):
        idx = np.concatenate([np.flatnonzero(clip == c) for c in np.repeat(np.arange(40), W[r])])
        assert boot[r] == pytest.approx(cohen_kappa_score(a[idx], b[idx]), abs=1e-12)


def test_single_category_is_undefined_and_codes_compare_values():
    nan = kappa_from_counts(10, 10, np.array([10, 0]), np.array([10, 0]))
    assert np.isnan(nan)
    ca, cb, q = kappa_codes([["x", 1], {"k": [2]}], [("x", 1), {"k": (2,)}])
    assert q == 2 and list(ca) == list(cb) == [0, 1]
