"""Nominal alpha on high-cardinality fields (plates, VINs): count form, sparse (issue 13)."""

from __future__ import annotations

import tracemalloc

import krippendorff
import numpy as np
import pytest

from truthline.stats import agreement, as_ratings, get_coefficient


def plates(units: int, raters: int, seed: int, missing: float = 0.2) -> np.ndarray:
    """Readings of mostly distinct plates: right 80 % of the time, else a random plate."""
    rng = np.random.default_rng(seed)
    truth = rng.permutation(units * 4)[:units].astype(float)
    wrong = rng.integers(0, units * 4, size=(units, raters)).astype(float)
    x = np.where(rng.random((units, raters)) < 0.8, truth[:, None], wrong)
    x[rng.random(x.shape) < missing] = np.nan
    return x


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_krippendorff_package_on_high_cardinality(seed):
    x = plates(150, 3, seed)  # the package allocates units x values² floats: keep it small
    ours = get_coefficient("alpha")(as_ratings(x), level="nominal").point()
    ref = krippendorff.alpha(reliability_data=x.T, level_of_measurement="nominal")
    assert len(np.unique(x[~np.isnan(x)])) > 150
    assert ours == pytest.approx(ref, abs=1e-12)


def test_memory_is_linear_in_ratings_not_values_squared():
    # 40k units x 2 raters, ~50k distinct values: the old dense units x values counts alone
    # were ~16 GB; the count form with a 200-resample bootstrap stays far below 1 GB.
    x = plates(40_000, 2, 3, missing=0.0)
    r = as_ratings(x)
    assert r.q > 40_000
    tracemalloc.start()
    res = agreement(r, "alpha", resamples=200, seed=0)[0]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert res.ci.low < res.point < res.ci.high
    assert peak < 600e6, peak


def test_bootstrap_values_match_explicit_resamples():
    from truthline.stats import multiplicity_blocks

    x = plates(120, 3, 7)
    c = get_coefficient("alpha")(as_ratings(x), level="nominal")
    assert c._gram is not None  # the sparse unit x unit form is in use
    W = next(multiplicity_blocks(120, 3, seed=2)).astype(float)
    fast = c.values(W)
    generic = c.from_sums(np.asarray((c.features.T @ W.T).T))
    assert np.allclose(fast, generic, atol=1e-12)
    for b in range(3):
        rep = np.repeat(x, W[b].astype(int), axis=0)
        ref = krippendorff.alpha(reliability_data=rep.T, level_of_measurement="nominal")
        assert fast[b] == pytest.approx(ref, abs=1e-12)


def test_kappa_family_on_plates_needs_no_values_squared_memory():
    x = plates(40_000, 2, 5, missing=0.0)
    r = as_ratings(x)
    tracemalloc.start()
    res = {
        a.coefficient: a for a in agreement(r, ["ac1", "pairwise", "fleiss", "cohen"], resamples=50)
    }
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 900e6, peak  # identity weights as a q x q matrix alone: ~20 GB
    # Cohen by hand (scikit-learn's confusion matrix would be values x values: 19 GB here)
    va, ca = np.unique(x[:, 0], return_counts=True)
    vb, cb = np.unique(x[:, 1], return_counts=True)
    _, ia, ib = np.intersect1d(va, vb, return_indices=True)
    pe = float((ca[ia] * cb[ib]).sum()) / len(x) ** 2
    po = float(np.mean(x[:, 0] == x[:, 1]))
    assert res["cohen"].point == pytest.approx((po - pe) / (1 - pe), abs=1e-12)
    assert res["pairwise"].point == pytest.approx(np.mean(x[:, 0] == x[:, 1]), abs=1e-12)
    for a in res.values():
        assert a.ci.low <= a.point <= a.ci.high
