"""Cross-checks on random data against krippendorff, statsmodels and scikit-learn."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, to_table
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from truthline.stats import cohen_kappa, fleiss_kappa, krippendorff_alpha, scott_pi


def _random(seed: int, units: int = 60, raters: int = 5, q: int = 4, missing: float = 0.25):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, q + 1, size=units)
    noise = rng.integers(1, q + 1, size=(units, raters))
    x = np.where(rng.random((units, raters)) < 0.6, truth[:, None], noise).astype(float)
    x[rng.random((units, raters)) < missing] = np.nan
    return x


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_equals_krippendorff_package(seed, level):
    x = _random(seed)
    ours = krippendorff_alpha(x, level)
    ref = krippendorff.alpha(reliability_data=x.T, level_of_measurement=level)
    assert ours == pytest.approx(ref, abs=1e-10)


def test_alpha_list_input_matches_array_input():
    x = _random(11)
    as_list = [[None if np.isnan(v) else int(v) for v in row] for row in x]
    for level in ("nominal", "ordinal", "interval", "ratio"):
        assert krippendorff_alpha(as_list, level) == pytest.approx(krippendorff_alpha(x, level))


def test_interval_alpha_with_many_distinct_values():
    # continuous data: 20,000 units with ~all-distinct values (the package builds values²)
    rng = np.random.default_rng(3)
    t = rng.normal(size=20_000)
    x = t[:, None] + rng.normal(scale=0.7, size=(20_000, 3))
    x[rng.random(x.shape) < 0.1] = np.nan
    ours = krippendorff_alpha(x, "interval")
    sub = x[:60]  # the package needs units x values² memory: keep its share small
    assert krippendorff_alpha(sub, "interval") == pytest.approx(
        krippendorff.alpha(reliability_data=sub.T, level_of_measurement="interval"), abs=1e-10
    )
    assert ours == pytest.approx(1 / (1 + 0.49), abs=0.02)  # population ICC = 1/(1+0.7²)


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_equals_statsmodels(seed):
    x = _random(seed, missing=0.0)
    table, _ = aggregate_raters(x.astype(int))
    assert fleiss_kappa(x) == pytest.approx(sm_fleiss(table), abs=1e-12)
    assert fleiss_kappa(table, counts=True) == pytest.approx(sm_fleiss(table), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_equals_sklearn_and_statsmodels(seed, weights):
    x = _random(seed, raters=2, missing=0.0, units=80, q=5)
    a, b = x[:, 0].astype(int), x[:, 1].astype(int)
    cats = [1, 2, 3, 4, 5]
    ours = cohen_kappa(a, b, weights=weights, categories=cats)
    assert ours == pytest.approx(cohen_kappa_score(a, b, weights=weights, labels=cats), abs=1e-12)
    if weights is None:
        table, _ = to_table(x.astype(int), bins=np.arange(0.5, 6.5))
        assert ours == pytest.approx(cohens_kappa(table, return_results=False), abs=1e-12)


def test_cohen_ignores_units_missing_a_rating():
    a = [1, 2, 2, None, 1, 2, 1]
    b = [1, 2, 1, 2, None, 2, 1]
    keep = [0, 1, 2, 5, 6]
    assert cohen_kappa(a, b) == pytest.approx(
        cohen_kappa_score([a[i] for i in keep], [b[i] for i in keep])
    )


def test_scott_two_raters_equals_fleiss_definition():
    x = _random(9, raters=2, missing=0.0)
    table, _ = aggregate_raters(x.astype(int))
    assert scott_pi(x) == pytest.approx(sm_fleiss(table), abs=1e-12)
